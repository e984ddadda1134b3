---------------------------- MODULE LTPSessions ----------------------------
(***************************************************************************)
(* Two LTP sessions at once between one pair of engines, over one link.    *)
(*                                                                         *)
(* RFC 5326 keeps all protocol state per session: a segment names its     *)
(* session (3.1: session ID = originator engine ID + session number) and   *)
(* every procedure of 6 acts on that session only.  So each session here  *)
(* is LTP.tla with variables of its own (Session1, Session2), and what the *)
(* sessions share is the link: its state (link: up or down, the outages so *)
(* far, against MaxOutages) is one variable of both instances, so that an  *)
(* outage, and the link state cues that suspend timers (6.5, 6.6), strike  *)
(* both sessions at the same moment.  Each session has its own loss,      *)
(* delay and retransmission budgets; the second one its own block          *)
(* geometry (NRed2, NGreen2), so that a red-only and a mixed block, say,   *)
(* run side by side.                                                       *)
(*                                                                         *)
(* Steps interleave: one session's step leaves the other's variables       *)
(* alone.  Checked: each session's safety and liveness properties, while   *)
(* the other runs and the link goes down under both (MCLTPSessions.tla,    *)
(* MCLTP_sessions*.cfg).                                                   *)
(***************************************************************************)
EXTENDS Naturals

CONSTANTS
    NRed, NGreen,       \* the first session's block (LTP.tla)
    NRed2, NGreen2,     \* the second session's block
    MaxRetx, MaxLoss, MaxLate, PrematureTimeouts, FaultyReceiver, MiscoloredSender,
    MaxClaims, ServiceKnown, ReportBoundsMay, RefusalStateless, LinkCues, MaxOutages,
    GreenEobCloses, ClosedReopens, RedPartCloses, IdleCancels, OverlapMiscolored

VARIABLES
    \* the first session: LTP.tla's variables, suffixed 1
    sState1, sOutcome1, sNext1, sClaimed1, sRsSeen1, sCpSerial1, sCp1, sCpTx1, sRetx1, sRetxRs1,
    sCxTx1, sMiscTx1, rState1, rOutcome1, rRed1, rGreen1, rDeliveries1, rDelivered1,
    rReports1, rRsTx1, rAcked1, rCxTx1, rCxReason1, fwd1, rtn1, lostLog1, late1, lastEvent1,
    \* the second session, suffixed 2
    sState2, sOutcome2, sNext2, sClaimed2, sRsSeen2, sCpSerial2, sCp2, sCpTx2, sRetx2, sRetxRs2,
    sCxTx2, sMiscTx2, rState2, rOutcome2, rRed2, rGreen2, rDeliveries2, rDelivered2,
    rReports2, rRsTx2, rAcked2, rCxTx2, rCxReason2, fwd2, rtn2, lostLog2, late2, lastEvent2,
    \* the link both sessions cross (LTP.tla's link)
    link

Session1 == INSTANCE LTP
    WITH sState <- sState1, sOutcome <- sOutcome1, sNext <- sNext1, sClaimed <- sClaimed1,
            sRsSeen <- sRsSeen1, sCpSerial <- sCpSerial1, sCp <- sCp1, sCpTx <- sCpTx1,
            sRetx <- sRetx1, sRetxRs <- sRetxRs1, sCxTx <- sCxTx1, sMiscTx <- sMiscTx1,
            rState <- rState1, rOutcome <- rOutcome1, rRed <- rRed1, rGreen <- rGreen1,
            rDeliveries <- rDeliveries1, rDelivered <- rDelivered1,
            rReports <- rReports1, rRsTx <- rRsTx1,
            rAcked <- rAcked1, rCxTx <- rCxTx1, rCxReason <- rCxReason1, fwd <- fwd1,
            rtn <- rtn1, lostLog <- lostLog1, late <- late1, lastEvent <- lastEvent1,
            link <- link
Session2 == INSTANCE LTP
    WITH NRed <- NRed2, NGreen <- NGreen2,
            sState <- sState2, sOutcome <- sOutcome2, sNext <- sNext2, sClaimed <- sClaimed2,
            sRsSeen <- sRsSeen2, sCpSerial <- sCpSerial2, sCp <- sCp2, sCpTx <- sCpTx2,
            sRetx <- sRetx2, sRetxRs <- sRetxRs2, sCxTx <- sCxTx2, sMiscTx <- sMiscTx2,
            rState <- rState2, rOutcome <- rOutcome2, rRed <- rRed2, rGreen <- rGreen2,
            rDeliveries <- rDeliveries2, rDelivered <- rDelivered2,
            rReports <- rReports2, rRsTx <- rRsTx2,
            rAcked <- rAcked2, rCxTx <- rCxTx2, rCxReason <- rCxReason2, fwd <- fwd2,
            rtn <- rtn2, lostLog <- lostLog2, late <- late2, lastEvent <- lastEvent2,
            link <- link

\* Each session's variables: its protocol state and loss history, then the
\* description of its last step.
protocolVars1 == <<sState1, sOutcome1, sNext1, sClaimed1, sRsSeen1, sCpSerial1, sCp1, sCpTx1,
                   sRetx1, sRetxRs1, sCxTx1, sMiscTx1, rState1, rOutcome1, rRed1, rGreen1,
                   rDeliveries1, rDelivered1, rReports1, rRsTx1, rAcked1, rCxTx1,
                   rCxReason1, fwd1, rtn1, lostLog1, late1>>
vars1 == <<protocolVars1, lastEvent1>>
protocolVars2 == <<sState2, sOutcome2, sNext2, sClaimed2, sRsSeen2, sCpSerial2, sCp2, sCpTx2,
                   sRetx2, sRetxRs2, sCxTx2, sMiscTx2, rState2, rOutcome2, rRed2, rGreen2,
                   rDeliveries2, rDelivered2, rReports2, rRsTx2, rAcked2, rCxTx2,
                   rCxReason2, fwd2, rtn2, lostLog2, late2>>
vars2 == <<protocolVars2, lastEvent2>>
vars == <<vars1, vars2, link>>

Init == Session1!Init /\ Session2!Init

\* A step of one session; the other's variables stay as they are.  (A step
\* of the link, ChannelLinkDown or ChannelLinkUp, is either session's: they
\* are the same step.)
Session1Step == Session1!Step /\ UNCHANGED vars2
Session2Step == Session2!Step /\ UNCHANGED vars1

\* Both sessions have ended (or left a receiver orphaned, LTP.tla).
BothDone ==
    /\ Session1!SessionEnded \/ Session1!ReceiverOrphaned \/ Session1!SenderStranded
    /\ Session2!SessionEnded \/ Session2!ReceiverOrphaned \/ Session2!SenderStranded

Next ==
    \/ Session1Step
    \/ Session2Step
    \/ BothDone /\ UNCHANGED vars

\* LTP.tla's fairness, per session.
Spec ==
    /\ Init
    /\ [][Next]_vars
    /\ WF_vars(Session1!SenderNext /\ UNCHANGED vars2)
    /\ WF_vars(Session1!ReceiverNext /\ UNCHANGED vars2)
    /\ WF_vars(Session1!ChannelReleaseNext /\ UNCHANGED vars2)
    /\ WF_vars(Session2!SenderNext /\ UNCHANGED vars1)
    /\ WF_vars(Session2!ReceiverNext /\ UNCHANGED vars1)
    /\ WF_vars(Session2!ChannelReleaseNext /\ UNCHANGED vars1)
    /\ WF_vars(Session1!ChannelLinkUp /\ UNCHANGED vars2)

TypeOK == Session1!TypeOK /\ Session2!TypeOK
Safety == Session1!Safety /\ Session2!Safety

\* Each session ends (LTP.tla's EventuallyEnded, DeliveredUnlessCancelled),
\* whatever the other does.
EventuallyEnded == Session1!EventuallyEnded /\ Session2!EventuallyEnded
DeliveredUnlessCancelled ==
    Session1!DeliveredUnlessCancelled /\ Session2!DeliveredUnlessCancelled
\* With link state cues no timer of either session expires early, though one
\* outage strikes both (LTP.tla's TimersNeverEarly).
TimersNeverEarly == Session1!TimersNeverEarly /\ Session2!TimersNeverEarly
=============================================================================
