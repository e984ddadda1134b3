----------------------------- MODULE MCLTPPlan -----------------------------
(***************************************************************************)
(* The planned impairments of MCLTPOutcomes, a set of records [dir, key,   *)
(* off, occ, act] (see there), and whether the channels keep order.  This  *)
(* copy is a nominal run's; generators/outcomes.py replaces it for each    *)
(* scenario.                                                               *)
(***************************************************************************)
\* @type: Set({dir: Str, key: Str, off: Int, occ: Int, act: Str});
ThePlan == {}
\* Channels in order (no reordering in the scenario's channel)?
\* @type: Bool;
InOrder == TRUE
=============================================================================
