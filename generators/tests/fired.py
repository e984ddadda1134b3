"""Model checking each bound of a protocol's model while counting which
actions fired: the shared half of the model tests (test_cfdp_model.py,
test_norm_model.py).

The wrapper module extends the model's ``MC<Proto>`` module with an action
constraint that lets every step through and prints an action's name the
first time a TLC worker sees it take a step (the register starts empty in
every worker). It tells which actions fired for less than TLC's -coverage
(on a quiet machine, 2026-11-29: CFDP's ten bounds took 231 s with
-coverage, 178 s this way), and, being always TRUE, leaves the manifest's
numbers as they are. The model must record each step's action in
``lastEvent.action``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from conformance.core.errors import ToolMissing
from generators.tlc import TlcResult, find_jar, run_tlc

FIRED = re.compile(r'^<<"fired", "([A-Za-z]+)">>$')


def fired_module(mc: str) -> str:
    """The wrapper of the TLC module ``mc`` (e.g. "MCCFDP")."""
    return f"""---- MODULE {mc}Fired ----
EXTENDS {mc}
ASSUME TLCSet(1, {{}})
Fired ==
    \\/ lastEvent'.action \\in TLCGet(1)
    \\/ /\\ PrintT(<<"fired", lastEvent'.action>>)
       /\\ TLCSet(1, TLCGet(1) \\cup {{lastEvent'.action}})
====
"""


def check_bounds(
    spec_dir: Path,
    mc: str,
    bounds: Iterable[str],
    one_worker: Collection[str],
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, tuple[TlcResult, set[str]]]:
    """Each bound (``<spec_dir>/<mc>_<bound>.cfg``) checked once through the
    wrapper: its result and the actions that took at least one step. Skips
    the test where TLC is missing."""
    try:
        find_jar()
    except ToolMissing as exc:
        pytest.skip(str(exc))
    out: dict[str, tuple[TlcResult, set[str]]] = {}
    for bound in bounds:
        work = tmp_path_factory.mktemp(bound)
        model = work / "model"
        model.mkdir()
        for module in spec_dir.glob("*.tla"):
            (model / module.name).write_text(module.read_text(encoding="utf-8"), encoding="utf-8")
        (model / f"{mc}Fired.tla").write_text(fired_module(mc), encoding="utf-8")
        cfg = model / f"{mc}_{bound}.cfg"
        text = (spec_dir / cfg.name).read_text(encoding="utf-8")
        cfg.write_text(text + "ACTION_CONSTRAINT Fired\n", encoding="utf-8")
        r = run_tlc(
            model / f"{mc}Fired.tla",
            cfg,
            workers=1 if bound in one_worker else 2,
            workdir=work,
        )
        fired = set()
        for line in r.log_path.read_text(encoding="utf-8").splitlines():
            if m := FIRED.match(line.strip()):
                fired.add(m.group(1))
        out[bound] = (r, fired)
    return out


def assert_matches_manifest(
    r: TlcResult, expected: Mapping[str, Any], holds: Collection[str], violated: str | None = None
) -> None:
    """A bound's result is its manifest entry's: for "ok", the exact state
    counts and depth, with every property of ``holds`` checked and holding;
    for a violation, the property (also ``violated``, where the caller
    names it) and the counterexample's length."""
    if expected["result"] == "ok":
        assert r.ok, (r.properties, r.errors)
        assert (r.distinct_states, r.states_generated, r.depth) == (
            expected["distinct_states"],
            expected["states_generated"],
            expected["depth"],
        )
        assert {p.name for p in r.properties if p.status == "ok"} >= set(holds)
    else:
        assert r.violated == [expected["violated"]], r.violated
        assert violated is None or r.violated == [violated]
        assert len(r.trace) == expected["trace_length"]
