--------------------------- MODULE MCLTPOutcomes ---------------------------
(***************************************************************************)
(* One LTP session (RFC 5326) under exactly a planned set of impairments   *)
(* (losses, delays, duplicates), and every terminal outcome it can reach.  *)
(*                                                                         *)
(* A scenario names each impairment as a live channel rule does: a         *)
(* direction, the segment's wire key (kind and offset for data, type for   *)
(* control segments), an occurrence and what the channel does to it, "drop *)
(* the 2nd RS on the return channel". Plan is the set of those, as records *)
(* [dir, key, off, occ, act] with off counted in model segments and act    *)
(* "drop", "delay", "duplicate" or "outage" (the link goes down as that    *)
(* segment crosses it and swallows it: ChannelLinkDown, then the swallow;  *)
(* what else the dead link swallows is free, as the live outage drops      *)
(* whatever crosses it);                                                   *)
(* generators/outcomes.py writes it into the module MCLTPPlan (the copy    *)
(* in specs/ltp/ holds the empty plan of a nominal run).  The wrapper      *)
(* counts every transmission per key (txCount) and lets the channel lose,  *)
(* hold back or copy a segment only when that transmission is a planned    *)
(* one not yet used (planHit).  Each state in which the session has ended  *)
(* and every planned impairment has happened is a terminal outcome; the    *)
(* invariant Report prints it (it never fails), so one exhaustive TLC run  *)
(* lists the whole set.                                                    *)
(*                                                                         *)
(* A copy lost while an identical copy is in flight loses both (the model's*)
(* channels are sets): that can only add outcomes, so a run is never failed*)
(* for an outcome the protocol allows.                                     *)
(***************************************************************************)
EXTENDS MCLTP, MCLTPPlan

\* @type: Set({dir: Str, key: Str, off: Int, occ: Int, act: Str});
Plan == ThePlan
\* @type: Bool;
Fifo == InOrder
\* The channel may lose any segment, within MaxLoss, and delay or duplicate
\* any, within MaxLate (and Plan is ignored):
\* test generation (MCLTPTraps) and scenarios whose links lose frames at
\* random override this with TRUE.
\* @type: Bool;
AnyLoss == FALSE

VARIABLES
    \* @type: Seq($seg);
    fq,         \* history: segments in flight to the receiver, in send order
    \* @type: Seq($seg);
    rq,         \* history: segments in flight to the sender, in send order
    \* @type: {dir: Str, key: Str, off: Int} -> Int;
    txCount,    \* transmissions so far per direction and wire key
    \* @type: Set({dir: Str, key: Str, off: Int, occ: Int, act: Str});
    planHit,    \* the planned impairments that have happened
    \* @type: Bool;
    armed       \* the link just went down: its next step swallows the trigger

\* The variables this wrapper adds to LTP's.
wrapperVars == <<txCount, planHit, fq, rq, armed>>

\* The key a channel rule matches a segment on (specs/ltp/wire.json):
\* data by kind and offset, a checkpoint being red data; control by type.
Key(s) == IF s.type \in RedTypes THEN "red_data"
          ELSE IF s.type \in GreenTypes THEN "green_data"
          ELSE s.type
KeyOff(s) == IF IsData(s) THEN s.off ELSE 0
Slot(d, s) == [dir |-> d, key |-> Key(s), off |-> KeyOff(s)]
Slots ==
    [dir : {"forward", "return"}, key : {"red_data", "green_data"}, off : 0 .. (NSeg - 1)]
    \cup [dir : {"forward", "return"}, key : CtrlTypes, off : {0}]

\* The direction a step's transmissions go in (the channel's: the one it
\* delivers a held-back segment in).
TxDir(ev) == CASE ev.actor = "sender" -> "forward"
               [] ev.actor = "receiver" -> "return"
               [] OTHER -> ev.dir

\* txCount after the transmissions of event ev.
Counted(ev) ==
    [x \in Slots |->
        txCount[x] + Cardinality({i \in DOMAIN ev.tx : Slot(TxDir(ev), ev.tx[i]) = x})]

\* What the channel did to a segment in event ev, as a rule names it ("" if
\* ev is not a channel's impairment).
ChannelAct(ev) ==
    CASE ev.action \in {"ChannelLoseForward", "ChannelLoseReturn"} -> "drop"
      [] ev.action \in {"ChannelDelayForward", "ChannelDelayReturn"} -> "delay"
      [] ev.action \in {"ChannelDuplicateForward", "ChannelDuplicateReturn"} -> "duplicate"
      [] ev.action \in {"ChannelSwallowForward", "ChannelSwallowReturn"} -> "swallow"
      [] OTHER -> ""
IsLoss(ev) == ChannelAct(ev) = "drop"
IsImpairment(ev) == ChannelAct(ev) \in {"drop", "delay", "duplicate"}
IsSwallow(ev) == ChannelAct(ev) = "swallow"
IsLinkDown(ev) == ev.action = "ChannelLinkDown"
IsRelease(ev) == ev.action \in {"ChannelReleaseForward", "ChannelReleaseReturn"}

\* The planned impairment that event ev (a channel's) is, if any.
LossOf(ev) ==
    LET s == ev.lost[1] IN
    [dir |-> ev.dir, key |-> Key(s), off |-> KeyOff(s), occ |-> txCount[Slot(ev.dir, s)],
     act |-> IF IsSwallow(ev) THEN "outage" ELSE ChannelAct(ev)]
OutagesLeft == {x \in Plan \ planHit : x.act = "outage"}
\* Is a planned outage's trigger segment in flight?
TriggerInFlight ==
    \E x \in OutagesLeft :
        \E s \in (IF x.dir = "forward" THEN fwd ELSE rtn) :
            /\ Key(s) = x.key /\ KeyOff(s) = x.off
            /\ txCount[Slot(x.dir, s)] = x.occ

\* In-order channels (Fifo, from the scenario's channel: no reordering): a
\* side receives only the oldest segment in flight to it.  Losses may take
\* any segment.  Copies merged in the set channel leave the queue together.
\* A delayed segment leaves the queue and joins its tail when the channel
\* releases it; a duplicated one stays, and its copy joins the tail then.
Without(q, s) == SelectSeq(q, LAMBDA x : x # s)
Queued(q, ev, d) == IF ev.tx # <<>> /\ TxDir(ev) = d THEN q \o ev.tx ELSE q
\* (IF, not \/: TLC explores each disjunct of an action as a branch.)
RxOk(q, ev) == IF ~Fifo \/ ev.rx = <<>> THEN TRUE ELSE q # <<>> /\ Head(q) = ev.rx[1]
Dequeued(q, ev, d) ==
    IF ChannelAct(ev) \in {"drop", "delay", "swallow"} /\ ev.dir = d THEN Without(q, ev.lost[1])
    ELSE IF ev.rx # <<>> /\ (d = "forward") = (ev.actor = "receiver")
    THEN Without(q, ev.rx[1])
    ELSE q

OutcomeInit ==
    /\ Init
    /\ txCount = [x \in Slots |-> 0]
    /\ planHit = {}
    /\ armed = FALSE
    /\ fq = <<>>
    /\ rq = <<>>

\* The FIFO history after event ev; a receipt must take the queue's head.
Ordered(ev) ==
    /\ RxOk(IF ev.actor = "receiver" THEN fq ELSE rq, ev)
    /\ fq' = Queued(Dequeued(fq, ev, "forward"), ev, "forward")
    /\ rq' = Queued(Dequeued(rq, ev, "return"), ev, "return")

\* The counters after event ev: a transmission counts towards its key's
\* occurrences; an impairment must be a planned one not used yet, and uses
\* it; a held-back segment's release is no transmission (the live rules
\* counted it once, as it entered the channel).
\* A planned outage is the link going down (only while the trigger of one
\* left to happen is in flight) and, as the next step, the swallowing of
\* that trigger;
\* the dead link's other swallows are free.
\* With AnyLoss every impairment and outage is allowed and nothing needs
\* counting.
Accounted(ev) ==
    IF AnyLoss THEN UNCHANGED <<txCount, planHit, armed>>
    ELSE IF armed
    THEN /\ IsSwallow(ev)
         /\ LossOf(ev) \in OutagesLeft
         /\ planHit' = planHit \cup {LossOf(ev)}
         /\ armed' = FALSE
         /\ UNCHANGED txCount
    ELSE IF IsLinkDown(ev)
    THEN /\ TriggerInFlight
         /\ armed' = TRUE
         /\ UNCHANGED <<txCount, planHit>>
    ELSE IF IsImpairment(ev)
    THEN /\ LossOf(ev) \in Plan \ planHit
         /\ planHit' = planHit \cup {LossOf(ev)}
         /\ UNCHANGED <<txCount, armed>>
    ELSE IF IsRelease(ev) \/ IsSwallow(ev) \/ ev.action = "ChannelLinkUp"
    THEN UNCHANGED <<txCount, planHit, armed>>
    ELSE /\ txCount' = Counted(ev)
         /\ UNCHANGED <<planHit, armed>>

\* A protocol step, kept in order and counted.  The Terminating stutter
\* changes nothing, so it counts nothing.
OutcomeNext ==
    /\ Next
    /\ IF UNCHANGED vars
       THEN UNCHANGED wrapperVars
       ELSE \E ev \in {lastEvent'} : Ordered(ev) /\ Accounted(ev)

OutcomeSpec == OutcomeInit /\ [][OutcomeNext]_<<vars, wrapperVars>>

\* States are told apart by the protocol's state (MCLTP), the counters and the
\* channels' order; not by lostLog (planHit says which planned losses happened)
\* nor lastEvent.
OutcomeView == <<ProtocolState, wrapperVars>>

\* Terminal: no step but the final stutter can follow (fairness in Spec takes
\* every other one).  An ended session has none; an orphaned receiver has
\* none unless its red part is complete, when it will still deliver it (a
\* green-only block has none to deliver).
Terminal ==
    \/ SessionEnded
    \/ ReceiverOrphaned /\ (NRed = 0 \/ ~(RedSet \subseteq rRed))
    \/ SenderStranded

\* Test generation (MCLTPTraps, MCLTPCatalogue) keeps only losses that matter: the channel never loses a
\* data segment whose offset the receiver already holds. The channel is a set,
\* so a retransmitted copy and its original are one element, and without this
\* constraint a shortest trace may "lose" a stale copy that arrived already
\* (through reordering) -- a loss no live run can reproduce, since the
\* implementation never sends that copy again. Used as ACTION_CONSTRAINT.
\* The same for delays and duplicates of data.
NoStaleLoss ==
    LET ev == lastEvent' IN
    (IsImpairment(ev) /\ ev.dir = "forward" /\ IsData(ev.lost[1]))
        => ev.lost[1].off \notin rRed \cup rGreen

\* Never fails: prints each terminal outcome reached with every planned loss
\* (OutcomeLine, MCLTP.tla).
Report == ((AnyLoss \/ planHit = Plan) /\ Terminal) => PrintT(OutcomeLine)

ASSUME TLCSet(3, {})

\* Never fails: prints each action the first time a step by it reaches a new
\* state (TLC register 3), for action coverage (the catalogue's, and that of
\* the outage scenarios' outcome sets).
ActionSeen ==
    lastEvent.action \notin TLCGet(3) =>
        /\ TLCSet(3, TLCGet(3) \cup {lastEvent.action})
        /\ PrintT(<<"dtnc-action", lastEvent.action>>)
=============================================================================
