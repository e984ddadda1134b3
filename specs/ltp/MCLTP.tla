------------------------------- MODULE MCLTP -------------------------------
(***************************************************************************)
(* Model-checking wrapper for LTP (RFC 5326, one session).  The .cfg files *)
(* fix the constants:                                                      *)
(*   MCLTP_ci.cfg    CI bound: small block, one loss budget, checked in    *)
(*                   seconds, safety + liveness                            *)
(*   MCLTP_deep.cfg  a bigger block and loss budget (minutes)              *)
(*   MCLTP_bug.cfg   FaultyReceiver = TRUE: fails on purpose with a        *)
(*                   counterexample to RedDeliveredOnlyWhenComplete        *)
(* The VIEW drops the lastEvent history variable, so that it does not      *)
(* multiply the state space; the ALIAS prints each trace state as a        *)
(* JSON-friendly record.                                                   *)
(***************************************************************************)
EXTENDS LTP, TLC

\* States are told apart by everything except the description of the step
\* that produced them.
View == <<senderVars, receiverVars, fwd, rtn, lostLog>>

\* One trace state as a flat record (channels, both sides, the last step).
Alias ==
    [ event    |-> lastEvent,
      fwd      |-> fwd,
      rtn      |-> rtn,
      lost     |-> lostLog,
      sender   |-> [state |-> sState, outcome |-> sOutcome, next |-> sNext,
                    claimed |-> sClaimed, cp |-> sCp, cpTx |-> sCpTx, retx |-> sRetx],
      receiver |-> [state |-> rState, outcome |-> rOutcome, red |-> rRed, green |-> rGreen,
                    deliveries |-> rDeliveries, reports |-> rReports, acked |-> rAcked] ]
=============================================================================
