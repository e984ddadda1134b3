-------------------------------- MODULE LTP --------------------------------
(***************************************************************************)
(* One session of the Licklider Transmission Protocol (LTP), RFC 5326:     *)
(* a block sender, a block receiver and a channel in each direction that   *)
(* loses, reorders, delays and duplicates segments.                        *)
(*                                                                         *)
(* Modelled (RFC 5326 sections):                                           *)
(*   3.1      segment types RD, RD-CP, RD-CP-EORP, RD-CP-EORP-EOB, GD,     *)
(*            GD-EOB, RS, RA, CS, CAS, CR, CAR (the names are those of     *)
(*            segment_types in specs/ltp/wire.json)                        *)
(*   3.2.1    data segments: offset, checkpoint serial, report serial      *)
(*   3.2.2    report segments: report serial, checkpoint serial, lower and *)
(*            upper bound, reception claims                                *)
(*   3.2.3    report-acknowledgment segments                               *)
(*   3.2.4    cancel segments (reason code) and cancel acknowledgments     *)
(*   6.1      initial transmission: red part first, the last red segment   *)
(*            a checkpoint with EORP (and EOB if there is no green part),  *)
(*            the last green segment GD-EOB; red-only, mixed and           *)
(*            green-only blocks (NRed = 0: no checkpoint, no report, the   *)
(*            receiver closes at the EOB, 8.2)                             *)
(*   6.2/6.3  checkpoint and RS timers (expiry is a nondeterministic       *)
(*            event, see PrematureTimeouts)                                *)
(*   6.5/6.6  link state cues: the link goes down and comes back; an       *)
(*            engine with cues (LinkCues) suspends its timers meanwhile,   *)
(*            one without lets them run and loses what it sends            *)
(*   6.7      checkpoint retransmission, RLEXC cancellation at the limit   *)
(*   6.8      RS retransmission on RS-timer expiry and on a redundant      *)
(*            checkpoint, RLEXC cancellation at the limit                  *)
(*   6.9      red-part reception (delivery), 7.3 notice                    *)
(*   6.10     green-part segment arrival, 7.2 notice                       *)
(*   6.11     reception reports: bounds and claims; a report of several    *)
(*            RSs when its claims exceed MaxClaims per RS                  *)
(*   6.12     transmission completion, 7.4 notice                          *)
(*   6.13     RA for every RS (also after the session closed), data        *)
(*            retransmission whose last segment is a new checkpoint        *)
(*   6.14     RA stops the RS timer; the receiver then closes              *)
(*   6.15-18  cancel timers, CS/CR retransmission, CAS/CAR                 *)
(*   6.19/20  cancel session, close session; 7.5/7.6 cancellation notices  *)
(*   6.21     miscolored data: discarded, CR MISCOLORED (a faulty sender,  *)
(*            MiscoloredSender, sends green data inside the red part)      *)
(*                                                                         *)
(* Abstracted away on purpose:                                             *)
(*   - serial number randomness: checkpoint and report serials start at 1  *)
(*     and count up (RFC 5326 only requires them to be distinct per        *)
(*     session); report serial 0 on a checkpoint means "not a response to  *)
(*     an RS" as on the wire                                               *)
(*   - SDNV encoding, byte-level offsets and lengths: data is counted in   *)
(*     abstract segments 0..NRed+NGreen-1 (red first), one segment per     *)
(*     datagram; claims are sets of segment offsets, not byte ranges       *)
(*   - other sessions (LTPSessions.tla runs two of this module at once,    *)
(*     sharing the link), session numbers, engine ids, client service ids  *)
(*     (only whether the receiver has the service: ServiceKnown),          *)
(*     extensions (3.1.4), the arithmetic of 6.5/6.6 (a suspended timer    *)
(*     is one that cannot expire), the retransmission-cycle limit          *)
(*     (RXMTCYCEXC; cycles are                                             *)
(*     bounded here by the loss budget), user cancellation (4.2),          *)
(*     discretionary checkpoints (only the EORP                            *)
(*     checkpoint and the checkpoints closing a retransmission cycle)      *)
(*   - timing: a timer may expire at any time, except that (unless         *)
(*     PrematureTimeouts) it never expires while the segment it guards or  *)
(*     the awaited reply is still in a channel (timers are sized above the *)
(*     round-trip time, 6.2); a segment the channel holds back is not in   *)
(*     it: a delay may outlast a timer                                     *)
(*   - the channels are sets: two identical copies in flight at once are   *)
(*     one element; a copy the channel duplicated is held back and         *)
(*     delivered once the original has left the channel                    *)
(*   - one outstanding checkpoint timer at the sender (the protocol as     *)
(*     modelled never has two)                                             *)
(*                                                                         *)
(* Where RFC 5326 leaves latitude, this model chooses:                     *)
(*   - 6.14 closes the receiver once no RS timer runs; here it closes only *)
(*     once the red part is also delivered (else data retransmitted for an *)
(*     RS with gaps would find no session)                                 *)
(*   - 6.9 triggers delivery on a checkpoint's arrival; here delivery is a *)
(*     step of its own, enabled once all red data is in                    *)
(*   - 6.8 (b) a redundant checkpoint re-sends its RS below the limit and  *)
(*     cancels the session (RLEXC) beyond it, acknowledged or not, as the  *)
(*     RFC's text reads                                                    *)
(*   - 6.7/6.8/6.16 "queued more than the limit": MaxRetx is the number of *)
(*     retransmissions allowed; one MaxRetx serves all four limits         *)
(*   - reading 4 (constant ClosedReopens, README): FALSE, a closed or    *)
(*     cancelling receiver discards data, and green data arriving after    *)
(*     the receiver closed is not delivered (ReceiverDiscard... actions);  *)
(*     TRUE, a data segment reaching a closed receiver opens a session     *)
(*     anew, as 8.2's first data segment does (ReceiverReopenSession)      *)
(*   - a cancelling sender treats every RS as redundant                    *)
(*     (SenderRxRedundantReport)                                           *)
(*   - rOutcome is the receiver's last notice: a CS after delivery turns   *)
(*     "completed" into "cancelled" (rDeliveries still records 7.3)        *)
(*   - reading 2 (constant ReportBoundsMay, README): FALSE, a report       *)
(*     takes 6.11's SHOULD bounds; TRUE, also its MAY bounds               *)
(*   - reading 5 (constant GreenEobCloses, README): FALSE, as 8.2 draws    *)
(*     it, a receiver with the green EOB waits for the red part; TRUE, one *)
(*     that has no red data at all may close on the EOB, with no notice    *)
(*   - reading 13 (constant RedPartCloses, README): FALSE, a receiver      *)
(*     closes once every RS is acknowledged (6.14); TRUE, one that has     *)
(*     delivered the red part and has the EOB may also close with an RS    *)
(*     unacknowledged, as 8.2's WAIT_RP_REC does (ReceiverCloseOnRedPart)  *)
(*   - reading 14 (constant OverlapMiscolored, README): FALSE, only 6.21's *)
(*     triggers make data miscolored; TRUE, data at the offset of the      *)
(*     other part's data received may be taken as miscolored too           *)
(*                                                                         *)
(* ServiceKnown = FALSE: the receiver has no client service of the one the *)
(* data names; it refuses the session (8.2, CR UNREACH), never opening it. *)
(*                                                                         *)
(* The receiver starts "idle" (8.2: CLOSED, no record of the session); the *)
(* first data segment opens it, and a CS reaching it then is acknowledged  *)
(* with no notice (6.17), so its client sees nothing.                      *)
(*                                                                         *)
(* Actions are named role + verb + object.  Where RFC 5326's response to   *)
(* an event has branches (session open or not, a limit reached or not),    *)
(* each branch is an action of its own, so that coverage tells them apart: *)
(* Rx... is the procedure for a segment reaching an open session;          *)
(* RxRedundant... a segment already processed (a report or cancel also     *)
(* when it meets a session that is no longer open); Discard... data        *)
(* reaching a receiver that is no longer open; Cancel... a limit exceeded. *)
(*                                                                         *)
(* History variables: lostLog (which segments the channel lost; it is part *)
(* of the state because test purposes ask about it) and lastEvent (what    *)
(* the last step did; every VIEW of the MC modules leaves it out).         *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS
    \* @type: Int;
    NRed,               \* red-part length, in segments
    \* @type: Int;
    NGreen,             \* green-part length, in segments
    \* @type: Int;
    MaxRetx,            \* retransmission limit of checkpoints, RSs, CSs, CRs (6.7, 6.8, 6.16)
    \* @type: Int;
    MaxLoss,            \* loss budget of the channel (both directions together)
    \* @type: Int;
    MaxLate,            \* the channel's budget of segments it delays or duplicates
    \* @type: Bool;
    PrematureTimeouts,  \* may a timer expire while its reply is in flight?
    \* @type: Bool;
    FaultyReceiver,     \* fault injection: deliver the red part on EORP alone
    \* @type: Bool;
    MiscoloredSender,   \* fault injection: the sender sends green data at a red offset
    \* @type: Int;
    MaxClaims,          \* the most reception claims one RS carries (6.11, 3.2.2)
    \* @type: Bool;
    ServiceKnown,       \* the client service the data names is registered at the receiver
    \* @type: Bool;
    ReportBoundsMay,    \* reading 2 (README): may a report take 6.11's MAY bounds?
    \* @type: Bool;
    RefusalStateless,   \* reading 12 (README): does a refused session leave no record?
    \* @type: Bool;
    ClosedReopens,      \* reading 4 (README): does data reaching a closed receiver open
                        \* a session anew (8.2), rather than being discarded?
    \* @type: Bool;
    LinkCues,           \* does the engine get link state cues (6.5, 6.6)?
    \* @type: Int;
    MaxOutages,         \* how many times the link may go down
    \* @type: Bool;
    GreenEobCloses,     \* reading 5 (specs/ltp/README.md): may a receiver that got
                        \* the green EOB and no red data at all close, no notice?
    \* @type: Bool;
    RedPartCloses,      \* reading 13 (specs/ltp/README.md): may a receiver with the
                        \* red part and the EOB close before its RS is acknowledged?
    \* @type: Bool;
    OverlapMiscolored,  \* reading 14 (specs/ltp/README.md): is data at an offset of
                        \* the other part's data received miscolored too?
    \* @type: Bool;
    IdleCancels         \* an implementation's declared profile, not a reading: does
                        \* the receiving engine cancel a stalled session for its client?

ASSUME NRed \in Nat                 \* red-only, mixed and green-only blocks
ASSUME NGreen \in Nat
ASSUME NRed + NGreen > 0
ASSUME MaxRetx \in Nat
ASSUME MaxLoss \in Nat
ASSUME MaxLate \in Nat
ASSUME PrematureTimeouts \in BOOLEAN
ASSUME FaultyReceiver \in BOOLEAN
\* The miscolored segment is green data at offset 0; a red segment above it
\* exposes it (6.21).
ASSUME MiscoloredSender \in BOOLEAN /\ (MiscoloredSender => NRed >= 2)
ASSUME GreenEobCloses \in BOOLEAN
ASSUME RedPartCloses \in BOOLEAN
ASSUME IdleCancels \in BOOLEAN
ASSUME OverlapMiscolored \in BOOLEAN
ASSUME ReportBoundsMay \in BOOLEAN
ASSUME ServiceKnown \in BOOLEAN
ASSUME RefusalStateless \in BOOLEAN
ASSUME ClosedReopens \in BOOLEAN
ASSUME LinkCues \in BOOLEAN
ASSUME MaxOutages \in Nat
\* A report whose claims exceed MaxClaims is several RSs (6.11).  The sender
\* keeps one retransmission and one checkpoint timer at a time, so the model
\* is exact only where at most one RS of a report leaves gaps.  Every report
\* of a block of at most three red segments, or of one RS, is such; for the
\* others, outcome sets (generators/ltp/outcomes.py) are refused, since TLC
\* would explore every report, and trace validation (generators/ltp/trace.py)
\* refuses a trace whose report shows two RSs with gaps.
ASSUME MaxClaims \in Nat \ {0}

NSeg == NRed + NGreen
RedSet == 0 .. (NRed - 1)
GreenSet == NRed .. (NSeg - 1)

(***************************************************************************)
(* Segments.  Every segment is one record shape (so that Apalache can type *)
(* the channels); fields a type does not carry are 0, {} or "".            *)
(***************************************************************************)
\* @typeAlias: seg = {type: Str, off: Int, cp: Int, rs: Int, lb: Int, ub: Int, claims: Set(Int), reason: Str};
\* @typeAlias: loss = {dir: Str, seg: $seg};
\* @typeAlias: event = {actor: Str, action: Str, dir: Str, rx: Seq($seg), tx: Seq($seg), lost: Seq($seg)};
LTP_typedefs == TRUE

CpTypes == {"RD-CP", "RD-CP-EORP", "RD-CP-EORP-EOB"}
RedTypes == {"RD"} \cup CpTypes
GreenTypes == {"GD", "GD-EOB"}
CtrlTypes == {"RS", "RA", "CS", "CAS", "CR", "CAR"}
SegTypes == RedTypes \cup GreenTypes \cup CtrlTypes

Mk(t, o, c, r) ==
    [type |-> t, off |-> o, cp |-> c, rs |-> r, lb |-> 0, ub |-> 0, claims |-> {}, reason |-> ""]
NoSeg == Mk("none", 0, 0, 0)

\* The type of red segment o (6.1): a checkpoint on the last red segment is EORP.
RedType(o, isCp) ==
    IF ~isCp THEN "RD"
    ELSE IF o = NRed - 1
         THEN IF NGreen = 0 THEN "RD-CP-EORP-EOB" ELSE "RD-CP-EORP"
         ELSE "RD-CP"
GreenType(o) == IF o = NSeg - 1 THEN "GD-EOB" ELSE "GD"

DataSeg(o) == Mk(IF o < NRed THEN RedType(o, FALSE) ELSE GreenType(o), o, 0, 0)
CheckpointSeg(o, c, r) == Mk(RedType(o, TRUE), o, c, r)
ReportSeg(r, c, l, u, cl) ==
    [type |-> "RS", off |-> 0, cp |-> c, rs |-> r, lb |-> l, ub |-> u, claims |-> cl, reason |-> ""]
AckSeg(r) == Mk("RA", 0, 0, r)
CancelSeg(t, why) == [Mk(t, 0, 0, 0) EXCEPT !.reason = why]

IsCp(s) == s.type \in CpTypes

\* 6.11: the RSs of one reception report on red offsets red within [lb, ub),
\* report serials first, first + 1, ...: each carries at most MaxClaims
\* claims (one claim per run of contiguous offsets); the first RS's lower
\* bound is the report's, the last RS's upper bound the report's, and each
\* RS ends where its last claim ends, so that their scopes tile the report's.
RunStarts(S) == {o \in S : o - 1 \notin S}
RunEnd(S, o) == CHOOSE e \in (o + 1) .. (NRed + 1) : e \notin S /\ \A x \in o .. (e - 1) : x \in S
\* The end (exclusive) of the k-th run of S, in offset order.
NthRunEnd(S, k) ==
    RunEnd(S, CHOOSE o \in RunStarts(S) : Cardinality({x \in RunStarts(S) : x < o}) = k - 1)
ReportSegs(first, c, lb, ub, red) ==
    LET S == {o \in red : lb <= o /\ o < ub}
        runs == Cardinality(RunStarts(S))
        n == IF runs = 0 THEN 1 ELSE (runs + MaxClaims - 1) \div MaxClaims
        Lo(g) == IF g = 1 THEN lb ELSE NthRunEnd(S, (g - 1) * MaxClaims)
        Hi(g) == IF g = n THEN ub ELSE NthRunEnd(S, g * MaxClaims)
    IN [g \in 1 .. n |-> ReportSeg(first + g - 1, c, Lo(g), Hi(g),
                                   {o \in S : Lo(g) <= o /\ o < Hi(g)})]
IsData(s) == s.type \in RedTypes \cup GreenTypes

Min(S) == CHOOSE x \in S : \A y \in S : x <= y
Max(S) == CHOOSE x \in S : \A y \in S : x >= y

\* S \cup {o}, for a set of offsets.  Offsets that arrive in order keep it an
\* interval lo..o: the same set, and TLC gives an interval the fingerprint of
\* the set enumerated, but it sorts an enumerated set each time it
\* fingerprints a state, and a block received in order would be sorted anew
\* at every state (trace validation of a 7,000-segment block spent a third of
\* its time there).
WithOffset(S, o) ==
    LET lo == o - Cardinality(S) IN
    IF S = lo .. (o - 1) THEN lo .. o ELSE S \cup {o}

VARIABLES
    \* --- block sender ---
    \* @type: Str;
    sState,     \* "open", "cs_sent" (cancelling, 6.15), "closed"
    \* @type: Str;
    sOutcome,   \* notice to the client: "none", "completed" (7.4), "cancelled" (7.5)
    \* @type: Int;
    sNext,      \* next segment of the initial transmission (NSeg when done)
    \* @type: Set(Int);
    sClaimed,   \* red offsets claimed by the RSs received so far (6.12)
    \* @type: Set(Int);
    sRsSeen,    \* report serials received (6.13: redundant RSs)
    \* @type: Int;
    sCpSerial,  \* last checkpoint serial number used
    \* @type: $seg;
    sCp,        \* the checkpoint whose timer runs, or NoSeg
    \* @type: Int;
    sCpTx,      \* times sCp has been queued for transmission (6.7)
    \* @type: Set(Int);
    sRetx,      \* red offsets queued for retransmission (6.13)
    \* @type: Int;
    sRetxRs,    \* report serial the queued retransmission answers
    \* @type: Int;
    sCxTx,      \* times the CS has been queued (6.16)
    \* @type: Bool;
    sMiscTx,    \* MiscoloredSender: its miscolored segment has been sent
    \* --- block receiver ---
    \* @type: Str;
    rState,     \* "idle" (no session yet, 8.2's CLOSED before the first data
                \* segment), "open", "cr_sent" (cancelling), "closed"
    \* @type: Str;
    rOutcome,   \* notice to the client: "none", "completed" (7.3), "cancelled" (7.6)
    \* @type: Set(Int);
    rRed,       \* red offsets received
    \* @type: Set(Int);
    rGreen,     \* green offsets received (each one a 7.2 notice)
    \* @type: Int;
    rDeliveries, \* red-part reception notices given (6.9), over every record
    \* @type: Bool;
    rDelivered, \* this record has given its red-part notice (reading 4 opens
                \* records anew: a new one has not)
    \* @type: Seq($seg);
    rReports,   \* the RSs issued; rReports[i] has report serial i
    \* @type: Seq(Int);
    rRsTx,      \* times rReports[i] has been queued (6.8)
    \* @type: Set(Int);
    rAcked,     \* report serials acknowledged by an RA (6.14)
    \* @type: Int;
    rCxTx,      \* times the CR has been queued (6.16)
    \* @type: Str;
    rCxReason,  \* the reason its CRs carry ("" until it cancels)
    \* --- channels and history ---
    \* @type: Set($seg);
    fwd,        \* in flight sender -> receiver
    \* @type: Set($seg);
    rtn,        \* in flight receiver -> sender
    \* @type: Seq($loss);
    lostLog,    \* history: the segments the channel lost, in order
    \* @type: {held: Set($loss), made: Int};
    late,       \* copies the channel holds back (delayed or duplicated segments),
                \* and how many it has made (against MaxLate)
    \* @type: {up: Bool, downs: Int};
    link,       \* is the link up, and how many times it went down (MaxOutages)
    \* @type: $event;
    lastEvent   \* history: what the last step did

senderVars == <<sState, sOutcome, sNext, sClaimed, sRsSeen, sCpSerial, sCp, sCpTx,
                sRetx, sRetxRs, sCxTx, sMiscTx>>
receiverVars == <<rState, rOutcome, rRed, rGreen, rDeliveries, rDelivered, rReports, rRsTx,
                  rAcked, rCxTx, rCxReason>>
vars == <<senderVars, receiverVars, fwd, rtn, lostLog, late, link, lastEvent>>

Ev(actor, action, dir, rx, tx, lost) ==
    [actor |-> actor, action |-> action, dir |-> dir, rx |-> rx, tx |-> tx, lost |-> lost]
TxFwd(action, rx, tx) == Ev("sender", action, "forward", rx, tx, <<>>)
TxRtn(action, rx, tx) == Ev("receiver", action, "return", rx, tx, <<>>)

-----------------------------------------------------------------------------

TypeOK ==
    /\ sState \in {"open", "cs_sent", "closed"}
    /\ sOutcome \in {"none", "completed", "cancelled"}
    /\ sNext \in 0 .. NSeg
    /\ sClaimed \subseteq RedSet
    /\ sRsSeen \subseteq Nat
    /\ sCpSerial \in Nat
    /\ sCp = NoSeg \/ IsCp(sCp)
    /\ sCpTx \in Nat
    /\ sRetx \subseteq RedSet
    /\ sRetxRs \in Nat
    /\ sCxTx \in Nat
    /\ sMiscTx \in BOOLEAN
    /\ rState \in {"idle", "open", "cr_sent", "closed"}
    /\ rOutcome \in {"none", "completed", "cancelled"}
    /\ rRed \subseteq RedSet
    /\ rGreen \subseteq GreenSet \cup (IF MiscoloredSender THEN {0} ELSE {})
    /\ rDeliveries \in Nat
    /\ rDelivered \in BOOLEAN
    /\ \A i \in DOMAIN rReports : rReports[i].type = "RS" /\ rReports[i].rs = i
    /\ Len(rRsTx) = Len(rReports)
    /\ rAcked \subseteq 1 .. Len(rReports)
    /\ rCxTx \in Nat
    /\ rCxReason \in {"", "RLEXC", "UNREACH", "MISCOLORED", "USR_CNCLD"}
    /\ \A s \in fwd \cup rtn : s.type \in SegTypes
    /\ \A s \in fwd : s.type \in RedTypes \cup GreenTypes \cup {"RA", "CS", "CAR"}
    /\ \A s \in rtn : s.type \in {"RS", "CR", "CAS"}
    /\ Len(lostLog) <= MaxLoss
    /\ \A h \in late.held : h.dir \in {"forward", "return"}
    /\ late.made \in 0 .. MaxLate
    /\ link.up \in BOOLEAN /\ link.downs \in 0 .. MaxOutages

Init ==
    /\ sState = "open"
    /\ sOutcome = "none"
    /\ sNext = 0
    /\ sClaimed = {}
    /\ sRsSeen = {}
    /\ sCpSerial = 0
    /\ sCp = NoSeg
    /\ sCpTx = 0
    /\ sRetx = {}
    /\ sRetxRs = 0
    /\ sCxTx = 0
    /\ sMiscTx = FALSE
    /\ rState = "idle"
    /\ rOutcome = "none"
    /\ rRed = {}
    /\ rGreen = {}
    /\ rDeliveries = 0
    /\ rDelivered = FALSE
    /\ rReports = <<>>
    /\ rRsTx = <<>>
    /\ rAcked = {}
    /\ rCxTx = 0
    /\ rCxReason = ""
    /\ fwd = {}
    /\ rtn = {}
    /\ lostLog = <<>>
    /\ late = [held |-> {}, made |-> 0]
    /\ link = [up |-> TRUE, downs |-> 0]
    /\ lastEvent = Ev("none", "Init", "", <<>>, <<>>, <<>>)

-----------------------------------------------------------------------------
(***************************************************************************)
(* Timer guards.  A timer stands for "the reply did not come back within   *)
(* the round-trip time".  Unless PrematureTimeouts, it can expire only     *)
(* once the guarded segment and its reply have left the channels, i.e.     *)
(* were received or lost (RFC 5326 6.2: timers are computed from the       *)
(* one-way light time plus margins).                                       *)
(***************************************************************************)
CpAwaited == sCp \in fwd \/ \E s \in rtn : s.type = "RS" /\ s.cp = sCp.cp
RsAwaited(i) == rReports[i] \in rtn \/ AckSeg(i) \in fwd
CsAwaited == CancelSeg("CS", "RLEXC") \in fwd \/ CancelSeg("CAS", "") \in rtn
\* The receiver's CR, with the reason it cancelled for (rCxReason): UNREACH
\* when it refused the session (8.2), MISCOLORED on a miscolored segment
\* (6.21), RLEXC when a retransmission limit was exceeded, USR_CNCLD when it
\* cancelled a stalled session for its client (IdleCancels).
RxCancel == CancelSeg("CR", rCxReason)
CrAwaited == RxCancel \in rtn \/ CancelSeg("CAR", "") \in fwd

\* May a timer whose segment or reply is (awaited) or is not in flight expire?
\* While the link is up, as above.  While it is down (ChannelLinkDown), an
\* engine with link state cues has suspended its timers (6.5; 6.6 resumes
\* them, pushed back by the time the link was down, so that they expire only
\* as if the outage had not been); one without cues lets them run on, and
\* they may expire though the segment or its reply is still to come.
TimerMayExpire(awaited) ==
    IF link.up THEN PrematureTimeouts \/ ~awaited ELSE ~LinkCues

-----------------------------------------------------------------------------
(* ------------------------------ sender --------------------------------- *)

\* 6.1: initial transmission of a red segment that is not the last one.
SenderTxRedData ==
    /\ sState = "open"
    /\ sNext < NRed - 1
    /\ fwd' = fwd \cup {DataSeg(sNext)}
    /\ sNext' = sNext + 1
    /\ lastEvent' = TxFwd("SenderTxRedData", <<>>, <<DataSeg(sNext)>>)
    /\ UNCHANGED <<sState, sOutcome, sClaimed, sRsSeen, sCpSerial, sCp, sCpTx, sRetx, sRetxRs,
                   sCxTx, receiverVars, rtn, lostLog, late, sMiscTx, link>>

\* 6.1, 6.2: the last red segment is a checkpoint (EORP; EOB too if no green);
\* its timer starts.
SenderTxCheckpoint ==
    LET cp == CheckpointSeg(sNext, sCpSerial + 1, 0) IN
    /\ sState = "open"
    /\ sNext = NRed - 1
    /\ fwd' = fwd \cup {cp}
    /\ sNext' = sNext + 1
    /\ sCpSerial' = sCpSerial + 1
    /\ sCp' = cp
    /\ sCpTx' = 1
    /\ lastEvent' = TxFwd("SenderTxCheckpoint", <<>>, <<cp>>)
    /\ UNCHANGED <<sState, sOutcome, sClaimed, sRsSeen, sRetx, sRetxRs, sCxTx, receiverVars,
                   rtn, lostLog, late, sMiscTx, link>>

\* 6.1: initial transmission of a green segment; the last one is GD-EOB.
SenderTxGreenData ==
    /\ sState = "open"
    /\ sNext >= NRed
    /\ sNext < NSeg
    /\ fwd' = fwd \cup {DataSeg(sNext)}
    /\ sNext' = sNext + 1
    /\ lastEvent' = TxFwd("SenderTxGreenData", <<>>, <<DataSeg(sNext)>>)
    /\ UNCHANGED <<sState, sOutcome, sClaimed, sRsSeen, sCpSerial, sCp, sCpTx, sRetx, sRetxRs,
                   sCxTx, receiverVars, rtn, lostLog, late, sMiscTx, link>>

\* The miscolored segment: green data at offset 0, inside the red part.
MiscoloredSeg == Mk("GD", 0, 0, 0)

\* 6.1, 6.21: fault injection (MiscoloredSender).  Once its first red
\* segment is out, the sender sends MiscoloredSeg, once.  An honest sender
\* never does (6.1: red first, then green).
SenderTxMiscoloredData ==
    /\ MiscoloredSender
    /\ sState = "open"
    /\ sNext > 0
    /\ ~sMiscTx
    /\ fwd' = fwd \cup {MiscoloredSeg}
    /\ sMiscTx' = TRUE
    /\ lastEvent' = TxFwd("SenderTxMiscoloredData", <<>>, <<MiscoloredSeg>>)
    /\ UNCHANGED <<sState, sOutcome, sNext, sClaimed, sRsSeen, sCpSerial, sCp, sCpTx, sRetx,
                   sRetxRs, sCxTx, receiverVars, rtn, lostLog, late, link>>

\* 6.13: a fresh RS arrives (the session is open and the report serial is
\* new).  An RA with its report serial is queued, the timer of the RS's
\* checkpoint is deleted, its claims are recorded, and the red data in
\* [lb, ub) it does not claim is queued for retransmission (sent by
\* SenderRetxRedData / SenderRetxCheckpoint).  The 6.13 limit on
\* transmission problems is not modelled (see the header).
SenderRxReport(s) ==
    LET missing == {o \in RedSet : s.lb <= o /\ o < s.ub} \ s.claims IN
    /\ s \in rtn
    /\ s.type = "RS"
    /\ sState = "open"
    /\ s.rs \notin sRsSeen
    /\ rtn' = rtn \ {s}
    /\ fwd' = fwd \cup {AckSeg(s.rs)}
    /\ sRsSeen' = sRsSeen \cup {s.rs}
    /\ sClaimed' = sClaimed \cup s.claims
    /\ sCp' = IF s.cp = sCp.cp THEN NoSeg ELSE sCp
    /\ sRetx' = sRetx \cup missing
    /\ sRetxRs' = IF missing # {} THEN s.rs ELSE sRetxRs
    /\ lastEvent' = TxFwd("SenderRxReport", <<s>>, <<AckSeg(s.rs)>>)
    /\ UNCHANGED <<sState, sOutcome, sNext, sCpSerial, sCpTx, sCxTx, receiverVars, lostLog, late,
                   sMiscTx, link>>

\* 6.13, 8.1: a redundant RS -- its report serial was received before, or the
\* session is closed ("received after the session has been completed or
\* canceled") -- is acknowledged with an RA and nothing more.  A cancelling
\* session (6.19: its retransmission buffers can be released) treats every
\* RS the same way, the model's choice.
SenderRxRedundantReport(s) ==
    /\ s \in rtn
    /\ s.type = "RS"
    /\ ~(sState = "open" /\ s.rs \notin sRsSeen)
    /\ rtn' = rtn \ {s}
    /\ fwd' = fwd \cup {AckSeg(s.rs)}
    /\ lastEvent' = TxFwd("SenderRxRedundantReport", <<s>>, <<AckSeg(s.rs)>>)
    /\ UNCHANGED <<sState, sOutcome, sNext, sClaimed, sRsSeen, sCpSerial, sCp, sCpTx, sRetx,
                   sRetxRs, sCxTx, receiverVars, lostLog, late, sMiscTx, link>>

\* 6.13: retransmission of a missing red segment other than the last one.
SenderRetxRedData ==
    LET o == Min(sRetx) IN
    /\ sState = "open"
    /\ Cardinality(sRetx) > 1
    /\ fwd' = fwd \cup {DataSeg(o)}
    /\ sRetx' = sRetx \ {o}
    /\ lastEvent' = TxFwd("SenderRetxRedData", <<>>, <<DataSeg(o)>>)
    /\ UNCHANGED <<sState, sOutcome, sNext, sClaimed, sRsSeen, sCpSerial, sCp, sCpTx, sRetxRs,
                   sCxTx, receiverVars, rtn, lostLog, late, sMiscTx, link>>

\* 6.13: the last retransmitted segment is a checkpoint with a new serial,
\* carrying the serial of the RS it answers; 6.2: its timer starts.
SenderRetxCheckpoint ==
    LET o == CHOOSE x \in sRetx : TRUE
        cp == CheckpointSeg(o, sCpSerial + 1, sRetxRs)
    IN
    /\ sState = "open"
    /\ Cardinality(sRetx) = 1
    /\ fwd' = fwd \cup {cp}
    /\ sRetx' = {}
    /\ sCpSerial' = sCpSerial + 1
    /\ sCp' = cp
    /\ sCpTx' = 1
    /\ lastEvent' = TxFwd("SenderRetxCheckpoint", <<>>, <<cp>>)
    /\ UNCHANGED <<sState, sOutcome, sNext, sClaimed, sRsSeen, sRetxRs, sCxTx, receiverVars,
                   rtn, lostLog, late, sMiscTx, link>>

\* 6.7: the checkpoint timer expires below the limit: a new copy of the same
\* checkpoint (same serials) is queued and the timer restarts.
SenderExpireCheckpointTimer ==
    /\ sState = "open"
    /\ sCp # NoSeg
    /\ TimerMayExpire(CpAwaited)
    /\ sCpTx <= MaxRetx
    /\ fwd' = fwd \cup {sCp}
    /\ sCpTx' = sCpTx + 1
    /\ lastEvent' = TxFwd("SenderExpireCheckpointTimer", <<>>, <<sCp>>)
    /\ UNCHANGED <<sState, sOutcome, sNext, sClaimed, sRsSeen, sCpSerial, sCp, sRetx, sRetxRs,
                   sCxTx, receiverVars, rtn, lostLog, late, sMiscTx, link>>

\* 6.7, 6.19, 7.5: the checkpoint timer expires with the checkpoint queued more
\* than MaxRetx times: the session is cancelled, a CS with reason RLEXC is
\* queued (6.15: the cancel timer starts), the client gets a cancellation notice.
SenderCancelSession ==
    /\ sState = "open"
    /\ sCp # NoSeg
    /\ TimerMayExpire(CpAwaited)
    /\ sCpTx > MaxRetx
    /\ fwd' = fwd \cup {CancelSeg("CS", "RLEXC")}
    /\ sState' = "cs_sent"
    /\ sOutcome' = "cancelled"
    /\ sCp' = NoSeg
    /\ sRetx' = {}
    /\ sCxTx' = 1
    /\ lastEvent' = TxFwd("SenderCancelSession", <<>>, <<CancelSeg("CS", "RLEXC")>>)
    /\ UNCHANGED <<sNext, sClaimed, sRsSeen, sCpSerial, sCpTx, sRetxRs, receiverVars, rtn,
                   lostLog, late, sMiscTx, link>>

\* 6.12, 7.4, 6.20: all data sent and the red part fully claimed: completion
\* notice, the session closes.
SenderSignalCompletion ==
    /\ sState = "open"
    /\ sNext = NSeg
    /\ RedSet \subseteq sClaimed
    /\ sState' = "closed"
    /\ sOutcome' = "completed"
    /\ sCp' = NoSeg
    /\ sRetx' = {}
    /\ lastEvent' = Ev("sender", "SenderSignalCompletion", "", <<>>, <<>>, <<>>)
    /\ UNCHANGED <<sNext, sClaimed, sRsSeen, sCpSerial, sCpTx, sRetxRs, sCxTx, receiverVars,
                   fwd, rtn, lostLog, late, sMiscTx, link>>

\* 6.17, 6.19, 7.5, 6.20: a CR arrives while the session is open: a CAR is
\* queued, the session is cancelled (transmission-session cancellation
\* notice) and closed.
SenderRxCancel(s) ==
    /\ s \in rtn
    /\ s.type = "CR"
    /\ sState = "open"
    /\ rtn' = rtn \ {s}
    /\ fwd' = fwd \cup {CancelSeg("CAR", "")}
    /\ sState' = "closed"
    /\ sOutcome' = "cancelled"
    /\ sCp' = NoSeg
    /\ sRetx' = {}
    /\ lastEvent' = TxFwd("SenderRxCancel", <<s>>, <<CancelSeg("CAR", "")>>)
    /\ UNCHANGED <<sNext, sClaimed, sRsSeen, sCpSerial, sCpTx, sRetxRs, sCxTx, receiverVars,
                   lostLog, late, sMiscTx, link>>

\* 6.17, 8.1: a CR arrives while the session is not open: a CAR is queued all
\* the same.  A closed session keeps no record (6.20; "retransmits the
\* acknowledging CAR segment and stays in the CLOSED state"); a cancelling one
\* (the CR crossed its CS) closes (6.20) without a second notice, its 7.5
\* notice was given when it cancelled.
SenderRxRedundantCancel(s) ==
    /\ s \in rtn
    /\ s.type = "CR"
    /\ sState # "open"
    /\ rtn' = rtn \ {s}
    /\ fwd' = fwd \cup {CancelSeg("CAR", "")}
    /\ sState' = "closed"
    /\ sCp' = NoSeg
    /\ sRetx' = {}
    /\ lastEvent' = TxFwd("SenderRxRedundantCancel", <<s>>, <<CancelSeg("CAR", "")>>)
    /\ UNCHANGED <<sOutcome, sNext, sClaimed, sRsSeen, sCpSerial, sCpTx, sRetxRs, sCxTx,
                   receiverVars, lostLog, late, sMiscTx, link>>

\* 6.18: a CAS arrives: the cancel timer stops and the session closes.
SenderRxCancelAck(s) ==
    /\ s \in rtn
    /\ s.type = "CAS"
    /\ rtn' = rtn \ {s}
    /\ sState' = IF sState = "cs_sent" THEN "closed" ELSE sState
    /\ lastEvent' = Ev("sender", "SenderRxCancelAck", "", <<s>>, <<>>, <<>>)
    /\ UNCHANGED <<sOutcome, sNext, sClaimed, sRsSeen, sCpSerial, sCp, sCpTx, sRetx, sRetxRs,
                   sCxTx, receiverVars, fwd, lostLog, late, sMiscTx, link>>

\* 6.16: the cancel timer expires below the limit: the CS is queued again.
SenderExpireCancelTimer ==
    /\ sState = "cs_sent"
    /\ TimerMayExpire(CsAwaited)
    /\ sCxTx <= MaxRetx
    /\ fwd' = fwd \cup {CancelSeg("CS", "RLEXC")}
    /\ sCxTx' = sCxTx + 1
    /\ lastEvent' = TxFwd("SenderExpireCancelTimer", <<>>, <<CancelSeg("CS", "RLEXC")>>)
    /\ UNCHANGED <<sState, sOutcome, sNext, sClaimed, sRsSeen, sCpSerial, sCp, sCpTx, sRetx,
                   sRetxRs, receiverVars, rtn, lostLog, late, sMiscTx, link>>

\* 6.16, 6.20: the cancel timer expires beyond the limit: the session closes.
SenderAbandonCancel ==
    /\ sState = "cs_sent"
    /\ TimerMayExpire(CsAwaited)
    /\ sCxTx > MaxRetx
    /\ sState' = "closed"
    /\ lastEvent' = Ev("sender", "SenderAbandonCancel", "", <<>>, <<>>, <<>>)
    /\ UNCHANGED <<sOutcome, sNext, sClaimed, sRsSeen, sCpSerial, sCp, sCpTx, sRetx, sRetxRs,
                   sCxTx, receiverVars, fwd, rtn, lostLog, late, sMiscTx, link>>

(* ----------------------------- receiver -------------------------------- *)

\* 6.21: a red data segment above a green one already received, or green
\* data below a red one: the red part must be the block's prefix.  Only
\* MiscoloredSender's segment (green data at offset 0) ever is.
Miscolored(s) ==
    \/ s.type \in RedTypes /\ \E g \in rGreen : s.off > g
    \/ s.type \in GreenTypes /\ \E r \in rRed : s.off < r

\* Reading 14's alternative (OverlapMiscolored, specs/ltp/README.md): data at
\* the very offset of the other part's data received breaks 6.21's
\* requirement too (the red part the prefix, the green the suffix), though
\* not its triggers' strict comparisons; the receiver may take it as
\* miscolored (HDTN compares with the end of the red data received).
MayBeMiscolored(s) ==
    \/ Miscolored(s)
    \/ /\ OverlapMiscolored
       /\ \/ s.type \in RedTypes /\ \E g \in rGreen : s.off = g
          \/ s.type \in GreenTypes /\ \E r \in rRed : s.off = r

\* 8.2: the receiver begins in CLOSED, with no record of the session, and
\* the first data segment (red or green) opens it; "idle" is that state.
\* Data is processed while the session is open or is opened by it.
ReceiverTakesData == rState = "open" \/ (rState = "idle" /\ ServiceKnown)
\* No session to take data: cancelling, or closed under the default reading
\* of question 4 (an idle receiver with an unknown service refuses the
\* session instead, ReceiverRefuseSession; under reading 4's alternative a
\* closed one opens it anew, ReceiverReopenSession).
ReceiverDiscards == rState = "cr_sent" \/ (rState = "closed" /\ ~ClosedReopens)

\* The RSs issued for checkpoint serial c: one report (a checkpoint seen
\* before gets no new one), of one RS or more, with consecutive serials.
ReportsFor(c) == {i \in DOMAIN rReports : rReports[i].cp = c}
\* Those RSs in serial order.
ReportSeqFor(c) ==
    LET first == Min(ReportsFor(c)) IN
    [k \in 1 .. Cardinality(ReportsFor(c)) |-> rReports[first + k - 1]]
Range(f) == {f[x] : x \in DOMAIN f}

\* 3.2.1, 8.2: red data that is not a checkpoint arrives while the session is
\* open (or opens it): its offset is recorded (for the reports of 6.11 and
\* the delivery of 6.9).
ReceiverRxRedData(s) ==
    /\ s \in fwd
    /\ s.type = "RD"
    /\ ReceiverTakesData
    /\ ~Miscolored(s)
    /\ fwd' = fwd \ {s}
    /\ rState' = "open"
    /\ rRed' = WithOffset(rRed, s.off)
    /\ lastEvent' = Ev("receiver", "ReceiverRxRedData", "", <<s>>, <<>>, <<>>)
    /\ UNCHANGED <<senderVars, rOutcome, rGreen, rDeliveries, rDelivered, rReports, rRsTx, rAcked,
                   rCxTx, rtn, lostLog, late, rCxReason, link>>

\* Red data that is not a checkpoint arrives while the session is cancelling
\* (6.19) or closed (6.20: no record is left): discarded.  RFC 5326 has no
\* rule for a closed session (8.2 would start a new one): discarding is the
\* default reading of question 4, ReceiverReopenSession its alternative.
\* Not red data naming a service the receiver lacks: ReceiverRefuseData.
ReceiverDiscardRedData(s) ==
    /\ s \in fwd
    /\ s.type = "RD"
    /\ ReceiverDiscards
    /\ ServiceKnown
    /\ fwd' = fwd \ {s}
    /\ lastEvent' = Ev("receiver", "ReceiverDiscardRedData", "", <<s>>, <<>>, <<>>)
    /\ UNCHANGED <<senderVars, receiverVars, rtn, lostLog, late, link>>

\* 6.11: the bounds a report answering checkpoint s may take.  Upper bound:
\* the checkpoint's upper bound (SHOULD), or, under reading 2's alternative
\* (ReportBoundsMay), the highest red offset received so far (MAY).  Lower
\* bound: 0 for the (only) primary report (MUST); for a secondary report the
\* lower bound of the RS the checkpoint answers (SHOULD), or 0 (MAY, under
\* the alternative).
ReportUpperBounds(s, red) ==
    IF ReportBoundsMay THEN {s.off + 1, Max(red) + 1} ELSE {s.off + 1}
ReportLowerBounds(s) ==
    IF s.rs = 0 THEN {0}
    ELSE IF ReportBoundsMay THEN {rReports[s.rs].lb, 0} ELSE {rReports[s.rs].lb}

\* 6.11 (a), 6.3: a checkpoint with a new serial arrives while the session is
\* open (or opens it, 8.2): its data is recorded and a reception report is
\* queued, as one RS or more (ReportSegs; each RS's timer starts), with
\* bounds as above and claims = red data received in [lb, ub).  The 6.11
\* limit on reception problems is not modelled.
ReceiverRxCheckpoint(s) ==
    LET red == WithOffset(rRed, s.off)
        n == Len(rReports) + 1
    IN
    /\ s \in fwd
    /\ IsCp(s)
    /\ ReceiverTakesData
    /\ ~Miscolored(s)
    /\ ReportsFor(s.cp) = {}
    /\ \E lb \in ReportLowerBounds(s), ub \in ReportUpperBounds(s, red) :
         LET rs == ReportSegs(n, s.cp, lb, ub, red) IN
         /\ rReports' = rReports \o rs
         /\ rRsTx' = rRsTx \o [g \in DOMAIN rs |-> 1]
         /\ rtn' = rtn \cup Range(rs)
         /\ lastEvent' = TxRtn("ReceiverRxCheckpoint", <<s>>, rs)
    /\ fwd' = fwd \ {s}
    /\ rState' = "open"
    /\ rRed' = red
    /\ UNCHANGED <<senderVars, rOutcome, rGreen, rDeliveries, rDelivered, rAcked, rCxTx, lostLog,
                   late, rCxReason, link>>

\* A checkpoint (new or not) arrives while the session is cancelling or
\* closed: discarded, no RS, like any data then (ReceiverDiscardRedData).
ReceiverDiscardCheckpoint(s) ==
    /\ s \in fwd
    /\ IsCp(s)
    /\ ReceiverDiscards
    /\ ServiceKnown  \* else ReceiverRefuseData
    /\ fwd' = fwd \ {s}
    /\ lastEvent' = Ev("receiver", "ReceiverDiscardCheckpoint", "", <<s>>, <<>>, <<>>)
    /\ UNCHANGED <<senderVars, receiverVars, rtn, lostLog, late, link>>

\* 6.8 (b): a redundantly retransmitted checkpoint (its serial was answered
\* before) arrives while the session is open, and no RS issued for it has
\* been queued more than MaxRetx times: its data is recorded and a new copy
\* of each of those RSs ("each affected RS segment") is queued.
ReceiverRxRedundantCheckpoint(s) ==
    LET mine == ReportsFor(s.cp) IN
    /\ s \in fwd
    /\ IsCp(s)
    /\ rState = "open"
    /\ ~Miscolored(s)
    /\ mine # {}
    /\ \A i \in mine : rRsTx[i] <= MaxRetx
    /\ fwd' = fwd \ {s}
    /\ rRed' = WithOffset(rRed, s.off)
    /\ rtn' = rtn \cup Range(ReportSeqFor(s.cp))
    /\ rRsTx' = [i \in DOMAIN rRsTx |-> IF i \in mine THEN rRsTx[i] + 1 ELSE rRsTx[i]]
    /\ lastEvent' = TxRtn("ReceiverRxRedundantCheckpoint", <<s>>, ReportSeqFor(s.cp))
    /\ UNCHANGED <<senderVars, rState, rOutcome, rGreen, rDeliveries, rDelivered, rReports,
                   rAcked, rCxTx, lostLog, late, rCxReason, link>>

\* 6.8 (b), 6.19, 7.6: a redundantly retransmitted checkpoint arrives while
\* the session is open, and an RS issued for it has been queued more than
\* MaxRetx times: its data is recorded, then the session is cancelled exactly
\* as in ReceiverCancelSession (a CR with reason RLEXC is queued, 6.15: the
\* cancel timer starts).  RFC 5326 applies the limit whether or not the RS
\* was acknowledged; so does the model.
ReceiverCancelOnRedundantCheckpoint(s) ==
    LET cr == CancelSeg("CR", "RLEXC") IN
    /\ s \in fwd
    /\ IsCp(s)
    /\ rState = "open"
    /\ ~Miscolored(s)
    /\ \E i \in ReportsFor(s.cp) : rRsTx[i] > MaxRetx
    /\ fwd' = fwd \ {s}
    /\ rRed' = WithOffset(rRed, s.off)
    /\ rtn' = rtn \cup {cr}
    /\ rState' = "cr_sent"
    /\ rOutcome' = "cancelled"
    /\ rCxTx' = 1
    /\ rCxReason' = "RLEXC"
    /\ lastEvent' = TxRtn("ReceiverCancelOnRedundantCheckpoint", <<s>>, <<cr>>)
    /\ UNCHANGED <<senderVars, rGreen, rDeliveries, rDelivered, rReports, rRsTx, rAcked, lostLog,
                   late, link>>

\* 6.21, 6.19, 7.6: a miscolored data segment arrives while the session is
\* open: it is discarded and the session cancelled, with a CR whose reason
\* is MISCOLORED (a SHOULD; the model sends it) and the cancel timer (6.15).
ReceiverCancelOnMiscolored(s) ==
    LET cr == CancelSeg("CR", "MISCOLORED") IN
    /\ s \in fwd
    /\ IsData(s)
    /\ rState = "open"
    /\ MayBeMiscolored(s)
    /\ fwd' = fwd \ {s}
    /\ rtn' = rtn \cup {cr}
    /\ rState' = "cr_sent"
    /\ rOutcome' = "cancelled"
    /\ rCxTx' = 1
    /\ rCxReason' = "MISCOLORED"
    /\ lastEvent' = TxRtn("ReceiverCancelOnMiscolored", <<s>>, <<cr>>)
    /\ UNCHANGED <<senderVars, rRed, rGreen, rDeliveries, rDelivered, rReports, rRsTx, rAcked,
                   lostLog, late, link>>

\* 8.2: the first data segment (red or green) names a client service the
\* receiver does not have: the session is refused, with the cancellation
\* sequence (a CR with reason UNREACH, its timer started, 6.15, 6.16); no
\* notice is given (there is no client service to give it to).  Reading 12
\* (RefusalStateless, a deviation): a receiver that keeps no record of a
\* refused session stays in CLOSED ("idle"), runs no cancel timer, and
\* refuses each later data segment of the session anew, as the first one.
ReceiverRefuseSession(s) ==
    /\ s \in fwd
    /\ IsData(s)
    /\ rState = "idle"
    /\ ~ServiceKnown
    /\ fwd' = fwd \ {s}
    /\ rtn' = rtn \cup {CancelSeg("CR", "UNREACH")}
    /\ rState' = IF RefusalStateless THEN "idle" ELSE "cr_sent"
    /\ rCxTx' = IF RefusalStateless THEN rCxTx ELSE 1
    /\ rCxReason' = "UNREACH"
    /\ lastEvent' = TxRtn("ReceiverRefuseSession", <<s>>, <<CancelSeg("CR", "UNREACH")>>)
    /\ UNCHANGED <<senderVars, rOutcome, rRed, rGreen, rDeliveries, rDelivered, rReports, rRsTx,
                   rAcked, lostLog, late, link>>

\* 6 (the preamble of Internal Procedures): every data segment naming a
\* client service the receiver lacks is handled by this procedure instead
\* of any other; for a red segment "a CR with reason-code UNREACH MUST be
\* enqueued", for a green one it SHOULD be (so a later green one may also
\* be discarded, ReceiverDiscardGreenData; the session's first segment,
\* green or red, is refused: ReceiverRefuseSession).  A later segment of a
\* refused session therefore draws a CR of its own, whether it is still
\* cancelling (the copy leaves the cancel timer and its count as they are:
\* 6.16 counts the timer's retransmissions) or closed already (its
\* cancellation sequence starts again: 6.15 starts a timer whenever a Cx
\* segment is de-queued).
ReceiverRefuseData(s) ==
    /\ s \in fwd
    /\ IsData(s)
    /\ rState \in {"cr_sent", "closed"}
    /\ ~ServiceKnown
    /\ fwd' = fwd \ {s}
    /\ rtn' = rtn \cup {CancelSeg("CR", "UNREACH")}
    /\ rState' = "cr_sent"
    /\ rCxTx' = IF rState = "closed" THEN 1 ELSE rCxTx
    /\ lastEvent' = TxRtn("ReceiverRefuseData", <<s>>, <<CancelSeg("CR", "UNREACH")>>)
    /\ UNCHANGED <<senderVars, rOutcome, rRed, rGreen, rDeliveries, rDelivered, rReports, rRsTx,
                   rAcked, lostLog, late, rCxReason, link>>

\* 6.10, 7.2: a green segment arrives while the session is open (or opens
\* it, 8.2): one green-part segment arrival notice.
ReceiverRxGreenData(s) ==
    /\ s \in fwd
    /\ s.type \in GreenTypes
    /\ ReceiverTakesData
    /\ ~Miscolored(s)
    /\ fwd' = fwd \ {s}
    /\ rState' = "open"
    /\ rGreen' = WithOffset(rGreen, s.off)
    /\ lastEvent' = Ev("receiver", "ReceiverRxGreenData", "", <<s>>, <<>>, <<>>)
    /\ UNCHANGED <<senderVars, rOutcome, rRed, rDeliveries, rDelivered, rReports, rRsTx, rAcked,
                   rCxTx, rtn, lostLog, late, rCxReason, link>>

\* A green segment arrives while the session is cancelling or closed:
\* discarded without a notice, like red data then (ReceiverDiscardRedData).
\* Cancelling: 8.2's CR_SENT has no step for data, and 7.6 gives no notice
\* after the cancellation notice (settled question 15, README).
ReceiverDiscardGreenData(s) ==
    /\ s \in fwd
    /\ s.type \in GreenTypes
    /\ ReceiverDiscards
    /\ fwd' = fwd \ {s}
    /\ lastEvent' = Ev("receiver", "ReceiverDiscardGreenData", "", <<s>>, <<>>, <<>>)
    /\ UNCHANGED <<senderVars, receiverVars, rtn, lostLog, late, link>>

\* 6.9, 7.3: the whole red part has arrived: one red-part reception notice.
\* (FaultyReceiver: delivers as soon as the EORP segment is in.)  rRed holds
\* red offsets only, so counting it says RedSet \subseteq rRed, in constant
\* time (this guard is evaluated in every state of a long trace).
ReceiverDeliverRedPart ==
    /\ NRed > 0
    /\ rState = "open"
    /\ ~rDelivered
    /\ IF FaultyReceiver THEN NRed - 1 \in rRed ELSE Cardinality(rRed) = NRed
    /\ rDeliveries' = rDeliveries + 1
    /\ rDelivered' = TRUE
    /\ rOutcome' = "completed"
    /\ lastEvent' = Ev("receiver", "ReceiverDeliverRedPart", "", <<>>, <<>>, <<>>)
    /\ UNCHANGED <<senderVars, rState, rRed, rGreen, rReports, rRsTx, rAcked, rCxTx, fwd, rtn,
                   lostLog, late, rCxReason, link>>

\* 6.14: an RA stops the timer of the RS it acknowledges.
ReceiverRxReportAck(s) ==
    /\ s \in fwd
    /\ s.type = "RA"
    /\ fwd' = fwd \ {s}
    /\ rAcked' = IF rState = "open" /\ s.rs \in DOMAIN rReports THEN rAcked \cup {s.rs}
                 ELSE rAcked
    /\ lastEvent' = Ev("receiver", "ReceiverRxReportAck", "", <<s>>, <<>>, <<>>)
    /\ UNCHANGED <<senderVars, rState, rOutcome, rRed, rGreen, rDeliveries, rDelivered, rReports,
                   rRsTx, rCxTx, rtn, lostLog, late, rCxReason, link>>

\* 6.8 (a): an RS timer expires below the limit: a new copy of the RS.
ReceiverExpireReportTimer(i) ==
    /\ rState = "open"
    /\ i \in DOMAIN rReports
    /\ i \notin rAcked
    /\ TimerMayExpire(RsAwaited(i))
    /\ rRsTx[i] <= MaxRetx
    /\ rtn' = rtn \cup {rReports[i]}
    /\ rRsTx' = [rRsTx EXCEPT ![i] = @ + 1]
    /\ lastEvent' = TxRtn("ReceiverExpireReportTimer", <<>>, <<rReports[i]>>)
    /\ UNCHANGED <<senderVars, rState, rOutcome, rRed, rGreen, rDeliveries, rDelivered, rReports,
                   rAcked, rCxTx, fwd, lostLog, late, rCxReason, link>>

\* 6.8, 6.19, 7.6: an RS timer expires beyond the limit: the session is
\* cancelled, a CR with reason RLEXC is queued (6.15: the cancel timer starts).
ReceiverCancelSession(i) ==
    /\ rState = "open"
    /\ i \in DOMAIN rReports
    /\ i \notin rAcked
    /\ TimerMayExpire(RsAwaited(i))
    /\ rRsTx[i] > MaxRetx
    /\ rtn' = rtn \cup {CancelSeg("CR", "RLEXC")}
    /\ rState' = "cr_sent"
    /\ rOutcome' = "cancelled"
    /\ rCxTx' = 1
    /\ rCxReason' = "RLEXC"
    /\ lastEvent' = TxRtn("ReceiverCancelSession", <<>>, <<CancelSeg("CR", "RLEXC")>>)
    /\ UNCHANGED <<senderVars, rRed, rGreen, rDeliveries, rDelivered, rReports, rRsTx, rAcked,
                   fwd, lostLog, late, link>>

\* 6.14, 6.20: red part delivered and every RS acknowledged: the session closes.
ReceiverCloseSession ==
    /\ rState = "open"
    /\ rDeliveries > 0
    /\ DOMAIN rReports \subseteq rAcked
    /\ rState' = "closed"
    /\ lastEvent' = Ev("receiver", "ReceiverCloseSession", "", <<>>, <<>>, <<>>)
    /\ UNCHANGED <<senderVars, rOutcome, rRed, rGreen, rDeliveries, rDelivered, rReports, rRsTx,
                   rAcked, rCxTx, fwd, rtn, lostLog, late, rCxReason, link>>

\* The end of the block has arrived: the EOB segment, the last red one in a
\* red-only block (rRed and rGreen hold offsets of their own part only).
RxEob == NSeg - 1 \in rRed \cup rGreen

\* Reading 13's alternative (RedPartCloses, specs/ltp/README.md): 8.2 has a
\* receiver with the EOB (WAIT_RP_REC) move to CLOSED "upon full red-part
\* reception", where 6.14 closes only once no RS awaits its RA.  The red
\* part delivered and the EOB in, the receiver may close with an RS still
\* unacknowledged; 6.20 deletes its RS timers, so a lost RA is never made
\* good and a lost RS is answered by no one (the sender's checkpoint then
\* meets a closed session, reading 4).
ReceiverCloseOnRedPart ==
    /\ RedPartCloses
    /\ rState = "open"
    /\ rDeliveries > 0
    /\ RxEob
    /\ ~(DOMAIN rReports \subseteq rAcked)
    /\ rState' = "closed"
    /\ lastEvent' = Ev("receiver", "ReceiverCloseOnRedPart", "", <<>>, <<>>, <<>>)
    /\ UNCHANGED <<senderVars, rOutcome, rRed, rGreen, rDeliveries, rDelivered, rReports, rRsTx,
                   rAcked, rCxTx, fwd, rtn, lostLog, late, rCxReason, link>>

\* IdleCancels (an implementation's declared profile, docs/implementers.md):
\* the receiving engine gives up on a session that has stalled, as its
\* client could at any time (4.2: a cancellation request, then 6.19 and a
\* CR with reason USR_CNCLD).  HDTN does so on its housekeeping timer once
\* no segment has come for longer than the sender's every retransmission
\* would take, and no timer of its own runs (LtpEngine.cpp, "stagnant Rx
\* session").  The model has no clock; stalled is: nothing on its way to
\* the receiver, every RS acknowledged, a sender with nothing left to do of
\* itself (closed, or all sent with no checkpoint timer, no retransmission
\* due and no completion to signal), no red part left to deliver, and no
\* end of block that closes it (the EOB in with the red part delivered, or
\* with no red part: ReceiverCloseSession, ReceiverCloseOnGreenEob).
SenderQuiet ==
    \/ sState = "closed"
    \/ /\ sState = "open" /\ sNext = NSeg /\ sCp = NoSeg /\ sRetx = {}
       /\ ~(RedSet \subseteq sClaimed)

ReceiverCancelIdleSession ==
    LET cr == CancelSeg("CR", "USR_CNCLD") IN
    /\ IdleCancels
    /\ rState = "open"
    /\ SenderQuiet
    /\ ~(NRed > 0 /\ ~rDelivered /\ Cardinality(rRed) = NRed)
    /\ ~(RxEob /\ (rDeliveries > 0 \/ NRed = 0))
    /\ fwd = {}
    /\ ~\E h \in late.held : h.dir = "forward"
    /\ DOMAIN rReports \subseteq rAcked
    /\ rtn' = rtn \cup {cr}
    /\ rState' = "cr_sent"
    /\ rOutcome' = "cancelled"
    /\ rCxTx' = 1
    /\ rCxReason' = "USR_CNCLD"
    /\ lastEvent' = TxRtn("ReceiverCancelIdleSession", <<>>, <<cr>>)
    /\ UNCHANGED <<senderVars, rRed, rGreen, rDeliveries, rDelivered, rReports, rRsTx, rAcked,
                   fwd, lostLog, late, link>>

\* 6.17, 6.19, 7.6, 6.20: a CS arrives while the session is open: a CAS is
\* queued, the session is cancelled (reception-session cancellation notice,
\* also after a red-part reception notice) and closed.
ReceiverRxCancel(s) ==
    /\ s \in fwd
    /\ s.type = "CS"
    /\ rState = "open"
    /\ fwd' = fwd \ {s}
    /\ rtn' = rtn \cup {CancelSeg("CAS", "")}
    /\ rState' = "closed"
    /\ rOutcome' = "cancelled"
    /\ lastEvent' = TxRtn("ReceiverRxCancel", <<s>>, <<CancelSeg("CAS", "")>>)
    /\ UNCHANGED <<senderVars, rRed, rGreen, rDeliveries, rDelivered, rReports, rRsTx, rAcked,
                   rCxTx, lostLog, late, rCxReason, link>>

\* 6.17, 8.2: a CS arrives while the session is not open: a CAS is queued all
\* the same.  A closed session keeps no record (6.20; "the CAS is scheduled
\* for retransmission"); a cancelling one (the CS crossed its CR) closes
\* (6.20) without a second notice, its 7.6 notice was given when it cancelled.
\* A receiver the session never reached ("idle": every data segment was
\* lost) has no record either, so no notice (6.17: "no further action"), and
\* stays in 8.2's CLOSED, where a late data segment would still open it.
ReceiverRxRedundantCancel(s) ==
    /\ s \in fwd
    /\ s.type = "CS"
    /\ rState # "open"
    /\ fwd' = fwd \ {s}
    /\ rtn' = rtn \cup {CancelSeg("CAS", "")}
    /\ rState' = IF rState = "idle" THEN "idle" ELSE "closed"
    /\ lastEvent' = TxRtn("ReceiverRxRedundantCancel", <<s>>, <<CancelSeg("CAS", "")>>)
    /\ UNCHANGED <<senderVars, rOutcome, rRed, rGreen, rDeliveries, rDelivered, rReports, rRsTx,
                   rAcked, rCxTx, lostLog, late, rCxReason, link>>

\* 6.18: a CAR arrives: the cancel timer stops and the session closes.
ReceiverRxCancelAck(s) ==
    /\ s \in fwd
    /\ s.type = "CAR"
    /\ fwd' = fwd \ {s}
    /\ rState' = IF rState = "cr_sent" THEN "closed" ELSE rState
    /\ lastEvent' = Ev("receiver", "ReceiverRxCancelAck", "", <<s>>, <<>>, <<>>)
    /\ UNCHANGED <<senderVars, rOutcome, rRed, rGreen, rDeliveries, rDelivered, rReports, rRsTx,
                   rAcked, rCxTx, rtn, lostLog, late, rCxReason, link>>

\* 6.16: the cancel timer expires below the limit: the CR is queued again.
ReceiverExpireCancelTimer ==
    /\ rState = "cr_sent"
    /\ TimerMayExpire(CrAwaited)
    /\ rCxTx <= MaxRetx
    /\ rtn' = rtn \cup {RxCancel}
    /\ rCxTx' = rCxTx + 1
    /\ lastEvent' = TxRtn("ReceiverExpireCancelTimer", <<>>, <<RxCancel>>)
    /\ UNCHANGED <<senderVars, rState, rOutcome, rRed, rGreen, rDeliveries, rDelivered, rReports,
                   rRsTx, rAcked, fwd, lostLog, late, rCxReason, link>>

\* 6.16, 6.20: the cancel timer expires beyond the limit: the session closes.
ReceiverAbandonCancel ==
    /\ rState = "cr_sent"
    /\ TimerMayExpire(CrAwaited)
    /\ rCxTx > MaxRetx
    /\ rState' = "closed"
    /\ lastEvent' = Ev("receiver", "ReceiverAbandonCancel", "", <<>>, <<>>, <<>>)
    /\ UNCHANGED <<senderVars, rOutcome, rRed, rGreen, rDeliveries, rDelivered, rReports, rRsTx,
                   rAcked, rCxTx, fwd, rtn, lostLog, late, rCxReason, link>>

\* 8.2, 6.20: the green EOB has arrived and not one red segment, and no
\* report was issued: the receiver takes the red part as fully received and
\* closes, with no notice (8.2's note: "including the case where the session
\* was indeed fully green").  For a green-only block (NRed = 0) that is the
\* block's end.  For a block with a red part, all of it lost, it is reading
\* 5's alternative (GreenEobCloses, specs/ltp/README.md); the default waits
\* in WAIT_RP_REC for the red part (8.2's diagram).
ReceiverCloseOnGreenEob ==
    /\ NRed = 0 \/ GreenEobCloses
    /\ rState = "open"
    /\ NGreen > 0
    /\ NSeg - 1 \in rGreen
    /\ rRed = {}
    /\ rReports = <<>>
    /\ rState' = "closed"
    /\ lastEvent' = Ev("receiver", "ReceiverCloseOnGreenEob", "", <<>>, <<>>, <<>>)
    /\ UNCHANGED <<senderVars, rOutcome, rRed, rGreen, rDeliveries, rDelivered, rReports, rRsTx,
                   rAcked, rCxTx, fwd, rtn, lostLog, late, rCxReason, link>>

\* Reading 4 (ClosedReopens, specs/ltp/README.md): a data segment reaches a
\* closed receiver.  6.20 left no record of the session, and 8.2 opens a
\* session on a data segment in CLOSED, so under the alternative the
\* receiver starts a record anew ("idle", the state 8.2's CLOSED is before
\* a first segment) and the segment, still in flight, is then taken as the
\* first of a session (ReceiverRxRedData, ReceiverRxCheckpoint,
\* ReceiverRxGreenData).  What the new record forgets: the red data
\* received (its RSs claim only what arrives from now on), the reports
\* issued (their timers are gone; a checkpoint answered before is new to
\* it: the old RSs keep their serials, so the new ones are numbered on, as
\* a new session's own serials differ, but no longer answer a checkpoint,
\* cp 0), its cancel and its delivery (rDelivered): once every red segment
\* has reached it again, the new record delivers the block again, as RFC
\* 5325 3.2 foresees ("redundant retransmission of the entire block"), a
\* second red-part notice (rDeliveries 2).  What it keeps: the notices the
\* client was given (rOutcome; rGreen, whose arrivals were notified;
\* rDeliveries), so a new record of a delivered block closes on its RAs
\* (ReceiverCloseSession) whether or not the block comes again.  Only
\* under the alternative.
ReceiverReopenSession(s) ==
    /\ ClosedReopens
    /\ s \in fwd
    /\ IsData(s)
    /\ rState = "closed"
    /\ rState' = "idle"
    /\ rRed' = {}
    /\ rReports' = [i \in DOMAIN rReports |-> [rReports[i] EXCEPT !.cp = 0]]
    /\ rAcked' = DOMAIN rReports
    /\ rCxTx' = 0
    /\ rCxReason' = ""
    /\ rDelivered' = FALSE
    /\ lastEvent' = Ev("receiver", "ReceiverReopenSession", "", <<>>, <<>>, <<>>)
    /\ UNCHANGED <<senderVars, rOutcome, rGreen, rDeliveries, rRsTx, fwd, rtn, lostLog, late,
                   link>>

(* ------------------------------ channel -------------------------------- *)

\* The channel loses a segment in flight to the receiver (within the budget).
ChannelLoseForward(s) ==
    /\ Len(lostLog) < MaxLoss
    /\ s \in fwd
    /\ fwd' = fwd \ {s}
    /\ lostLog' = Append(lostLog, [dir |-> "forward", seg |-> s])
    /\ lastEvent' = Ev("channel", "ChannelLoseForward", "forward", <<>>, <<>>, <<s>>)
    /\ UNCHANGED <<senderVars, receiverVars, rtn, late, link>>

\* The channel loses a segment in flight to the sender (within the budget).
ChannelLoseReturn(s) ==
    /\ Len(lostLog) < MaxLoss
    /\ s \in rtn
    /\ rtn' = rtn \ {s}
    /\ lostLog' = Append(lostLog, [dir |-> "return", seg |-> s])
    /\ lastEvent' = Ev("channel", "ChannelLoseReturn", "return", <<>>, <<>>, <<s>>)
    /\ UNCHANGED <<senderVars, receiverVars, fwd, late, link>>

(***************************************************************************)
(* Late segments.  The channel may hold a segment in flight back and let   *)
(* it arrive later, after segments sent after it and after any timer that  *)
(* guards it (a delay: the channel reorders), or hold back a copy of it    *)
(* and deliver that after the original (a duplicate).  Both use the budget *)
(* MaxLate.  A held copy is released only once no identical copy is in     *)
(* flight (the channels are sets); it is then an ordinary segment in       *)
(* flight, which the channel may also lose.  In each event the segment     *)
(* acted on is in "lost" (held back) or "tx" (released).                   *)
(***************************************************************************)
Held(d, s) == [dir |-> d, seg |-> s]
HeldIn(d) == {h.seg : h \in {x \in late.held : x.dir = d}}
CanHold(d, s) == late.made < MaxLate /\ Held(d, s) \notin late.held
HoldBack(d, s) == late' = [held |-> late.held \cup {Held(d, s)}, made |-> late.made + 1]

ChannelDelayForward(s) ==
    /\ s \in fwd
    /\ CanHold("forward", s)
    /\ fwd' = fwd \ {s}
    /\ HoldBack("forward", s)
    /\ lastEvent' = Ev("channel", "ChannelDelayForward", "forward", <<>>, <<>>, <<s>>)
    /\ UNCHANGED <<senderVars, receiverVars, rtn, lostLog, link>>

ChannelDelayReturn(s) ==
    /\ s \in rtn
    /\ CanHold("return", s)
    /\ rtn' = rtn \ {s}
    /\ HoldBack("return", s)
    /\ lastEvent' = Ev("channel", "ChannelDelayReturn", "return", <<>>, <<>>, <<s>>)
    /\ UNCHANGED <<senderVars, receiverVars, fwd, lostLog, link>>

ChannelDuplicateForward(s) ==
    /\ s \in fwd
    /\ CanHold("forward", s)
    /\ HoldBack("forward", s)
    /\ lastEvent' = Ev("channel", "ChannelDuplicateForward", "forward", <<>>, <<>>, <<s>>)
    /\ UNCHANGED <<senderVars, receiverVars, fwd, rtn, lostLog, link>>

ChannelDuplicateReturn(s) ==
    /\ s \in rtn
    /\ CanHold("return", s)
    /\ HoldBack("return", s)
    /\ lastEvent' = Ev("channel", "ChannelDuplicateReturn", "return", <<>>, <<>>, <<s>>)
    /\ UNCHANGED <<senderVars, receiverVars, fwd, rtn, lostLog, link>>

ChannelReleaseForward(s) ==
    /\ Held("forward", s) \in late.held
    /\ s \notin fwd
    /\ fwd' = fwd \cup {s}
    /\ late' = [late EXCEPT !.held = @ \ {Held("forward", s)}]
    /\ lastEvent' = Ev("channel", "ChannelReleaseForward", "forward", <<>>, <<s>>, <<>>)
    /\ UNCHANGED <<senderVars, receiverVars, rtn, lostLog, link>>

ChannelReleaseReturn(s) ==
    /\ Held("return", s) \in late.held
    /\ s \notin rtn
    /\ rtn' = rtn \cup {s}
    /\ late' = [late EXCEPT !.held = @ \ {Held("return", s)}]
    /\ lastEvent' = Ev("channel", "ChannelReleaseReturn", "return", <<>>, <<s>>, <<>>)
    /\ UNCHANGED <<senderVars, receiverVars, fwd, lostLog, link>>

(***************************************************************************)
(* Outages (6.5, 6.6).  The link may go down, at most MaxOutages times,    *)
(* and comes back (a fair step).  While it is down nothing reaches either  *)
(* engine (Arrivals).  An engine with link state cues knows: it suspends   *)
(* its timers (TimerMayExpire) and holds what it transmits until the link  *)
(* is back.  One without cues transmits into the dead link, which swallows *)
(* what it carries, free of the loss budget, and its timers run on.  A     *)
(* live outage rule (conformance/channel/emulator) drops the segment it is keyed   *)
(* on and everything that crosses the link until it ends: that is          *)
(* ChannelLinkDown followed by swallowing.                                 *)
(***************************************************************************)
ChannelLinkDown ==
    /\ link.up
    /\ link.downs < MaxOutages
    /\ link' = [up |-> FALSE, downs |-> link.downs + 1]
    /\ lastEvent' = Ev("channel", "ChannelLinkDown", "", <<>>, <<>>, <<>>)
    /\ UNCHANGED <<senderVars, receiverVars, fwd, rtn, lostLog, late>>

ChannelLinkUp ==
    /\ ~link.up
    /\ link' = [link EXCEPT !.up = TRUE]
    /\ lastEvent' = Ev("channel", "ChannelLinkUp", "", <<>>, <<>>, <<>>)
    /\ UNCHANGED <<senderVars, receiverVars, fwd, rtn, lostLog, late>>

ChannelSwallowForward(s) ==
    /\ ~link.up /\ ~LinkCues
    /\ s \in fwd
    /\ fwd' = fwd \ {s}
    /\ lastEvent' = Ev("channel", "ChannelSwallowForward", "forward", <<>>, <<>>, <<s>>)
    /\ UNCHANGED <<senderVars, receiverVars, rtn, lostLog, late, link>>

ChannelSwallowReturn(s) ==
    /\ ~link.up /\ ~LinkCues
    /\ s \in rtn
    /\ rtn' = rtn \ {s}
    /\ lastEvent' = Ev("channel", "ChannelSwallowReturn", "return", <<>>, <<>>, <<s>>)
    /\ UNCHANGED <<senderVars, receiverVars, fwd, lostLog, late, link>>

-----------------------------------------------------------------------------

SenderEnded == sState = "closed"
\* Closed, or never reached by the session (8.2's CLOSED either way).
ReceiverEnded == rState \in {"idle", "closed"}
\* Nothing in flight, nothing held back.
ChannelsEmpty == fwd = {} /\ rtn = {} /\ late.held = {}
\* Both sides closed and nothing left in flight.
SessionEnded == SenderEnded /\ ReceiverEnded /\ ChannelsEmpty

\* The sender has closed and nothing is in flight, but the receiver is still
\* open, has not got the whole red part, and has no unacknowledged RS, so it
\* runs no timer: RFC 5326 gives it nothing more to do (there is no
\* receiver-side inactivity timer; 6.3 starts RS timers only).  Reached when
\* the sender cancels and every CS is lost, or its timers expire early, or
\* a green-only block's EOB is lost (with it in, the receiver closes, 8.2).
ReceiverOrphaned ==
    /\ SenderEnded
    /\ rState = "open"
    /\ rDeliveries = 0
    /\ DOMAIN rReports \subseteq rAcked
    /\ ChannelsEmpty
    /\ ~(NRed = 0 /\ NSeg - 1 \in rGreen)

\* Reading 13's alternative only: the receiver closed with an RS of its
\* report unacknowledged, and that RS was lost, so the sender never learns
\* of data the receiver had (a report in several RSs, MaxClaims).  The
\* sender has sent its block, has no checkpoint out, nothing queued and not
\* every claim, so it runs no timer and cannot complete: RFC 5326 gives it
\* nothing more to do, and it stays open.
SenderStranded ==
    /\ sState = "open"
    /\ sNext = NSeg
    /\ sCp.type = "none"
    /\ sRetx = {}
    /\ ~(RedSet \subseteq sClaimed)
    /\ ReceiverEnded
    /\ ChannelsEmpty

\* Nothing more happens once the session has ended or the receiver is
\* orphaned (neither is a deadlock).
Terminating ==
    /\ SessionEnded \/ ReceiverOrphaned \/ SenderStranded
    /\ UNCHANGED vars

\* The segments in flight that may reach actor a next, and that the channel
\* may lose next: any of them (the channels reorder), none while the link is
\* down.  Trace validation (TraceLTP.tla) overrides both with the one segment
\* its trace names, so that TLC does not try every segment in flight at
\* every step (its traces have no outage: MaxOutages = 0).
Arrivals(ch, a) == IF link.up THEN ch ELSE {}
Losable(ch, dir) == ch

\* One line per event; a segment's arrival lists its alternatives (the
\* session open or not, the limit reached or not) under one \E, so that TLC
\* explores the successors of a state in one fixed order.
SenderNext ==
    \/ SenderTxRedData
    \/ SenderTxCheckpoint
    \/ SenderTxGreenData
    \/ SenderTxMiscoloredData
    \/ \E s \in Arrivals(rtn, "sender") : SenderRxReport(s)
                      \/ SenderRxRedundantReport(s)
    \/ SenderRetxRedData
    \/ SenderRetxCheckpoint
    \/ SenderExpireCheckpointTimer
    \/ SenderCancelSession
    \/ SenderSignalCompletion
    \/ \E s \in Arrivals(rtn, "sender") : SenderRxCancel(s)
                      \/ SenderRxRedundantCancel(s)
    \/ \E s \in Arrivals(rtn, "sender") : SenderRxCancelAck(s)
    \/ SenderExpireCancelTimer
    \/ SenderAbandonCancel

ReceiverNext ==
    \/ \E s \in Arrivals(fwd, "receiver") : ReceiverRxRedData(s)
                      \/ ReceiverDiscardRedData(s)
    \/ \E s \in Arrivals(fwd, "receiver") : ReceiverRxCheckpoint(s)
                      \/ ReceiverDiscardCheckpoint(s)
    \/ \E s \in Arrivals(fwd, "receiver") : ReceiverRxRedundantCheckpoint(s)
                      \/ ReceiverCancelOnRedundantCheckpoint(s)
    \/ \E s \in Arrivals(fwd, "receiver") : ReceiverRxGreenData(s)
                      \/ ReceiverDiscardGreenData(s)
    \/ \E s \in Arrivals(fwd, "receiver") : ReceiverRefuseSession(s)
    \/ \E s \in Arrivals(fwd, "receiver") : ReceiverRefuseData(s)
    \/ \E s \in Arrivals(fwd, "receiver") : ReceiverCancelOnMiscolored(s)
    \/ \E s \in Arrivals(fwd, "receiver") : ReceiverReopenSession(s)
    \/ ReceiverDeliverRedPart
    \/ \E s \in Arrivals(fwd, "receiver") : ReceiverRxReportAck(s)
    \/ \E i \in DOMAIN rReports : ReceiverExpireReportTimer(i)
    \/ \E i \in DOMAIN rReports : ReceiverCancelSession(i)
    \/ ReceiverCloseSession
    \/ ReceiverCloseOnGreenEob
    \/ ReceiverCloseOnRedPart
    \/ ReceiverCancelIdleSession
    \/ \E s \in Arrivals(fwd, "receiver") : ReceiverRxCancel(s)
                      \/ ReceiverRxRedundantCancel(s)
    \/ \E s \in Arrivals(fwd, "receiver") : ReceiverRxCancelAck(s)
    \/ ReceiverExpireCancelTimer
    \/ ReceiverAbandonCancel

\* The channel delivers what it held back (a fair step: see Spec).
ChannelReleaseNext ==
    \/ \E s \in HeldIn("forward") : ChannelReleaseForward(s)
    \/ \E s \in HeldIn("return") : ChannelReleaseReturn(s)

\* The segments in flight the channel may hold back (while its budget
\* lasts) and swallow (while the link is down): the actions' own guards,
\* repeated in the quantifier's range so that TLC does not try each segment
\* in flight when none may be taken.  A long trace has a hundred segments in
\* flight at every state, and trace validation spent half its time there
\* (conformance/bench.py, validate).
Holdable(ch) == IF late.made < MaxLate THEN ch ELSE {}
Swallowable(ch) == IF link.up THEN {} ELSE ch

ChannelNext ==
    \/ \E s \in Losable(fwd, "forward") : ChannelLoseForward(s)
    \/ \E s \in Losable(rtn, "return") : ChannelLoseReturn(s)
    \/ \E s \in Holdable(fwd) : ChannelDelayForward(s)
    \/ \E s \in Holdable(fwd) : ChannelDuplicateForward(s)
    \/ \E s \in Holdable(rtn) : ChannelDelayReturn(s)
    \/ \E s \in Holdable(rtn) : ChannelDuplicateReturn(s)
    \/ ChannelReleaseNext
    \/ ChannelLinkDown
    \/ ChannelLinkUp
    \/ \E s \in Swallowable(fwd) : ChannelSwallowForward(s)
    \/ \E s \in Swallowable(rtn) : ChannelSwallowReturn(s)

\* A step of the protocol or the channel.
Step ==
    \/ SenderNext
    \/ ReceiverNext
    \/ ChannelNext

Next ==
    \/ Step
    \/ Terminating

\* Fairness per role: the sender and the receiver keep taking steps while
\* they can (which includes receiving what is in flight to them); the
\* channel's losses, delays, duplicates and outages are never forced, and
\* bounded by MaxLoss, MaxLate and MaxOutages; what it held back it delivers
\* in the end, and a link that went down comes back.
Spec ==
    /\ Init
    /\ [][Next]_vars
    /\ WF_vars(SenderNext)
    /\ WF_vars(ReceiverNext)
    /\ WF_vars(ChannelReleaseNext)
    /\ WF_vars(ChannelLinkUp)

-----------------------------------------------------------------------------
(* Safety *)

\* Under reading 4's alternative, the receiver's record was started anew
\* (ReceiverReopenSession): its red data is the new record's, so the
\* properties below that compare with it speak of the session before that.
\* A reopened record is the one whose old reports answer no checkpoint
\* (cp 0); every session those properties constrain issued a report (the
\* red part's last segment is a checkpoint, and claims come from RSs).
Reopened == ClosedReopens /\ \E i \in DOMAIN rReports : rReports[i].cp = 0
\* The red part is delivered only once it has all arrived (6.9), in the
\* record that delivers it ...
RedDeliveredOnlyWhenComplete == rDelivered => RedSet \subseteq rRed
\* ... and at most once: once per record, and a second record only under
\* reading 4 (ReceiverReopenSession).
RedDeliveredAtMostOnce == rDeliveries <= 1 \/ Reopened
\* The sender's claims are true: every claimed segment did arrive (6.11).
ClaimsAreTrue == sClaimed \subseteq rRed \/ Reopened
\* The sender reports success only when the RSs it received claim the whole
\* red part (6.12), hence only when the receiver has it all.
SuccessOnlyWhenClaimed ==
    sOutcome = "completed" => (RedSet \subseteq sClaimed /\ (RedSet \subseteq rRed \/ Reopened))
\* Notices are final: an outcome once given is kept by a closed side.  A
\* receiver closes without one only at a green-only block's end, under
\* reading 5's alternative, or refusing the session.
OutcomeOnClose ==
    /\ SenderEnded => sOutcome # "none"
    /\ (rState = "closed" /\ rDeliveries = 0)
           => \/ rOutcome = "cancelled"
              \/ (NRed = 0 \/ GreenEobCloses \/ ~ServiceKnown) /\ rOutcome = "none"

Safety ==
    /\ RedDeliveredOnlyWhenComplete
    /\ RedDeliveredAtMostOnce
    /\ ClaimsAreTrue
    /\ SuccessOnlyWhenClaimed
    /\ OutcomeOnClose

(* Liveness, under Spec's fairness and the finite loss budget *)

NoCancel == sOutcome # "cancelled" /\ rOutcome # "cancelled"

\* No timer expires while the segment it guards or the reply it awaits is
\* still in flight: timers are sized to the round trip (6.2), and link state
\* cues keep an outage from making them too short (6.5, 6.6).  Holds with
\* cues however often the link goes down (MCLTP_cues.cfg); without them one
\* outage breaks it (MCLTP_nocues.cfg fails on purpose), as do premature
\* timeouts (MCLTP_early.cfg's PrematureTimeouts).
TimersNeverEarly ==
    [][/\ ~(CpAwaited /\ (SenderExpireCheckpointTimer \/ SenderCancelSession))
       /\ ~(CsAwaited /\ (SenderExpireCancelTimer \/ SenderAbandonCancel))
       /\ ~(CrAwaited /\ (ReceiverExpireCancelTimer \/ ReceiverAbandonCancel))
       /\ \A i \in DOMAIN rReports :
              ~(RsAwaited(i) /\ (ReceiverExpireReportTimer(i) \/ ReceiverCancelSession(i)))]_vars

\* The session ends at both sides (completed or cancelled), except for a
\* receiver orphaned by a cancelled sender ...
EventuallyEnded == <>[](SessionEnded \/ ReceiverOrphaned \/ SenderStranded)
\* ... and, unless it was cancelled, with the red part delivered.  A
\* green-only block has no red part to deliver and no timer to recover a
\* lost EOB: unless cancelled, its sender ends, and its receiver ends once
\* the EOB is in (8.2).
DeliveredUnlessCancelled ==
    <>[](NoCancel => IF NRed > 0 THEN SessionEnded /\ rDeliveries > 0
                     ELSE SenderEnded /\ (NSeg - 1 \in rGreen => ReceiverEnded))
\* The strict form, which fails where the receiver can be orphaned
\* (MCLTP_orphan.cfg shows the counterexample).
EventuallyBothEnded == <>SessionEnded

THEOREM Spec => [](TypeOK /\ Safety)
=============================================================================
