------------------------------ MODULE TraceLTP ------------------------------
(***************************************************************************)
(* Trace validation of one LTP session (RFC 5326) as captured on the wire: *)
(* the model of LTP.tla under the protocol-free rules of TraceCore (see    *)
(* there).  TraceData, which conformance/tracecheck.py writes for each     *)
(* run, holds the trace and, for the diagnosis pass, ActionNames (the      *)
(* model's actions) and DiagLine (the line no behaviour took, 0 on the     *)
(* first passes); the .cfg fixes the block geometry and                    *)
(* the retransmission limit from the scenario, MaxLoss to the trace's      *)
(* losses and PrematureTimeouts to TRUE: a timer may expire at any time,   *)
(* since timer sizing is configuration, not conformance.                   *)
(*                                                                         *)
(* Segments appear in the trace as the model's records: offsets, bounds    *)
(* and claims in model segments; checkpoint and report serials renumbered  *)
(* 1, 2, ... in the order the wire first shows them (RFC 5326 asks only    *)
(* that they differ within a session, 3.2.1, 3.2.2).                      *)
(***************************************************************************)
EXTENDS MCLTP, TraceCore

\* RS segment -> the copies of it on the wire whose RS timer still runs.
VARIABLE rsLive

TraceInit == Init /\ CoreInit /\ rsLive = [s \in {} |-> 0]

\* The segment the trace needs next from the channel towards actor a: the
\* oldest unprocessed arrival (eager pass: the current line's arrival), or
\* the current line's loss.
Needed(a) ==
    IF inq[a] # <<>> THEN {Head(inq[a]).seg}
    ELSE IF l <= TraceLen /\ RxActor(cur.dir) = a
            /\ (cur.kind = "lose" \/ (Eager /\ cur.kind = "arrive"))
    THEN {cur.seg}
    ELSE {}

\* LTP.tla's channels are sets: a copy sent while an identical one was in
\* flight merged with it, and the first arrival or loss took both.  When the
\* trace then shows the other copy arriving or lost, the copy the wire
\* carried is put back: a bag's semantics, for the trace only.  (Each
\* "arrive" or "lose" line follows a "send" line that a model step emitted,
\* so nothing is put back that the model did not send.)
ChannelRestoreCopy ==
    \/ \E s \in Needed("receiver") :
           /\ s \notin fwd
           /\ fwd' = fwd \cup {s}
           /\ UNCHANGED <<senderVars, receiverVars, rtn, lostLog, late, link, lastEvent, coreVars>>
    \/ \E s \in Needed("sender") :
           /\ s \notin rtn
           /\ rtn' = rtn \cup {s}
           /\ UNCHANGED <<senderVars, receiverVars, fwd, lostLog, late, link, lastEvent, coreVars>>

\* The prompt steps: what follows at once from what an actor holds, with
\* nothing on the wire.  The red-part reception notice once the red part is
\* in (7.3), and the sender's completion notice and close once it is
\* claimed (6.12, 7.4).  The receiver's close at the last RA (6.14: "then
\* the session is closed") only once the EOB is in: 8.2 moves a receiver in
\* WAIT_RP_REC (entered at the EOB) to CLOSED "upon full red-part
\* reception", but keeps one that has not seen the EOB in DS_REC, so a
\* receiver still open for a late green segment has text for it too.
\* Timer expiries are not prompt (a trace model's timers expire at any
\* time), nor are the alternative readings' optional steps.
Prompt == {"ReceiverDeliverRedPart", "SenderSignalCompletion"}

\* A green-only block's receiver closes at its EOB (8.2), at once.
PromptStep ==
    \/ lastEvent'.action \in Prompt
    \/ lastEvent'.action = "ReceiverCloseSession" /\ RxEob
    \/ lastEvent'.action = "ReceiverCloseOnGreenEob" /\ NRed = 0

\* Actor a owes no prompt step (TraceCore's LineStep asks it at a's exit
\* and at the captures' end).
Settled(a) == ~ENABLED (Step /\ lastEvent'.actor = a /\ PromptStep)

\* A report's obligations (6.13: "new data segments encapsulating all block
\* data whose non-reception is implied by the reception claims are appended
\* to the transmission queue", the last one a checkpoint): each red segment
\* the RS claims is missing, the highest as the new checkpoint, within the
\* sender's reaction window of the RS's arrival.  Appended to the queue: a
\* report that reaches a sender still sending the block's first pass owes
\* from that pass's last segment on.  Only for a report that finds no
\* retransmission queued (otherwise which segment ends up the checkpoint
\* depends on the order of the two, and nothing is owed: lenient).  The
\* sender's CS on the wire (RsMet) or the session's end ends them.
RsOwes(e, t0) ==
    LET ev == lastEvent'
        w == WindowOf("sender")
        kept == IF sState' = "open" THEN owes ELSE NoOwes
        timed == IF sNext < NSeg /\ sNext' = NSeg
                 THEN Deferred(kept, LAMBDA k : TRUE, t0 + w)
                 ELSE kept
        asked == IF ev.action = "SenderRxReport" /\ sRetx = {} /\ sRetx' # {}
                 THEN LET top == Max(sRetx') IN
                      {<<"forward", DataSeg(o)>> : o \in sRetx' \ {top}}
                      \cup {<<"forward", CheckpointSeg(top, sCpSerial + 1, sRetxRs')>>}
                 ELSE {}
        due == IF sNext' < NSeg THEN Never ELSE t0 + w
    IN Owe(timed, asked, [due |-> due, at |-> t0])

RsMet(o, L) ==
    IF L.kind = "send" /\ L.dir = "forward" /\ L.seg.type = "CS" THEN NoOwes ELSE Met(o, L)

\* RS timers.  An RS timer starts when its copy is de-queued for
\* transmission (6.3): here, at the "send" line of an RS.  A trace model's
\* timers expire at any time (PrematureTimeouts), but only a timer that
\* runs: each expiry of a report's timer (6.8 (a): a new copy, or the
\* cancel past the limit) takes one copy of that RS on the wire whose timer
\* has not expired yet.  Without it a receiver that cancelled at the first
\* expiry passed: the model let the timer expire while the first copy was
\* still queued, queued a second one and purged it at the cancel
\* (licklider-core mutant src/engine.rs:1258:33, docs/mutation.md).  A
\* copy a redundant checkpoint queued (6.8 (b)) starts a timer of its own
\* when it is sent, and may still be queued when an earlier copy's expires.
Live(s) == IF s \in DOMAIN rsLive THEN rsLive[s] ELSE 0
Plus(b, s) == IF s \in DOMAIN b THEN [b EXCEPT ![s] = @ + 1] ELSE b @@ (s :> 1)

\* rsLive with the RS the step's trace line sends, if it takes a "send"
\* line of an RS.
WithSent(b) ==
    IF l' = l + 1 /\ cur.kind = "send" /\ cur.seg.type = "RS" THEN Plus(b, cur.seg) ELSE b

\* A step's expiries of RS timers (e its lastEvent'): the one whose copy
\* it re-queues, or one of a report at the limit that it cancels for.
RsTimersStep(e) ==
    CASE e.action = "ReceiverExpireReportTimer" ->
             /\ Live(e.tx[1]) > 0
             /\ rsLive' = WithSent([rsLive EXCEPT ![e.tx[1]] = @ - 1])
      [] e.action = "ReceiverCancelSession" ->
             /\ \E i \in DOMAIN rReports :
                    i \notin rAcked /\ rRsTx[i] > MaxRetx /\ Live(rReports[i]) > 0
             /\ rsLive' = WithSent(rsLive)
      [] OTHER -> rsLive' = WithSent(rsLive)

\* A step of the model (Step: Next without the Terminating stutter) under the
\* trace's rules, a trace line the model takes no step for, or a copy put
\* back in a channel (below).
TraceNext ==
    \/ Step /\ ModelStep(lastEvent') /\ RsTimersStep(lastEvent')
    \/ UNCHANGED vars /\ LineStep(Settled) /\ rsLive' = WithSent(rsLive)
    \/ ChannelRestoreCopy /\ UNCHANGED rsLive

\* What the .cfg puts in place of LTP's Arrivals and Losable: the oldest
\* unprocessed arrival at actor a (in the eager pass, the segment of the
\* current line if it arrives at a), and the segment of the current line if
\* it is a loss in direction dir (TraceCore lets a step take nothing else).
TraceArrivals(ch, a) ==
    IF inq[a] # <<>> THEN {Head(inq[a]).seg} \cap ch
    ELSE IF Eager /\ l <= TraceLen /\ cur.kind = "arrive" /\ RxActor(cur.dir) = a
    THEN {cur.seg} \cap ch
    ELSE {}
TraceLosable(ch, dir) ==
    IF l <= TraceLen /\ cur.kind = "lose" /\ cur.dir = dir THEN {cur.seg} \cap ch ELSE {}

TraceSpec == TraceInit /\ [][TraceNext]_<<vars, coreVars, rsLive>>

\* States differ by the protocol's state and the trace's; not by history.
TraceView == <<ProtocolState, coreState, rsLive>>

ASSUME TLCSet(1, 0) /\ TLCSet(2, 0) /\ TLCSet(3, Never) /\ TLCSet(4, 0)

\* The invariant Furthest (progress report and acceptance) is TraceCore's.

\* Never fails: past the last line, in a state where every actor still
\* running is settled, prints the outcome the model holds there (OutcomeLine,
\* MCLTP.tla): what each endpoint must have reported.  The set of them,
\* over every behaviour that takes the trace (StopAtEnd FALSE), is the
\* run's outcome judged exactly, whatever the block's size.
EndReport == (l > TraceLen /\ \A a \in Actors \ gone : Settled(a)) => PrintT(OutcomeLine)

\* The model's actions that could take a step here, whatever the trace says.
Enabled == {a \in ActionNames : ENABLED (Next /\ lastEvent'.action = a)}

\* For each actor, the actions that could process the oldest segment that
\* reached it and is not processed yet: the model's answers to it.
Answers ==
    [a \in Actors |->
        IF inq[a] = <<>> THEN {}
        ELSE {n \in ActionNames :
                ENABLED (Next /\ lastEvent'.action = n /\ lastEvent'.rx = <<Head(inq[a]).seg>>)}]

\* Arrivals not processed yet, at both actors.
Queued == Len(inq["sender"]) + Len(inq["receiver"])

\* Diagnosis pass: prints, for states that reached line DiagLine, what the
\* model could do there, what the trace was waiting for, the model's last
\* step, and which action made each emission still waiting.  Only states with every merged copy put back: in one where an
\* arrival's copy is still to be restored, no action could process that
\* arrival yet (Answers would be empty), though the model's answer to it is
\* one step away.  Breadth-first search reaches the line first in the
\* states that processed least (each processing is a step), which are the
\* model's worst explanations of what the actor sent there; so a state is
\* printed only if fewer arrivals wait in it than in every state printed
\* before (register 3), or as few and fewer than 8 such were printed
\* (register 2).  The caller keeps the last, best, ones.
Diag ==
    (/\ l = DiagLine
     /\ ~ENABLED ChannelRestoreCopy
     /\ \/ Queued < TLCGet(3)
        \/ Queued = TLCGet(3) /\ TLCGet(2) < 8) =>
        (/\ TLCSet(2, IF Queued < TLCGet(3) THEN 1 ELSE TLCGet(2) + 1)
         /\ TLCSet(3, Queued)
         /\ PrintT(<<"dtnc-trace-diag", Enabled, inq, pend, lastEvent, Answers, madeBy, owes>>))
=============================================================================
