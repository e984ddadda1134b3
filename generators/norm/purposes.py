"""NORM (RFC 5740): model checking of specs/norm/NORM.tla (:func:`check`,
with :func:`trace_table` for its counterexamples).

This module is NORM's ``checker`` capability (conformance/protocols/norm.py,
conformance/core/capabilities.py). Its bounds are specs/norm/MCNORM_*.cfg;
specs/norm/README.md says what each checks and what three of them show
failing on purpose.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from conformance.core.errors import InputError
from generators import traps
from generators.norm import SPEC_DIR as SPEC_DIR
from generators.tlc import TlcProgress, TlcResult, TraceState, run_tlc, step_table

SPEC = SPEC_DIR / "NORM.tla"
MODEL = SPEC_DIR / "MCNORM.tla"
# the next-state blocks whose disjuncts are the model's actions
NEXT_BLOCKS = ("SenderNext", "ReceiverNext", "ChannelNext", "Next")

# Bounds that fail on purpose: one TLC worker, so that breadth-first search
# returns a shortest counterexample, the same every time.
ONE_WORKER = frozenset({"bug", "backoff2", "robust1"})
# the property each of them breaks
FAILS = {"bug": "SuppressionKept", "backoff2": "NeverSuppressed", "robust1": "NoFalseFailure"}


def bounds() -> list[str]:
    """The bounds there are: specs/norm/MCNORM_<bound>.cfg."""
    return sorted(p.stem.removeprefix("MCNORM_") for p in SPEC_DIR.glob("MCNORM_*.cfg"))


def check(
    bound: str,
    progress: Callable[[TlcProgress], None] | None = None,
    workdir: Path | None = None,
    distributed: int = 0,
) -> TlcResult:
    """Model-check the NORM model at a bound: "ci" (seconds), "deep" (three
    receivers, two blocks), "bug", "backoff2" and "robust1" (each fails on
    purpose with a counterexample), or a focused one (ssm, backoff1,
    robust2, readings). TLC's files go to ``workdir``. ``distributed``:
    TLC's distributed mode with that many local workers (run_tlc)."""
    cfg = SPEC_DIR / f"MCNORM_{bound}.cfg"
    if not cfg.is_file():
        raise InputError(f"unknown bound {bound!r} (the NORM bounds: {', '.join(bounds())})")
    workers = None if bound == "deep" else (1 if bound in ONE_WORKER else 2)
    return run_tlc(
        MODEL, cfg, workers=workers, progress=progress, workdir=workdir, distributed=distributed
    )


def model_actions(spec: Path = SPEC) -> list[str]:
    """The actions of the NORM model: the disjuncts of its step relations."""
    return traps.model_actions(spec, NEXT_BLOCKS)


def describe_msg(m: Mapping[str, Any]) -> str:
    """One message copy in words: its kind, what it carries, its receiver
    (a sender message's copy names the receiver it was for)."""
    k = str(m.get("k", "?"))
    dst = str(m.get("dst", ""))
    src = str(m.get("src", ""))
    if k == "DATA":
        kind = "explicit repair" if m.get("explicit") else "repair" if m.get("repair") else "data"
        what = f"DATA block {m.get('blk')} symbol {m.get('esi')} ({kind})"
    elif k in ("NACK", "ADV"):
        items = ", ".join(f"{b}:{e}" for b, e in sorted(_items(m.get("items"))))
        what = f"{'NACK' if k == 'NACK' else 'REPAIR_ADV'} [{items}]"
    elif k == "FLUSH":
        acking = sorted(str(a) for a in (m.get("acking") or ()))
        what = "FLUSH" + (f" ACK_REQ {','.join(acking)}" if acking else "")
    elif k == "ACK":
        what = "ACK(FLUSH)"
    else:
        what = k
    return f"{what} {src}→{dst}"


def _items(raw: object) -> list[tuple[int, int]]:
    if not isinstance(raw, Iterable):
        return []
    out = []
    for it in raw:
        if isinstance(it, Sequence) and len(it) == 2:
            out.append((int(it[0]), int(it[1])))
    return out


def _holdings(v: Mapping[str, Any]) -> str:
    rcv = v.get("rcv")
    if not isinstance(rcv, Mapping):
        return ""
    parts = []
    for name in sorted(rcv):
        r = rcv[name]
        got = r.get("got")
        blocks = (
            got.values() if isinstance(got, Mapping) else got if isinstance(got, Sequence) else []
        )
        held = " ".join("{" + ",".join(str(e) for e in sorted(b)) + "}" for b in blocks)
        parts.append(f"{name} {r.get('st')} {held} {r.get('out')}")
    return "; ".join(parts)


def trace_table(trace: Sequence[TraceState] | Iterable[TraceState], title: str = "") -> Table:
    """A counterexample as a table: one row per step, with the message copies
    received, sent and lost, and what each receiver holds."""
    return step_table(list(trace), describe_msg, _holdings, "messages", title)
