"""``dtnconform mutate --search N``: a Hypothesis search of N impairment
plans against each mutant the suite left alive (docs/mutation.md).

The search is ``dtnconform search``'s (conformance/search.py): random plans
of losses, delays, duplicates and an outage, each judged by the model, the
first failing plan shrunk by Hypothesis to the smallest that still fails.
Here it runs against the mutant (its reference, as the suite's runs take
it), derandomized, so the same mutant meets the same plans. A plan found
kills the mutant only if the engine as published passes it: the minimal
plan is run against the original, and a plan it fails too (a deviation of
the implementation itself, or a race) kills nothing. The kill's case is
the shrunk plan, with its run; a mutant whose search is over is recorded,
so ``--resume`` searches only the ones left.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from conformance.core.contract import ProtocolSpec
from conformance.mutate import mutants as mm
from conformance.mutate.report import fates
from conformance.mutate.run import MutationStore, mutants_of

SEARCHED = "searched:"


def _failing_run(log_file: Path, name: str) -> tuple[str | None, str]:
    """The tester's role and the run folder of the last failing run of the
    plan ``name`` in a search's log."""
    role: str | None = None
    run = ""
    for line in log_file.read_text(encoding="utf-8").splitlines():
        x = json.loads(line)
        if x.get("scenario") == name and x.get("verdict") == "fail":
            role = None if x.get("tester") in (None, "none") else str(x["tester"])
            run = str(x.get("run", ""))
    return role, run


def hunt(
    st: MutationStore,
    out: Path,
    engine: mm.Engine,
    spec: ProtocolSpec,
    examples: int,
    on_progress: Callable[[int, int, str], None] | None = None,
) -> None:
    """Search each survivor of ``st`` (``examples`` live runs each, more to
    shrink what fails), kill it where the original passes the shrunk plan."""
    from conformance import search
    from conformance.core.types import load_scenario
    from conformance.runner import run_scenario
    from suts.registry import get

    scratch = out / "scratch"
    by_key = {m.key: m for m in mutants_of(st)}
    alive = [f for f in fates(st) if f.status == "survived"]
    original, why = mm.build(engine, None, scratch)
    if original is None:
        raise RuntimeError(f"the engine as published does not build: {why}")
    for i, f in enumerate(alive):
        key = str(f.mutant["name"])
        m = next(x for x in by_key.values() if x.name == key)
        if st.get(SEARCHED + m.key) is not None:
            continue
        if on_progress:
            on_progress(i, len(alive), f"search {m.key}")
        ref, why = mm.build(engine, m, scratch)
        assert ref is not None, why  # it ran the suite: it builds
        home = out / "search" / m.key
        log, minimal, text = search.search(spec, ref, home, examples=examples, deterministic=True)
        found: dict[str, object] = {"examples": log.examples, "rejected": log.rejected}
        if minimal is not None:
            role, run = _failing_run(home / "search.jsonl", minimal.stem)
            base = run_scenario(
                load_scenario(minimal), get(original), home / "original", tester=role
            ).verdict
            found.update(plan=minimal.stem, failure=text[:400], original=base.status)
            if base.status.startswith("pass"):
                kill = {
                    "case": minimal.stem,
                    "verdict": "fail",
                    "seq": None,
                    "run_dir": run,
                    "search": str(minimal),
                }
                with st.tx():
                    st.put(f"killed:{m.key}", json.dumps(kill))
        with st.tx():
            st.put(SEARCHED + m.key, json.dumps(found))
    if on_progress:
        on_progress(len(alive), len(alive), "search over")
