----------------------------- MODULE MCCFDPPlan -----------------------------
(***************************************************************************)
(* The planned impairments and user requests of MCCFDPOutcomes (see there) *)
(* and whether the channels keep order.  This copy is a nominal run's;     *)
(* generators/cfdp/purposes.py writes one for each scenario.                        *)
(***************************************************************************)
\* @type: Set({dir: Str, key: Str, off: Int, occ: Int, act: Str});
ThePlan == {}
\* @type: Set({who: Str, what: Str, dir: Str, key: Str, off: Int, occ: Int});
TheRequests == {}
\* Channels in order (no reordering in the scenario's channel)?
\* @type: Bool;
InOrder == TRUE
=============================================================================
