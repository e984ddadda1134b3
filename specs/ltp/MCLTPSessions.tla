---------------------------- MODULE MCLTPSessions ----------------------------
(***************************************************************************)
(* Model-checking wrapper for two concurrent LTP sessions (LTPSessions).   *)
(* MCLTP_sessions.cfg is its CI bound, MCLTP_sessions_deep.cfg the deep    *)
(* one (manifest.json records each result).                                *)
(***************************************************************************)
EXTENDS LTPSessions, TLC

\* States are told apart by both sessions' protocol state, their loss
\* histories and the link, not by the descriptions of the steps that led
\* there (lastEvent1, lastEvent2).
View == <<protocolVars1, protocolVars2, link>>
=============================================================================
