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
View ==
    <<sState1, sOutcome1, sNext1, sClaimed1, sRsSeen1, sCpSerial1, sCp1, sCpTx1, sRetx1,
      sRetxRs1, sCxTx1, sMiscTx1, rState1, rOutcome1, rRed1, rGreen1, rDeliveries1,
      rReports1, rRsTx1, rAcked1, rCxTx1, rCxReason1, fwd1, rtn1, lostLog1, late1,
      sState2, sOutcome2, sNext2, sClaimed2, sRsSeen2, sCpSerial2, sCp2, sCpTx2, sRetx2,
      sRetxRs2, sCxTx2, sMiscTx2, rState2, rOutcome2, rRed2, rGreen2, rDeliveries2,
      rReports2, rRsTx2, rAcked2, rCxTx2, rCxReason2, fwd2, rtn2, lostLog2, late2, link>>
=============================================================================
