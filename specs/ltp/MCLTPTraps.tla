---------------------------- MODULE MCLTPTraps ----------------------------
(***************************************************************************)
(* Test purposes for LTP (RFC 5326, one session) as TLC trap properties.   *)
(*                                                                         *)
(* A test purpose P says which segments the channel loses in a session     *)
(* (exactly those, in that order) or how the session ends.  The trap       *)
(*     Trap == ~(Happened /\ Done)                                         *)
(* is an invariant that TLC refutes with a behaviour in which P happened   *)
(* and the session then ran to its end; breadth-first search makes it a    *)
(* shortest one.  generators/ltp/purposes.py writes one .cfg per purpose, choosing  *)
(* it with the constants PurposeKind and PurposeOff:                       *)
(*                                                                         *)
(*   "nominal"             no loss                                         *)
(*   "data_lost"           the data segment at PurposeOff (not the EORP    *)
(*                         checkpoint) lost once                           *)
(*   "two_data_lost"       data segments PurposeOff and PurposeOff+1 lost  *)
(*                         (one retransmission of two segments, 6.13)      *)
(*   "checkpoint_lost"     the EORP checkpoint (serial 1) lost once (6.7)  *)
(*   "checkpoint_lost_twice" it and its retransmitted copy lost (6.7)      *)
(*   "retx_checkpoint_lost" data segment PurposeOff lost, then the         *)
(*                         checkpoint closing the retransmission cycle     *)
(*                         (serial 2) lost (6.13, 6.7)                     *)
(*   "report_lost"         one RS lost (6.8)                               *)
(*   "two_reports_lost"    two RS losses (6.8)                             *)
(*   "report_ack_lost"     one RA lost (6.8, 6.13 after close)             *)
(*   "sender_cancels"      the sender cancels (6.7 RLEXC, 6.19, 7.5)       *)
(*   "receiver_cancels"    the receiver cancels (6.8 RLEXC, 6.19, 7.6)     *)
(*   "redundant_checkpoint" one RS lost, and a redundant checkpoint makes  *)
(*                         the receiver resend it (6.8 b)                  *)
(*   "redundant_checkpoint_cancel" two RSs lost, and a redundant           *)
(*                         checkpoint makes the receiver cancel (6.8 b,    *)
(*                         6.19, 7.6)                                      *)
(***************************************************************************)
EXTENDS MCLTPOutcomes

CONSTANTS
    \* @type: Str;
    PurposeKind,
    \* @type: Int;
    PurposeOff

VARIABLE
    \* @type: Set(Str);
    seen        \* history: "resend" / "cancel" once a redundant checkpoint did it

\* What a redundant checkpoint did in the step that produced event ev: its RS
\* resent (6.8 b, below the limit) or the session cancelled (beyond it).
Seen(ev) ==
    CASE ev.action = "ReceiverRxRedundantCheckpoint" -> {"resend"}
      [] ev.action = "ReceiverCancelOnRedundantCheckpoint" -> {"cancel"}
      [] OTHER -> {}

\* The session over in-order channels (MCLTPOutcomes, with AnyLoss: any loss
\* within MaxLoss), recording what redundant checkpoints did.
TrapSpec ==
    /\ OutcomeInit
    /\ seen = {}
    /\ [][OutcomeNext /\ seen' = seen \cup Seen(lastEvent')]_<<vars, wrapperVars, seen>>

\* States are told apart as in MCLTPOutcomes (txCount and planHit never change
\* with AnyLoss), by the losses so far, and by seen for the purposes that ask
\* about it.
View ==
    <<OutcomeView, lostLog,
      IF PurposeKind \in {"redundant_checkpoint", "redundant_checkpoint_cancel"}
      THEN seen ELSE {}>>

Fwd(s) == [dir |-> "forward", seg |-> s]
Rtn(s) == [dir |-> "return", seg |-> s]
IsLostCp(l, c) == l.dir = "forward" /\ IsCp(l.seg) /\ l.seg.cp = c
IsLostRs(l) == l.dir = "return" /\ l.seg.type = "RS"

\* Every green segment either arrived or was lost (none was discarded by a
\* closed receiver), so the expected green bytes follow from the losses.
GreenAccounted ==
    \A o \in GreenSet :
        o \in rGreen \/ \E i \in DOMAIN lostLog : lostLog[i] = Fwd(DataSeg(o))

\* A complete session: both sides closed, nothing in flight.
Done == SessionEnded /\ GreenAccounted

Happened ==
    CASE PurposeKind = "nominal" -> lostLog = <<>>
      [] PurposeKind = "data_lost" -> lostLog = <<Fwd(DataSeg(PurposeOff))>>
      [] PurposeKind = "two_data_lost" ->
            lostLog = <<Fwd(DataSeg(PurposeOff)), Fwd(DataSeg(PurposeOff + 1))>>
      [] PurposeKind = "checkpoint_lost" ->
            Len(lostLog) = 1 /\ IsLostCp(lostLog[1], 1)
      [] PurposeKind = "checkpoint_lost_twice" ->
            Len(lostLog) = 2 /\ IsLostCp(lostLog[1], 1) /\ IsLostCp(lostLog[2], 1)
      [] PurposeKind = "retx_checkpoint_lost" ->
            /\ Len(lostLog) = 2
            /\ lostLog[1] = Fwd(DataSeg(PurposeOff))
            /\ IsLostCp(lostLog[2], 2)
      [] PurposeKind = "report_lost" -> Len(lostLog) = 1 /\ IsLostRs(lostLog[1])
      [] PurposeKind = "two_reports_lost" ->
            Len(lostLog) = 2 /\ IsLostRs(lostLog[1]) /\ IsLostRs(lostLog[2])
      [] PurposeKind = "report_ack_lost" ->
            Len(lostLog) = 1 /\ lostLog[1].dir = "forward" /\ lostLog[1].seg.type = "RA"
      [] PurposeKind = "sender_cancels" ->
            sOutcome = "cancelled" /\ rCxTx = 0
      [] PurposeKind = "receiver_cancels" -> rCxTx > 0
      [] PurposeKind = "redundant_checkpoint" ->
            Len(lostLog) = 1 /\ IsLostRs(lostLog[1]) /\ "resend" \in seen
      [] PurposeKind = "redundant_checkpoint_cancel" ->
            Len(lostLog) = 2 /\ IsLostRs(lostLog[1]) /\ IsLostRs(lostLog[2])
            /\ "cancel" \in seen
      [] OTHER -> FALSE

\* TLC checks an invariant on a successor before it prunes that successor
\* by the action constraint, so the last step of a counterexample escapes
\* NoStaleLoss; the trap itself refuses a trace that ends in a stale loss.
LastStepUseful ==
    ~(/\ lastEvent.action = "ChannelLoseForward"
      /\ \E i \in DOMAIN lastEvent.lost :
            IsData(lastEvent.lost[i]) /\ lastEvent.lost[i].off \in rRed \cup rGreen)

Trap == ~(Happened /\ Done /\ LastStepUseful)
=============================================================================
