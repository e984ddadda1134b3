------------------------------ MODULE ApaCFDP ------------------------------
(***************************************************************************)
(* Apalache entry point for the CFDP model (CCSDS 727.0-B-5).  The         *)
(* constants are fixed by ConstInit as in MCCFDP_ci.cfg; every variable of *)
(* CFDP carries an `@type` annotation and the record shapes are the        *)
(* @typeAlias entries $pdu, $loss and $event.  Apalache is in no registry  *)
(* reachable here; when apalache-mc is on PATH:                            *)
(*                                                                         *)
(*   apalache-mc check --cinit=ConstInit --inv=Inv --length=26 ApaCFDP.tla *)
(***************************************************************************)
EXTENDS CFDP

ConstInit ==
    /\ NTx = 1
    /\ NSeg = 2
    /\ Modes = {"c1", "c1c", "c2"}
    /\ NakMode = "immediate"
    /\ MaxAck = 1
    /\ MaxNak = 1
    /\ MaxCheck = 1
    /\ MaxLoss = 2
    /\ MaxLate = 0
    /\ MaxCorrupt = 1
    /\ MaxOutages = 0
    /\ MaxCancels = 0
    /\ MaxSuspends = 0
    /\ MaxPrompts = 0
    /\ FaultAbandons = {}
    /\ PrematureTimeouts = FALSE
    /\ FaultyReceiver = FALSE
    /\ KeepAliveTimer = FALSE
    /\ AckClosedFinished = TRUE
    /\ FinishedOnDupEof = FALSE
    /\ SenderCheckTimer = TRUE
    /\ FinishedBeforeEofAck = TRUE

\* The invariant candidate Apalache checks at every step.
Inv == TypeOK /\ Safety
=============================================================================
