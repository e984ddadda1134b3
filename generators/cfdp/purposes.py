"""CFDP (CCSDS 727.0-B-5): model checking of specs/cfdp/CFDP.tla
(:func:`check`, with :func:`trace_table` for its counterexamples) and test
generation (:func:`generate`: the catalogue, :mod:`generators.cfdp.catalogue`).

This module is CFDP's ``checker`` and ``generator`` capability
(conformance/protocols/cfdp.py, conformance/core/capabilities.py); its
outcome sets are :mod:`generators.cfdp.outcomes` and its trace model
:mod:`generators.cfdp.trace`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from conformance.core.errors import InputError
from conformance.core.modelcheck import GenerateReport
from generators import traps
from generators.cfdp import SPEC_DIR as SPEC_DIR  # re-exported, with the model's SPEC
from generators.cfdp import catalogue
from generators.cfdp.trace import NEXT_BLOCKS, describe_pdu
from generators.cfdp.trace import SPEC as SPEC
from generators.tlc import (
    TlcProgress,
    TlcResult,
    TraceState,
    run_tlc,
    step_table,
)

MODEL = SPEC_DIR / "MCCFDP.tla"

# Bounds checked by one TLC worker: the failing one, so that breadth-first
# search returns a shortest counterexample, the same every time.
ONE_WORKER = frozenset({"bug"})


def bounds() -> list[str]:
    """The bounds there are: specs/cfdp/MCCFDP_<bound>.cfg."""
    return sorted(p.stem.removeprefix("MCCFDP_") for p in SPEC_DIR.glob("MCCFDP_*.cfg"))


def check(
    bound: str,
    progress: Callable[[TlcProgress], None] | None = None,
    workdir: Path | None = None,
    distributed: int = 0,
) -> TlcResult:
    """Model-check the CFDP model at a bound: "ci" (seconds), "deep" (two
    transactions, minutes), "bug" (fails on purpose with a counterexample),
    or one of the focused bounds (cancel, late, suspend, ...; see
    specs/cfdp/MCCFDP.tla). TLC's files go to ``workdir``. ``distributed``:
    TLC's distributed mode with that many local workers (run_tlc)."""
    cfg = SPEC_DIR / f"MCCFDP_{bound}.cfg"
    if not cfg.is_file():
        raise InputError(f"unknown bound {bound!r} (the CFDP bounds: {', '.join(bounds())})")
    workers = None if bound == "deep" else (1 if bound in ONE_WORKER else 2)
    return run_tlc(
        MODEL, cfg, workers=workers, progress=progress, workdir=workdir, distributed=distributed
    )


# Actions only trace validation enables: what an implementation may do on
# its own, which no scenario drives and no bound explores
# (ReceiverTxKeepAlive, under KeepAliveTimer: 727.0-B-5 4.6.5.2.1).
TRACE_ONLY = frozenset({"ReceiverTxKeepAlive"})


def model_actions(spec: Path = SPEC) -> list[str]:
    """The actions of the CFDP model (the disjuncts of its step relations)
    that its bounds explore and scenarios cover: all but TRACE_ONLY."""
    return [a for a in traps.model_actions(spec, NEXT_BLOCKS) if a not in TRACE_ONLY]


def _holdings(v: Mapping[str, Any]) -> str:
    rcv = v.get("rcv")
    if not isinstance(rcv, Sequence):
        return ""
    parts = []
    for t, r in enumerate(rcv, start=1):
        got = ",".join(str(o) for o in sorted(r["got"]))
        md = "metadata, " if r["md"] else ""
        parts.append(f"t{t} {r['phase']}: {md}{{{got}}}" + (" delivered" if r["kept"] else ""))
    return "; ".join(parts)


def trace_table(trace: Sequence[TraceState] | Iterable[TraceState], title: str = "") -> Table:
    """A counterexample as a table: one row per step, with the PDUs received,
    sent and lost, and what the receiving entity holds so far."""
    return step_table(list(trace), describe_pdu, _holdings, "PDUs", title)


# ---------------------------------------------------------------------------
# Test generation (generators/cfdp/catalogue.py)
# ---------------------------------------------------------------------------


def generate(
    outdir: Path,
    progress: Callable[[TlcProgress], None] | None = None,
    on_purpose: Callable[[int, int, str], None] | None = None,
) -> GenerateReport:
    """The CFDP catalogue into ``outdir``: every impairment pattern of its
    bounds and every planned purpose (:mod:`generators.cfdp.catalogue`), with action
    coverage over the model's actions."""
    return catalogue.generate(outdir, model_actions(), on_purpose=on_purpose)
