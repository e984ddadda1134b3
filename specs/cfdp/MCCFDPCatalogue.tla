-------------------------- MODULE MCCFDPCatalogue --------------------------
(***************************************************************************)
(* Every impairment pattern of one CFDP transaction within the channel's   *)
(* budgets (MaxLoss, MaxLate), with every terminal outcome of each: the    *)
(* catalogue of scenarios (generators/cfdp/purposes.py).                            *)
(*                                                                         *)
(* The channel may lose, hold back or duplicate any PDU within the budgets *)
(* (MCCFDP's ChannelFault), but each impairment is recorded as a live rule *)
(* names it (MCCFDPOutcomes: direction, wire key, occurrence, act) in      *)
(* planHit.  Each terminal state prints its pattern and its outcome        *)
(* (CatalogueReport never fails); generators/cfdp/purposes.py groups the lines by   *)
(* pattern, one scenario each expecting every outcome printed for it.      *)
(* States are told apart by the impairments so far (OutcomeView holds      *)
(* planHit and the transmission counts), so a pattern's outcomes are      *)
(* those MCCFDPOutcomes finds with that pattern as its Plan.  The bounds   *)
(* have no corruption, outage nor user request (the catalogue's other     *)
(* scenarios plan those one by one).                                       *)
(***************************************************************************)
EXTENDS MCCFDPOutcomes

\* An impairment is recorded under its live rule; any other protocol step
\* counts its transmissions.
Recorded(ev) ==
    /\ UNCHANGED <<reqHit, down, case>>
    /\ IF ChannelAct(ev) # ""
       THEN /\ planHit' = planHit \cup {ImpairmentOf(ev)}
            /\ UNCHANGED txCount
       ELSE /\ txCount' = IF Protocol(ev) THEN Counted(ev) ELSE txCount
            /\ UNCHANGED planHit

CatalogueNext ==
    /\ Next
    /\ IF UNCHANGED vars
       THEN UNCHANGED wrapperVars
       ELSE \E ev \in {lastEvent'} : Ordered(ev) /\ Recorded(ev)

CatalogueSpec == OutcomeInit /\ [][CatalogueNext]_<<vars, wrapperVars>>

\* Never fails: prints each terminal state's pattern and outcome.
CatalogueReport == Terminal => PrintT(<<"dtnc-pattern", planHit, Outcome>>)
=============================================================================
