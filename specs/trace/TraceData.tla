------------------------------ MODULE TraceData ------------------------------
(***************************************************************************)
(* An empty trace, so that TraceCore and the protocols' trace modules      *)
(* parse on their own.  conformance/tracecheck.py writes one of these for  *)
(* each run, with the run's lines, and TLC reads that one instead.         *)
(***************************************************************************)
EXTENDS Naturals, Sequences, TLC

Units == <<>>
LineKinds == <<>>
TraceKind == <<>>
TraceUnit == <<>>
TraceTime == <<>>
Window == 250000
LateWindow == 250000
Hold == [sender |-> 0, receiver |-> 0]
HoldEnds == [sender |-> <<0, 2147483647>>, receiver |-> <<0, 2147483647>>]
SendsLeft == <<0>>
Eager == TRUE
StopAtEnd == TRUE
ActionNames == {}
DiagLine == 0
Purging == {}
Foreseeable == {}
OnDemand == {}
LazyArrivals == FALSE
NextSend == [forward |-> <<>>, return |-> <<>>]
=============================================================================
