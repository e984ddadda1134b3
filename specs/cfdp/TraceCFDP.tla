------------------------------ MODULE TraceCFDP ------------------------------
(***************************************************************************)
(* Trace validation of one CFDP transaction (CCSDS 727.0-B-5) as captured  *)
(* on the wire: the model of CFDP.tla under the protocol-free rules of     *)
(* specs/trace/TraceCore.tla (see there).  TraceData, which                *)
(* conformance/tracecheck.py writes for each run, holds the trace; the     *)
(* .cfg fixes the transfer from the scenario (NSeg, the mode, NAK mode and *)
(* limits), MaxLoss and MaxCorrupt to the trace's losses and undetected    *)
(* corruptions, MaxOutages and MaxLate to 0 (an outage's losses are lines  *)
(* of their own; a duplicate is a restored copy, below) and               *)
(* PrematureTimeouts to TRUE: a timer may expire at any time, since timer  *)
(* sizing is configuration, not conformance.                               *)
(*                                                                         *)
(* PDUs appear in the trace as the model's records (generators/cfdp/trace.py *)
(* says how): File Data by segment number on the scenario's segment grid;  *)
(* a NAK by the segments its requests cover; a Keep Alive's progress and a *)
(* failed transaction's Finished delivery code are not compared (the .cfg  *)
(* puts TraceKaPdu in place of KaPdu).                                     *)
(***************************************************************************)
EXTENDS CFDP, TraceCore

\* What the endpoints' harnesses reported, as the model's out ("completed",
\* "cancelled", "abandoned", "open"), or "any" (not known, or not one the
\* model has).  A behaviour in which a side ends otherwise is not the run's:
\* the implementation said how it ended.  tracecheck.py sets them for every
\* pass of a run of one transaction whose outcome its harnesses reported.
CONSTANTS ObservedSender, ObservedReceiver

\* CFDP.tla's events hold sets of PDUs; TraceCore's, sequences.
RECURSIVE SeqOf(_)
SeqOf(S) == IF S = {} THEN <<>>
            ELSE LET x == CHOOSE y \in S : TRUE IN <<x>> \o SeqOf(S \ {x})

\* A CFDP.tla event as TraceCore reads it.  The channel consumes and emits
\* nothing an actor sees: its steps only lose (ChannelLosePdu) or change
\* what is in flight (ChannelCorruptFileData).
AsTraceEvent(e) ==
    [actor |-> e.actor, action |-> e.action, dir |-> e.dir,
     rx |-> IF e.actor = "channel" THEN <<>> ELSE SeqOf(e.rx),
     tx |-> IF e.actor = "channel" THEN <<>> ELSE SeqOf(e.tx),
     lost |-> SeqOf(e.lost)]

TraceInit == Init /\ CoreInit

\* Next without the Terminating stutter.
Step ==
    \/ \E t \in Tx : SenderStep(t) \/ ReceiverStep(t) \/ UserStep(t)
    \/ ChannelFault
    \/ ChannelReleasePdu

\* The PDU the trace needs next from the channel towards actor a: the oldest
\* unprocessed arrival (eager pass: the current line's arrival), or the
\* current line's loss.
Needed(a) ==
    IF inq[a] # <<>> THEN {Head(inq[a]).seg}
    ELSE IF l <= TraceLen /\ RxActor(cur.dir) = a
            /\ (cur.kind = "lose" \/ (Eager /\ cur.kind = "arrive"))
    THEN {cur.seg}
    ELSE {}

\* CFDP.tla's channels are sets: a PDU sent while an identical one was in
\* flight (an EOF timed out, a Finished sent again) merged with it, and the
\* first arrival or loss took both.  When the trace shows the other copy
\* arriving or lost, the copy the wire carried is put back: a bag's
\* semantics, for the trace only.  (Each "arrive" or "lose" line follows a
\* "send" line that a model step emitted, so nothing is put back that the
\* model did not send; a corrupted File Data PDU needs its corruption, a
\* step of the model, first.)
ChannelRestoreCopy ==
    \/ \E p \in Needed("receiver") :
           /\ p \notin fwd /\ ~p.bad
           /\ fwd' = fwd \cup {p}
           /\ UNCHANGED <<mode, snd, rcv, rtn, held, spent, lostLog, lastEvent, coreVars>>
    \/ \E p \in Needed("sender") :
           /\ p \notin rtn
           /\ rtn' = rtn \cup {p}
           /\ UNCHANGED <<mode, snd, rcv, fwd, held, spent, lostLog, lastEvent, coreVars>>

\* A user's suspend request holds its entity until its resume, which the
\* harness makes resume_after_ms after it saw the request's trigger:
\* HoldEnds[a] (generators/cfdp/trace.py, resume_due) is the earliest and
\* the latest time that resume can come.  Held(a): entity a is suspended
\* in the model.  No line later than the latest is taken while a is held
\* (ResumedInTime, a guard on every step that takes a line): the model may not keep a
\* receiver that ignores its Resume.request suspended, settled, to its
\* exit.
Held(a) == \E t \in Tx : IF a = "sender" THEN snd[t].susp ELSE rcv[t].susp
ResumedInTime == \A a \in Actors : Held(a) => cur.t <= HoldEnds[a][2]

\* The suspend request itself comes between its trigger and its resume, so
\* no later than the latest resume: the model takes a user's suspend step
\* only after a line no later than that (SuspendedInTime, a guard on the
\* step), and only for an entity whose request's trigger the trace shows
\* (HoldEnds not Never: MaxSuspends counts both entities' requests, so one
\* entity's request would otherwise let the model suspend the other at any
\* time, and for ever).  Without it the model could suspend an entity long
\* after its resume, and so drop what it owed (NakOwes): a LibreCube mutant's
\* receiver, suspended as the Metadata arrived and resumed 100 ms later,
\* never NAKed the EOF that came a second later, and the model placed its
\* one suspension after that EOF.
SuspendedInTime ==
    LET ev == lastEvent'
    IN IF ev.action \notin {"SenderSuspendTransaction", "ReceiverSuspendTransaction"}
       THEN TRUE
       ELSE IF HoldEnds[ev.actor][2] = Never THEN FALSE
       ELSE IF l = 1 THEN TRUE
       ELSE LineAt(l - 1).t <= HoldEnds[ev.actor][2]

\* A sender resumed in its first pass (the Metadata, File Data and EOF its
\* Put.request started, 5.2) carries on with it: some PDU of its must be
\* on the wire between the earliest time of its resume and its window
\* after the latest (SenderResumeShown, a fact of the trace).  A line
\* later than that is taken with the sender still in its first pass only
\* if the trace shows one (SenderCarriesOn).  Where the sender is not
\* suspended in the model, this holds as well: nothing else explains a
\* sender that stops in its first pass, yet the standard times no new
\* data, so without the request the model would keep that sender idle
\* until the receiver's inactivity fault, and pass it (a LibreCube mutant
\* that never resumed, docs/mutation.md).  Resumed after its first pass,
\* the sender waits on timers and owes nothing at once.
SenderResumeDue ==
    IF HoldEnds["sender"][2] = Never THEN Never ELSE HoldEnds["sender"][2] + WindowOf("sender")
SenderResumeShown ==
    \/ HoldEnds["sender"][2] = Never
    \/ \E i \in 1 .. TraceLen :
          LET L == LineAt(i)
          IN /\ L.kind = "send" /\ L.dir = "forward"
             /\ HoldEnds["sender"][1] <= L.t /\ L.t <= SenderResumeDue
SenderCarriesOn ==
    (cur.t > SenderResumeDue /\ ~SenderResumeShown) => \A t \in Tx : snd[t].phase # "data"

\* A NAK's obligations (4.6.4.2.1: the sending entity "shall respond to all
\* received NAK PDUs by retransmitting" what they ask for, as dariol83/ccsds
\* quotes it, OutgoingCfdpTransaction.java:395-397 at 8c1f966): every
\* segment the NAK asks for that was already sent, and the Metadata for a
\* (0, 0) request, must be on the wire within the sender's
\* reaction window of the NAK's arrival.  The standard leaves the order of
\* new data and retransmissions open, so a NAK that reaches a sender still
\* in its first pass (immediate NAK mode) owes from its EOF on.  The
\* earliest deadline of a unit asked for again stands.  The sender's notice
\* of cancellation on the wire (its EOF(cancel), NakMet) or the
\* transaction's end ends them.
\*
\* And the receiver's first NAK after the EOF.  "Upon initial receipt of the
\* EOF (No error) PDU for a transaction, the receiving entity shall
\* determine whether or not any of the transaction's file data or metadata
\* have yet to be received.  If so: a) If any file data gaps or lost
\* metadata are detected for which no segment requests were included in
\* previously issued NAK PDUs, the receiving CFDP entity shall issue a NAK
\* sequence" (727.0-B-5 as dariol83/ccsds quotes it,
\* IncomingCfdpTransaction.java, handleEndOfFilePdu, which numbers it
\* 4.6.4.6; cfdp-py dest.py and cfdp-rs dest.rs cite the procedure as
\* 4.6.4.3.1).  The model's NAK after the EOF (ReceiverTxNak) is not
\* prompt, so without this a receiver that never asked would pass against a
\* sender that ends the transaction on its own timers.  Owed, as
\* NakDue(t), within the receiver's window of the EOF's arrival, where the
\* EOF leaves something that no earlier NAK can have asked for
\* (EofLeavesUnasked); met by any NAK of the transaction on the wire
\* (NakMet); dropped once the receiver has the whole file, ends, or is
\* suspended (a user's suspend holds its NAKs, 4.11.2.7 a) as dariol83/ccsds
\* quotes it).
NakDue(t) == Pdu("NAKDUE", t)

\* A NAK of transaction t on the wire before the current line.  Where the
\* receiver has sent one, its NAK after the EOF may be paced on its NAK
\* timer (Yamcs sends one NAK per NAK timeout, CfdpIncomingTransfer's
\* sendOrScheduleNak): whether the text allows that pacing cannot be read
\* here (generators/cfdp/trace.py, _no_paced_immediate_nak), so the NAK
\* after the EOF is owed only from a receiver that has sent none before.
NakSentBefore(t) ==
    \E i \in 1 .. (l - 1) :
        LET L == LineAt(i) IN L.kind = "send" /\ L.dir = "return" /\ L.seg.k = "NAK" /\ L.seg.t = t

\* What the receiver lacks at the EOF that no NAK before it asked for: a
\* segment past every one received (a NAK before the EOF names only gaps
\* below a segment received: ReceiverRxFileData, ReceiverRxPrompt), or, with
\* deferred NAKs and no Prompt sent, anything (no NAK precedes the EOF
\* then).  An EOF that reaches the receiver before its user's resume can
\* have come (HoldEnds) owes nothing here: a suspended receiver holds its
\* NAKs, and the standard times none after the resume.
EofLeavesUnasked(t, t0) ==
    /\ Acknowledged(t)
    /\ HoldEnds["receiver"][2] = Never \/ t0 > HoldEnds["receiver"][2]
    /\ ~NakSentBefore(t)
    /\ \/ \E o \in Missing(t) : \A g \in rcv[t].got : g < o
       \/ NakMode = "deferred" /\ spent.prompts = 0 /\ ~HasFile(t)

\* The receiver of transaction x still has to ask for something once a step
\* is taken: open, not suspended, the file not whole.
StillAsking(x) ==
    /\ rcv'[x].phase = "open" /\ ~rcv'[x].susp
    /\ ~(rcv'[x].md /\ Segs \subseteq rcv'[x].got)

NakOwes(e, t0) ==
    LET ev == lastEvent'
        tx == ev.t
        w == WindowOf("sender")
        sending(x) == snd'[x].phase # "closed"
        kept == [k \in {x \in DOMAIN owes :
                          IF x[2].k = "NAKDUE" THEN StillAsking(x[2].t) ELSE sending(x[2].t)}
                 |-> owes[k]]
        timed == IF ev.action = "SenderTxEof"
                 THEN Deferred(kept, LAMBDA k : kept[k].t = tx /\ k[1] = "forward", t0 + w)
                 ELSE kept
        nak == CHOOSE x \in ev.rx : TRUE
        asked == IF ev.action = "SenderRxNak"
                 THEN {<<"forward", FdPdu(tx, o)>> : o \in {o \in nak.segs : o < snd[tx].next}}
                      \cup (IF nak.md THEN {<<"forward", MdPdu(tx)>>} ELSE {})
                 ELSE {}
        due == IF snd[tx].phase = "data" THEN Never ELSE t0 + w
        eof == ev.action = "ReceiverRxEof" /\ EofLeavesUnasked(tx, t0) /\ StillAsking(tx)
        timedNak == IF eof
                    THEN Owe(timed, {<<"return", NakDue(tx)>>},
                             [due |-> t0 + WindowOf("receiver"), at |-> t0, t |-> tx])
                    ELSE timed
    IN Owe(timedNak, asked, [due |-> due, at |-> t0, t |-> tx])

NakMet(o, L) ==
    IF L.kind = "send" /\ L.dir = "forward" /\ L.seg.k = "EOF" /\ L.seg.cc # "NoError"
    THEN [k \in {x \in DOMAIN o : x[2].t # L.seg.t} |-> o[k]]
    ELSE IF L.kind = "send" /\ L.dir = "return" /\ L.seg.k = "NAK"
    THEN [k \in DOMAIN o \ {<<"return", NakDue(L.seg.t)>>} |-> o[k]]
    ELSE Met(o, L)

\* Where the wire shows the sender sending a unit nothing waiting shows,
\* SenderTxFileData (the next new segment) is held back only where that
\* unit is a resend (a File Data below the segment this step would emit,
\* or the Metadata) and the sender holds no Finished and no NAK asking for
\* a segment not emitted yet.  It is on the way to anything else: a later
\* new segment; an EOF or a Prompt (SenderTxEof follows the last segment);
\* an ACK or other PDU that a step closing or cancelling the transaction
\* sends, after which no new segment can be emitted.  A resend needs no
\* new segment first (SenderRxNak, SenderTxRetransmittedData), the only
\* steps that read next besides SenderTxEof are SenderRxNak (hence the NAK
\* clause) and SenderTxFileData itself, and the only arrival whose
\* processing, which a deadline may force before the line, ends the
\* first pass is a Finished (SenderRxFinished); so the step can wait until
\* one of the lines above.  Without this, a sender that must first answer
\* a NAK would be explored emitting every count of new segments ahead of
\* the wire.  Every other OnDemand step may be on the way to anything.
FileDataOnTheWay(e, u) ==
    IF e.action # "SenderTxFileData" THEN TRUE
    ELSE LET n == e.tx[1].seg
             q == inq["sender"]
         IN IF u.k \notin {"FD", "MD"} THEN TRUE
            ELSE IF u.k = "FD" /\ u.seg > n THEN TRUE
            ELSE {i \in DOMAIN q : \/ q[i].seg.k = "FIN"
                                   \/ q[i].seg.k = "NAK" /\ \E o \in q[i].seg.segs : o >= n} # {}

\* A Keep Alive on the receiver's own timer (ReceiverTxKeepAlive) is on the
\* way to nothing: no other PDU follows from it.  Emitted only at the line
\* that sends it (TraceCore's OwnLineOnly), it is judged by the state there:
\* one sent past the EOF's arrival is rejected (4.6.5.2.3: Keep Alives
\* "shall cease upon receipt" of the EOF (No error)), where one made
\* earlier could otherwise wait unsent for as long as the trace liked.
KeepAliveOwnLineOnly(e) == e.action = "ReceiverTxKeepAlive"

\* A NAK asks for each segment it names, and for the Metadata with a (0, 0)
\* request (4.6.4.2.1; NakOwes).
NakAsksFor(r, u) ==
    IF r.k # "NAK" \/ u.t # r.t THEN FALSE
    ELSE IF u.k = "FD" THEN u.seg \in r.segs
    ELSE u.k = "MD" /\ r.md

\* The prompt steps: what follows at once from what an entity holds, with
\* nothing more to arrive and no timer to wait for.  The sender's first
\* pass, which its Put.request starts: the Metadata (5.2.5), each new File
\* Data, the EOF after the last (5.2.2).  The receiver's end once the EOF
\* (No error) is in with the whole file: the Finished in Class 2, the
\* completion notice in Class 1 (ReceiverTxFinished), or the checksum
\* fault (4.6.1.2).  A suspended transaction takes none of them (SActive,
\* RActive).  NAKs, Keep Alives and every timer's expiry are not prompt
\* (a trace model's timers expire at any time).  An entity that exits, or
\* is still running at the captures' end, with one of these steps still
\* to take stopped where the standard has it go on: a sender that never
\* sent its file, or a receiver that never ended its transaction on a
\* complete file, is rejected at its exit, not judged "open".
Prompt == {"SenderTxMetadata", "SenderTxFileData", "SenderTxEof",
           "ReceiverTxFinished", "ReceiverFaultChecksum"}

\* Entity a owes no prompt step (TraceCore's LineStep asks it at a's exit
\* and at the captures' end).
Settled(a) == ~ENABLED (Step /\ lastEvent'.actor = a /\ lastEvent'.action \in Prompt)

\* Each side's out can still become, or is, the reported one (out is
\* "open" until the side ends, and never changes after).
Observed(out, seen) == seen = "any" \/ out \in {"open", seen}
Consistent == Observed(snd[1].out, ObservedSender) /\ Observed(rcv[1].out, ObservedReceiver)

TraceNext ==
    /\ \/ Step /\ SuspendedInTime /\ ModelStep(AsTraceEvent(lastEvent'))
       \/ UNCHANGED vars /\ LineStep(Settled)
       \/ ChannelRestoreCopy
    /\ Consistent'
    /\ l' # l => ResumedInTime /\ SenderCarriesOn

\* At each state past the last line, with every endpoint still running
\* settled, the transaction's end there (StopAtEnd FALSE: over every
\* behaviour that takes the trace): what each endpoint must have reported,
\* judged exactly whatever the file's size.  One transaction only.
EndReport ==
    (l > TraceLen /\ \A a \in Actors \ gone : Settled(a)) => PrintT(<<"dtnc-outcome", EndOf(1)>>)

\* What the .cfg puts in place of CFDP.tla's Arrivals and Losable: the
\* oldest unprocessed arrival at actor a (in the eager pass, the PDU of the
\* current line if it arrives at a), and the PDU of the current line if it
\* is a loss in direction dir.
TraceArrivals(ch, a) ==
    IF inq[a] # <<>> THEN {Head(inq[a]).seg} \cap ch
    ELSE IF Eager /\ l <= TraceLen /\ cur.kind = "arrive" /\ RxActor(cur.dir) = a
    THEN {cur.seg} \cap ch
    ELSE {}
TraceLosable(dir, p) == l <= TraceLen /\ cur.kind = "lose" /\ cur.dir = dir /\ cur.seg = p

\* A Keep Alive's progress (octets on the wire, segments in the model) is
\* not compared: the model's Keep Alive says only that one was sent.
TraceKaPdu(t, n) == Pdu("KA", t)

TraceSpec == TraceInit /\ [][TraceNext]_<<vars, coreVars>>

\* States differ by the protocol's state and the trace's; not by history.
TraceView == <<protoVars, coreState>>

ASSUME TLCSet(1, 0) /\ TLCSet(2, 0) /\ TLCSet(3, Never) /\ TLCSet(4, 0)

\* The invariant Furthest (progress report and acceptance) is TraceCore's.

\* The model's actions that could take a step here, whatever the trace says.
Enabled == {a \in ActionNames : ENABLED (Next /\ lastEvent'.action = a)}

\* For each actor, the actions that could process the oldest PDU that
\* reached it and is not processed yet: the model's answers to it.
Answers ==
    [a \in Actors |->
        IF inq[a] = <<>> THEN {}
        ELSE {n \in ActionNames :
                ENABLED (Next /\ lastEvent'.action = n /\ lastEvent'.rx = {Head(inq[a]).seg})}]

\* Arrivals not processed yet, at both actors.
Queued == Len(inq["sender"]) + Len(inq["receiver"])

\* Diagnosis pass (as TraceLTP's): prints, for the best states that reached
\* line DiagLine, what the model could do there, what the trace was waiting
\* for, the model's last step, and which action made each emission still
\* waiting.
Diag ==
    (/\ l = DiagLine
     /\ ~ENABLED ChannelRestoreCopy
     /\ \/ Queued < TLCGet(3)
        \/ Queued = TLCGet(3) /\ TLCGet(2) < 8) =>
        (/\ TLCSet(2, IF Queued < TLCGet(3) THEN 1 ELSE TLCGet(2) + 1)
         /\ TLCSet(3, Queued)
         /\ PrintT(<<"dtnc-trace-diag", Enabled, inq, pend, lastEvent, Answers, madeBy, owes>>))
=============================================================================
