"""The Hypothesis search against licklider between namespaces: a plan the
model judges (here the checkpoint lost twice, where licklider leaves the
first CS unanswered) fails its example and leaves a regression scenario that
fails again when run on its own; a short search runs end to end."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from conformance import search
from conformance.core.types import load_scenario
from conformance.protocols.ltp import SPEC as LTP
from conformance.runner import run_scenario
from suts.registry import get

pytestmark = [pytest.mark.netns, pytest.mark.integration]


def test_rules_are_the_models_channel_actions() -> None:
    text = (Path(search.__file__).parents[1] / "specs" / "ltp" / "LTP.tla").read_text()
    cls = search.machine(LTP, "licklider", search.SearchLog(Path("/nonexistent")), budget=0)
    rules = {n for n, f in vars(cls).items() if hasattr(f, "hypothesis_stateful_rule")}
    assert rules == {
        f"Channel{act}{d}" for act in ("Lose", "Delay", "Duplicate") for d in ("Forward", "Return")
    } | {"ChannelLinkDown"}
    assert all(f"\n{name}(s) ==" in text for name in rules - {"ChannelLinkDown"})
    assert "\nChannelLinkDown ==" in text
    inits = {n for n, f in vars(cls).items() if hasattr(f, "hypothesis_stateful_initialize_rule")}
    assert inits == {"Init"} and "\nInit ==" in text


def test_a_failing_plan_leaves_a_regression_that_reproduces(tmp_path: Path) -> None:
    log = search.SearchLog(tmp_path)
    cls = search.machine(LTP, "licklider", log, budget=5)
    m = cls()
    # licklider on both sides, limit 1, the checkpoint lost twice: the sender
    # cancels, and the first CS gets no CAS (finding
    # licklider-0.1.1-first-cs-not-acknowledged; no timers race here)
    m.Init(tester="none", limit=1, first=("forward", "red_data@2000", 1, "drop"))
    m.ChannelLoseForward(segment="red_data@2000", occurrence=2)
    with pytest.raises(AssertionError, match="verdict fail"):
        m.teardown()
    (path,) = log.failures
    scn = load_scenario(path)
    cp = {"kind": "red_data", "holds": 2999}
    assert [(i.direction, i.match, i.occurrence) for i in scn.impairments] == [
        ("forward", cp, 1),
        ("forward", cp, 2),
    ]
    assert "found by Hypothesis search" in scn.description
    line = json.loads((tmp_path / "search.jsonl").read_text().splitlines()[-1])
    assert line["verdict"] == "fail"
    assert line["losses"] == [
        ["forward", "red_data@2000", 1, "drop"],
        ["forward", "red_data@2000", 2, "drop"],
    ]
    again = run_scenario(scn, get("licklider"), tmp_path / "again")
    assert again.verdict.status == "fail", again.verdict.reasons


def test_a_duplicate_plan_is_judged_with_its_copy(tmp_path: Path) -> None:
    """The RA lost and the checkpoint duplicated (the copy is a redundant
    checkpoint, RFC 5326 §6.8 b): the plan's scenario carries the duplicate
    rule, its expectation allows the receiver's cancel only a duplicating
    channel reaches, and the run's trace takes the copy's second arrival."""
    log = search.SearchLog(tmp_path)
    cls = search.machine(LTP, "licklider", log, budget=5)
    m = cls()
    m.Init(tester="none", limit=1, first=("forward", "RA", 1, "drop"))
    m.ChannelDuplicateForward(segment="red_data@2000", occurrence=1)
    scn = m.scenario()
    assert [(i.action, i.match) for i in scn.impairments] == [
        ("drop", {"type": "RA"}),
        ("duplicate", {"kind": "red_data", "holds": 2999}),
    ]
    # a fail is licklider's (its limit finding); the run is what is checked
    with contextlib.suppress(AssertionError):
        m.teardown()
    line = json.loads((tmp_path / "search.jsonl").read_text().splitlines()[-1])
    assert line["verdict"] in ("pass", "fail", "inconclusive"), line
    verdict = json.loads((Path(line["run"]) / "verdict.json").read_text())
    assert verdict["trace"]["status"] in ("accepted", "rejected"), verdict["trace"]
    arrivals = [
        json.loads(x)
        for x in (Path(line["run"]) / "trace.ndjson").read_text().splitlines()
        if '"arrive"' in x and '"RD-CP-EORP"' in x
    ]
    assert len(arrivals) >= 2  # the original and the channel's copy


def test_an_outage_plan_is_planned_as_the_models_link_going_down(tmp_path: Path) -> None:
    """ChannelLinkDown keyed on the EORP checkpoint: the scenario's outage
    rule takes the link down as it crosses; the expectation plans it (one
    outage, no random losses); the live run's channel drops what crossed the
    dead link as the outage's, and the run is judged on its outcome."""
    log = search.SearchLog(tmp_path)
    cls = search.machine(LTP, "licklider", log, budget=5)
    m = cls()
    m.Init(tester="none", limit=1, first=("return", "RS", 2, "drop"))
    m.ChannelLinkDown(segment=("forward", "red_data@2000"), occurrence=1)
    scn = m.scenario()
    assert [(i.action, i.match, i.delay_ms) for i in scn.impairments] == [
        ("outage", {"kind": "red_data", "holds": 2999}, search.DELAY_MS),
        ("drop", {"type": "RS"}, 0.0),
    ]
    with contextlib.suppress(AssertionError):
        m.teardown()
    line = json.loads((tmp_path / "search.jsonl").read_text().splitlines()[-1])
    assert line["verdict"] in ("pass", "fail"), line
    run = load_scenario(Path(line["run"]) / "scenario.json")
    assert (run.expect.outages, run.expect.random_losses) == (1, 0)
    causes = [
        json.loads(x).get("cause")
        for x in (Path(line["run"]) / "channel.jsonl").read_text().splitlines()
    ]
    assert "outage" in causes


def test_a_short_search_runs_each_plan_once(tmp_path: Path) -> None:
    log, minimal, _text = search.search(LTP, "licklider", tmp_path, examples=2, deterministic=True)
    lines = [json.loads(x) for x in (tmp_path / "search.jsonl").read_text().splitlines()]
    ran = [x["scenario"] for x in lines if "verdict" in x]
    assert ran and len(ran) == len(set(ran)) == log.examples
    assert all(x["losses"] for x in lines if "verdict" in x)  # every plan loses something
    if minimal is not None:
        assert (tmp_path / "regressions" / "minimal.json").exists()
