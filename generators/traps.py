"""Test purposes -> trap configurations -> TLC -> distinct scenarios, with
action coverage. Protocol-free: a protocol's generator module describes its
model as a :class:`TrapModel` (its purposes, trap module and configuration,
how a trace becomes a scenario, how an outcome set is computed) and calls
:func:`generate`.

A test purpose is a trap invariant ``~(Happened /\\ Done)``: TLC refutes it
with a shortest complete run in which the purpose happened. Purposes whose
traces give the same impairments are one scenario, which records every
purpose that produced it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

# re-exported: the protocols' generators name them from here
from conformance.core.modelcheck import GenerateReport as GenerateReport
from conformance.core.modelcheck import PurposeStatus as PurposeStatus
from conformance.core.types import Expectation, Scenario, dump_model
from generators.tlc import TlcProgress, TlcResult, TraceState, run_tlc, terminate_all


@dataclass(frozen=True)
class Purpose:
    """A test purpose: the trap module's PurposeKind (and PurposeOff), and a sentence."""

    name: str
    kind: str
    off: int = 0
    description: str = ""


@dataclass(frozen=True)
class TrapModel:
    """What :func:`generate` needs from a protocol's generator."""

    purposes: list[Purpose]
    traps: Path  # the TLA+ module with TrapSpec and Trap
    trap_cfg: Callable[[Purpose], str]  # the .cfg text trapping one purpose
    compile: Callable[[Sequence[TraceState], Purpose], Scenario]  # trace -> scenario
    # every outcome the model allows for a scenario's impairments
    outcome_set: Callable[[Scenario, Path, Callable[[TlcProgress], None] | None], Expectation]
    actions: Callable[[], list[str]]  # every action of the model
    terminal_action: str = ""  # the stuttering step of a finished run, if any
    lanes: int = 2  # TLC processes side by side


def model_actions(spec: Path, blocks: Sequence[str]) -> list[str]:
    """The actions of a model: every disjunct of the next-state definitions
    ``blocks`` (e.g. SenderNext, ReceiverNext, ChannelNext, Next; a block may
    take parameters, as CFDP's SenderStep(t)), one per line, read from the
    spec text; a disjunct naming another block is not an action."""
    text = spec.read_text(encoding="utf-8")
    names: list[str] = []
    for block in blocks:
        m = re.search(rf"^{block}(?:\([^)]*\))? ==\n((?:    .*\n)+)", text, re.MULTILINE)
        if not m:
            continue
        for line in m.group(1).splitlines():
            d = re.match(r"\s*\\/\s*(?:\\E [^:]+:\s*)?([A-Z][A-Za-z0-9_]*)", line)
            if d and d.group(1) not in blocks:
                names.append(d.group(1))
    return names


def action_comments(spec: Path) -> dict[str, str]:
    """Definition -> the comment block right above it in the spec text (its
    ``\\*`` lines joined, markers dropped); definitions with none are left
    out. The protocols' trace modules read the sections an action cites
    from here, for the rule of a rejected trace."""
    lines = spec.read_text(encoding="utf-8").splitlines()
    out: dict[str, str] = {}
    head = re.compile(r"^([A-Z][A-Za-z0-9]*)(?:\([^)]*\))? ==")
    for i, line in enumerate(lines):
        m = head.match(line)
        if not m:
            continue
        j = i
        while j > 0 and lines[j - 1].startswith("\\*"):
            j -= 1
        if j < i:
            out[m.group(1)] = " ".join(x[2:].strip() for x in lines[j:i])
    return out


def impairment_key(scn: Scenario) -> tuple[tuple[str, ...], ...]:
    """What a scenario asks of the channel, without notes: two scenarios with
    the same key are one test (their expectations are computed from it)."""
    return tuple(
        sorted(
            (
                imp.direction,
                json.dumps(imp.match, sort_keys=True),
                str(imp.occurrence),
                str(imp.count),
                imp.action,
                f"{imp.delay_ms:g}" if imp.action in ("delay", "outage") else "",
                str(imp.bits) if imp.action == "corrupt" else "",
            )
            for imp in scn.impairments
        )
    )


def generate(
    model: TrapModel,
    outdir: Path,
    progress: Callable[[TlcProgress], None] | None = None,
    on_purpose: Callable[[int, int, str], None] | None = None,
) -> GenerateReport:
    """Run TLC once per test purpose of ``model``, then once per distinct
    scenario for its outcome set, and write the distinct scenarios into
    ``outdir`` (``<proto>-<purpose>.json``, named after the first purpose that
    gave it).
    TLC's files (logs, trap configurations) go to ``outdir/tlc``, which no
    other run shares. ``on_purpose(done, total, name)`` is called before and
    after each step; ``outdir/coverage.json`` records purposes and actions."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    workdir = outdir / "tlc"
    workdir.mkdir(exist_ok=True)
    statuses: list[PurposeStatus] = []
    distinct: dict[tuple[tuple[str, ...], ...], Scenario] = {}
    covered: set[str] = set()
    seconds = 0.0
    lanes = max(1, min(model.lanes, os.cpu_count() or 1))
    purposes = model.purposes
    done = 0

    def trap(p: Purpose) -> TlcResult:
        cfg = workdir / f"{model.traps.stem}_{p.kind}_{p.off}.cfg"
        cfg.write_text(model.trap_cfg(p), encoding="utf-8")
        # One worker: breadth-first search then gives a shortest trace, the
        # same every time; the purposes run side by side instead.
        return run_tlc(model.traps, cfg, workers=1, progress=progress, workdir=workdir, short=True)

    if on_purpose:
        on_purpose(0, len(purposes), "traps")
    results: list[TlcResult] = []
    with ThreadPoolExecutor(lanes) as pool:
        try:
            for p, result in zip(purposes, pool.map(trap, purposes), strict=True):
                done += 1
                if on_purpose:
                    on_purpose(done, len(purposes), f"trap {p.name}")
                results.append(result)
        except BaseException:
            terminate_all()  # Ctrl-C: stop the TLC runs before the pool waits for them
            raise
    for p, result in zip(purposes, results, strict=True):
        seconds += result.seconds
        if "Trap" in result.violated and result.trace:
            scen = model.compile(result.trace, p)
            covered.update(scen.origin.actions if scen.origin else [])
            key = impairment_key(scen)
            first = distinct.get(key)
            if first is None:
                distinct[key] = scen
                statuses.append(PurposeStatus(p.name, "reached", trace_length=len(result.trace)))
            else:
                assert first.origin is not None
                first.origin.purposes.append(p.name)
                first.description += f" Also test purpose {p.name}: {p.description}."
                statuses.append(
                    PurposeStatus(
                        p.name,
                        "reached",
                        trace_length=len(result.trace),
                        same_as=first.origin.purpose,
                    )
                )
        elif result.ok:
            statuses.append(
                PurposeStatus(
                    p.name, "unreachable", detail="TLC explored the bound without a trap hit"
                )
            )
        else:
            statuses.append(
                PurposeStatus(p.name, "error", detail="; ".join(result.errors) or "no trace")
            )
    scenarios: list[Path] = []
    paths: dict[str, Path] = {}

    def outcome_set(scen: Scenario) -> Expectation:
        return model.outcome_set(scen, workdir, progress)

    todo = list(distinct.values())
    if on_purpose:
        on_purpose(0, len(todo), "outcome sets")
    with ThreadPoolExecutor(lanes) as pool:
        try:
            expects = pool.map(outcome_set, todo)
            for n, (scen, expect) in enumerate(zip(todo, expects, strict=True)):
                if on_purpose:
                    on_purpose(n + 1, len(todo), f"outcomes {scen.name}")
                scen.expect = expect
                path = outdir / f"{scen.name}.json"
                dump_model(scen, path)
                scenarios.append(path)
                assert scen.origin is not None
                for name in scen.origin.purposes:
                    paths[name] = path
        except BaseException:
            terminate_all()
            raise
    for st in statuses:
        st.scenario = paths.get(st.purpose)
    if on_purpose:
        on_purpose(1, 1, "")
    total = model.actions()
    # The stuttering end of every complete session: a finite counterexample
    # never shows it as a step, so it counts as covered when some scenario
    # reached the end.
    if scenarios and model.terminal_action:
        covered.add(model.terminal_action)
    report = GenerateReport(
        scenarios=scenarios,
        purposes=statuses,
        actions_covered=[a for a in total if a in covered],
        actions_total=total,
        tlc_seconds=round(seconds, 3),
        outdir=outdir,
    )
    coverage = {
        "covered": report.actions_covered,
        "total": report.actions_total,
        "uncovered": report.actions_uncovered,
        "purposes": {
            st.purpose: {
                "status": st.status,
                "scenario": st.scenario.name if st.scenario else None,
                "same_as": st.same_as or None,
                "detail": st.detail,
            }
            for st in statuses
        },
    }
    (outdir / "coverage.json").write_text(json.dumps(coverage, indent=2) + "\n")
    return report


# ---------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------
