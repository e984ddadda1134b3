----------------------------- MODULE MCCFDPPlan -----------------------------
(***************************************************************************)
(* The planned impairments and user requests of MCCFDPOutcomes (see there) *)
(* and whether the channels keep order.  This copy is a nominal run's;     *)
(* generators/cfdp/outcomes.py writes one for each run: one case per       *)
(* scenario it explores, each a plan and its requests.                     *)
(***************************************************************************)
\* @type: Seq({plan: Set({dir: Str, key: Str, off: Int, occ: Int, act: Str}), requests: Set({who: Str, what: Str, dir: Str, key: Str, off: Int, occ: Int})});
TheCases == << [plan |-> {}, requests |-> {}] >>
\* Channels in order (no reordering in the scenario's channel)?
\* @type: Bool;
InOrder == TRUE
=============================================================================
