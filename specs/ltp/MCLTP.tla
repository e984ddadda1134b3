------------------------------- MODULE MCLTP -------------------------------
(***************************************************************************)
(* Model-checking wrapper for LTP (RFC 5326, one session), and the base of *)
(* the other wrappers (MCLTPOutcomes extends it, MCLTPTraps extends that). *)
(* The .cfg files fix the constants (manifest.json records each result):   *)
(*   MCLTP_ci.cfg     CI bound: small block, two losses, checked in        *)
(*                    seconds, safety + liveness                           *)
(*   MCLTP_early.cfg  timers that may expire while the reply is in flight  *)
(*   MCLTP_deep.cfg   a bigger block and loss budget (minutes)             *)
(*   MCLTP_bug.cfg    FaultyReceiver = TRUE: fails on purpose with a       *)
(*                    counterexample to RedDeliveredOnlyWhenComplete       *)
(*   MCLTP_orphan.cfg fails on purpose: a cancelled sender can orphan the  *)
(*                    receiver (EventuallyBothEnded)                       *)
(* Their VIEW, CheckView, drops the lastEvent history variable, so that it *)
(* does not multiply the state space; the ALIAS Alias prints each trace    *)
(* state as a JSON-friendly record.                                        *)
(***************************************************************************)
EXTENDS LTP, TLC

\* A set of offsets S as states are told apart: <<"run", n, {}>> when S is
\* first .. first + n - 1, the shape in which WithOffset keeps a part
\* received in order; <<"set", 0, S>> for any other set.  One to one, so no two
\* states merge; TLC fingerprints an interval offset by offset, and a long
\* block's trace would pay that at every state.
OffsetsView(S, first) ==
    LET n == Cardinality(S) IN
    IF S = first .. (first + n - 1) THEN <<"run", n, {}>> ELSE <<"set", 0, S>>

\* The protocol's state: both sides and both channels, without the history
\* variables lostLog and lastEvent, and with the offsets received as above.
\* Every VIEW of the LTP models is built on it (CheckView here, OutcomeView
\* in MCLTPOutcomes, View in MCLTPTraps, TraceView in TraceLTP).
ProtocolState ==
    <<senderVars, rState, rOutcome, OffsetsView(rRed, 0), OffsetsView(rGreen, NRed),
      rDeliveries, rDelivered, rReports, rRsTx, rAcked, rCxTx, rCxReason, fwd, rtn, late,
      link>>

\* States are told apart by everything except the description of the step
\* that produced them.
CheckView == <<ProtocolState, lostLog>>

\* What the receiver's client saw last: a notice, "closed" for a session
\* that closed with none (reading 5's alternative), or "none". The red-part
\* reception notice (7.3) is not the session's end: a receiver that
\* delivered and has not closed (6.20) is "open".
\* (A refused session, ServiceKnown = FALSE, was never the client's: "none".)
\* generators/ltp.trace_outcome reads a trap trace's end state the same way.
ReceiverNotice ==
    CASE rOutcome = "none" /\ rState = "closed" /\ ServiceKnown -> "closed"
      [] rOutcome = "completed" /\ rState # "closed" -> "open"
      [] OTHER -> rOutcome

\* An end state as an outcome, as generators/ltp/outcomes.py parses it: each
\* side's last notice, the red deliveries and the green segments received.
\* MCLTPOutcomes prints it at each terminal state, TraceLTP at the end of a
\* validated trace.
OutcomeLine ==
    "dtnc-outcome sender=" \o sOutcome \o " receiver=" \o ReceiverNotice
        \o " delivered=" \o ToString(rDeliveries) \o " green=" \o ToString(rGreen)

\* Readings 2, 5, 13 and 14 only widen (readings.json, "widens"): every step
\* the model takes is also a step of the model with any one of their
\* alternatives on, the other constants as they are.  Trace validation
\* rests on it: where the union of those alternatives rejects a trace, so
\* does each of them and each combination (conformance/tracecheck.py).
\* Checked by the bounds whose PROPERTIES name it: MCLTP_widens.cfg, with
\* every alternative off, and each reading's bound, with its own on.
WideReportBounds == INSTANCE LTP WITH ReportBoundsMay <- TRUE
WideGreenEob == INSTANCE LTP WITH GreenEobCloses <- TRUE
WideRedPart == INSTANCE LTP WITH RedPartCloses <- TRUE
WideOverlap == INSTANCE LTP WITH OverlapMiscolored <- TRUE
ReadingsWiden ==
    [][WideReportBounds!Next /\ WideGreenEob!Next /\ WideRedPart!Next /\ WideOverlap!Next]_vars

\* One trace state as a flat record (channels, both sides, the last step).
Alias ==
    [ event    |-> lastEvent,
      fwd      |-> fwd,
      rtn      |-> rtn,
      late     |-> late,
      link     |-> link,
      lost     |-> lostLog,
      sender   |-> [state |-> sState, outcome |-> sOutcome, next |-> sNext,
                    claimed |-> sClaimed, cp |-> sCp, cpTx |-> sCpTx, retx |-> sRetx],
      receiver |-> [state |-> rState, outcome |-> rOutcome, red |-> rRed, green |-> rGreen,
                    deliveries |-> rDeliveries, reports |-> rReports, acked |-> rAcked,
                    cxReason |-> rCxReason] ]
=============================================================================
