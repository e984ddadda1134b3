--------------------------- MODULE MCLTPCatalogue ---------------------------
(***************************************************************************)
(* Every loss pattern of one LTP session (RFC 5326) within the loss budget,*)
(* with every terminal outcome of each: the catalogue of scenarios.        *)
(*                                                                         *)
(* The channel may lose any segment (within MaxLoss), as in MCLTPTraps, but*)
(* each loss is recorded as a live channel rule names it (direction, wire  *)
(* key, occurrence: "the 2nd RS on the return channel") in planHit.  Each  *)
(* terminal state prints its loss pattern and its outcome (CatalogueReport *)
(* never fails); generators/ltp/catalogue.py groups the lines by pattern: one  *)
(* scenario per distinct pattern, expecting every outcome printed for it.  *)
(* Since states are told apart by the losses so far (OutcomeView holds     *)
(* planHit and the transmission counts), the outcomes of one pattern are   *)
(* those MCLTPOutcomes finds with that pattern as its Plan.                *)
(***************************************************************************)
EXTENDS MCLTPOutcomes

\* A loss, delay or duplicate is recorded under its live rule; a release
\* of a held-back segment counts nothing; any other step counts its
\* transmissions (the occurrences the next impairments are named by).
\* (Its bounds have no outage: MaxOutages = 0, so armed stays FALSE.)
Recorded(ev) ==
    IF IsImpairment(ev)
    THEN /\ planHit' = planHit \cup {LossOf(ev)}
         /\ UNCHANGED <<txCount, armed>>
    ELSE IF IsRelease(ev) THEN UNCHANGED <<txCount, planHit, armed>>
    ELSE /\ txCount' = Counted(ev)
         /\ UNCHANGED <<planHit, armed>>

CatalogueNext ==
    /\ Next
    /\ IF UNCHANGED vars
       THEN UNCHANGED wrapperVars
       ELSE \E ev \in {lastEvent'} : Ordered(ev) /\ Recorded(ev)

CatalogueSpec == OutcomeInit /\ [][CatalogueNext]_<<vars, wrapperVars>>

\* Never fails: prints each terminal state's loss pattern and outcome.
CatalogueReport ==
    Terminal =>
        PrintT(<<"dtnc-pattern", planHit, sOutcome, ReceiverNotice, rDeliveries, rGreen>>)
=============================================================================
