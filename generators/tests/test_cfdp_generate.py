"""CFDP test generation (generators/cfdp/outcomes.py) under real TLC: the
catalogue meets issue 10's targets (at least 300 scenarios, every model
action), its outcomes are those the outcome-set wrapper computes for the
same impairments, and the wire keys map to emulator matches and back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.core.errors import DtncError, ToolMissing
from conformance.core.modelcheck import GenerateReport
from conformance.core.types import Impairment, Scenario, load_scenario
from conformance.protocols.cfdp import SPEC, CfdpRequest, CfdpTransfer, Trigger
from generators.cfdp import catalogue as cfdp_catalogue
from generators.cfdp import outcomes as cfdpcat
from generators.cfdp import purposes as cfdp
from generators.outcomes import PlannedLoss
from generators.tlc import find_jar

# the CFDP catalogue: minutes (conftest.py)
pytestmark = pytest.mark.first(2)

T = CfdpTransfer(file_len=3000, segment_size=1000)


@pytest.mark.parametrize("key", sorted(cfdpcat.MATCHES))
def test_wire_key_and_match_are_inverse(key: str) -> None:
    for off in range(3) if key == "file_data" else [0]:
        assert cfdpcat.key_of(cfdpcat.match_of(key, off, T), T, "here") == (key, off)


@pytest.mark.parametrize(
    ("imp", "why"),
    [
        (Impairment(direction="forward", match={"directive": "eof", "offset": 0}), "not one"),
        (Impairment(direction="forward", match={"pdu_type": "file_data", "offset": 500}),
         "segment boundary"),
        (Impairment(direction="forward", match={"pdu_type": "file_data", "offset": 3000}),
         "past the file"),
        (Impairment(direction="forward", match={"directive": "eof"}, action="corrupt"),
         "File Data with no PDU CRC"),
    ],
)  # fmt: skip
def test_plan_refuses_what_the_model_cannot_name(imp: Impairment, why: str) -> None:
    with pytest.raises(cfdpcat.Unplannable, match=why):
        cfdpcat.plan([imp], T)


def test_plan_counts_each_match_acted_on() -> None:
    imp = Impairment(direction="return", match={"directive": "nak"}, occurrence=2, count=2)
    assert cfdpcat.plan([imp], T) == [
        PlannedLoss("return", "nak", 0, 2, "drop"),
        PlannedLoss("return", "nak", 0, 3, "drop"),
    ]


def test_readings_matter_only_in_their_mode() -> None:
    # readings 1, 2 and 4 are Class 2's, reading 3 Class 1 with closure's
    # (specs/cfdp/readings.json matters_when: Modes)
    for mode, want in (("class2", ["", "1", "2", "4"]), ("class1-closure", ["", "3"]),
                       ("class1", [""])):  # fmt: skip
        assert cfdpcat.reading_ids(T.model_copy(update={"mode": mode})) == want
    assert SPEC.reading("3").matters({"Modes": frozenset({"c1", "c1c"})})


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, GenerateReport]:
    try:
        find_jar()
    except ToolMissing as exc:
        pytest.skip(str(exc))
    out = tmp_path_factory.mktemp("cfdp-catalogue")
    return out, cfdp.generate(out)


def _scenarios(out: Path) -> dict[str, Scenario]:
    return {p.stem: load_scenario(p) for p in sorted(out.glob("cfdp-*.json"))}


def _transfer(scn: Scenario) -> CfdpTransfer:
    """A CFDP scenario's parameters, with their type."""
    assert isinstance(scn.params, CfdpTransfer), scn.params
    return scn.params


@pytest.mark.integration
def test_catalogue_meets_the_targets(catalogue: tuple[Path, GenerateReport]) -> None:
    out, report = catalogue
    scns = _scenarios(out)
    assert len(scns) >= 300
    assert report.actions_uncovered == []
    assert len(report.actions_total) == 48
    cov = json.loads((out / "coverage.json").read_text(encoding="utf-8"))
    assert cov["scenarios"] == len(scns) and cov["uncovered"] == []
    # every purpose the issue names has scenarios: each PDU type lost, held
    # back and duplicated; File Data before Metadata; a request of each kind
    # from each side; outages; corruption
    imps = [(i.action, i.match) for s in scns.values() for i in s.impairments]
    for key in ("metadata", "file_data", "eof", "ack_eof", "finished", "ack_finished", "nak"):
        for act in ("drop", "delay", "duplicate"):
            assert any(a == act and cfdpcat.MATCHES[key].items() <= m.items()
                       for a, m in imps), (key, act)  # fmt: skip
    asked = {(r.entity, r.request) for s in scns.values()
             for r in _transfer(s).requests}  # fmt: skip
    assert asked == {(w, r) for w in ("sender", "receiver") for r in ("cancel", "suspend")} | {
        ("sender", "prompt_nak"), ("sender", "prompt_keep_alive")}  # fmt: skip
    assert {a for a, _ in imps} == {"drop", "delay", "duplicate", "outage", "corrupt"}
    # issue 29's purposes at a realistic geometry: judged from the trace, no set
    real = {n: s for n, s in scns.items() if "realistic" in n}
    assert len(real) == cov["realistic"] == 7
    held = real["cfdp-c2-realistic-short-last-first-fd14"].impairments
    assert [(i.action, i.delay_ms, i.match.get("offset")) for i in held] == [
        ("delay", cfdp_catalogue.REORDER_MS, 14 * cfdp_catalogue.SEGMENT_SIZE)
    ]
    assert [i.occurrence for i in real["cfdp-c2-realistic-repeated-loss-fd3"].impairments] == [
        1,
        2,
        3,
    ]
    late = real["cfdp-c2-realistic-deferred-late-original-fd0-fd2"]
    size = cfdp_catalogue.SEGMENT_SIZE
    adjacent = real["cfdp-c2-realistic-deferred-adjacent-loss-fd2-fd3"]
    assert _transfer(adjacent).nak_mode == "deferred"
    assert [(i.action, i.occurrence, i.match.get("offset")) for i in adjacent.impairments] == [
        ("drop", 1, 2 * size),
        ("drop", 1, 3 * size),
    ]
    assert [
        (i.action, i.occurrence, i.match.get("offset"), i.delay_ms) for i in late.impairments
    ] == [
        ("drop", 1, 0, 0.0),
        ("drop", 2, 0, 0.0),
        ("delay", 1, 2 * size, cfdp_catalogue.LATE_ORIGINAL_MS),
    ]
    deferred = real["cfdp-c2-realistic-deferred-repeated-loss-fd3"]
    assert [i.occurrence for i in deferred.impairments] == [1, 2, 3, 4]
    assert (_transfer(deferred).nak_mode, _transfer(deferred).nak_limit) == ("deferred", 4)
    assert _transfer(late).nak_mode == "deferred"
    assert {
        _transfer(s).nak_mode for s in real.values() if s not in (deferred, late, adjacent)
    } == {"immediate"}
    for scn in real.values():
        assert _transfer(scn).file_len == cfdp_catalogue.REALISTIC_FILE_LEN
        assert scn.expect.unjudged and "judged at the end of its validated trace" in (
            scn.expect.unjudged
        )
    # a receiver resumed before any EOF reaches it, a gap to NAK at the resend
    resumed = scns["cfdp-c2-receiver-suspend-after-md-resumed-fd1.1-eof.1"]
    (req,) = _transfer(resumed).requests
    assert (req.entity, req.request, req.resume_after_ms) == (
        "receiver",
        "suspend",
        cfdp_catalogue.RESUME_BEFORE_EOF_MS,
    )
    assert [(i.action, i.match.get("directive", i.match.get("offset"))) for i in
            resumed.impairments] == [("drop", size), ("drop", "eof")]  # fmt: skip
    assert any(
        (o.sender_outcome, o.receiver_outcome, o.delivered.parts()["file_bytes_delivered"])
        == ("completed", "completed", cfdp_catalogue.FILE_LEN)
        for o in resumed.expect.outcomes
    )


@pytest.mark.integration
def test_catalogue_outcomes_follow_the_protocol(catalogue: tuple[Path, GenerateReport]) -> None:
    """Spot checks against the procedures (727.0-B-5 as the model reads them)."""
    scns = _scenarios(catalogue[0])

    def ends(name: str) -> set[tuple[object, ...]]:
        return {(o.sender_outcome, o.receiver_outcome, *o.delivered.parts().values())
                for o in scns[name].expect.outcomes}  # fmt: skip

    full = cfdp_catalogue.FILE_LEN
    # nominal: the file arrives, no error, in every mode
    for tag in ("c1-a1n1k1-l3", "c1c-a1n1k1-l3", "c2-a1n1k1-l3"):
        assert ends(f"cfdp-{tag}-nominal") == {
            ("completed", "completed", full, "no_error", "no_error")}  # fmt: skip
    # Class 2, the EOF lost twice with an ACK limit of 1: a positive-ACK-limit
    # fault at the sender, its notice of cancellation ends both (4.7.1, 4.8)
    assert ends("cfdp-c2-a1n1k1-l3-eof.1-eof.2") == {
        ("cancelled", "cancelled", 0, "positive_ack_limit_reached",
         "positive_ack_limit_reached")}  # fmt: skip
    # Class 2, File Data lost once: the NAK recovers it
    assert ends("cfdp-c2-a1n1k1-l3-fd0.1") == {
        ("completed", "completed", full, "no_error", "no_error")}  # fmt: skip
    # Class 1, File Data lost: nothing recovers it; the receiver's check limit
    assert ("completed", "cancelled", 0, "no_error", "check_limit_reached") in ends(
        "cfdp-c1-a1n1k1-l3-fd0.1"
    )
    # corrupted file data: the checksum catches it, nothing is delivered
    for o in scns["cfdp-c2-corrupt-fd1"].expect.outcomes:
        assert o.delivered.parts()["file_bytes_delivered"] == 0
        assert o.delivered.parts()["receiver_condition"] == "file_checksum_failure"
    # the ACK(Finished) lost once: the default re-acknowledges the repeated
    # Finished; under reading 1's alternative (cfdp-py, cfdp-rs) the sender
    # discards it and only there does the receiver reach its ACK limit
    lost = scns["cfdp-c2-a1n1k1-l3-ackfin.1"].expect.outcomes
    limit = [o for o in lost if o.receiver_outcome != "completed"]
    assert limit and all(o.readings == ["1"] for o in limit)
    assert any("" in o.readings and o.receiver_outcome == "completed" for o in lost)


@pytest.mark.integration
def test_catalogue_outcomes_equal_the_outcome_sets(
    catalogue: tuple[Path, GenerateReport], tmp_path: Path
) -> None:
    """The catalogue groups one exploration by pattern; the outcome-set
    wrapper explores each pattern alone: they must agree, outcome for
    outcome and reading for reading."""
    scns = _scenarios(catalogue[0])
    names = [
        "cfdp-c2-a1n1k1-l3-eof.1-fd0.1-nak.2",
        "cfdp-c2-a1n1k1-l3-ackfin.1-ackeof.1-fin.1",
        "cfdp-c2-a1n1k1-l1x1-late-md.1",
        "cfdp-c2-a1n1k1-l1x1-dup-eof.1-fd1.1",
        "cfdp-c2d-a1n1k1-l2-fd0.1-nak.1",
        "cfdp-c1c-a1n1k1-l1x1-late-fd0.1",
        "cfdp-c1c-a1n1k1-l3-fin.1",
        "cfdp-c1-a1n1k0-l2-eof.1-fd1.1",
    ]
    for name in names:
        scn = scns[name]
        want = {(o.key(), tuple(o.readings)) for o in scn.expect.outcomes}
        got = cfdpcat.expectation_for(scn, tmp_path)
        assert {(o.key(), tuple(o.readings)) for o in got.outcomes} == want, name


@pytest.mark.integration
def test_a_request_the_transaction_is_over_for_is_unplannable(tmp_path: Path) -> None:
    try:
        find_jar()
    except ToolMissing as exc:
        pytest.skip(str(exc))
    t = T.model_copy(
        update={
            "mode": "class1",
            "requests": [
                CfdpRequest(
                    entity="sender",
                    request="cancel",
                    after=Trigger(direction="forward", match={"directive": "eof"}),
                )
            ],
        }
    )
    with pytest.raises(cfdpcat.Unplannable, match="no end"):
        cfdpcat.expectation(t, [], tmp_path)


@pytest.mark.integration
def test_purposes_sharing_a_run_get_what_each_alone_gets(tmp_path: Path) -> None:
    """The catalogue explores a group of planned purposes in one TLC run per
    reading (MCCFDPPlan's TheCases): each purpose's outcomes, readings and
    unreachability are those of a run of its own."""
    try:
        find_jar()
    except ToolMissing as exc:
        pytest.skip(str(exc))
    by_name = {p.name: p for p in cfdp_catalogue.planned_purposes()}
    names = [
        "cfdp-c1c-sender-cancel-after-fd0",
        "cfdp-c1c-receiver-cancel-after-fin",  # the transaction is over: no end
        "cfdp-c1c-receiver-cancel-after-eof",
    ]
    group = [by_name[n] for n in names]
    assert [len(g) for g in cfdp_catalogue.groups(group)] == [3]  # one run per reading
    cases = [cfdpcat.Case(p.name, p.transfer, p.impairments) for p in group]
    together = cfdpcat.expectations(cases, tmp_path / "together", name="together")
    for p, got in zip(group, together, strict=True):
        try:
            alone = cfdpcat.expectation(p.transfer, p.impairments, tmp_path / p.name, name=p.name)
        except cfdpcat.Unplannable:
            assert isinstance(got, cfdpcat.Unplannable), p.name
            continue
        assert not isinstance(got, cfdpcat.Unplannable), p.name
        want = {(o.key(), tuple(o.readings)) for o in alone.outcomes}
        assert {(o.key(), tuple(o.readings)) for o in got.outcomes} == want, p.name
    assert isinstance(together[1], cfdpcat.Unplannable)
    assert not isinstance(together[0], cfdpcat.Unplannable)
    assert not isinstance(together[2], cfdpcat.Unplannable)
    # a cancel and an outage need other budgets: no shared run
    outage = by_name["cfdp-c1c-outage-at-md"]
    assert len(cfdp_catalogue.groups([group[0], outage])) == 2
    with pytest.raises(DtncError, match="other model constants"):
        cfdpcat.outcome_sets(
            [cases[0], cfdpcat.Case(outage.name, outage.transfer, outage.impairments)],
            tmp_path / "mixed",
            name="mixed",
        )
