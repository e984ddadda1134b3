--------------------------- MODULE MCCFDPOutcomes ---------------------------
(***************************************************************************)
(* One CFDP transaction (CCSDS 727.0-B-5) under exactly a planned set of   *)
(* impairments and user requests, and every terminal outcome it can reach. *)
(*                                                                         *)
(* A scenario names each impairment as a live channel rule does: a         *)
(* direction, the PDU's wire key (Key below: the directive, "ack_eof" or   *)
(* "ack_finished" for the two ACKs, "file_data" with the segment for File  *)
(* Data), an occurrence and what the channel does to it: "drop the 2nd NAK *)
(* on the return channel".  Plan holds those as records [dir, key, off,    *)
(* occ, act], off counted in model segments, act one of                    *)
(*   "drop"       ChannelLosePdu                                           *)
(*   "delay"      ChannelHoldPdu: it arrives after what is sent behind it  *)
(*                and after the timers that guard it                       *)
(*   "duplicate"  ChannelDuplicatePdu: a copy arrives later                *)
(*   "corrupt"    ChannelCorruptFileData: file data bits flipped with no   *)
(*                PDU CRC to catch it                                      *)
(*   "outage"     ChannelCutLink as that PDU crosses: what is in flight is *)
(*                lost, and while the link is down (until WrapperLinkUp,   *)
(*                at any later step) nothing arrives and whatever is sent  *)
(*                may be lost, at no cost to the plan                      *)
(* Requests holds the users' requests, each made once a trigger PDU has    *)
(* been sent for the occ-th time ([who, what, dir, key, off, occ]; what is *)
(* "cancel", "suspend", "prompt_nak" or "prompt_keep_alive"), at any later *)
(* point; a suspended transaction may resume at any point after.           *)
(*                                                                         *)
(* Several plans may be explored in one run (MCCFDPPlan's TheCases, with   *)
(* the same constants): case names the one a behaviour follows, chosen at  *)
(* the start and never changed, and each outcome is printed with it.       *)
(*                                                                         *)
(* The wrapper counts every transmission per key (txCount) and lets the    *)
(* channel impair a PDU only when that transmission is a planned one not   *)
(* used yet (planHit); the requests likewise (reqHit).  Every state in     *)
(* which the transaction is over at both ends, nothing is in flight and    *)
(* the whole plan has happened is a terminal outcome: the invariant Report *)
(* prints it (it never fails), so one exhaustive TLC run lists the set.    *)
(***************************************************************************)
EXTENDS MCCFDP, MCCFDPPlan

\* @type: Bool;
Fifo == InOrder

VARIABLES
    \* @type: Seq($pdu);
    fq,         \* history: PDUs in flight to the receiver, in send order
    \* @type: Seq($pdu);
    rq,         \* history: PDUs in flight to the sender, in send order
    \* @type: {dir: Str, key: Str, off: Int} -> Int;
    txCount,    \* transmissions so far per direction and wire key
    \* @type: Set({dir: Str, key: Str, off: Int, occ: Int, act: Str});
    planHit,    \* the planned impairments that have happened
    \* @type: Set({who: Str, what: Str, dir: Str, key: Str, off: Int, occ: Int});
    reqHit,     \* the requests that have been made
    \* @type: Bool;
    down,       \* a planned outage has the link down
    \* @type: Int;
    case        \* the case of TheCases this behaviour follows

wrapperVars == <<fq, rq, txCount, planHit, reqHit, down, case>>

\* The case's planned impairments and requests.
\* @type: Set({dir: Str, key: Str, off: Int, occ: Int, act: Str});
Plan == TheCases[case].plan
\* @type: Set({who: Str, what: Str, dir: Str, key: Str, off: Int, occ: Int});
Requests == TheCases[case].requests

\* The key a channel rule matches a PDU on (specs/cfdp/wire.json fields:
\* directive, ack_of, pdu_type and offset); generators/cfdp/purposes.py MATCHES.
Key(p) ==
    CASE p.k = "MD" -> "metadata"
      [] p.k = "FD" -> "file_data"
      [] p.k = "EOF" -> "eof"
      [] p.k = "ACK" /\ p.of = "EOF" -> "ack_eof"
      [] p.k = "ACK" -> "ack_finished"
      [] p.k = "NAK" -> "nak"
      [] p.k = "FIN" -> "finished"
      [] p.k = "PROMPT" -> "prompt"
      [] OTHER -> "keep_alive"
Keys == {"metadata", "file_data", "eof", "ack_eof", "ack_finished", "nak", "finished",
         "prompt", "keep_alive"}
KeyOff(p) == IF p.k = "FD" THEN p.seg ELSE 0
Slot(d, p) == [dir |-> d, key |-> Key(p), off |-> KeyOff(p)]
Slots == [dir : {"forward", "return"}, key : Keys, off : Segs]

\* A set of PDUs as a sequence (the order of two sent in one step is free:
\* a fixed one is taken).
AsSeq(S) == CHOOSE s \in [1 .. Cardinality(S) -> S] : \A i, j \in DOMAIN s : i # j => s[i] # s[j]

Protocol(ev) == ev.actor \in {"sender", "receiver"}
\* txCount after the transmissions of event ev (a protocol step's).
Counted(ev) ==
    [x \in Slots |-> txCount[x] + Cardinality({p \in ev.tx : Slot(ev.dir, p) = x})]

\* What the channel did in event ev, as a rule names it ("" for anything else).
ChannelAct(ev) ==
    CASE ev.action = "ChannelLosePdu" -> "drop"
      [] ev.action = "ChannelHoldPdu" -> "delay"
      [] ev.action = "ChannelDuplicatePdu" -> "duplicate"
      [] ev.action = "ChannelCorruptFileData" -> "corrupt"
      [] ev.action = "ChannelCutLink" -> "outage"
      [] OTHER -> ""
Subject(ev) == CHOOSE p \in ev.rx \cup ev.lost : TRUE
\* The planned impairment event ev (a single PDU's) is.
ImpairmentOf(ev) ==
    LET s == Subject(ev) IN
    [dir |-> ev.dir, key |-> Key(s), off |-> KeyOff(s), occ |-> txCount[Slot(ev.dir, s)],
     act |-> ChannelAct(ev)]
\* The planned outages a link cut (losing ev.lost) may be: its trigger is
\* among what the cut takes, at its occurrence.
OutagesOf(ev) ==
    {x \in Plan \ planHit :
        /\ x.act = "outage"
        /\ \E p \in ev.lost : Key(p) = x.key /\ KeyOff(p) = x.off
        /\ txCount[[dir |-> x.dir, key |-> x.key, off |-> x.off]] = x.occ}

\* The request a user's step is, as Requests names it (its trigger aside).
What(ev) ==
    CASE ev.action \in {"SenderCancelTransaction", "ReceiverCancelTransaction"} -> "cancel"
      [] ev.action \in {"SenderSuspendTransaction", "ReceiverSuspendTransaction"} -> "suspend"
      [] ev.action = "SenderTxPrompt" /\ \E p \in ev.tx : p.of = "NAK" -> "prompt_nak"
      [] ev.action = "SenderTxPrompt" -> "prompt_keep_alive"
      [] OTHER -> ""
\* The planned requests it may be: same side and request, trigger sent.
RequestsOf(ev) ==
    {r \in Requests \ reqHit :
        /\ r.who = ev.actor /\ r.what = What(ev)
        /\ txCount[[dir |-> r.dir, key |-> r.key, off |-> r.off]] >= r.occ}

\* In-order channels (Fifo): a side receives only the oldest PDU in flight
\* to it; the channel's impairments may take any.  Copies merged in the set
\* channel leave the queue together.  A held PDU leaves the queue and joins
\* its tail when released; a duplicated one stays, its copy joining later.
Without(q, s) == SelectSeq(q, LAMBDA x : x # s)
Swapped(q, a, b) == [i \in DOMAIN q |-> IF q[i] = a THEN b ELSE q[i]]
Receiving(ev) == Protocol(ev) /\ ev.rx # {}
RxQueue(ev) == IF ev.actor = "receiver" THEN fq ELSE rq
RxOk(ev) ==
    IF ~Receiving(ev) THEN TRUE
    ELSE ~down /\ (~Fifo \/ (RxQueue(ev) # <<>> /\ {Head(RxQueue(ev))} = ev.rx))
Queued(q, ev, d) ==
    IF ev.tx # {} /\ ev.dir = d /\ (Protocol(ev) \/ ev.action = "ChannelReleasePdu")
    THEN q \o AsSeq(ev.tx) ELSE q
Dequeued(q, ev, d) ==
    CASE ev.action = "ChannelCutLink" -> <<>>
      [] ChannelAct(ev) \in {"drop", "delay"} /\ ev.dir = d -> Without(q, Subject(ev))
      [] ChannelAct(ev) = "corrupt" /\ d = "forward" ->
             Swapped(q, Subject(ev), CHOOSE p \in ev.tx : TRUE)
      [] Receiving(ev) /\ (d = "forward") = (ev.actor = "receiver") -> Without(q, Subject(ev))
      [] OTHER -> q
Ordered(ev) ==
    /\ RxOk(ev)
    /\ fq' = Queued(Dequeued(fq, ev, "forward"), ev, "forward")
    /\ rq' = Queued(Dequeued(rq, ev, "return"), ev, "return")

OutcomeInit ==
    /\ Init
    /\ fq = <<>> /\ rq = <<>>
    /\ txCount = [x \in Slots |-> 0]
    /\ planHit = {} /\ reqHit = {}
    /\ down = FALSE
    /\ case \in DOMAIN TheCases

\* The counters after event ev.  A transmission counts towards its key's
\* occurrences.  An impairment must be a planned one not used yet, and uses
\* it; while the link is down, losses are free.  A user's request must be a
\* planned one whose trigger has been sent.  A release of a held PDU is no
\* transmission (the live rule counted it as it entered the channel).
Accounted(ev) ==
    CASE ChannelAct(ev) = "drop" /\ down ->
             UNCHANGED <<txCount, planHit, reqHit, down>>
      [] ChannelAct(ev) = "outage" ->
             \E x \in OutagesOf(ev) :
                /\ planHit' = planHit \cup {x}
                /\ down' = TRUE
                /\ UNCHANGED <<txCount, reqHit>>
      [] ChannelAct(ev) # "" ->
             /\ ImpairmentOf(ev) \in Plan \ planHit
             /\ planHit' = planHit \cup {ImpairmentOf(ev)}
             /\ UNCHANGED <<txCount, reqHit, down>>
      [] What(ev) # "" ->
             \E r \in RequestsOf(ev) :
                /\ reqHit' = reqHit \cup {r}
                /\ txCount' = Counted(ev)
                /\ UNCHANGED <<planHit, down>>
      [] Protocol(ev) ->
             /\ txCount' = Counted(ev)
             /\ UNCHANGED <<planHit, reqHit, down>>
      [] OTHER -> UNCHANGED <<txCount, planHit, reqHit, down>>

\* A protocol step, kept in order and counted.  The Terminating stutter
\* changes nothing, so it counts nothing.
WrapperStep ==
    /\ Next
    /\ IF UNCHANGED vars
       THEN UNCHANGED wrapperVars
       ELSE /\ \E ev \in {lastEvent'} : Ordered(ev) /\ Accounted(ev)
            /\ UNCHANGED case

\* The link comes back up (an outage lasts any number of steps).
WrapperLinkUp ==
    /\ down /\ down' = FALSE
    /\ UNCHANGED <<vars, fq, rq, txCount, planHit, reqHit, case>>

OutcomeNext == WrapperStep \/ WrapperLinkUp

OutcomeSpec == OutcomeInit /\ [][OutcomeNext]_<<vars, wrapperVars>>

\* States are told apart by the protocol's state, the counters and the
\* channels' order; not by lostLog nor lastEvent.
OutcomeView == <<protoVars, wrapperVars>>

Terminal == AllEnded /\ Quiet

\* The transaction's end at both sides (CFDP's EndOf).
Outcome == EndOf(1)

\* Never fails: prints each terminal outcome reached with the whole plan,
\* and its case.
Report ==
    (planHit = Plan /\ reqHit = Requests /\ Terminal) =>
        PrintT(<<"dtnc-outcome", Outcome, case>>)

ASSUME TLCSet(3, {})

\* Never fails: prints each action the first time a step by it reaches a new
\* state (TLC register 3), for action coverage.
ActionSeen ==
    lastEvent.action \notin TLCGet(3) =>
        /\ TLCSet(3, TLCGet(3) \cup {lastEvent.action})
        /\ PrintT(<<"dtnc-action", lastEvent.action>>)

\* The catalogue (MCCFDPCatalogue) keeps only impairments that matter: never
\* of a File Data segment or Metadata the receiver already holds (the set
\* channel would merge a retransmitted copy with its original).  Used as
\* ACTION_CONSTRAINT.
NoStaleImpairment ==
    LET ev == lastEvent' IN
    ChannelAct(ev) \in {"drop", "delay", "duplicate", "corrupt"} =>
        LET p == Subject(ev) IN
        /\ p.k = "FD" => p.seg \notin rcv[p.t].got
        /\ p.k = "MD" => ~rcv[p.t].md
=============================================================================
