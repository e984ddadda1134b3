-------------------------------- MODULE NORM --------------------------------
(***************************************************************************)
(* NACK-Oriented Reliable Multicast (NORM), RFC 5740: one sender, a group  *)
(* of receivers Rcv, and one object of NBlk FEC blocks, each of K source   *)
(* and P parity symbols (an MDS code: any K distinct symbols of a block    *)
(* decode it, RFC 5510 §8.3.1, for FEC ids 2 and 5).  Every copy of a      *)
(* message to each receiver is lost or not on its own (multicast copies    *)
(* fail independently).                                                    *)
(*                                                                         *)
(* Time is discrete: one tick is the one-way delay, every message takes    *)
(* exactly one tick or is lost, and GRTT (the sender's estimate, §5.5.1,   *)
(* carried in the "grtt" field of every sender message, §4.2) is 2 ticks.  *)
(* The timers, in ticks (RFC 5740 and the building block RFC 5401):        *)
(*   T_backoff        any of 0 .. Kb*GRTT                   §5.3           *)
(*   T_rcvrHoldoff    (Kb+2)*GRTT                           §5.3           *)
(*   T_inactivity     Robust*2*GRTT; on expiry the receiver initiates a    *)
(*                    NACK cycle again, Robust times        §5.3, §4.2.3.1 *)
(*   T_sndrAggregate  (Kb+1)*GRTT                           §5.4.1         *)
(*   T_sndrHoldoff    1*GRTT                                §5.4.1         *)
(*   FLUSH interval   2*GRTT, Robust times or while an      §4.2.3.1,      *)
(*                    acking node list waits                §5.5.3         *)
(* A sender sends one message per tick (its rate, §5.1).                   *)
(*                                                                         *)
(* The readings of what the RFC leaves open: IdleOnAnyMessage and          *)
(* SsmRuleAnyMode (readings.json); README lists the questions the model    *)
(* answers one way for now.                                                *)
(*                                                                         *)
(* Modelled:                                                               *)
(*   §4.2.1   NORM_DATA: source symbols in order, then repair (parity or   *)
(*            explicit source symbols, flagged REPAIR/EXPLICIT, §5.4.2)    *)
(*   §4.2.3.1 NORM_CMD(FLUSH) with its transmission point (the watermark)  *)
(*            and, with AckReq, its acking node list                       *)
(*   §4.2.3.3 NORM_CMD(SQUELCH): the answer to a NACK for an object the    *)
(*            sender no longer holds (§5.4.3)                              *)
(*   §4.2.3.5 NORM_CMD(REPAIR_ADV): the sender's aggregated repair state,  *)
(*            sent while it aggregates unicast NACKs (§5.4.4)              *)
(*   §4.3.1   NORM_NACK, its repair requests as (block, symbol) items      *)
(*   §4.3.2   NORM_ACK(FLUSH)                                              *)
(*   §5.3     the receiver's NACK procedure: initiated only at a block     *)
(*            boundary, the object's end, a FLUSH or an inactivity         *)
(*            timeout; a random back-off; suppression by overheard NACKs   *)
(*            and REPAIR_ADVs that equal or supersede its needs; the       *)
(*            hold-off; the request set (parity from symbol K up, then the *)
(*            highest missing source symbols); the rule that suppresses a  *)
(*            back-off over (Kb-1)*GRTT at once (reading 2: in any mode);  *)
(*            condition 1, the sender's position past the receiver's       *)
(*            earliest missing symbol (a repair moves it back)             *)
(*   §5.4.1   the sender's aggregation period, repair, and hold-off (a     *)
(*            NACK that arrives while repairs are sent or in the hold-off  *)
(*            is dropped: README, open questions)                          *)
(*   §5.4.2   fresh parity up to the largest erasure count, then the       *)
(*            requested symbols already sent, as explicit repair           *)
(*   §5.5.3   the positive acknowledgment of a FLUSH watermark: each node  *)
(*            polled at most Robust times                                  *)
(*                                                                         *)
(* Abstracted away: congestion control (NORM_CMD(CC), §5.5.2), GRTT        *)
(* probing (a fixed GRTT), NORM_INFO (§4.2.2: atomic, repaired as one more *)
(* symbol would be), EOT, APPLICATION and ACK_REQ other than the FLUSH's,  *)
(* several objects and streams, the group-size estimate (it shapes the     *)
(* back-off distribution, RFC 5401 §3.2.2, not its range), byte contents.  *)
(*                                                                         *)
(* Actions are named role + verb + object; every step records what it did  *)
(* in the history variable lastEvent (which every VIEW leaves out).        *)
(***************************************************************************)
EXTENDS Integers, FiniteSets

CONSTANTS
    \* @type: Set(Str);
    Rcv,            \* the receivers (NormNodeIds)
    \* @type: Int;
    NBlk,           \* FEC blocks in the object
    \* @type: Int;
    K,              \* source symbols per block
    \* @type: Int;
    P,              \* parity symbols per block (n - k)
    \* @type: Int;
    Kb,             \* the back-off factor K_sender (§5.3: "backoff" field)
    \* @type: Int;
    Robust,         \* NORM_ROBUST_FACTOR (§4.2.3.1, §5.3, §5.5.3)
    \* @type: Bool;
    UnicastNack,    \* receivers unicast their NACKs (SSM); the sender then advertises
    \* @type: Bool;
    AckReq,         \* the FLUSH asks every receiver to acknowledge its watermark
    \* @type: Bool;
    Purge,          \* the sender may stop holding the object once it has flushed
    \* @type: Int;
    MaxLoss,        \* copies the channel may lose, all directions
    \* @type: Bool;
    FaultyReceiver, \* fault injection: a receiver that never suppresses its NACK
    \* @type: Bool;
    IdleOnAnyMessage, \* reading 1 (readings.json): every sender message restarts
                      \* the inactivity timer (§4.2.3.1), not only NORM_DATA (§5.3)
    \* @type: Bool;
    SsmRuleAnyMode    \* reading 2: the automatic suppression of a back-off over
                      \* (Kb-1)*GRTT (§5.3) applies whatever the NACKs' mode, not
                      \* only where they are unicast (SSM)

ASSUME Rcv # {} /\ "sender" \notin Rcv
ASSUME NBlk \in Nat \ {0} /\ K \in Nat \ {0} /\ P \in Nat
\* Kb >= 1: §5.3 wants it over 1 for multicast; §5.4.1's Kb = 0 for a
\* one-receiver session would have §5.3's automatic suppression take every
\* back-off (README, open questions).
ASSUME Kb \in Nat \ {0} /\ Robust \in Nat \ {0} /\ MaxLoss \in Nat
ASSUME \A b \in {UnicastNack, AckReq, Purge, FaultyReceiver, IdleOnAnyMessage, SsmRuleAnyMode} :
           b \in BOOLEAN

Grtt == 2                           \* ticks
Blk == 0 .. (NBlk - 1)
Esi == 0 .. (K + P - 1)             \* encoding symbol ids: 0 .. K-1 source, K .. parity
NSrc == NBlk * K                    \* the object's source symbols, in transmission order
Item == Blk \X Esi                  \* a repair request item (§4.3.1: block, symbol)
Nodes == Rcv \cup {"sender"}

BackoffMax == Kb * Grtt
RcvrHoldoff == (Kb + 2) * Grtt
Inactivity == Robust * 2 * Grtt
SndrAggregate == (Kb + 1) * Grtt
SndrHoldoff == 1 * Grtt
FlushGap == 2 * Grtt

(***************************************************************************)
(* Messages.  One record shape for all; a field a kind does not carry is   *)
(* -1, {} or FALSE.  "pos" is the sender's transmission position: the      *)
(* number of source symbols it has sent (a DATA of source symbol i says    *)
(* i + 1; a FLUSH says NSrc, its watermark).                               *)
(***************************************************************************)
\* @typeAlias: msg = {k: Str, src: Str, dst: Str, blk: Int, esi: Int, pos: Int, items: Set(<<Int, Int>>), acking: Set(Str), repair: Bool, explicit: Bool};
\* @typeAlias: event = {actor: Str, action: Str, dir: Str, rx: Set($msg), tx: Set($msg), lost: Set($msg), nack: Set(<<Int, Int>>), heard: Set(<<Int, Int>>)};
NORM_typedefs == TRUE

Kinds == {"DATA", "FLUSH", "SQUELCH", "ADV", "NACK", "ACK"}
Msg(k, src, dst) ==
    [k |-> k, src |-> src, dst |-> dst, blk |-> -1, esi |-> -1, pos |-> -1, items |-> {},
     acking |-> {}, repair |-> FALSE, explicit |-> FALSE]
\* one copy per receiver of a multicast sender message
ToAll(m) == {[m EXCEPT !.dst = r] : r \in Rcv}

VARIABLES
    \* @type: [pos: Int, par: Int -> Int, sent: Bool, mode: Str, t: Int, agg: Set(<<Int, Int>>), emax: Int -> Int, queue: Set(<<Int, Int, Bool>>), flushes: Int, ft: Int, acked: Set(Str), polled: Str -> Int, wm: Str, holds: Bool, squelch: Bool, adv: Bool];
    snd,    \* pos: source symbols sent; par: parity sent per block; sent: a message
            \* sent this tick; mode: "idle", "agg" (aggregating NACKs), "repair"
            \* (sending the repair queue), "hold" (hold-off), t: its timer;
            \* agg: the repair state aggregated, emax: each block's largest
            \* erasure count in it; queue: repairs still to send, each
            \* <<block, symbol, explicit>>;
            \* flushes: FLUSHes sent in this flush process; ft: ticks to the next;
            \* acked/polled: the watermark's acknowledgments and polls per node;
            \* wm: "none", "pending", "completed", "failed"; holds: the object is
            \* still held for repair; squelch: a SQUELCH is due; adv: the
            \* aggregated state has been advertised (REPAIR_ADV)
    \* @type: Str -> [got: Int -> Set(Int), hz: Int, st: Str, t: Int, need: Set(<<Int, Int>>), heard: Set(<<Int, Int>>), cue: Bool, idle: Int, idles: Int, ack: Bool, ackt: Int, cur: Int, out: Str];
    rcv,    \* got: symbols held per block; hz: the sender's position as heard;
            \* st: "listen", "backoff", "holdoff", t: its timer; need: the repair
            \* needs when the back-off began; heard: repair state overheard in it;
            \* cue: a NACK initiation point passed (§5.3); idle: the inactivity
            \* timer; idles: its expiries; ack: an ACK(FLUSH) is due, ackt: the
            \* ticks left to send it (§5.5.3: within 1*GRTT); cur: the sender's
            \* transmission position as last heard, in source symbols sent (a
            \* repair of block b moves it back to b*K, a FLUSH to NSrc);
            \* out: "open", "delivered", "incomplete"
    \* @type: Set($msg);
    air,    \* copies sent in this tick: they arrive in the next
    \* @type: Set($msg);
    due,    \* copies that arrive now (each is received or lost before time goes on)
    \* @type: Int;
    lost,   \* copies lost so far
    \* @type: $event;
    lastEvent

protoVars == <<snd, rcv, air, due, lost>>
vars == <<protoVars, lastEvent>>

\* What a step did: its actor ("sender", a receiver, "channel", "clock"),
\* the direction it sends in ("forward" from the sender, "return" from a
\* receiver), the copies it took, sent and lost; a NACK decision's needs
\* and the repair state heard in the back-off.
Dir(actor) == IF actor = "sender" THEN "forward" ELSE "return"
Ev(actor, action, rx, tx) ==
    [actor |-> actor, action |-> action, dir |-> Dir(actor), rx |-> rx, tx |-> tx, lost |-> {},
     nack |-> {}, heard |-> {}]

-----------------------------------------------------------------------------
(* ------------------------ what a receiver knows ------------------------ *)

Decoded(r, b) == Cardinality(rcv[r].got[b]) >= K
HasObject(r) == \A b \in Blk : Decoded(r, b)
\* A block whose end the sender has passed, as far as r heard (§5.3: NACKs
\* are initiated at block boundaries, the object's end or a FLUSH).
Passed(r, b) == rcv[r].hz >= (b + 1) * K
\* The symbols r asks for in block b (§5.3): its erasure count's worth, taken
\* in order from the parity symbols (lowest first) and then the highest
\* missing source symbols, leaving out what it holds.
Order(b) == [i \in 0 .. (K + P - 1) |-> IF i < P THEN K + i ELSE K - 1 - (i - P)]
Wanted(r, b) ==
    LET e == K - Cardinality(rcv[r].got[b])
        cand == {i \in 0 .. (K + P - 1) : Order(b)[i] \notin rcv[r].got[b]}
        first == {i \in cand : Cardinality({j \in cand : j < i}) < e}
    IN {<<b, Order(b)[i]>> : i \in first}
Needs(r) == UNION {Wanted(r, b) : b \in {c \in Blk : Passed(r, c) /\ ~Decoded(r, c)}}
\* Overheard repair state that equals or supersedes r's needs (§5.3 (2)).
Covered(r, items) == items \subseteq rcv[r].heard

-----------------------------------------------------------------------------

TypeOK ==
    /\ snd.pos \in 0 .. NSrc /\ snd.par \in [Blk -> 0 .. P] /\ snd.sent \in BOOLEAN
    /\ snd.mode \in {"idle", "agg", "repair", "hold"} /\ snd.t \in 0 .. SndrAggregate
    /\ snd.agg \subseteq Item /\ snd.emax \in [Blk -> 0 .. (K + P)]
    /\ snd.queue \subseteq Blk \X Esi \X BOOLEAN
    /\ snd.flushes \in 0 .. Robust /\ snd.ft \in 0 .. FlushGap
    /\ snd.acked \subseteq Rcv /\ snd.polled \in [Rcv -> 0 .. Robust]
    /\ snd.wm \in {"none", "pending", "completed", "failed"}
    /\ snd.holds \in BOOLEAN /\ snd.squelch \in BOOLEAN /\ snd.adv \in BOOLEAN
    /\ \A r \in Rcv :
        /\ rcv[r].got \in [Blk -> SUBSET Esi] /\ rcv[r].hz \in 0 .. NSrc
        /\ rcv[r].st \in {"listen", "backoff", "holdoff"} /\ rcv[r].t \in 0 .. RcvrHoldoff
        /\ rcv[r].need \subseteq Item /\ rcv[r].heard \subseteq Item
        /\ rcv[r].idle \in 0 .. Inactivity /\ rcv[r].idles \in 0 .. Robust
        /\ rcv[r].ackt \in 0 .. Grtt /\ rcv[r].cur \in 0 .. NSrc
        /\ rcv[r].out \in {"open", "delivered", "incomplete"}
    /\ \A m \in air \cup due : m.k \in Kinds /\ m.src \in Nodes /\ m.dst \in Nodes
    /\ lost \in 0 .. MaxLoss

Init ==
    /\ snd = [pos |-> 0, par |-> [b \in Blk |-> 0], sent |-> FALSE, mode |-> "idle", t |-> 0,
              agg |-> {}, emax |-> [b \in Blk |-> 0], queue |-> {}, flushes |-> 0, ft |-> 0, acked |-> {},
              polled |-> [r \in Rcv |-> 0], wm |-> IF AckReq THEN "pending" ELSE "none",
              holds |-> TRUE, squelch |-> FALSE, adv |-> FALSE]
    /\ rcv = [r \in Rcv |-> [got |-> [b \in Blk |-> {}], hz |-> 0, st |-> "listen", t |-> 0,
                             need |-> {}, heard |-> {}, cue |-> FALSE, idle |-> Inactivity,
                             idles |-> 0, ack |-> FALSE, ackt |-> 0, cur |-> 0,
                             out |-> "open"]]
    /\ air = {} /\ due = {} /\ lost = 0
    /\ lastEvent = Ev("none", "Init", {}, {})

-----------------------------------------------------------------------------
(* ------------------------------- sender -------------------------------- *)

\* The sender sends at most one message per tick.
SenderSends(action, tx) ==
    /\ ~snd.sent
    /\ air' = air \cup tx
    /\ lastEvent' = Ev("sender", action, {}, tx)

DataMsg(b, e, pos, repair, explicit) ==
    [Msg("DATA", "sender", "") EXCEPT !.blk = b, !.esi = e, !.pos = pos, !.repair = repair,
                                      !.explicit = explicit]

\* New data: the next source symbol, while no repair is queued (§5.1; repair
\* goes first once the aggregation period has ended, §5.4.1).
SenderSendData ==
    /\ snd.pos < NSrc /\ snd.queue = {}
    /\ LET b == snd.pos \div K
           e == snd.pos % K
       IN SenderSends("SenderSendData", ToAll(DataMsg(b, e, snd.pos + 1, FALSE, FALSE)))
    /\ snd' = [snd EXCEPT !.pos = @ + 1, !.sent = TRUE]
    /\ UNCHANGED <<rcv, due, lost>>

\* A repair symbol: the lowest queued item (§5.4.1: "the lowest ordinal
\* repair data"), flagged explicit unless it is fresh parity (§5.4.2).
SenderSendRepair ==
    /\ snd.queue # {}
    /\ \E it \in snd.queue :
        /\ \A o \in snd.queue : it[1] < o[1] \/ (it[1] = o[1] /\ it[2] <= o[2])
        /\ SenderSends("SenderSendRepair", ToAll(DataMsg(it[1], it[2], snd.pos, TRUE, it[3])))
        /\ snd' = [snd EXCEPT !.queue = @ \ {it}, !.sent = TRUE,
                              !.mode = IF @ = "repair" /\ snd.queue = {it} THEN "hold" ELSE @,
                              !.t = IF snd.mode = "repair" /\ snd.queue = {it} THEN SndrHoldoff
                                    ELSE @]
    /\ UNCHANGED <<rcv, due, lost>>

\* The flush process (§4.2.3.1): at the end of data and repairs, a FLUSH
\* every 2*GRTT, Robust times, or with AckReq while an acking node list is
\* left whose nodes were polled fewer than Robust times (§5.5.3).  Repairs
\* after the watermark's end are flushed again, Robust times (§4.2.3.1:
\* "SHALL re-initiate the flush process").
Unacked == {r \in Rcv : r \notin snd.acked /\ snd.polled[r] < Robust}
Flushing ==
    /\ snd.pos = NSrc /\ snd.queue = {} /\ snd.mode \in {"idle", "hold"} /\ snd.holds
    /\ IF AckReq /\ snd.wm = "pending" THEN Unacked # {} ELSE snd.flushes < Robust
SenderSendFlush ==
    /\ Flushing /\ snd.ft = 0
    /\ LET acking == IF AckReq THEN Unacked ELSE {}
           m == [Msg("FLUSH", "sender", "") EXCEPT !.pos = NSrc, !.acking = acking]
       IN /\ SenderSends("SenderSendFlush", ToAll(m))
          /\ snd' = [snd EXCEPT !.flushes = IF @ < Robust THEN @ + 1 ELSE @, !.ft = FlushGap,
                                !.sent = TRUE,
                                !.polled = [r \in Rcv |-> IF r \in acking THEN @[r] + 1 ELSE @[r]]]
    /\ UNCHANGED <<rcv, due, lost>>

\* The watermark's outcome (§5.5.3): every node acknowledged, or some left
\* unanswered after Robust polls, 2*GRTT after the last.  An ACK(FLUSH)
\* sent at the end of its 1*GRTT window arrives just then: arrivals of that
\* instant are taken first (GRTT bounds the round trip from above).
SenderEndWatermark ==
    /\ snd.wm = "pending" /\ snd.pos = NSrc /\ snd.queue = {} /\ snd.mode \in {"idle", "hold"}
    /\ Unacked = {} /\ snd.ft = 0
    /\ ~\E m \in due : m.k = "ACK" /\ m.dst = "sender"
    /\ snd' = [snd EXCEPT !.wm = IF snd.acked = Rcv THEN "completed" ELSE "failed",
                          !.flushes = Robust]
    /\ lastEvent' = Ev("sender", "SenderEndWatermark", {}, {})
    /\ UNCHANGED <<rcv, air, due, lost>>

\* The application releases the object once the flush process is over: the
\* sender no longer holds it for repair (§5.4.3's "data it is no longer
\* supporting").
SenderPurgeObject ==
    /\ Purge /\ snd.holds /\ snd.pos = NSrc /\ snd.queue = {} /\ snd.mode \in {"idle", "hold"}
    /\ ~Flushing /\ snd.wm # "pending"
    /\ snd' = [snd EXCEPT !.holds = FALSE, !.agg = {}, !.emax = [b \in Blk |-> 0], !.mode = "idle",
                          !.t = 0]
    /\ lastEvent' = Ev("sender", "SenderPurgeObject", {}, {})
    /\ UNCHANGED <<rcv, air, due, lost>>

\* A SQUELCH for a NACK of an object no longer held (§5.4.3).
SenderSendSquelch ==
    /\ snd.squelch
    /\ SenderSends("SenderSendSquelch", ToAll([Msg("SQUELCH", "sender", "") EXCEPT !.pos = NSrc]))
    /\ snd' = [snd EXCEPT !.squelch = FALSE, !.sent = TRUE]
    /\ UNCHANGED <<rcv, due, lost>>

\* The repair state advertised while unicast NACKs are aggregated (§5.4.4).
SenderSendRepairAdv ==
    /\ UnicastNack /\ snd.mode = "agg" /\ ~snd.adv
    /\ SenderSends("SenderSendRepairAdv",
                   ToAll([Msg("ADV", "sender", "") EXCEPT !.pos = snd.pos, !.items = snd.agg]))
    /\ snd' = [snd EXCEPT !.sent = TRUE, !.adv = TRUE]
    /\ UNCHANGED <<rcv, due, lost>>

\* Each block's largest erasure count: a NACK asks for as many symbols of a
\* block as it misses (§5.3).
Erasures(emax, items) ==
    [b \in Blk |-> LET e == Cardinality({it \in items : it[1] = b})
                   IN IF e > emax[b] THEN e ELSE emax[b]]

\* A NACK reaching the sender.  While it holds the object: outside a cycle
\* it starts the aggregation period and interrupts the flush process
\* (§4.2.3.1, §5.4.1); during one it is aggregated; while repairs are
\* sent or in the hold-off it is dropped (§5.4.1 takes it only for content
\* past the transmission position; README, open questions).
SenderRecvNack ==
    \E m \in due :
        /\ m.k = "NACK" /\ m.dst = "sender"
        /\ due' = due \ {m}
        /\ IF ~snd.holds
           THEN snd' = [snd EXCEPT !.squelch = TRUE]
           ELSE IF snd.mode = "idle"
           THEN snd' = [snd EXCEPT !.mode = "agg", !.t = SndrAggregate, !.agg = m.items,
                                   !.emax = Erasures(snd.emax, m.items),
                                   !.adv = FALSE, !.flushes = 0, !.ft = 0,
                                   !.polled = [r \in Rcv |-> 0]]
           ELSE IF snd.mode = "agg"
           THEN snd' = [snd EXCEPT !.agg = @ \cup m.items, !.emax = Erasures(@, m.items),
                                   !.adv = @ /\ m.items \subseteq snd.agg]
           ELSE UNCHANGED snd
        /\ lastEvent' = Ev("sender", "SenderRecvNack", {m}, {})
        /\ UNCHANGED <<rcv, air, lost>>

\* The end of the aggregation period (§5.4.1, §5.4.2): per block, fresh
\* (never sent) parity up to the block's largest erasure count; where that
\* count is more than the fresh parity left, the requested symbols already
\* sent as well, as explicit repair ("SHOULD NOT resort to explicit
\* transmission ... until after exhausting its supply of fresh (unsent)
\* parity"); a requested parity symbol never sent goes out as fresh.
AskedIn(items, b) == {it \in items : it[1] = b}
FreshLeft(b) == P - snd.par[b]
FreshCount(b) == IF snd.emax[b] < FreshLeft(b) THEN snd.emax[b] ELSE FreshLeft(b)
Repairs ==
    UNION {{<<b, K + snd.par[b] + i, FALSE>> : i \in 0 .. (FreshCount(b) - 1)}
           \cup (IF snd.emax[b] > FreshLeft(b)
                 THEN {<<it[1], it[2], TRUE>> : it \in {x \in AskedIn(snd.agg, b) :
                                                            x[2] < K + snd.par[b]}}
                 ELSE {})
           : b \in Blk}
SenderEndAggregation ==
    /\ snd.mode = "agg" /\ snd.t = 0
    /\ snd' = [snd EXCEPT !.mode = IF Repairs = {} THEN "hold" ELSE "repair", !.queue = Repairs,
                          !.t = IF Repairs = {} THEN SndrHoldoff ELSE 0, !.agg = {},
                          !.emax = [b \in Blk |-> 0],
                          !.par = [b \in Blk |-> @[b] + FreshCount(b)]]
    /\ lastEvent' = Ev("sender", "SenderEndAggregation", {}, {})
    /\ UNCHANGED <<rcv, air, due, lost>>

\* The end of the hold-off: a later NACK starts a new cycle (§5.4.1).
SenderEndHoldoff ==
    /\ snd.mode = "hold" /\ snd.t = 0
    /\ snd' = [snd EXCEPT !.mode = "idle"]
    /\ lastEvent' = Ev("sender", "SenderEndHoldoff", {}, {})
    /\ UNCHANGED <<rcv, air, due, lost>>

\* An ACK(FLUSH) whose watermark matches (§5.5.3).
SenderRecvAck ==
    \E m \in due :
        /\ m.k = "ACK" /\ m.dst = "sender" /\ snd.wm = "pending"
        /\ due' = due \ {m}
        /\ snd' = [snd EXCEPT !.acked = @ \cup {m.src}]
        /\ lastEvent' = Ev("sender", "SenderRecvAck", {m}, {})
        /\ UNCHANGED <<rcv, air, lost>>

-----------------------------------------------------------------------------
(* ------------------------------ receivers ------------------------------ *)

Open(r) == rcv[r].out = "open"

\* A sender message reaching r restarts the inactivity timer: NORM_DATA
\* always, the others under IdleOnAnyMessage (reading 1).  Data adds its
\* symbol and moves r's view of the sender's transmission position ("cur":
\* a repair moves it back, the "rewind" of RFC 5401 §3.2.2).
\* New data may move "hz", the furthest point r knows the sender passed,
\* over a block boundary: a NACK initiation point (§5.3).
ReceiverRecvData(r) ==
    \E m \in due :
        /\ m.k = "DATA" /\ m.dst = r /\ Open(r)
        /\ due' = due \ {m}
        /\ LET hz == IF m.repair THEN rcv[r].hz ELSE IF m.pos > rcv[r].hz THEN m.pos ELSE rcv[r].hz
               crossed == \E b \in Blk : (b + 1) * K > rcv[r].hz /\ (b + 1) * K <= hz
           IN rcv' = [rcv EXCEPT ![r].got[m.blk] = @ \cup {m.esi}, ![r].hz = hz,
                                 ![r].cur = IF m.repair THEN m.blk * K ELSE m.pos,
                                 ![r].cue = @ \/ (crossed /\ rcv[r].st = "listen"),
                                 ![r].idle = Inactivity,
                                 ![r].idles = 0]
        /\ lastEvent' = Ev(r, "ReceiverRecvData", {m}, {})
        /\ UNCHANGED <<snd, air, lost>>

\* A FLUSH: its watermark is the object's end (a NACK initiation point,
\* §5.3, §4.2.3.1); a listed receiver holding everything up to it owes an
\* ACK(FLUSH) within 1*GRTT (§5.5.3).
ReceiverRecvFlush(r) ==
    \E m \in due :
        /\ m.k = "FLUSH" /\ m.dst = r
        /\ due' = due \ {m}
        /\ rcv' = [rcv EXCEPT ![r].hz = NSrc, ![r].cur = NSrc, ![r].cue = (rcv[r].st = "listen"),
                              ![r].idle = IF IdleOnAnyMessage THEN Inactivity ELSE @,
                              ![r].idles = IF IdleOnAnyMessage THEN 0 ELSE @,
                              ![r].ack = @ \/ (r \in m.acking /\ HasObject(r)),
                              ![r].ackt = IF ~rcv[r].ack /\ r \in m.acking /\ HasObject(r)
                                          THEN Grtt ELSE @]
        /\ lastEvent' = Ev(r, "ReceiverRecvFlush", {m}, {})
        /\ UNCHANGED <<snd, air, lost>>

ReceiverSendAck(r) ==
    /\ rcv[r].ack
    /\ LET m == [Msg("ACK", r, "sender") EXCEPT !.pos = NSrc]
       IN /\ air' = air \cup {m}
          /\ lastEvent' = Ev(r, "ReceiverSendAck", {}, {m})
    /\ rcv' = [rcv EXCEPT ![r].ack = FALSE]
    /\ UNCHANGED <<snd, due, lost>>

\* Repair state overheard: another receiver's NACK, or the sender's
\* REPAIR_ADV (§5.3: accumulated during the back-off; §5.4.4).  Only what
\* arrives while the back-off runs counts: a copy arriving in the instant
\* the back-off starts or ends races it, and a zero back-off hears nothing.
ReceiverRecvRepairState(r) ==
    \E m \in due :
        /\ m.k \in {"NACK", "ADV"} /\ m.dst = r /\ Open(r)
        /\ due' = due \ {m}
        /\ rcv' = [rcv EXCEPT ![r].heard = IF rcv[r].st = "backoff" /\ rcv[r].t > 0 THEN @ \cup m.items
                                           ELSE @,
                              ![r].idle = IF m.k = "ADV" /\ IdleOnAnyMessage THEN Inactivity
                                          ELSE @,
                              ![r].idles = IF m.k = "ADV" /\ IdleOnAnyMessage THEN 0 ELSE @]
        /\ lastEvent' = Ev(r, "ReceiverRecvRepairState", {m}, {})
        /\ UNCHANGED <<snd, air, lost>>

\* A SQUELCH: the sender no longer holds the object; r stops asking for it
\* (§4.2.3.3, §5.4.3).
ReceiverRecvSquelch(r) ==
    \E m \in due :
        /\ m.k = "SQUELCH" /\ m.dst = r /\ Open(r)
        /\ due' = due \ {m}
        /\ rcv' = [rcv EXCEPT ![r].out = "incomplete", ![r].st = "listen",
                              ![r].cue = FALSE]
        /\ lastEvent' = Ev(r, "ReceiverRecvSquelch", {m}, {})
        /\ UNCHANGED <<snd, air, lost>>

\* The object decodes: every block has K distinct symbols (RFC 5510 §8.3.1).
ReceiverDeliverObject(r) ==
    /\ Open(r) /\ HasObject(r)
    /\ rcv' = [rcv EXCEPT ![r].out = "delivered", ![r].st = "listen", ![r].cue = FALSE]
    /\ lastEvent' = Ev(r, "ReceiverDeliverObject", {}, {})
    /\ UNCHANGED <<snd, air, due, lost>>

\* A back-off drawn over (Kb-1)*GRTT is suppressed at once and the hold-off
\* entered (§5.3): with unicast NACKs always; with multicast NACKs under
\* SsmRuleAnyMode (reading 2), the default, as the SHALL names no mode.
SsmSuppressed(d) == (UnicastNack \/ SsmRuleAnyMode) /\ d > (Kb - 1) * Grtt
\* The NACK procedure begins at an initiation point with a back-off drawn
\* from 0 .. Kb*GRTT (§5.3, RFC 5401 §3.2.2).
ReceiverStartBackoff(r) ==
    /\ Open(r) /\ rcv[r].st = "listen" /\ rcv[r].cue /\ Needs(r) # {}
    /\ \E d \in 0 .. BackoffMax :
        /\ ~SsmSuppressed(d)
        /\ rcv' = [rcv EXCEPT ![r].st = "backoff", ![r].t = d, ![r].need = Needs(r),
                              ![r].heard = {}, ![r].cue = FALSE]
    /\ lastEvent' = Ev(r, "ReceiverStartBackoff", {}, {})
    /\ UNCHANGED <<snd, air, due, lost>>

ReceiverSkipBackoff(r) ==
    /\ Open(r) /\ rcv[r].st = "listen" /\ rcv[r].cue /\ Needs(r) # {}
    /\ \E d \in 0 .. BackoffMax : SsmSuppressed(d)
    /\ rcv' = [rcv EXCEPT ![r].st = "holdoff", ![r].t = RcvrHoldoff, ![r].cue = FALSE]
    /\ lastEvent' = [Ev(r, "ReceiverSkipBackoff", {}, {}) EXCEPT !.nack = Needs(r)]
    /\ UNCHANGED <<snd, air, due, lost>>

\* An initiation point with nothing missing is passed over.
ReceiverClearCue(r) ==
    /\ rcv[r].cue /\ (~Open(r) \/ Needs(r) = {})
    /\ rcv' = [rcv EXCEPT ![r].cue = FALSE]
    /\ lastEvent' = Ev(r, "ReceiverClearCue", {}, {})
    /\ UNCHANGED <<snd, air, due, lost>>

\* The back-off ends.  The NACK asks for what is still missing of the needs
\* at its start; it is sent only if the sender's position is past the
\* earliest of them (§5.3 (1)) and the overheard repair state does not
\* equal or supersede them (§5.3 (2)); else it is suppressed.  Either way
\* the hold-off begins.
Asked(r) == rcv[r].need \cap Needs(r)
\* Condition 1 of §5.3: the sender's current transmission position, as r
\* last heard it, is past r's earliest missing source symbol in the blocks
\* it asks for (not rewound to it by a repair).
SenderPast(r) ==
    \E b \in {it[1] : it \in Asked(r)} :
        \E i \in (0 .. (K - 1)) \ rcv[r].got[b] : rcv[r].cur > b * K + i
NackMsgs(r) ==
    LET m == [Msg("NACK", r, "sender") EXCEPT !.items = Asked(r)]
    IN IF UnicastNack THEN {m} ELSE {m} \cup {[m EXCEPT !.dst = o] : o \in Rcv \ {r}}
ReceiverSendNack(r) ==
    /\ Open(r) /\ rcv[r].st = "backoff" /\ rcv[r].t = 0
    /\ Asked(r) # {} /\ SenderPast(r) /\ (FaultyReceiver \/ ~Covered(r, Asked(r)))
    /\ air' = air \cup NackMsgs(r)
    /\ rcv' = [rcv EXCEPT ![r].st = "holdoff", ![r].t = RcvrHoldoff]
    /\ lastEvent' = [Ev(r, "ReceiverSendNack", {}, NackMsgs(r)) EXCEPT !.nack = Asked(r),
                                                                      !.heard = rcv[r].heard]
    /\ UNCHANGED <<snd, due, lost>>
ReceiverSuppressNack(r) ==
    /\ rcv[r].st = "backoff" /\ rcv[r].t = 0
    /\ \/ ~Open(r) \/ Asked(r) = {} \/ ~SenderPast(r)
       \/ ~FaultyReceiver /\ Covered(r, Asked(r))
    /\ rcv' = [rcv EXCEPT ![r].st = "holdoff", ![r].t = RcvrHoldoff]
    /\ lastEvent' = [Ev(r, "ReceiverSuppressNack", {}, {}) EXCEPT !.nack = Asked(r),
                                                                  !.heard = rcv[r].heard]
    /\ UNCHANGED <<snd, air, due, lost>>

ReceiverEndHoldoff(r) ==
    /\ rcv[r].st = "holdoff" /\ rcv[r].t = 0
    /\ rcv' = [rcv EXCEPT ![r].st = "listen"]
    /\ lastEvent' = Ev(r, "ReceiverEndHoldoff", {}, {})
    /\ UNCHANGED <<snd, air, due, lost>>

\* Inactivity (§5.3): no sender message for T_inactivity.  A receiver still
\* missing data initiates a NACK cycle, Robust times; then it gives the
\* object up.  An expiry in a back-off or hold-off initiates nothing (§5.3:
\* the hold-off "constrains itself to not re-initiate") and is not counted.
ReceiverTimeoutInactivity(r) ==
    /\ Open(r) /\ rcv[r].idle = 0
    /\ rcv' = [rcv EXCEPT ![r].idle = Inactivity,
                          ![r].idles = IF rcv[r].st = "listen" THEN @ + 1 ELSE @,
                          ![r].cue = (rcv[r].st = "listen")]
    /\ rcv[r].idles < Robust
    /\ lastEvent' = Ev(r, "ReceiverTimeoutInactivity", {}, {})
    /\ UNCHANGED <<snd, air, due, lost>>
ReceiverAbandonObject(r) ==
    /\ Open(r) /\ rcv[r].idle = 0 /\ rcv[r].idles = Robust
    /\ rcv' = [rcv EXCEPT ![r].out = "incomplete", ![r].st = "listen", ![r].cue = FALSE]
    /\ lastEvent' = Ev(r, "ReceiverAbandonObject", {}, {})
    /\ UNCHANGED <<snd, air, due, lost>>

-----------------------------------------------------------------------------
(* ------------------------------- channel ------------------------------- *)

ChannelLoseMsg ==
    /\ lost < MaxLoss
    /\ \E m \in due :
        /\ due' = due \ {m}
        /\ lost' = lost + 1
        /\ lastEvent' = [Ev("channel", "ChannelLoseMsg", {}, {}) EXCEPT !.dir = Dir(m.src),
                                                                      !.lost = {m}]
    /\ UNCHANGED <<snd, rcv, air>>

\* A copy for a receiver that has left the object (delivered or given up)
\* is taken and ignored, as one for the sender after the object ends.
Ended(m) ==
    \/ m.dst \in Rcv /\ ~Open(m.dst) /\ m.k # "FLUSH"
    \/ m.dst = "sender" /\ m.k = "ACK" /\ snd.wm # "pending"
ChannelDropStale ==
    \E m \in due :
        /\ Ended(m)
        /\ due' = due \ {m}
        /\ lastEvent' = Ev("channel", "ChannelDropStale", {m}, {})
        /\ UNCHANGED <<snd, rcv, air, lost>>

(***************************************************************************)
(* Time.  A tick passes once every copy due has arrived or been lost and   *)
(* no timer stands at 0: the copies sent in this tick become due, and      *)
(* every running timer counts down.                                        *)
(***************************************************************************)
Dec(n) == IF n > 0 THEN n - 1 ELSE 0
Urgent ==
    \/ due # {}
    \/ snd.mode \in {"agg", "hold"} /\ snd.t = 0
    \/ Flushing /\ snd.ft = 0 /\ ~snd.sent
    \/ snd.wm = "pending" /\ ENABLED SenderEndWatermark
    \/ snd.squelch /\ ~snd.sent
    \/ snd.queue # {} /\ ~snd.sent
    \/ snd.pos < NSrc /\ ~snd.sent
    \/ \E r \in Rcv :
        \/ rcv[r].st # "listen" /\ rcv[r].t = 0
        \/ rcv[r].cue
        \/ rcv[r].ack /\ rcv[r].ackt = 0
        \/ Open(r) /\ (rcv[r].idle = 0 \/ HasObject(r))
ClockTick ==
    /\ ~Urgent
    /\ due' = air /\ air' = {}
    /\ snd' = [snd EXCEPT !.sent = FALSE, !.t = Dec(@), !.ft = Dec(@)]
    /\ rcv' = [r \in Rcv |-> [rcv[r] EXCEPT !.t = Dec(@), !.ackt = Dec(@),
                              !.idle = IF Open(r) THEN Dec(@) ELSE @]]
    /\ lastEvent' = Ev("clock", "ClockTick", {}, {})
    /\ UNCHANGED lost

-----------------------------------------------------------------------------

SenderNext ==
    \/ SenderSendData
    \/ SenderSendRepair
    \/ SenderSendFlush
    \/ SenderEndWatermark
    \/ SenderPurgeObject
    \/ SenderSendSquelch
    \/ SenderSendRepairAdv
    \/ SenderRecvNack
    \/ SenderEndAggregation
    \/ SenderEndHoldoff
    \/ SenderRecvAck

ReceiverNext(r) ==
    \/ ReceiverRecvData(r)
    \/ ReceiverRecvFlush(r)
    \/ ReceiverSendAck(r)
    \/ ReceiverRecvRepairState(r)
    \/ ReceiverRecvSquelch(r)
    \/ ReceiverDeliverObject(r)
    \/ ReceiverStartBackoff(r)
    \/ ReceiverSkipBackoff(r)
    \/ ReceiverClearCue(r)
    \/ ReceiverSendNack(r)
    \/ ReceiverSuppressNack(r)
    \/ ReceiverEndHoldoff(r)
    \/ ReceiverTimeoutInactivity(r)
    \/ ReceiverAbandonObject(r)

ChannelNext ==
    \/ ChannelLoseMsg
    \/ ChannelDropStale
    \/ ClockTick

Next ==
    \/ SenderNext
    \/ \E r \in Rcv : ReceiverNext(r)
    \/ ChannelNext

Spec == Init /\ [][Next]_vars /\ WF_vars(Next)

-----------------------------------------------------------------------------
(* ----------------------------- properties ------------------------------ *)

\* An object is delivered only when every block decodes (RFC 5510 §8.3.1).
DeliveredDecodes == \A r \in Rcv : rcv[r].out = "delivered" => HasObject(r)

\* The sender reports its watermark complete only when every listed
\* receiver acknowledged it, and a receiver acknowledges only the object
\* it holds whole (§5.5.3).
WatermarkAcknowledged ==
    /\ snd.wm = "completed" => snd.acked = Rcv
    /\ \A r \in snd.acked : HasObject(r)

\* The sender never sends past the object's end.
WithinObject == \A m \in air \cup due : m.k = "DATA" => m.blk \in Blk /\ m.esi \in Esi

\* No symbol is queued twice in one repair cycle, once fresh and once
\* explicit (§5.4.2: fresh parity goes "in lieu of" what was requested).
RepairsDistinct == \A x, y \in snd.queue : x[1] = y[1] /\ x[2] = y[2] => x = y

Safety == DeliveredDecodes /\ WatermarkAcknowledged /\ WithinObject /\ RepairsDistinct

\* A receiver never NACKs what the repair state it overheard during its
\* back-off already equals or supersedes (§5.3 (2)).  An action property:
\* TLC checks it on every step, which the VIEW would not let an invariant
\* on the history variable do.
SuppressionKept ==
    [][lastEvent'.action = "ReceiverSendNack" => ~(lastEvent'.nack \subseteq lastEvent'.heard)]_vars

\* Every receiver ends: it delivers the object or gives it up (§5.3's
\* inactivity timeout bounds its NACK cycles once the sender is silent).
EventuallySettled == <>[](\A r \in Rcv : ~Open(r))

\* With no loss at all, every receiver delivers.
NoLossDelivers == <>[](lost = 0 => \A r \in Rcv : rcv[r].out = "delivered")

(***************************************************************************)
(* What small constants break, each checked where the constant is large    *)
(* enough and shown failing where it is not (README: the bounds):          *)
(*   NoFalseFailure   when the watermark is reported failed, a receiver    *)
(*                    lacks the object: with Robust = 1 one lost ACK       *)
(*                    fails a receiver that has it (MCNORM_robust1.cfg);   *)
(*                    with Robust = 2 and one loss it holds (robust2)      *)
(*   NeverSuppressed  no NACK is ever suppressed by repair state heard in  *)
(*                    its back-off: with Kb = 1 it holds (backoff1), since *)
(*                    the automatic suppression of a back-off over         *)
(*                    (Kb-1)*GRTT leaves only back-offs of 0; with Kb = 2  *)
(*                    TLC finds a suppression (backoff2)                   *)
(***************************************************************************)
NoFalseFailure ==
    [][snd.wm = "pending" /\ snd'.wm = "failed" => \E r \in Rcv : ~HasObject(r)]_vars
NeverSuppressed ==
    [][lastEvent'.action = "ReceiverSuppressNack" =>
         ~(lastEvent'.nack # {} /\ lastEvent'.nack \subseteq lastEvent'.heard)]_vars

=============================================================================
