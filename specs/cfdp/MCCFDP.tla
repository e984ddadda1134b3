------------------------------- MODULE MCCFDP -------------------------------
(***************************************************************************)
(* Model-checking wrapper for CFDP (CCSDS 727.0-B-5).  The .cfg files fix  *)
(* the constants; manifest.json records each result (README: the bounds):  *)
(*   MCCFDP_ci.cfg        CI bound: one transaction in any of the three    *)
(*                        modes, a 2-segment file, immediate NAKs, two     *)
(*                        losses, one undetected corruption                *)
(*   MCCFDP_deferred.cfg  the same with deferred NAKs only                 *)
(*   MCCFDP_cancel.cfg    a user cancel at either entity, one loss         *)
(*   MCCFDP_late.cfg      a PDU held back or duplicated, one loss          *)
(*   MCCFDP_suspend.cfg   a suspend request at either entity, one loss     *)
(*   MCCFDP_prompt.cfg    a Prompt from the sender, one loss               *)
(*   MCCFDP_outage.cfg    the link down once, one loss                     *)
(*   MCCFDP_abandon.cfg   every fault handler abandon                      *)
(*   MCCFDP_readings.cfg  every reading's alternative                      *)
(*   MCCFDP_deep.cfg      two Class 2 transactions sharing the link (2 min) *)
(*   MCCFDP_bug.cfg       fails on purpose: a receiver that skips the      *)
(*                        checksum (FaultyReceiver) breaks Safety          *)
(* Their VIEW, CheckView, leaves out the history variables lostLog and     *)
(* lastEvent, so that they do not multiply the state space.                *)
(***************************************************************************)
EXTENDS CFDP, TLC

CheckView == protoVars
=============================================================================
