------------------------------ MODULE ApaNORM ------------------------------
(***************************************************************************)
(* Apalache entry point for the NORM model (RFC 5740).  The constants are  *)
(* fixed by ConstInit as in MCNORM_ci.cfg; every constant and variable of  *)
(* NORM carries an `@type` annotation and the record shapes are the        *)
(* @typeAlias entries $msg and $event.  Apalache is in no registry         *)
(* reachable here, so these annotations have not been type-checked; when   *)
(* apalache-mc is on PATH:                                                 *)
(*                                                                         *)
(*   apalache-mc check --cinit=ConstInit --inv=Inv --length=30 ApaNORM.tla *)
(***************************************************************************)
EXTENDS NORM

ConstInit ==
    /\ Rcv = {"r1", "r2"}
    /\ NBlk = 1
    /\ K = 2
    /\ P = 1
    /\ Kb = 2
    /\ Robust = 2
    /\ UnicastNack = FALSE
    /\ AckReq = FALSE
    /\ Purge = FALSE
    /\ MaxLoss = 2
    /\ FaultyReceiver = FALSE
    /\ IdleOnAnyMessage = TRUE
    /\ SsmRuleAnyMode = TRUE

\* The invariant candidate Apalache checks at every step.
Inv == TypeOK /\ Safety
=============================================================================
