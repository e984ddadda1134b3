"""``dtnconform mutate --shrink``: each suite kill's scenario made minimal
(docs/mutation.md).

A mutant the suite killed fell to one case: a scenario's impairments, in
one role. The shrink takes the impairments away one at a time. For each
smaller scenario the model gives its outcome set again (the protocol's
``outcomes.expectation_for``: TLC, as for any scenario), and two live runs
decide: the mutant must still fail it and the engine as published must
pass it. The first impairment that can go goes, and the pass starts again,
until none can. This is the pass Hypothesis' shrinker makes over a list
(delete one element, keep what still fails); Hypothesis cannot drive it
here, since each of its tries is two live runs and TLC. The search's kills
(hunt.py) are shrunk by Hypothesis itself.

What is left is the kill's minimal scenario: every impairment it keeps is
needed, as far as one-at-a-time deletion can tell. It is written under
``shrink/<mutant>/``, with its runs. A kill by a crash in a case the
original fails, or by a deviation of the mutant's own there (run.kill_rule),
is not shrunk: it is its own explanation.
A mutant whose shrink is over is recorded, so ``--resume`` goes on with
the ones left.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conformance.campaign.engine import execute_command
from conformance.core.contract import ProtocolSpec
from conformance.core.errors import DtncError
from conformance.core.types import Impairment, Scenario, load_scenario
from conformance.mutate import mutants as mm
from conformance.mutate.report import fates
from conformance.mutate.run import (
    SHRUNK,
    TIMEOUT_S,
    MutantRun,
    MutationStore,
    _command,
    mutants_of,
)


def _said(imp: Impairment) -> str:
    """An impairment in a few words: its note, or its action and match."""
    return imp.note or f"{imp.action} {imp.direction} {json.dumps(imp.match, sort_keys=True)}"


def _without(scn: Scenario, base: str, j: int) -> Scenario:
    """``scn`` less its ``j``-th impairment, named after ``base`` and what
    is left."""
    kept = [x for k, x in enumerate(scn.impairments) if k != j]
    return scn.model_copy(
        update={
            "name": f"{base[:100]}-min{len(kept)}",
            "impairments": kept,
            "description": f"Shrunk from {base} ({_said(scn.impairments[j])} taken away). "
            + scn.description,
        }
    )


def shrink(
    st: MutationStore,
    out: Path,
    engine: mm.Engine,
    spec: ProtocolSpec,
    on_progress: Callable[[int, int, str], None] | None = None,
    timeout_s: float = TIMEOUT_S,
) -> None:
    """Shrink the killing scenario of each mutant the suite killed (not the
    trivial ones: a nominal case has nothing to take away)."""
    oc = spec.need("outcomes", spec.capabilities.outcomes)
    scratch = out / "scratch"
    by_name = {m.name: m for m in mutants_of(st)}
    killed = [f for f in fates(st) if f.status == "killed" and f.by == "suite"]
    rows = {r.seq: r for r in st.records()}
    original, why = mm.build(engine, None, scratch)
    if original is None:
        raise DtncError(f"the engine as published does not build: {why}")
    for i, f in enumerate(killed):
        m = by_name[str(f.mutant["name"])]
        if st.get(SHRUNK + m.key) is not None:
            continue
        if on_progress:
            on_progress(i, len(killed), f"shrink {m.key}")
        kill = json.loads(st.get(f"killed:{m.key}") or "{}")
        run = MutantRun(**rows[kill["seq"]].spec)
        found = _shrink_one(out, engine, oc, m, run, original, kill, timeout_s)
        with st.tx():
            st.put(SHRUNK + m.key, json.dumps(found))
    if on_progress:
        on_progress(len(killed), len(killed), "shrink over")


def _shrink_one(
    out: Path,
    engine: mm.Engine,
    oc: Any,
    m: mm.Mutant,
    run: MutantRun,
    original: str,
    kill: dict[str, Any],
    timeout_s: float,
) -> dict[str, Any]:
    """One kill's shrink: what was taken away, the minimal scenario and its
    mutant's run (relative to ``out``), and the tries."""
    scn = load_scenario(out / run.scenario)
    found: dict[str, Any] = {
        "scenario": run.scenario,
        "run_dir": "",
        "removed": [],
        "kept": [_said(x) for x in scn.impairments],
        "tries": 0,
    }
    if kill.get("original") == "fail":
        what = "a deviation of its own" if kill.get("differs") else "a crash"
        found["why"] = f"{what} in a case the original fails: not shrunk"
        return found
    if not scn.impairments:
        found["why"] = "no impairment to take away"
        return found
    home = out / "shrink" / m.key
    ref, why = mm.build(engine, m, out / "scratch")
    if ref is None:  # it ran the suite, so it builds
        raise DtncError(f"{m.name}: does not build: {why}")
    current = scn
    while True:
        for j in range(len(current.impairments)):
            cand = _without(current, scn.name, j)
            found["tries"] += 1
            try:
                cand.expect = oc.expectation_for(cand, home / "tlc")
            except DtncError:
                continue  # the model has no outcome for it: not a scenario
            text = cand.model_dump_json(indent=1)
            tried = home / f"try{found['tries']}"
            spec = MutantRun(m.key, cand.name, "", run.tester, False)
            mine = execute_command(
                _command(ref, spec, tried / "mutant"), text, tried / "mutant", timeout_s
            )
            if mine.verdict not in ("fail", "error"):  # as run.kill_rule's "any"
                continue
            base = execute_command(
                _command(original, spec, tried / "original"), text, tried / "original", timeout_s
            )
            if not base.verdict.startswith("pass"):
                continue
            found["removed"].append(_said(current.impairments[j]))
            current = cand
            path = home / f"{cand.name}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text + "\n", encoding="utf-8")
            found.update(
                scenario=str(path.relative_to(out)),
                run_dir=str((tried / "mutant").relative_to(out)),
                kept=[_said(x) for x in current.impairments],
            )
            break
        else:
            return found
        if not current.impairments:
            return found
