"""The LTP catalogue (generators/ltp/catalogue.py, specs/ltp/MCLTPCatalogue.tla):
its size and coverage targets, distinctness, and its outcome sets checked
against the other wrapper that computes them (MCLTPOutcomes, per plan)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conformance.core.types import load_scenario
from conformance.protocols.ltp import LtpBlock
from generators.ltp import catalogue, outcomes
from generators.ltp import purposes as ltp
from generators.traps import impairment_key

# the LTP catalogue: minutes (conftest.py)
pytestmark = pytest.mark.first(3)


@pytest.fixture(scope="module")
def cat(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, catalogue.CatalogueReport]:
    out = tmp_path_factory.mktemp("catalogue")
    return out, ltp.catalogue(out)


def test_catalogue_meets_its_targets(cat: tuple[Path, catalogue.CatalogueReport]) -> None:
    out, report = cat
    assert len(report.scenarios) >= 300
    assert report.actions_uncovered == [], report.actions_uncovered
    summary = json.loads((out / "catalogue.json").read_text())
    assert summary["scenarios"] == len(report.scenarios) == len(list(out.glob("ltp-*.json")))
    assert sum(summary["per_bound"].values()) == len(report.scenarios)
    # issue 29's purposes at a realistic geometry (16 segments): judged from
    # the trace, no outcome set; one has a report of several RSs
    real = {s.name: s for s in report.scenarios if s.origin and "realistic" in s.origin.purposes}
    assert summary["per_bound"]["realistic"] == len(real) == len(catalogue.realistic_scenarios())
    for s in real.values():
        assert isinstance(s.params, LtpBlock) and s.params.block_len >= 16 * 1000, s.name
        assert s.expect.unjudged, s.name
    split = real["ltp-realistic-split-report-rs1-lost"].params
    assert isinstance(split, LtpBlock) and split.max_claims_per_rs == 1


def test_catalogue_scenarios_are_distinct_and_load(
    cat: tuple[Path, catalogue.CatalogueReport],
) -> None:
    out, report = cat
    keys = set()
    for path in sorted(out.glob("ltp-*.json")):
        scn = load_scenario(path)
        assert scn.expect.outcomes, scn.name
        keys.add((scn.params.model_dump_json(), impairment_key(scn)))
    assert len(keys) == len(report.scenarios)
    # the nominal pattern of each bound is there, and expects completion; with
    # an unknown service, the receiver's refusal (CR UNREACH, RFC 5326 §8.2)
    nominal = [s for s in report.scenarios if s.name.endswith("-nominal")]
    # (the late bounds keep only patterns with a late segment: no nominal)
    assert len(nominal) == sum(1 for b in catalogue.BOUNDS if not b.max_late)
    for s in nominal:
        p = s.params
        assert isinstance(p, LtpBlock)
        ends = {(o.sender_outcome, o.receiver_outcome) for o in s.expect.outcomes}
        if p.miscolored_sender:
            # the receiver cancels on the miscolored segment (§6.21), unless
            # it arrives once the session has closed
            assert ("cancelled", "cancelled") in ends, s.name
            assert s.name.endswith("mis-nominal")
            continue
        refused = p.service_at_receiver != p.client_service_id
        want = ("cancelled", "open") if refused else ("completed", "completed")
        if p.red_len == 0:
            want = ("completed", "closed")  # a green-only block's receiver (§8.2)
        assert ends == {want}


def test_outcome_sets_agree_with_the_per_plan_wrapper(
    cat: tuple[Path, catalogue.CatalogueReport], tmp_path: Path
) -> None:
    """Every 360th scenario (90th with DTNC_DEEP=1), a few with a delayed or
    duplicated segment, and some with an outcome only an alternative reading
    reaches: MCLTPOutcomes, given the pattern as its plan, reaches exactly
    the outcomes the catalogue printed for it, under the same readings."""
    _out, report = cat
    patterns = [s for s in report.scenarios if s.origin and s.origin.purpose == "catalogue"]
    alt = [s for s in patterns if any("" not in o.readings for o in s.expect.outcomes)]
    assert alt, "reading 5's alternative adds outcomes to some pattern"
    late = [s for s in patterns if any(i.action != "drop" for i in s.impairments)]
    assert {i.action for s in late for i in s.impairments} == {"drop", "delay", "duplicate"}
    deep = bool(os.environ.get("DTNC_DEEP"))
    sample = (
        patterns[::90] + alt[:3] + late[7::97]
        if deep
        else (patterns[::360] + alt[:2] + late[7::388])
    )
    assert len(sample) >= 4
    for scn in sample:
        assert isinstance(scn.params, LtpBlock)
        got = outcomes.expectation(scn.params, scn.impairments, tmp_path, name=scn.name)
        want = {o.model_dump_json() for o in scn.expect.outcomes}
        assert {o.model_dump_json() for o in got.outcomes} == want, scn.name


def test_an_outage_strikes_each_sender_and_receiver_state(
    cat: tuple[Path, catalogue.CatalogueReport],
) -> None:
    """One scenario per state and outage length, each with its outage rule
    keyed on the segment that enters the state, and an outcome set that
    plans the outage (the model's link goes down there and swallows what it
    carries, timers running on) and no other loss but the rules'. The sets
    are the model's: an outage before a cancel can end in a completed
    transfer or a cancelled one; one that strikes a cancel in progress
    leaves the sender only the cancel."""
    out, report = cat
    got = [s for s in report.scenarios if s.origin and s.origin.purpose == "outage"]
    assert len(got) == len(catalogue.OUTAGE_TRIGGERS) * len(catalogue.OUTAGE_MS)
    assert json.loads((out / "catalogue.json").read_text())["per_bound"]["outages"] == len(got)
    for s in got:
        rule = s.impairments[-1]
        assert rule.action == "outage" and rule.delay_ms in catalogue.OUTAGE_MS, s.name
        assert (s.expect.outages, s.expect.random_losses) == (1, 0), s.name
        # under the default reading: under reading 4's alternative the CR that
        # keys a "-cancels-" outage may be a session's opened anew by a late
        # segment after the transfer completed (ReceiverReopenSession)
        ends = {
            (o.sender_outcome, o.receiver_outcome) for o in s.expect.outcomes if "" in o.readings
        }
        if "-cancels-" in s.name:
            # the session was being cancelled when the link went down
            assert {x for x, _ in ends} == {"cancelled"}, s.name
            assert ("cancelled", "cancelled") in ends, s.name
        else:
            assert ("completed", "completed") in ends and ("cancelled", "cancelled") in ends
    states = {s.origin.purposes[-1] for s in got if s.origin}
    assert states == {t.name for t in catalogue.OUTAGE_TRIGGERS}
