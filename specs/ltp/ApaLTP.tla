------------------------------- MODULE ApaLTP -------------------------------
(***************************************************************************)
(* Apalache entry point for the LTP model (RFC 5326, one session).  The    *)
(* constants are fixed by ConstInit; every variable of LTP carries an      *)
(* `@type` annotation and the record shapes are the @typeAlias entries     *)
(* $seg, $loss and $event.  Untested here (no Apalache in this tree):      *)
(*                                                                         *)
(*   apalache-mc check --cinit=ConstInit --inv=Inv --length=24 ApaLTP.tla  *)
(*                                                                         *)
(* The same CI bound as MCLTP_ci.cfg; the history variable lastEvent is    *)
(* harmless for a symbolic checker.                                        *)
(***************************************************************************)
EXTENDS LTP

ConstInit ==
    /\ NRed = 2
    /\ NGreen = 1
    /\ MaxRetx = 1
    /\ MaxLoss = 2
    /\ MaxLate = 0
    /\ LinkCues = FALSE
    /\ MaxOutages = 0
    /\ PrematureTimeouts = FALSE
    /\ FaultyReceiver = FALSE
    /\ MiscoloredSender = FALSE
    /\ MaxClaims = 20
    /\ ServiceKnown = TRUE
    /\ ReportBoundsMay = FALSE
    /\ RefusalStateless = FALSE
    /\ ClosedReopens = FALSE
    /\ GreenEobCloses = FALSE
    /\ RedPartCloses = FALSE
    /\ IdleCancels = FALSE
    /\ OverlapMiscolored = FALSE

\* The inductive-invariant candidate Apalache checks at every step.
Inv == TypeOK /\ Safety
=============================================================================
