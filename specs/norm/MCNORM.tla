------------------------------- MODULE MCNORM -------------------------------
(***************************************************************************)
(* Model-checking wrapper for NORM (RFC 5740).  The .cfg files fix the     *)
(* constants; manifest.json records each result (README: the bounds).     *)
(* Their VIEW, CheckView, leaves out the history variable lastEvent, so    *)
(* that it does not multiply the state space.                              *)
(***************************************************************************)
EXTENDS NORM, TLC

CheckView == protoVars
=============================================================================
