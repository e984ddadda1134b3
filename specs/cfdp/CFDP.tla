-------------------------------- MODULE CFDP --------------------------------
(***************************************************************************)
(* CCSDS File Delivery Protocol (CFDP), CCSDS 727.0-B-5: one sending and   *)
(* one receiving entity, NTx transactions between them (each in its own    *)
(* transmission mode), and a channel in each direction that loses,         *)
(* reorders, delays, duplicates and corrupts PDUs and can go down.         *)
(*                                                                         *)
(* The book itself is not reachable here: every section number below is    *)
(* one an implementation's source cites for 727.0-B-5 (specs/cfdp/README,  *)
(* with the file that cites it); "no § cited" marks a procedure for which  *)
(* no source read gives one.                                               *)
(*                                                                         *)
(* Modelled:                                                               *)
(*   Metadata, File Data, EOF, ACK(EOF), NAK, Finished, ACK(Finished),     *)
(*   Prompt (NAK and Keep Alive) and Keep Alive PDUs (directive codes of   *)
(*   Table 5-4 in specs/cfdp/wire.json); one record shape for all, fields  *)
(*   a kind does not carry are 0, FALSE, "" or {}                          *)
(*   Class 1 (unacknowledged), with or without closure, and Class 2        *)
(*   (acknowledged), per transaction: Modes                                *)
(*   4.6.1.2   the receiver's checksum over the file at EOF (a File Data   *)
(*             PDU the channel corrupted with no PDU CRC to catch it makes *)
(*             it fail: condition "ChecksumFailure", Table 5-5 code 5)     *)
(*   4.6.3.2   the Class 1 sender's check timer awaiting Finished          *)
(*             (closure requested), check limit                            *)
(*   4.6.3.3   the Class 1 receiver's check timer and limit after EOF with *)
(*             data missing                                                *)
(*   4.6.4.3.1 lost-segment detection: immediate NAKs (NakMode            *)
(*             "immediate") as gaps appear, a deferred NAK after EOF,      *)
(*             prompted NAKs (Prompt(NAK)); a NAK also asks for the        *)
(*             Metadata when it is missing (the (0, 0) segment request)    *)
(*   4.6.4.7   the NAK timer and NAK limit; the first NAK does not count   *)
(*   4.6.6     the receiver's answer to EOF(cancel)                        *)
(*   4.7, 4.7.1 positive acknowledgment of EOF and Finished: timer, limit  *)
(*   4.7.2     an EOF is acknowledged even when the transaction is over    *)
(*   4.8       fault handlers: the fault's condition code and its handler  *)
(*             (FaultAbandons: abandon; any other: notice of cancellation) *)
(*   4.11.2.2  the sender's notice of cancellation (EOF(cancel));          *)
(*             4.11.2.2.3 a fault meanwhile abandons                       *)
(*   4.11.2.3.2 a fault while the Finished(cancel) is outstanding abandons *)
(*   cancel requests at either entity (no § cited), suspend and resume     *)
(*   requests (no § cited: a suspended entity sends nothing and its timers *)
(*   stand still for that transaction), the inactivity timer (no § cited)  *)
(*   and Keep Alive answering Prompt(Keep Alive) (no § cited)              *)
(*                                                                         *)
(* Abstracted away on purpose:                                             *)
(*   - bytes: the file is NSeg File Data segments 0..NSeg-1 of one size;   *)
(*     the EOF's file size and checksum are implied (both sides agree on   *)
(*     NSeg), so file-size errors (4.6.1.2.7, 4.6.1.2.9) do not arise; a   *)
(*     trace's Metadata or EOF(no error) stating another size is one the   *)
(*     model never sends (generators/cfdp/trace.py marks it bad)           *)
(*   - entity ids, sequence-number and field widths, segment metadata, the *)
(*     PDU CRC (a corrupted PDU with CRC on is a lost one), filestore      *)
(*     requests, messages to user, flow labels                             *)
(*   - the keep-alive limit (no progress reports are checked), the         *)
(*     "ignore" and "suspend" fault handlers                               *)
(*   - timing: a timer may expire at any time, except that (unless         *)
(*     PrematureTimeouts) it never expires while the PDU it guards, or an  *)
(*     answer that would stop it, is in a channel; a PDU the channel holds *)
(*     back (ChannelHoldPdu) is not in it: a delay may outlast a timer     *)
(*   - the channels are sets: two identical PDUs in flight at once are     *)
(*     one; any PDU in a channel may be the next delivered (reordering)    *)
(*                                                                         *)
(* Readings of what the standard leaves open (constants; README):          *)
(*   AckClosedFinished  a Finished reaching a sender whose transaction is  *)
(*                      over: TRUE (default) re-acknowledged; FALSE        *)
(*                      discarded (cfdp-py, cfdp-rs)                       *)
(*   FinishedOnDupEof   a repeated EOF reaching a Class 2 receiver that   *)
(*                      has sent Finished: FALSE (default) re-acknowledged *)
(*                      only (CF, Yamcs); TRUE, Finished is sent again too *)
(*                      (cfdp-rs)                                          *)
(*   SenderCheckTimer   a Class 1 sender with closure requested runs a     *)
(*                      check timer (TRUE, default: cfdp-py, cfdp-rs) or   *)
(*                      closes at EOF and ignores Finished (FALSE: CF)     *)
(*   FinishedBeforeEofAck a Finished reaching a Class 2 sender that still  *)
(*                      awaits its ACK(EOF): TRUE (default) taken and      *)
(*                      acknowledged (4.7.2 Note 2, as the sources quote   *)
(*                      it); FALSE discarded until the ACK(EOF) is in      *)
(*                      (cfdp-py, cfdp-rs, dariol83/ccsds)                 *)
(*                                                                         *)
(* Actions are named role + verb + object.  Rx... is a PDU reaching an     *)
(* open transaction; RxRedundant... one the transaction no longer needs;   *)
(* Timeout... a timer expiring below its limit; Fault... a limit reached   *)
(* or a check failed, declaring a fault (4.8).  Every step records what it *)
(* did in the history variable lastEvent (which every VIEW leaves out).    *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, Sequences

CONSTANTS
    \* @type: Int;
    NTx,                \* transactions, 1..NTx, all from the sender to the receiver
    \* @type: Int;
    NSeg,               \* File Data segments per file
    \* @type: Set(Str);
    Modes,              \* the modes a transaction may take: "c1", "c1c" (closure), "c2"
    \* @type: Str;
    NakMode,            \* "immediate" or "deferred" (4.6.4.3.1)
    \* @type: Int;
    MaxAck,             \* positive-ACK limit: retransmissions of EOF or Finished (4.7.1)
    \* @type: Int;
    MaxNak,             \* NAK limit: NAK-timer expiries that re-send the NAK (4.6.4.7)
    \* @type: Int;
    MaxCheck,           \* check limit: check-timer expiries (4.6.3.2, 4.6.3.3)
    \* @type: Int;
    MaxLoss,            \* the channels' loss budget (both directions)
    \* @type: Int;
    MaxLate,            \* PDUs the channels may hold back or duplicate
    \* @type: Int;
    MaxCorrupt,         \* File Data PDUs the channel may corrupt undetected
    \* @type: Int;
    MaxOutages,         \* times the link may go down, losing all in flight
    \* @type: Int;
    MaxCancels,         \* user cancel requests, either entity
    \* @type: Int;
    MaxSuspends,        \* user suspend requests, either entity
    \* @type: Int;
    MaxPrompts,         \* Prompt PDUs the sender may send
    \* @type: Set(Str);
    FaultAbandons,      \* conditions whose fault handler is "abandon" (4.8)
    \* @type: Bool;
    PrematureTimeouts,  \* may a timer expire while its answer is in flight?
    \* @type: Bool;
    FaultyReceiver,     \* fault injection: deliver without verifying the checksum
    \* @type: Bool;
    KeepAliveTimer,     \* may the receiver send Keep Alives on its own timer (4.6.5.2.1)?
    \* @type: Bool;
    AckClosedFinished,  \* reading 1 (README)
    \* @type: Bool;
    FinishedOnDupEof,   \* reading 2 (README)
    \* @type: Bool;
    SenderCheckTimer,   \* reading 3 (README)
    \* @type: Bool;
    FinishedBeforeEofAck \* reading 4 (README)

\* Condition codes (Table 5-5; specs/cfdp/wire.json names the numbers).
Faults == {"AckLimit", "ChecksumFailure", "NakLimit", "Inactivity", "CheckLimit"}
Conditions == {"NoError", "CancelRequest"} \cup Faults

ASSUME NTx \in Nat \ {0}
ASSUME NSeg \in Nat \ {0}
ASSUME Modes # {} /\ Modes \subseteq {"c1", "c1c", "c2"}
ASSUME NakMode \in {"immediate", "deferred"}
ASSUME \A n \in {MaxAck, MaxNak, MaxCheck, MaxLoss, MaxLate, MaxCorrupt, MaxOutages,
                 MaxCancels, MaxSuspends, MaxPrompts} : n \in Nat
ASSUME FaultAbandons \subseteq Faults
ASSUME \A b \in {PrematureTimeouts, FaultyReceiver, KeepAliveTimer, AckClosedFinished, FinishedOnDupEof, SenderCheckTimer,
                 FinishedBeforeEofAck} :
           b \in BOOLEAN

Tx == 1 .. NTx
Segs == 0 .. (NSeg - 1)

(***************************************************************************)
(* PDUs.                                                                   *)
(***************************************************************************)
\* @typeAlias: pdu = {k: Str, t: Int, seg: Int, bad: Bool, cc: Str, of: Str, segs: Set(Int), md: Bool, ok: Bool};
\* @typeAlias: loss = {dir: Str, pdu: $pdu};
\* @typeAlias: event = {actor: Str, action: Str, dir: Str, t: Int, rx: Set($pdu), tx: Set($pdu), lost: Set($pdu)};
CFDP_typedefs == TRUE

Kinds == {"MD", "FD", "EOF", "ACK", "NAK", "FIN", "PROMPT", "KA"}
Pdu(k, t) ==
    [k |-> k, t |-> t, seg |-> 0, bad |-> FALSE, cc |-> "", of |-> "", segs |-> {}, md |-> FALSE,
     ok |-> FALSE]
MdPdu(t) == Pdu("MD", t)
FdPdu(t, o) == [Pdu("FD", t) EXCEPT !.seg = o]
EofPdu(t, cc) == [Pdu("EOF", t) EXCEPT !.cc = cc]
\* ACK(EOF) or ACK(Finished): "of" names the directive acknowledged.
AckPdu(t, of, cc) == [Pdu("ACK", t) EXCEPT !.of = of, !.cc = cc]
\* NAK: the segments asked for again and whether the Metadata is (0, 0).
NakPdu(t, s, md) == [Pdu("NAK", t) EXCEPT !.segs = s, !.md = md]
\* Finished: condition code and delivery code (ok: complete).
FinPdu(t, cc, ok) == [Pdu("FIN", t) EXCEPT !.cc = cc, !.ok = ok]
PromptPdu(t, of) == [Pdu("PROMPT", t) EXCEPT !.of = of]
\* Keep Alive: the progress (here: how many segments are in, a count).
KaPdu(t, n) == [Pdu("KA", t) EXCEPT !.seg = n]

VARIABLES
    \* @type: Int -> Str;
    mode,       \* each transaction's transmission mode (4.6: Class 1 or 2)
    \* --- sending entity, per transaction ---
    \* @type: Int -> {phase: Str, md: Bool, next: Int, mdReq: Bool, retx: Set(Int), acked: Bool, tx: Int, check: Int, cc: Str, out: Str, susp: Bool};
    snd,        \* phase: "data" (initial transmission), "eof" (EOF sent, awaiting
                \* ACK and/or Finished), "cancel" (EOF(cancel) awaiting ACK), "closed";
                \* md: Metadata sent; next: next segment; mdReq/retx: what NAKs asked
                \* for; acked: the outstanding EOF answered (ACK or Finished); tx: times
                \* that EOF was sent;
                \* check: check-timer expiries; cc: condition; out: "open",
                \* "completed", "cancelled", "abandoned"; susp: suspended
    \* --- receiving entity, per transaction ---
    \* @type: Int -> {phase: Str, md: Bool, got: Set(Int), bad: Bool, eof: Str, nak: Int, armed: Bool, fin: $pdu, tx: Int, check: Int, cc: Str, out: Str, susp: Bool, kept: Bool, ackd: Bool};
    rcv,        \* phase: "none" (no PDU yet), "open", "fin" (Finished sent, awaiting
                \* its ACK), "closed"; got: segments in; bad: a corrupt one among them;
                \* eof: the EOF's condition ("" before); nak: NAK-timer expiries;
                \* armed: the NAK timer runs; fin: the Finished sent; tx: times sent;
                \* kept: the file was delivered complete and verified; ackd: the
                \* Finished was acknowledged
    \* --- channels and history ---
    \* @type: Set($pdu);
    fwd,        \* in flight sender -> receiver
    \* @type: Set($pdu);
    rtn,        \* in flight receiver -> sender
    \* @type: Set($loss);
    held,       \* copies the channel holds back (delayed or duplicated PDUs)
    \* @type: {loss: Int, late: Int, corrupt: Int, outages: Int, cancels: Int, suspends: Int, prompts: Int};
    spent,      \* the budgets used so far
    \* @type: Seq($loss);
    lostLog,    \* history: the PDUs the channel lost, in order
    \* @type: $event;
    lastEvent   \* history: what the last step did

protoVars == <<mode, snd, rcv, fwd, rtn, held, spent>>
vars == <<protoVars, lostLog, lastEvent>>

NoPdu == Pdu("", 0)
Ev(actor, action, dir, t, rx, tx) ==
    [actor |-> actor, action |-> action, dir |-> dir, t |-> t, rx |-> rx, tx |-> tx, lost |-> {}]

Open(st, t) == st[t].out = "open"
Missing(t) == Segs \ rcv[t].got
\* Everything of the file is in: the Metadata and every segment.
HasFile(t) == rcv[t].md /\ Missing(t) = {}
\* The segments a NAK asks for: the gaps below the highest segment received,
\* or all missing ones once the EOF is in (4.6.4.3.1).
Gaps(t) ==
    IF rcv[t].eof # "" THEN Missing(t)
    ELSE {o \in Missing(t) : \E g \in rcv[t].got : g > o}
Acknowledged(t) == mode[t] = "c2"
Closure(t) == mode[t] = "c1c"

TypeOK ==
    /\ mode \in [Tx -> Modes]
    /\ \A t \in Tx :
        /\ snd[t].phase \in {"data", "eof", "cancel", "closed"}
        /\ snd[t].next \in 0 .. NSeg /\ snd[t].retx \subseteq Segs
        /\ snd[t].tx \in 0 .. (MaxAck + 1) /\ snd[t].check \in 0 .. MaxCheck
        /\ snd[t].cc \in Conditions /\ snd[t].out \in {"open", "completed", "cancelled", "abandoned"}
        /\ rcv[t].phase \in {"none", "open", "fin", "closed"}
        /\ rcv[t].got \subseteq Segs /\ rcv[t].eof \in {""} \cup Conditions
        /\ rcv[t].nak \in 0 .. MaxNak /\ rcv[t].tx \in 0 .. (MaxAck + 1)
        /\ rcv[t].check \in 0 .. MaxCheck
        /\ rcv[t].cc \in Conditions /\ rcv[t].out \in {"open", "completed", "cancelled", "abandoned"}
    /\ \A p \in fwd : p.k \in {"MD", "FD", "EOF", "ACK", "PROMPT"} /\ p.t \in Tx
    /\ \A p \in rtn : p.k \in {"ACK", "NAK", "FIN", "KA"} /\ p.t \in Tx
    /\ \A h \in held : h.dir \in {"forward", "return"}
    /\ spent.loss <= MaxLoss /\ spent.late <= MaxLate /\ spent.corrupt <= MaxCorrupt
    /\ spent.outages <= MaxOutages /\ spent.cancels <= MaxCancels
    /\ spent.suspends <= MaxSuspends /\ spent.prompts <= MaxPrompts

Init ==
    /\ mode \in [Tx -> Modes]
    /\ snd = [t \in Tx |-> [phase |-> "data", md |-> FALSE, next |-> 0, mdReq |-> FALSE,
                            retx |-> {}, acked |-> FALSE, tx |-> 0, check |-> 0,
                            cc |-> "NoError", out |-> "open", susp |-> FALSE]]
    /\ rcv = [t \in Tx |-> [phase |-> "none", md |-> FALSE, got |-> {}, bad |-> FALSE, eof |-> "",
                            nak |-> 0, armed |-> FALSE, fin |-> NoPdu, tx |-> 0, check |-> 0,
                            cc |-> "NoError", out |-> "open", susp |-> FALSE, kept |-> FALSE,
                            ackd |-> FALSE]]
    /\ fwd = {} /\ rtn = {} /\ held = {}
    /\ spent = [loss |-> 0, late |-> 0, corrupt |-> 0, outages |-> 0, cancels |-> 0,
                suspends |-> 0, prompts |-> 0]
    /\ lostLog = <<>>
    /\ lastEvent = Ev("none", "Init", "", 0, {}, {})

-----------------------------------------------------------------------------
(***************************************************************************)
(* Timer guards.  Unless PrematureTimeouts, a timer expires only once      *)
(* nothing that would stop it is in a channel: the timers are sized above  *)
(* the round trip.                                                         *)
(***************************************************************************)
InFlight(ch, t, kinds) == \E p \in ch : p.t = t /\ p.k \in kinds
Expirable(busy) == PrematureTimeouts \/ ~busy
\* EOF positive-ACK timer: the EOF, its ACK or a Finished (which answers it
\* too) still to arrive.
EofAwaited(t) == InFlight(fwd, t, {"EOF"}) \/ InFlight(rtn, t, {"ACK", "FIN"})
\* Finished positive-ACK timer.
FinAwaited(t) == InFlight(rtn, t, {"FIN"}) \/ InFlight(fwd, t, {"ACK", "EOF"})
\* NAK timer: the NAK, or data it asked for, still to arrive or to be sent.
NakAwaited(t) ==
    \/ InFlight(rtn, t, {"NAK"}) \/ InFlight(fwd, t, {"MD", "FD"})
    \/ snd[t].retx # {} \/ snd[t].mdReq
\* Class 1 receiver's check timer: data that may still arrive.
CheckAwaited(t) == InFlight(fwd, t, {"MD", "FD"})
\* Class 1 sender's check timer: a Finished on its way, or anything that
\* may still bring one (a PDU in flight, a receiver with the whole file).
FinishedAwaited(t) ==
    \/ InFlight(rtn, t, {"FIN"}) \/ InFlight(fwd, t, Kinds)
    \/ Open(rcv, t) /\ rcv[t].eof = "NoError" /\ HasFile(t)
\* Inactivity: nothing for this transaction in flight, and a peer that
\* sends nothing more unprompted (over, suspended, or awaiting an answer
\* with nothing queued).
ReceiverIdle(t) ==
    /\ ~InFlight(fwd, t, Kinds)
    /\ \/ ~Open(snd, t) \/ snd[t].susp
       \/ snd[t].phase = "eof" /\ (~Acknowledged(t) \/ snd[t].acked)
SenderIdle(t) == ~InFlight(rtn, t, Kinds) /\ (~Open(rcv, t) \/ rcv[t].susp)

\* An entity acts on transaction t only while not suspended.
SActive(t) == Open(snd, t) /\ ~snd[t].susp
RActive(t) == rcv[t].phase \in {"none", "open", "fin"} /\ ~rcv[t].susp

\* The PDUs in channel ch that entity a may receive next: any (the channels
\* reorder).  Trace validation (specs/cfdp/TraceCFDP.tla) narrows it to the
\* next arrival the trace shows.
Arrivals(ch, a) == ch

\* Steps taken by the sender (sending forward) and by the receiver.
SendFwd(action, t, rx, tx) ==
    /\ fwd' = (fwd \ rx) \cup tx
    /\ lastEvent' = Ev("sender", action, "forward", t, rx, tx)
RecvFwd(action, t, p, tx) ==
    /\ fwd' = fwd \ {p}
    /\ rtn' = rtn \cup tx
    /\ lastEvent' = Ev("receiver", action, "return", t, {p}, tx)
RecvRtn(action, t, p, tx) ==
    /\ rtn' = rtn \ {p}
    /\ fwd' = fwd \cup tx
    /\ lastEvent' = Ev("sender", action, "forward", t, {p}, tx)
SendRtn(action, t, tx) ==
    /\ rtn' = rtn \cup tx
    /\ lastEvent' = Ev("receiver", action, "return", t, {}, tx)

-----------------------------------------------------------------------------
(* --------------------------- sending entity ----------------------------- *)

\* The sender's answer to a fault (4.8): abandon, or a notice of cancellation
\* (4.11.2.2): EOF(cancel) with the fault's condition, acknowledged in Class 2.
SenderFault(t, cc) ==
    IF cc \in FaultAbandons
    THEN <<[snd EXCEPT ![t].phase = "closed", ![t].out = "abandoned", ![t].cc = cc], {}>>
    ELSE IF Acknowledged(t)
    THEN <<[snd EXCEPT ![t].phase = "cancel", ![t].tx = 1, ![t].cc = cc, ![t].retx = {},
                       ![t].mdReq = FALSE, ![t].acked = FALSE], {EofPdu(t, cc)}>>
    ELSE <<[snd EXCEPT ![t].phase = "closed", ![t].out = "cancelled", ![t].cc = cc],
           {EofPdu(t, cc)}>>

\* Initial transmission: the Metadata first, stating the file's size (5.2.5).
SenderTxMetadata(t) ==
    /\ SActive(t) /\ snd[t].phase = "data" /\ ~snd[t].md
    /\ snd' = [snd EXCEPT ![t].md = TRUE]
    /\ SendFwd("SenderTxMetadata", t, {}, {MdPdu(t)})
    /\ UNCHANGED <<mode, rcv, rtn, held, spent, lostLog>>

SenderTxFileData(t) ==
    /\ SActive(t) /\ snd[t].phase = "data" /\ snd[t].md /\ snd[t].next < NSeg
    /\ snd' = [snd EXCEPT ![t].next = @ + 1]
    /\ SendFwd("SenderTxFileData", t, {}, {FdPdu(t, snd[t].next)})
    /\ UNCHANGED <<mode, rcv, rtn, held, spent, lostLog>>

\* EOF(no error) after the last segment, stating the file's size (5.2.2).
\* Class 1 without closure ends here; with closure it awaits the Finished;
\* Class 2 starts its ACK timer (4.7).
SenderTxEof(t) ==
    /\ SActive(t) /\ snd[t].phase = "data" /\ snd[t].md /\ snd[t].next = NSeg
    /\ snd' = [snd EXCEPT
                ![t].phase = IF mode[t] = "c1" \/ (Closure(t) /\ ~SenderCheckTimer)
                             THEN "closed" ELSE "eof",
                ![t].out = IF mode[t] = "c1" \/ (Closure(t) /\ ~SenderCheckTimer)
                           THEN "completed" ELSE "open",
                ![t].tx = 1]
    /\ SendFwd("SenderTxEof", t, {}, {EofPdu(t, "NoError")})
    /\ UNCHANGED <<mode, rcv, rtn, held, spent, lostLog>>

\* 4.6.4.2.1: a NAK's segments go out again (Class 2), as long as the
\* transaction is not being cancelled.
SenderTxRetransmittedData(t) ==
    /\ SActive(t) /\ snd[t].phase \in {"data", "eof"}
    /\ \E o \in snd[t].retx :
        /\ snd' = [snd EXCEPT ![t].retx = @ \ {o}]
        /\ SendFwd("SenderTxRetransmittedData", t, {}, {FdPdu(t, o)})
    /\ UNCHANGED <<mode, rcv, rtn, held, spent, lostLog>>

\* A NAK's (0, 0) request: the Metadata again.
SenderTxRetransmittedMetadata(t) ==
    /\ SActive(t) /\ snd[t].phase \in {"data", "eof"} /\ snd[t].mdReq
    /\ snd' = [snd EXCEPT ![t].mdReq = FALSE]
    /\ SendFwd("SenderTxRetransmittedMetadata", t, {}, {MdPdu(t)})
    /\ UNCHANGED <<mode, rcv, rtn, held, spent, lostLog>>

\* A NAK reaching an open Class 2 transaction queues what it asks for (only
\* segments already sent: the rest go out anyway).
SenderRxNak(t) ==
    \E p \in Arrivals(rtn, "sender") :
        /\ p.k = "NAK" /\ p.t = t
        /\ SActive(t) /\ snd[t].phase \in {"data", "eof"}
        /\ snd' = [snd EXCEPT ![t].retx = @ \cup {o \in p.segs : o < snd[t].next},
                              ![t].mdReq = @ \/ p.md]
        /\ RecvRtn("SenderRxNak", t, p, {})
        /\ UNCHANGED <<mode, rcv, held, spent, lostLog>>

\* 4.7: ACK(EOF) stops the EOF's timer; the sender then awaits the Finished.
SenderRxEofAck(t) ==
    \E p \in Arrivals(rtn, "sender") :
        /\ p.k = "ACK" /\ p.of = "EOF" /\ p.t = t /\ p.cc = "NoError"
        /\ SActive(t) /\ snd[t].phase = "eof"
        /\ snd' = [snd EXCEPT ![t].acked = TRUE]
        /\ RecvRtn("SenderRxEofAck", t, p, {})
        /\ UNCHANGED <<mode, rcv, held, spent, lostLog>>

\* 4.11.2.2: the ACK of the EOF(cancel) ends the cancelled transaction.
SenderRxCancelAck(t) ==
    \E p \in Arrivals(rtn, "sender") :
        /\ p.k = "ACK" /\ p.of = "EOF" /\ p.t = t /\ p.cc # "NoError"
        /\ SActive(t) /\ snd[t].phase = "cancel"
        /\ snd' = [snd EXCEPT ![t].phase = "closed", ![t].out = "cancelled", ![t].acked = TRUE]
        /\ RecvRtn("SenderRxCancelAck", t, p, {})
        /\ UNCHANGED <<mode, rcv, held, spent, lostLog>>

\* A Class 2 sender whose EOF is not answered yet (reading 4).
AwaitingEofAck(t) == Acknowledged(t) /\ snd[t].phase = "eof" /\ ~snd[t].acked

\* The Finished ends the transaction with its condition (a cancelling sender
\* keeps its own); Class 2 acknowledges it (4.7).  Reading 4: one that comes
\* before the ACK(EOF) may be taken (it answers the EOF too) or discarded.
SenderRxFinished(t) ==
    \E p \in Arrivals(rtn, "sender") :
        /\ p.k = "FIN" /\ p.t = t
        /\ SActive(t) /\ snd[t].phase \in {"data", "eof", "cancel"}
        /\ FinishedBeforeEofAck \/ ~AwaitingEofAck(t)
        /\ snd' = [snd EXCEPT
                    ![t].phase = "closed", ![t].acked = TRUE,
                    ![t].cc = IF snd[t].phase = "cancel" THEN @ ELSE p.cc,
                    ![t].out = IF snd[t].phase # "cancel" /\ p.cc = "NoError" /\ p.ok
                               THEN "completed" ELSE "cancelled"]
        /\ RecvRtn("SenderRxFinished", t, p,
                   IF Acknowledged(t) THEN {AckPdu(t, "FIN", p.cc)} ELSE {})
        /\ UNCHANGED <<mode, rcv, held, spent, lostLog>>

\* A Finished reaching a sender that is done with the transaction: reading 1.
SenderRxRedundantFinished(t) ==
    \E p \in Arrivals(rtn, "sender") :
        /\ p.k = "FIN" /\ p.t = t
        /\ ~Open(snd, t)
        /\ RecvRtn("SenderRxRedundantFinished", t, p,
                   IF Acknowledged(t) /\ AckClosedFinished THEN {AckPdu(t, "FIN", p.cc)} ELSE {})
        /\ UNCHANGED <<mode, snd, rcv, held, spent, lostLog>>

\* Any other PDU the sender no longer needs (a late ACK, NAK or Keep Alive,
\* or one reaching a cancelling sender) is discarded; under reading 4's
\* alternative, so is a Finished that comes before the ACK(EOF).
SenderRxRedundantPdu(t) ==
    \E p \in Arrivals(rtn, "sender") :
        /\ p.t = t /\ p.k \in {"ACK", "NAK", "KA", "FIN"}
        /\ \/ ~Open(snd, t) /\ p.k # "FIN"
           \/ SActive(t) /\ p.k = "FIN" /\ ~FinishedBeforeEofAck /\ AwaitingEofAck(t)
           \/ SActive(t) /\ p.k = "NAK" /\ snd[t].phase = "cancel"
           \/ SActive(t) /\ p.k = "KA"
           \/ SActive(t) /\ p.k = "ACK" /\ p.of = "EOF" /\ p.cc = "NoError"
                         /\ snd[t].phase \in {"data", "cancel"}
           \/ SActive(t) /\ p.k = "ACK" /\ p.of = "EOF" /\ p.cc # "NoError"
                         /\ snd[t].phase # "cancel"
        /\ RecvRtn("SenderRxRedundantPdu", t, p, {})
        /\ UNCHANGED <<mode, snd, rcv, held, spent, lostLog>>

\* 4.7.1: the EOF's timer expires below the limit: EOF again.
SenderTimeoutEof(t) ==
    /\ SActive(t) /\ Acknowledged(t) /\ snd[t].phase \in {"eof", "cancel"}
    /\ ~snd[t].acked /\ snd[t].tx <= MaxAck
    /\ Expirable(EofAwaited(t))
    /\ snd' = [snd EXCEPT ![t].tx = @ + 1]
    /\ SendFwd("SenderTimeoutEof", t, {}, {EofPdu(t, snd[t].cc)})
    /\ UNCHANGED <<mode, rcv, rtn, held, spent, lostLog>>

\* 4.7.1, 4.8: at the limit, a positive-ACK-limit fault; 4.11.2.2.3: while
\* the EOF(cancel) is outstanding, the transaction is abandoned.
SenderFaultAckLimit(t) ==
    /\ SActive(t) /\ Acknowledged(t) /\ snd[t].phase \in {"eof", "cancel"}
    /\ ~snd[t].acked /\ snd[t].tx > MaxAck
    /\ Expirable(EofAwaited(t))
    /\ IF snd[t].phase = "cancel"
       THEN /\ snd' = [snd EXCEPT ![t].phase = "closed", ![t].out = "abandoned"]
            /\ SendFwd("SenderFaultAckLimit", t, {}, {})
       ELSE LET r == SenderFault(t, "AckLimit") IN
            /\ snd' = r[1]
            /\ SendFwd("SenderFaultAckLimit", t, {}, r[2])
    /\ UNCHANGED <<mode, rcv, rtn, held, spent, lostLog>>

\* 4.6.3.2: a Class 1 sender with closure requested awaits the Finished by a
\* check timer (reading 3).
SenderTimeoutCheck(t) ==
    /\ SActive(t) /\ Closure(t) /\ snd[t].phase = "eof" /\ snd[t].check < MaxCheck
    /\ Expirable(FinishedAwaited(t))
    /\ snd' = [snd EXCEPT ![t].check = @ + 1]
    /\ SendFwd("SenderTimeoutCheck", t, {}, {})
    /\ UNCHANGED <<mode, rcv, rtn, held, spent, lostLog>>

SenderFaultCheckLimit(t) ==
    /\ SActive(t) /\ Closure(t) /\ snd[t].phase = "eof" /\ snd[t].check = MaxCheck
    /\ Expirable(FinishedAwaited(t))
    /\ LET r == SenderFault(t, "CheckLimit") IN
       /\ snd' = r[1]
       /\ SendFwd("SenderFaultCheckLimit", t, {}, r[2])
    /\ UNCHANGED <<mode, rcv, rtn, held, spent, lostLog>>

\* Inactivity (no § cited): a Class 2 sender whose EOF was acknowledged and
\* that hears nothing more of a receiver gone silent.
SenderFaultInactivity(t) ==
    /\ SActive(t) /\ Acknowledged(t) /\ snd[t].phase = "eof" /\ snd[t].acked
    /\ Expirable(~SenderIdle(t))
    /\ LET r == SenderFault(t, "Inactivity") IN
       /\ snd' = r[1]
       /\ SendFwd("SenderFaultInactivity", t, {}, r[2])
    /\ UNCHANGED <<mode, rcv, rtn, held, spent, lostLog>>

\* A user's cancel request at the sender: a notice of cancellation.
SenderCancelTransaction(t) ==
    /\ SActive(t) /\ snd[t].phase \in {"data", "eof"} /\ spent.cancels < MaxCancels
    /\ spent' = [spent EXCEPT !.cancels = @ + 1]
    /\ snd' = IF Acknowledged(t)
              THEN [snd EXCEPT ![t].phase = "cancel", ![t].tx = 1, ![t].cc = "CancelRequest",
                               ![t].retx = {}, ![t].mdReq = FALSE, ![t].acked = FALSE]
              ELSE [snd EXCEPT ![t].phase = "closed", ![t].out = "cancelled",
                               ![t].cc = "CancelRequest"]
    /\ SendFwd("SenderCancelTransaction", t, {}, {EofPdu(t, "CancelRequest")})
    /\ UNCHANGED <<mode, rcv, rtn, held, lostLog>>

\* A Prompt (Class 2, after the EOF): for a NAK or for a Keep Alive.
SenderTxPrompt(t) ==
    /\ SActive(t) /\ Acknowledged(t) /\ snd[t].phase = "eof"
    /\ spent.prompts < MaxPrompts
    /\ spent' = [spent EXCEPT !.prompts = @ + 1]
    /\ \E of \in {"NAK", "KA"} : SendFwd("SenderTxPrompt", t, {}, {PromptPdu(t, of)})
    /\ UNCHANGED <<mode, snd, rcv, rtn, held, lostLog>>

SenderSuspendTransaction(t) ==
    /\ SActive(t) /\ spent.suspends < MaxSuspends
    /\ spent' = [spent EXCEPT !.suspends = @ + 1]
    /\ snd' = [snd EXCEPT ![t].susp = TRUE]
    /\ SendFwd("SenderSuspendTransaction", t, {}, {})
    /\ UNCHANGED <<mode, rcv, rtn, held, lostLog>>

SenderResumeTransaction(t) ==
    /\ Open(snd, t) /\ snd[t].susp
    /\ snd' = [snd EXCEPT ![t].susp = FALSE]
    /\ SendFwd("SenderResumeTransaction", t, {}, {})
    /\ UNCHANGED <<mode, rcv, rtn, held, spent, lostLog>>

-----------------------------------------------------------------------------
(* -------------------------- receiving entity ---------------------------- *)

\* The Finished a receiver sends at the end: the condition and whether the
\* file was delivered complete.
Finished(t, cc) == FinPdu(t, cc, cc = "NoError")

\* The receiver's answer to a fault (4.8): abandon, or a notice of
\* cancellation: Class 2 sends Finished(cancel) and awaits its ACK; Class 1
\* with closure sends it and ends; Class 1 without closure just ends.
ReceiverFault(t, cc) ==
    IF cc \in FaultAbandons
    THEN <<[rcv EXCEPT ![t].phase = "closed", ![t].out = "abandoned", ![t].cc = cc], {}>>
    ELSE IF Acknowledged(t)
    THEN <<[rcv EXCEPT ![t].phase = "fin", ![t].tx = 1, ![t].cc = cc,
                       ![t].fin = Finished(t, cc)], {Finished(t, cc)}>>
    ELSE <<[rcv EXCEPT ![t].phase = "closed", ![t].out = "cancelled", ![t].cc = cc,
                       ![t].fin = IF Closure(t) /\ rcv[t].md THEN Finished(t, cc) ELSE @],
           IF Closure(t) /\ rcv[t].md THEN {Finished(t, cc)} ELSE {}>>

\* The Metadata opens the transaction, or completes an open one's knowledge.
ReceiverRxMetadata(t) ==
    \E p \in Arrivals(fwd, "receiver") :
        /\ p.k = "MD" /\ p.t = t
        /\ RActive(t) /\ rcv[t].phase \in {"none", "open"}
        /\ rcv' = [rcv EXCEPT ![t].phase = "open", ![t].md = TRUE]
        /\ RecvFwd("ReceiverRxMetadata", t, p, {})
        /\ UNCHANGED <<mode, snd, held, spent, lostLog>>

\* File Data is stored (duplicates change nothing).  4.6.4.3.1: in Class 2
\* with immediate NAKs, a segment past a gap that this one opens (or File
\* Data ahead of the Metadata) is answered at once by a NAK of the gaps.
\* 4.6.4.3.3: a NAK's segment requests name every extent of its scope not
\* yet received; this NAK's scope starts at 0, so it asks for every gap
\* below, those an earlier NAK asked for included (README: the text).
\* File Data ahead of the Metadata is kept: reception is complete "at the
\* earliest time at which the transaction's Metadata, File Data (if any),
\* and EOF (No error) PDUs have all been received" (4.6.1.2.8), whatever
\* their order, and only repeated data is discarded (4.6.1.2.7); a receiver
\* that drops it and asks for it again deviates (README).
ReceiverRxFileData(t) ==
    \E p \in Arrivals(fwd, "receiver") :
        /\ p.k = "FD" /\ p.t = t
        /\ RActive(t) /\ rcv[t].phase \in {"none", "open"}
        /\ LET r2 == [rcv EXCEPT ![t].phase = "open", ![t].got = @ \cup {p.seg},
                                 ![t].bad = @ \/ p.bad]
               newGap == \/ \E o \in Segs : o < p.seg /\ o \notin rcv[t].got
                                           /\ ~\E g \in rcv[t].got : g > o
                         \/ rcv[t].phase = "none"
               gaps == IF rcv[t].eof # "" THEN Segs \ r2[t].got
                       ELSE {o \in Segs \ r2[t].got : o < p.seg}
               nak == Acknowledged(t) /\ NakMode = "immediate" /\ rcv[t].eof = ""
                      /\ newGap /\ (gaps # {} \/ ~rcv[t].md)
           IN /\ rcv' = r2
              /\ RecvFwd("ReceiverRxFileData", t, p,
                         IF nak THEN {NakPdu(t, gaps, ~rcv[t].md)} ELSE {})
        /\ UNCHANGED <<mode, snd, held, spent, lostLog>>

\* EOF(no error): recorded; Class 2 acknowledges it (4.7).  An EOF may open
\* the transaction (its Metadata lost).
ReceiverRxEof(t) ==
    \E p \in Arrivals(fwd, "receiver") :
        /\ p.k = "EOF" /\ p.t = t /\ p.cc = "NoError"
        /\ RActive(t) /\ rcv[t].phase \in {"none", "open"} /\ rcv[t].eof = ""
        /\ rcv' = [rcv EXCEPT ![t].phase = "open", ![t].eof = "NoError"]
        /\ RecvFwd("ReceiverRxEof", t, p,
                   IF Acknowledged(t) THEN {AckPdu(t, "EOF", "NoError")} ELSE {})
        /\ UNCHANGED <<mode, snd, held, spent, lostLog>>

\* 4.6.6: EOF(cancel) ends the transaction, acknowledged in Class 2.
ReceiverRxCancelEof(t) ==
    \E p \in Arrivals(fwd, "receiver") :
        /\ p.k = "EOF" /\ p.t = t /\ p.cc # "NoError"
        /\ RActive(t)
        /\ rcv' = [rcv EXCEPT ![t].phase = "closed", ![t].out = "cancelled", ![t].cc = p.cc,
                              ![t].eof = p.cc]
        /\ RecvFwd("ReceiverRxCancelEof", t, p,
                   IF Acknowledged(t) THEN {AckPdu(t, "EOF", p.cc)} ELSE {})
        /\ UNCHANGED <<mode, snd, held, spent, lostLog>>

\* 4.7.2: an EOF the receiver already has, or one reaching a transaction
\* that is over, is acknowledged again (Class 2); reading 2: the Finished
\* may go again too.
ReceiverRxRedundantEof(t) ==
    \E p \in Arrivals(fwd, "receiver") :
        /\ p.k = "EOF" /\ p.t = t
        /\ \/ RActive(t) /\ p.cc = "NoError" /\ (rcv[t].eof # "" \/ rcv[t].phase = "fin")
           \/ rcv[t].phase = "closed"
        /\ LET again == FinishedOnDupEof /\ rcv[t].phase = "fin" /\ p.cc = "NoError"
           IN RecvFwd("ReceiverRxRedundantEof", t, p,
                      (IF Acknowledged(t) THEN {AckPdu(t, "EOF", p.cc)} ELSE {})
                      \cup (IF again THEN {rcv[t].fin} ELSE {}))
        /\ UNCHANGED <<mode, snd, rcv, held, spent, lostLog>>

\* Data, Metadata or a Prompt reaching a transaction that no longer wants
\* them (Finished sent, or over) is discarded.
ReceiverRxRedundantPdu(t) ==
    \E p \in Arrivals(fwd, "receiver") :
        /\ p.t = t /\ p.k \in {"MD", "FD", "PROMPT", "ACK"}
        /\ \/ rcv[t].phase = "closed"
           \/ RActive(t) /\ rcv[t].phase = "fin" /\ p.k \in {"MD", "FD", "PROMPT"}
           \/ RActive(t) /\ p.k = "ACK" /\ rcv[t].phase # "fin"
           \/ RActive(t) /\ p.k = "PROMPT" /\ ~Acknowledged(t)
        /\ RecvFwd("ReceiverRxRedundantPdu", t, p, {})
        /\ UNCHANGED <<mode, snd, rcv, held, spent, lostLog>>

\* A Prompt: Prompt(NAK) is answered by a NAK of the gaps so far (an empty
\* one if there are none), Prompt(Keep Alive) by a Keep Alive (Class 2).
ReceiverRxPrompt(t) ==
    \E p \in Arrivals(fwd, "receiver") :
        /\ p.k = "PROMPT" /\ p.t = t
        /\ RActive(t) /\ rcv[t].phase \in {"none", "open"} /\ Acknowledged(t)
        /\ rcv' = [rcv EXCEPT ![t].phase = "open"]
        /\ RecvFwd("ReceiverRxPrompt", t, p,
                   IF p.of = "NAK" THEN {NakPdu(t, Gaps(t), ~rcv[t].md)}
                   ELSE {KaPdu(t, Cardinality(rcv[t].got))})
        /\ UNCHANGED <<mode, snd, held, spent, lostLog>>

\* 4.6.5.2.1: in Class 2 the receiver "may periodically send a Keep Alive
\* PDU ... reporting on the transaction's reception progress so far", and
\* 4.6.5.2.3: "shall cease upon receipt of the transaction's EOF (No error)
\* PDU" (727.0-B-5 as dariol83/ccsds quotes it, specs/cfdp/README.md).  Its
\* period is configuration, not conformance: with KeepAliveTimer (trace
\* validation) one may go at any time until the EOF is in; the bounds leave
\* it out (the sender only discards it, SenderRxRedundantPdu).
ReceiverTxKeepAlive(t) ==
    /\ KeepAliveTimer
    /\ RActive(t) /\ Acknowledged(t) /\ rcv[t].phase = "open" /\ rcv[t].eof = ""
    /\ SendRtn("ReceiverTxKeepAlive", t, {KaPdu(t, Cardinality(rcv[t].got))})
    /\ UNCHANGED <<mode, snd, rcv, fwd, held, spent, lostLog>>

\* 4.6.4.3.1: the deferred NAK once the EOF is in and something is missing;
\* it arms the NAK timer (4.6.4.7).
ReceiverTxNak(t) ==
    /\ RActive(t) /\ Acknowledged(t) /\ rcv[t].phase = "open" /\ rcv[t].eof = "NoError"
    /\ ~rcv[t].armed /\ ~HasFile(t)
    /\ rcv' = [rcv EXCEPT ![t].armed = TRUE]
    /\ SendRtn("ReceiverTxNak", t, {NakPdu(t, Missing(t), ~rcv[t].md)})
    /\ UNCHANGED <<mode, snd, fwd, held, spent, lostLog>>

\* 4.6.4.7: the NAK timer expires with data still missing: the NAK again.
ReceiverTimeoutNak(t) ==
    /\ RActive(t) /\ rcv[t].phase = "open" /\ rcv[t].armed /\ ~HasFile(t)
    /\ rcv[t].nak < MaxNak
    /\ Expirable(NakAwaited(t))
    /\ rcv' = [rcv EXCEPT ![t].nak = @ + 1]
    /\ SendRtn("ReceiverTimeoutNak", t, {NakPdu(t, Missing(t), ~rcv[t].md)})
    /\ UNCHANGED <<mode, snd, fwd, held, spent, lostLog>>

ReceiverFaultNakLimit(t) ==
    /\ RActive(t) /\ rcv[t].phase = "open" /\ rcv[t].armed /\ ~HasFile(t)
    /\ rcv[t].nak = MaxNak
    /\ Expirable(NakAwaited(t))
    /\ LET r == ReceiverFault(t, "NakLimit") IN
       /\ rcv' = r[1]
       /\ SendRtn("ReceiverFaultNakLimit", t, r[2])
    /\ UNCHANGED <<mode, snd, fwd, held, spent, lostLog>>

\* 4.6.1.2: the whole file is in after the EOF and its checksum verifies: it
\* is delivered.  Class 2 and Class 1 with closure send Finished(complete)
\* (Class 2 starts its ACK timer, 4.7); Class 1 without closure just ends.
ReceiverTxFinished(t) ==
    /\ RActive(t) /\ rcv[t].phase = "open" /\ rcv[t].eof = "NoError"
    /\ HasFile(t) /\ (~rcv[t].bad \/ FaultyReceiver)
    /\ LET fin == Finished(t, "NoError")
           sends == mode[t] # "c1"
       IN /\ rcv' = [rcv EXCEPT ![t].kept = TRUE,
                                ![t].phase = IF Acknowledged(t) THEN "fin" ELSE "closed",
                                ![t].out = IF Acknowledged(t) THEN "open" ELSE "completed",
                                ![t].fin = IF sends THEN fin ELSE @,
                                ![t].tx = 1]
          /\ SendRtn("ReceiverTxFinished", t, IF sends THEN {fin} ELSE {})
    /\ UNCHANGED <<mode, snd, fwd, held, spent, lostLog>>

\* 4.6.1.2: the file is in but its checksum fails: a fault.
ReceiverFaultChecksum(t) ==
    /\ RActive(t) /\ rcv[t].phase = "open" /\ rcv[t].eof = "NoError"
    /\ HasFile(t) /\ rcv[t].bad
    /\ LET r == ReceiverFault(t, "ChecksumFailure") IN
       /\ rcv' = r[1]
       /\ SendRtn("ReceiverFaultChecksum", t, r[2])
    /\ UNCHANGED <<mode, snd, fwd, held, spent, lostLog>>

\* 4.6.3.3: a Class 1 receiver with data missing at EOF waits out its check
\* timer up to the check limit.
ReceiverTimeoutCheck(t) ==
    /\ RActive(t) /\ ~Acknowledged(t) /\ rcv[t].phase = "open" /\ rcv[t].eof = "NoError"
    /\ ~HasFile(t) /\ rcv[t].check < MaxCheck
    /\ Expirable(CheckAwaited(t))
    /\ rcv' = [rcv EXCEPT ![t].check = @ + 1]
    /\ SendRtn("ReceiverTimeoutCheck", t, {})
    /\ UNCHANGED <<mode, snd, fwd, held, spent, lostLog>>

ReceiverFaultCheckLimit(t) ==
    /\ RActive(t) /\ ~Acknowledged(t) /\ rcv[t].phase = "open" /\ rcv[t].eof = "NoError"
    /\ ~HasFile(t) /\ rcv[t].check = MaxCheck
    /\ Expirable(CheckAwaited(t))
    /\ LET r == ReceiverFault(t, "CheckLimit") IN
       /\ rcv' = r[1]
       /\ SendRtn("ReceiverFaultCheckLimit", t, r[2])
    /\ UNCHANGED <<mode, snd, fwd, held, spent, lostLog>>

\* 4.7: ACK(Finished) ends the Class 2 transaction.
ReceiverRxFinishedAck(t) ==
    \E p \in Arrivals(fwd, "receiver") :
        /\ p.k = "ACK" /\ p.of = "FIN" /\ p.t = t
        /\ RActive(t) /\ rcv[t].phase = "fin"
        /\ rcv' = [rcv EXCEPT ![t].phase = "closed", ![t].ackd = TRUE,
                              ![t].out = IF rcv[t].cc = "NoError" THEN "completed" ELSE "cancelled"]
        /\ RecvFwd("ReceiverRxFinishedAck", t, p, {})
        /\ UNCHANGED <<mode, snd, held, spent, lostLog>>

\* 4.7.1: the Finished's timer expires below the limit: Finished again.
ReceiverTimeoutFinished(t) ==
    /\ RActive(t) /\ rcv[t].phase = "fin" /\ rcv[t].tx <= MaxAck
    /\ Expirable(FinAwaited(t))
    /\ rcv' = [rcv EXCEPT ![t].tx = @ + 1]
    /\ SendRtn("ReceiverTimeoutFinished", t, {rcv[t].fin})
    /\ UNCHANGED <<mode, snd, fwd, held, spent, lostLog>>

\* At the limit: a positive-ACK-limit fault (4.7.1, 4.8); 4.11.2.3.2: while
\* a Finished(cancel) is outstanding, the transaction is abandoned.
ReceiverFaultAckLimit(t) ==
    /\ RActive(t) /\ rcv[t].phase = "fin" /\ rcv[t].tx > MaxAck
    /\ Expirable(FinAwaited(t))
    /\ IF rcv[t].cc # "NoError"
       THEN /\ rcv' = [rcv EXCEPT ![t].phase = "closed", ![t].out = "abandoned"]
            /\ SendRtn("ReceiverFaultAckLimit", t, {})
       ELSE LET r == ReceiverFault(t, "AckLimit") IN
            /\ rcv' = r[1]
            /\ SendRtn("ReceiverFaultAckLimit", t, r[2])
    /\ UNCHANGED <<mode, snd, fwd, held, spent, lostLog>>

\* Inactivity (no § cited): an open receiver that has no EOF yet (after it,
\* the NAK and check timers govern) and hears nothing more from a sender
\* gone silent.
ReceiverFaultInactivity(t) ==
    /\ RActive(t) /\ rcv[t].phase = "open" /\ rcv[t].eof = ""
    /\ Expirable(~ReceiverIdle(t))
    /\ LET r == ReceiverFault(t, "Inactivity") IN
       /\ rcv' = r[1]
       /\ SendRtn("ReceiverFaultInactivity", t, r[2])
    /\ UNCHANGED <<mode, snd, fwd, held, spent, lostLog>>

\* A user's cancel request at the receiver: a notice of cancellation.
ReceiverCancelTransaction(t) ==
    /\ RActive(t) /\ rcv[t].phase = "open" /\ spent.cancels < MaxCancels
    /\ spent' = [spent EXCEPT !.cancels = @ + 1]
    /\ LET r == ReceiverFault(t, "CancelRequest") IN
       /\ rcv' = r[1]
       /\ SendRtn("ReceiverCancelTransaction", t, r[2])
    /\ UNCHANGED <<mode, snd, fwd, held, lostLog>>

ReceiverSuspendTransaction(t) ==
    /\ RActive(t) /\ rcv[t].phase \in {"open", "fin"} /\ spent.suspends < MaxSuspends
    /\ spent' = [spent EXCEPT !.suspends = @ + 1]
    /\ rcv' = [rcv EXCEPT ![t].susp = TRUE]
    /\ SendRtn("ReceiverSuspendTransaction", t, {})
    /\ UNCHANGED <<mode, snd, fwd, held, lostLog>>

ReceiverResumeTransaction(t) ==
    /\ rcv[t].susp
    /\ rcv' = [rcv EXCEPT ![t].susp = FALSE]
    /\ SendRtn("ReceiverResumeTransaction", t, {})
    /\ UNCHANGED <<mode, snd, fwd, held, spent, lostLog>>

-----------------------------------------------------------------------------
(* ------------------------------ channels -------------------------------- *)

Chan(dir) == IF dir = "forward" THEN fwd ELSE rtn
\* The channel's steps change one direction; the other stays.
SetChan(dir, new) ==
    IF dir = "forward" THEN fwd' = new /\ rtn' = rtn ELSE rtn' = new /\ fwd' = fwd
ChanEv(action, dir, t, rx, tx, lost) ==
    [actor |-> "channel", action |-> action, dir |-> dir, t |-> t, rx |-> rx, tx |-> tx,
     lost |-> lost]

\* Losable: which PDUs the channel may lose (trace validation narrows it).
Losable(dir, p) == TRUE

ChannelLosePdu ==
    \E dir \in {"forward", "return"} : \E p \in Chan(dir) :
        /\ spent.loss < MaxLoss /\ Losable(dir, p)
        /\ spent' = [spent EXCEPT !.loss = @ + 1]
        /\ SetChan(dir, Chan(dir) \ {p})
        /\ lostLog' = Append(lostLog, [dir |-> dir, pdu |-> p])
        /\ lastEvent' = ChanEv("ChannelLosePdu", dir, p.t, {p}, {}, {p})
        /\ UNCHANGED <<mode, snd, rcv, held>>

\* The channel holds a PDU back past the timers (delay) ...
ChannelHoldPdu ==
    \E dir \in {"forward", "return"} : \E p \in Chan(dir) :
        /\ spent.late < MaxLate
        /\ spent' = [spent EXCEPT !.late = @ + 1]
        /\ SetChan(dir, Chan(dir) \ {p})
        /\ held' = held \cup {[dir |-> dir, pdu |-> p]}
        /\ lastEvent' = ChanEv("ChannelHoldPdu", dir, p.t, {p}, {}, {})
        /\ UNCHANGED <<mode, snd, rcv, lostLog>>

\* ... or makes a copy it delivers later (duplication): the PDU stays in the
\* channel (the event takes it and puts it back) and its copy is held.
ChannelDuplicatePdu ==
    \E dir \in {"forward", "return"} : \E p \in Chan(dir) :
        /\ spent.late < MaxLate
        /\ spent' = [spent EXCEPT !.late = @ + 1]
        /\ held' = held \cup {[dir |-> dir, pdu |-> p]}
        /\ lastEvent' = ChanEv("ChannelDuplicatePdu", dir, p.t, {p}, {p}, {})
        /\ UNCHANGED <<mode, snd, rcv, fwd, rtn, lostLog>>

\* A held PDU re-enters its channel once no identical one is in it.
ChannelReleasePdu ==
    \E h \in held :
        /\ h.pdu \notin Chan(h.dir)
        /\ held' = held \ {h}
        /\ SetChan(h.dir, Chan(h.dir) \cup {h.pdu})
        /\ lastEvent' = ChanEv("ChannelReleasePdu", h.dir, h.pdu.t, {}, {h.pdu}, {})
        /\ UNCHANGED <<mode, snd, rcv, spent, lostLog>>

\* A File Data PDU corrupted with no PDU CRC to catch it (4.6.1.2: only the
\* file checksum does).
ChannelCorruptFileData ==
    \E p \in fwd :
        /\ p.k = "FD" /\ ~p.bad /\ spent.corrupt < MaxCorrupt
        /\ spent' = [spent EXCEPT !.corrupt = @ + 1]
        /\ fwd' = (fwd \ {p}) \cup {[p EXCEPT !.bad = TRUE]}
        /\ lastEvent' = ChanEv("ChannelCorruptFileData", "forward", p.t, {p},
                               {[p EXCEPT !.bad = TRUE]}, {})
        /\ UNCHANGED <<mode, snd, rcv, rtn, held, lostLog>>

\* An outage: the link goes down and everything in flight is lost (not
\* counted against MaxLoss).
ChannelCutLink ==
    /\ spent.outages < MaxOutages /\ fwd \cup rtn # {}
    /\ spent' = [spent EXCEPT !.outages = @ + 1]
    /\ fwd' = {} /\ rtn' = {}
    /\ lastEvent' = ChanEv("ChannelCutLink", "", 0, fwd \cup rtn, {}, fwd \cup rtn)
    /\ UNCHANGED <<mode, snd, rcv, held, lostLog>>

-----------------------------------------------------------------------------

SenderStep(t) ==
    \/ SenderTxMetadata(t)
    \/ SenderTxFileData(t)
    \/ SenderTxEof(t)
    \/ SenderTxRetransmittedData(t)
    \/ SenderTxRetransmittedMetadata(t)
    \/ SenderRxNak(t)
    \/ SenderRxEofAck(t)
    \/ SenderRxCancelAck(t)
    \/ SenderRxFinished(t)
    \/ SenderRxRedundantFinished(t)
    \/ SenderRxRedundantPdu(t)
    \/ SenderTimeoutEof(t)
    \/ SenderFaultAckLimit(t)
    \/ SenderTimeoutCheck(t)
    \/ SenderFaultCheckLimit(t)
    \/ SenderFaultInactivity(t)
    \/ SenderResumeTransaction(t)

ReceiverStep(t) ==
    \/ ReceiverRxMetadata(t)
    \/ ReceiverRxFileData(t)
    \/ ReceiverRxEof(t)
    \/ ReceiverRxCancelEof(t)
    \/ ReceiverRxRedundantEof(t)
    \/ ReceiverRxRedundantPdu(t)
    \/ ReceiverRxPrompt(t)
    \/ ReceiverTxKeepAlive(t)
    \/ ReceiverTxNak(t)
    \/ ReceiverTimeoutNak(t)
    \/ ReceiverFaultNakLimit(t)
    \/ ReceiverTxFinished(t)
    \/ ReceiverFaultChecksum(t)
    \/ ReceiverTimeoutCheck(t)
    \/ ReceiverFaultCheckLimit(t)
    \/ ReceiverRxFinishedAck(t)
    \/ ReceiverTimeoutFinished(t)
    \/ ReceiverFaultAckLimit(t)
    \/ ReceiverFaultInactivity(t)
    \/ ReceiverResumeTransaction(t)

\* The users' requests and the Prompts: things that may happen, never must.
UserStep(t) ==
    \/ SenderCancelTransaction(t)
    \/ SenderSuspendTransaction(t)
    \/ SenderTxPrompt(t)
    \/ ReceiverCancelTransaction(t)
    \/ ReceiverSuspendTransaction(t)

ChannelFault ==
    \/ ChannelLosePdu
    \/ ChannelHoldPdu
    \/ ChannelDuplicatePdu
    \/ ChannelCorruptFileData
    \/ ChannelCutLink

\* Each side's end in transaction t: how it ended ("open" while it has not),
\* its condition code (Table 5-5), and for the receiver whether the file
\* was delivered; "none" for a receiving entity the transaction never
\* reached.  MCCFDPOutcomes prints it at each terminal state, TraceCFDP at
\* the end of a validated trace (generators/cfdp/outcomes.py outcome_of).
EndOf(t) ==
    <<snd[t].out, snd[t].cc,
      IF rcv[t].phase = "none" THEN "none" ELSE rcv[t].out,
      rcv[t].cc, rcv[t].kept>>

Ended(t) == ~Open(snd, t) /\ (rcv[t].phase = "none" \/ ~Open(rcv, t))
AllEnded == \A t \in Tx : Ended(t)
Quiet == fwd = {} /\ rtn = {} /\ held = {}

\* Both entities done, nothing in flight: the system stays as it is.
Terminating ==
    /\ AllEnded /\ Quiet
    /\ lastEvent' = Ev("none", "Terminating", "", 0, {}, {})
    /\ UNCHANGED protoVars /\ UNCHANGED lostLog

Next ==
    \/ \E t \in Tx : SenderStep(t) \/ ReceiverStep(t) \/ UserStep(t)
    \/ ChannelFault
    \/ ChannelReleasePdu
    \/ Terminating

Spec ==
    /\ Init /\ [][Next]_vars
    /\ \A t \in Tx : WF_vars(SenderStep(t)) /\ WF_vars(ReceiverStep(t))
    /\ WF_vars(ChannelReleasePdu)

-----------------------------------------------------------------------------
(***************************************************************************)
(* Properties.                                                             *)
(***************************************************************************)

\* A Finished(no error) or a completed receiver only with the whole file in
\* and its checksum verified (4.6.1.2).
FinishedCompleteOnlyWithFile ==
    \A t \in Tx :
        (rcv[t].fin.k = "FIN" /\ rcv[t].fin.cc = "NoError") \/ rcv[t].out = "completed"
            => HasFile(t) /\ ~rcv[t].bad /\ rcv[t].kept

\* A sender that was told of completion (Class 2, or Class 1 with closure)
\* is right: the receiver has the file.
SenderCompletedOnlyDelivered ==
    \A t \in Tx :
        snd[t].out = "completed" /\ mode[t] # "c1" /\ (Closure(t) => SenderCheckTimer)
            => rcv[t].kept

\* Every transaction that ends does so with a condition code: no error when
\* it completed, the fault or the cancel request when it did not.
EndsWithCondition ==
    \A t \in Tx :
        /\ snd[t].out = "completed" => snd[t].cc = "NoError"
        /\ snd[t].out \in {"cancelled", "abandoned"} => snd[t].cc # "NoError"
        /\ rcv[t].out = "completed" => rcv[t].cc = "NoError"
        /\ rcv[t].out \in {"cancelled", "abandoned"} => rcv[t].cc # "NoError"

\* Every PDU that needs an ACK is ACKed or a limit fault is declared (4.7):
\* a Class 2 sender that ends after sending an EOF had it answered (its ACK,
\* or a Finished) or abandoned the transaction at its limit; a Class 2
\* receiver that ends after sending a Finished had it acknowledged, was
\* cancelled by the sender's EOF(cancel) (4.6.6), or abandoned.
AckedOrFaulted ==
    \A t \in Tx :
        /\ Acknowledged(t) /\ snd[t].tx > 0 /\ ~Open(snd, t)
               => snd[t].acked \/ snd[t].out = "abandoned"
        /\ Acknowledged(t) /\ rcv[t].fin.k = "FIN" /\ ~Open(rcv, t)
               => rcv[t].ackd \/ rcv[t].out = "abandoned" \/ rcv[t].eof \notin {"", "NoError"}

Safety ==
    /\ FinishedCompleteOnlyWithFile /\ SenderCompletedOnlyDelivered /\ EndsWithCondition
    /\ AckedOrFaulted

\* Every transaction ends at both entities (unless its receiver never heard
\* of it).
EventuallyEnded == <>[](AllEnded)
=============================================================================
