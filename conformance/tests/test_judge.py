"""The judge on RunResults and channel logs of known shape: a verdict class
for each kind of run, and reasons that name the rule and what the channel saw."""

from __future__ import annotations

import json
from pathlib import Path

from conformance.core.types import EndpointResult, Outcome, RunResult, Scenario, SegmentCounts
from conformance.judge import judge
from conformance.protocols.ltp import SPEC as LTP
from conformance.protocols.ltp import LtpDelivery
from conformance.segments import Finding

ALLOWED = [(3000, 1000, "cancelled", "cancelled"), (0, 1000, "cancelled", "cancelled")]


def _scenario(outcomes=ALLOWED, impairments=None) -> Scenario:
    return Scenario.model_validate(
        {
            "name": "ltp-two-reports-lost",
            "protocol": "ltp",
            "ltp": {"block_len": 4000, "red_len": 3000, "segment_size": 1000},
            "impairments": impairments
            if impairments is not None
            else [{"direction": "return", "match": {"type": "RS"}, "occurrence": 1, "count": 2}],
            "expect": {
                "outcomes": [
                    dict(
                        zip(
                            ("red_bytes_delivered", "green_bytes_delivered")
                            + ("sender_outcome", "receiver_outcome"),
                            o,
                            strict=True,
                        )
                    )
                    for o in outcomes
                ]
            },
        }
    )


def _result(red: int, green: int, tx: Outcome, rx: Outcome, rx_detail: str = "") -> RunResult:
    return RunResult(
        scenario="ltp-two-reports-lost",
        protocol="ltp",
        sut="licklider 0.1.1",
        started_at="2026-11-22T00:00:00+00:00",
        duration_s=1.0,
        sender=EndpointResult(role="sender", outcome=tx),
        receiver=EndpointResult(
            role="receiver",
            outcome=rx,
            delivered=LtpDelivery(red_bytes_delivered=red, green_bytes_delivered=green),
            detail=rx_detail,
        ),
        delivered_bytes=red + green,
        goodput_bps=None,
        segments=SegmentCounts(),
        dropped=SegmentCounts(),
    )


def _log(tmp_path: Path, records: list[dict[str, object]]) -> Path:
    p = tmp_path / "channel.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in records))
    return p


def _rs(i: int, rule: int | None) -> dict[str, object]:
    rec: dict[str, object] = {"t_ns": i, "dir": "return", "index": i, "len": 60, "kind": "udp",
                              "proto": "ltp", "seg": i, "fields": {"type": "RS"},
                              "decision": "pass", "release_ns": i}  # fmt: skip
    if rule is not None:
        rec.update(decision="drop", cause="rule", rule=rule)
        del rec["release_ns"]
    return rec


def test_any_allowed_outcome_passes(tmp_path: Path) -> None:
    log = _log(tmp_path, [_rs(1, 0), _rs(2, 0)])
    for red in (3000, 0):
        v = judge(LTP, _scenario(), _result(red, 1000, "cancelled", "cancelled"), log, [])
        assert v.status == "pass", v.reasons


def test_an_outcome_outside_the_set_fails_with_the_set_and_the_rule(tmp_path: Path) -> None:
    """licklider's §6.8 deviation: it resends the RS past the limit, so both
    sides complete where the model has both cancel."""
    log = _log(tmp_path, [_rs(1, 0), _rs(2, 0), _rs(3, None)])
    v = judge(LTP, _scenario(), _result(3000, 1000, "completed", "completed"), log, [])
    assert v.status == "fail"
    head = v.reasons[0]
    assert head.code == "outcome-not-allowed"
    assert "sender cancelled, receiver cancelled" in head.message  # names the allowed set
    codes = {r.code for r in v.reasons}
    assert {"unexpected-sender-outcome", "unexpected-receiver-outcome"} <= codes
    assert "unexpected-red-bytes-delivered" not in codes  # 3000 is allowed with these
    assert all(r.rule.startswith("RFC 5326 §") for r in v.reasons)
    # the rule broken is the one behind what should have happened: the report
    # retransmission limit cancels the receiving session
    rx = next(r for r in v.reasons if r.code == "unexpected-receiver-outcome")
    assert "§6.8" in rx.rule and "§7.6" in rx.rule


def test_closed_without_delivery_is_a_fail_not_an_error(tmp_path: Path) -> None:
    log = _log(tmp_path, [_rs(1, 0), _rs(2, 0)])
    v = judge(LTP, _scenario(), _result(0, 1000, "cancelled", "closed"), log, [])
    assert v.status == "fail"
    rx = next(r for r in v.reasons if r.code == "unexpected-receiver-outcome")
    assert "§6.20" in rx.rule


def test_a_timeout_the_model_does_not_allow_fails(tmp_path: Path) -> None:
    log = _log(tmp_path, [_rs(1, 0), _rs(2, 0)])
    v = judge(LTP, _scenario(), _result(0, 1000, "open", "cancelled"), log, [])
    assert v.status == "fail"
    assert any("§6.7" in r.rule for r in v.reasons)


def test_only_a_harness_failure_is_an_error(tmp_path: Path) -> None:
    log = _log(tmp_path, [_rs(1, 0), _rs(2, 0)])
    v = judge(LTP, _scenario(), _result(0, 0, "error", "cancelled"), log, [])
    assert v.status == "error" and v.reasons[0].code == "sender-error"


def test_tlc_failing_on_the_trace_is_an_error_whatever_the_outcome(tmp_path: Path) -> None:
    """TLC that cannot check the trace is our tool's failure: neither the
    outcome's fail nor its pass may stand."""
    from conformance.core.types import TraceCheck

    log = _log(tmp_path, [_rs(1, 0), _rs(2, 0)])
    broken = TraceCheck(status="error", message="trace validation could not run: parse error")
    for res in (
        _result(3000, 1000, "completed", "completed"),  # outside the set
        _result(3000, 1000, "cancelled", "cancelled"),  # inside it
    ):
        v = judge(LTP, _scenario(), res, log, [], trace=broken)
        assert v.status == "error", v.reasons
        assert [r.code for r in v.reasons] == ["trace-error"]
        assert "parse error" in v.reasons[0].message


def test_unmet_impairment_is_inconclusive_and_says_what_the_channel_saw(tmp_path: Path) -> None:
    scn = _scenario(
        outcomes=[(3000, 1000, "completed", "completed")],
        impairments=[{"direction": "forward", "match": {"kind": "red_data", "offset": 1000}}],
    )
    frag = {"t_ns": 2, "dir": "forward", "index": 2, "len": 1514, "kind": "fragment",
            "decision": "pass", "release_ns": 2}  # fmt: skip
    arp = {"t_ns": 1, "dir": "forward", "index": 1, "len": 42, "kind": "non-ip",
           "decision": "pass", "release_ns": 1}  # fmt: skip
    log = _log(tmp_path, [arp, frag, frag])
    v = judge(LTP, scn, _result(3000, 1000, "completed", "completed"), log, [])
    assert v.status == "inconclusive"
    msg = v.reasons[0].message
    assert "3 forward frames" in msg and "2 IP fragments" in msg and "0 matching" in msg
    assert "raise the MTU or lower segment_size" in msg


def test_dissector_errors_fail_even_when_inconclusive(tmp_path: Path) -> None:
    scn = _scenario(
        outcomes=[(3000, 1000, "completed", "completed")],
        impairments=[{"direction": "forward", "match": {"type": "CS"}}],
    )
    bad = Finding("a", 7, "dtnltp.expert.bad", "error", "malformed", "RFC 5326 §3.1 says no")
    v = judge(LTP, scn, _result(3000, 1000, "completed", "completed"), _log(tmp_path, []), [bad])
    assert v.status == "fail" and v.reasons[0].frames == [7] and v.reasons[0].rule


def test_a_fail_with_a_loss_that_never_happened_gives_no_outcome_reasons(
    tmp_path: Path,
) -> None:
    """The set assumed a CS lost that was never sent: an outcome outside it
    says nothing, so only the wire's fail (a malformed segment here) and
    the unmet loss are given, not 'outcome-not-allowed'."""
    scn = _scenario(
        outcomes=[(3000, 1000, "completed", "completed")],
        impairments=[{"direction": "forward", "match": {"type": "CS"}}],
    )
    bad = Finding("a", 7, "dtnltp.expert.bad", "error", "malformed", "RFC 5326 §3.1 says no")
    res = _result(3000, 1, "completed", "completed")
    v = judge(LTP, scn, res, _log(tmp_path, []), [bad])
    assert v.status == "fail"
    codes = [r.code for r in v.reasons]
    assert "impairment-unmet" in codes and codes[0] != "impairment-unmet"
    assert not {"outcome-not-allowed", "unexpected-green-bytes-delivered"} & set(codes), codes
    # with the loss met, the same outcome is judged
    met = judge(LTP, scn.model_copy(update={"impairments": []}), res, _log(tmp_path, []), [bad])
    assert "outcome-not-allowed" in {r.code for r in met.reasons}


def test_corrupt_payload_fails(tmp_path: Path) -> None:
    log = _log(tmp_path, [_rs(1, 0), _rs(2, 0)])
    res = _result(3000, 1000, "cancelled", "cancelled")
    res.receiver.payload_ok = False
    v = judge(LTP, _scenario(), res, log, [])
    assert v.status == "fail" and v.reasons[0].code == "payload-corrupt"


def test_a_set_computed_for_another_channel_is_not_judged(tmp_path: Path) -> None:
    """An outcome outside a set computed for in-order channels, on a channel
    that now reorders: the model may allow it there, so no fail."""
    scn = _scenario()
    scn.expect.in_order = True
    scn.channel = scn.channel.model_validate(
        {"forward": {"link": {"reorder": {"probability": 0.5}}}}
    )
    log = _log(tmp_path, [_rs(1, 0), _rs(2, 0)])
    v = judge(LTP, scn, _result(3000, 1000, "completed", "completed"), log, [])
    assert v.status == "inconclusive"
    stale = next(r for r in v.reasons if r.code == "expectation-stale")
    assert "channels in order" in stale.message and "dtnconform expect" in stale.message
    scn.channel = scn.channel.model_validate({})  # back in order: judged, and it fails
    assert judge(LTP, scn, _result(3000, 1000, "completed", "completed"), log, []).status == "fail"


def test_more_random_losses_than_the_set_covers_are_not_judged(tmp_path: Path) -> None:
    """A lossy link, the set enumerated with up to 3 losses beyond the plan:
    a run whose channel lost 4 more (cause loss, not the rule) and ended
    outside the set says so, inconclusive; with 3, the same outcome fails."""
    scn = _scenario()
    scn.expect.in_order = True
    scn.expect.random_losses = 3
    scn.channel = scn.channel.model_validate({"return": {"link": {"loss": 0.3}}})
    random = []
    for i in range(3, 7):
        rec = _rs(i, None)
        rec.update(decision="drop", cause="loss")
        del rec["release_ns"]
        random.append(rec)
    seen = _result(3000, 1000, "completed", "completed")
    v = judge(LTP, scn, seen, _log(tmp_path, [_rs(1, 0), _rs(2, 0), *random]), [])
    assert v.status == "inconclusive"
    bound = next(r for r in v.reasons if r.code == "expectation-bound")
    assert "lost 4 segment(s) no rule named, the set allows for 3" in bound.message
    v = judge(LTP, scn, seen, _log(tmp_path, [_rs(1, 0), _rs(2, 0), *random[:3]]), [])
    assert v.status == "fail"


def test_what_a_planned_outage_swallowed_is_in_the_set(tmp_path: Path) -> None:
    """An outage rule's set plans the outage (Expectation.outages): the
    segments the dead link dropped (cause outage) are the model's, so a run
    that lost 4 of them is judged on its outcome (here one outside the set:
    fail); a set that did not plan an outage leaves the same run unjudged."""
    scn = _scenario()
    scn.expect.in_order = True
    swallowed = []
    for i in range(3, 7):
        rec = _rs(i, None)
        rec.update(decision="drop", cause="outage")
        del rec["release_ns"]
        swallowed.append(rec)
    seen = _result(3000, 1000, "completed", "completed")
    log = [_rs(1, 0), _rs(2, 0), *swallowed]
    scn.expect.outages = 1
    assert judge(LTP, scn, seen, _log(tmp_path, log), []).status == "fail"
    scn.expect.outages = 0
    v = judge(LTP, scn, seen, _log(tmp_path, log), [])
    assert v.status == "inconclusive"
    assert any(r.code == "expectation-bound" for r in v.reasons), v.reasons


def _red_lost_scenario() -> Scenario:
    """The red part lost, the green EOB delivered: the alternative of
    reading 5 adds the outcome 'receiver closed' (specs/ltp/readings.json)."""
    scn = _scenario(
        [(3000, 1000, "completed", "completed"), (0, 1000, "cancelled", "closed")],
        impairments=[{"direction": "forward", "match": {"kind": "red_data", "offset": 0}}],
    )
    scn.expect.outcomes[0].readings = ["", "5"]
    closed = next(o for o in scn.expect.outcomes if o.receiver_outcome == "closed")
    closed.readings = ["5"]
    return scn


def _fwd(i: int, rule: int | None) -> dict[str, object]:
    rec = _rs(i, rule)
    rec.update(dir="forward", fields={"kind": "red_data", "offset": 0})
    return rec


def test_an_outcome_of_an_alternative_reading_passes_under_it(tmp_path: Path) -> None:
    """The trace was explained only under reading 5, and the outcome is one
    that reading allows: pass, saying which reading the run follows."""
    from conformance.core.types import TraceCheck

    log = _log(tmp_path, [_fwd(1, 0)])
    res = _result(0, 1000, "cancelled", "closed")
    v = judge(
        LTP, _red_lost_scenario(), res, log, [], trace=TraceCheck(status="accepted", reading="5")
    )
    assert v.status == "pass", v.reasons
    assert v.readings == ["5"]
    assert v.reasons[0].code == "reading-5" and "§6.20" in v.reasons[0].rule


def test_an_outcome_of_another_reading_than_the_traces_fails(tmp_path: Path) -> None:
    """The trace fits the default reading only, yet the outcome is one only
    reading 5 reaches: no one reading explains the run, so it fails, and
    says so."""
    from conformance.core.types import TraceCheck

    log = _log(tmp_path, [_fwd(1, 0)])
    res = _result(0, 1000, "cancelled", "closed")
    v = judge(LTP, _red_lost_scenario(), res, log, [], trace=TraceCheck(status="accepted"))
    assert v.status == "fail"
    assert v.readings == []
    assert "the outcome needs reading 5" in v.reasons[0].message
    # without a validated trace, any reading may explain the outcome
    v = judge(LTP, _red_lost_scenario(), res, log, [])
    assert v.status == "pass", v.reasons
    assert v.readings == ["5"]


def test_an_inconclusive_run_follows_a_reading_only_if_its_trace_showed_it(
    tmp_path: Path,
) -> None:
    """The planned loss never happened (the channel log has no rule firing):
    inconclusive. Its trace was accepted under reading 5, tried first
    because the outcome is one only reading 5 allows; that says which
    reading the implementation follows only if the default was tried on
    the trace and rejected it (TraceCheck.default_rejected)."""
    from conformance.core.types import TraceCheck

    log = _log(tmp_path, [])
    res = _result(0, 1000, "cancelled", "closed")
    for rejected, follows in ((False, []), (True, ["5"])):
        trace = TraceCheck(status="accepted", reading="5", default_rejected=rejected)
        v = judge(LTP, _red_lost_scenario(), res, log, [], trace=trace)
        assert v.status == "inconclusive", v.reasons
        assert v.readings == follows


def test_a_byte_met_off_the_grid_leaves_the_set_undecided(tmp_path: Path) -> None:
    """A rule naming a byte of the grid's checkpoint [2000, 3000): by its
    first byte, 2000 (older scenarios), it met ION's [1999, 2998), plain
    data; by the red part's last byte, 2999 (generated now), ION's 2-byte
    checkpoint [2998, 3000). Either way the set computed for the grid's
    segment does not decide, so an outcome outside it is inconclusive, not
    a fail. The grid's own segment, met by either byte, is a fail as before."""
    res = _result(3000, 1000, "completed", "cancelled")
    for holds, offset, length, status in (
        (2000, 1999, 999, "inconclusive"),
        (2000, 2000, 1000, "fail"),
        (2999, 2998, 2, "inconclusive"),
        (2999, 2000, 1000, "fail"),
        (2000, 2000, 999, "inconclusive"),  # starts there, but is not the grid's
    ):
        scn = _scenario(
            [(3000, 1000, "completed", "completed")],
            impairments=[{"direction": "forward", "match": {"kind": "red_data", "holds": holds}}],
        )
        rec = _rs(1, 0)
        rec.update(dir="forward", fields={"kind": "red_data", "offset": offset, "length": length})
        v = judge(LTP, scn, res, _log(tmp_path, [rec]), [])
        assert v.status == status, (holds, offset, length, v.reasons)
        if status == "inconclusive":
            said = f"acted on a segment at {offset} ({length} bytes)"
            assert any(said in r.message and "[2000, 3000)" in r.message for r in v.reasons), (
                v.reasons
            )


def test_green_offsets_tell_apart_what_the_byte_count_cannot() -> None:
    """ION's miscolored run: 1,000 green bytes either way, but the model's
    end delivers the green segment at offset 0 and ION gave the EOB at
    2000, after its cancel. Where both sides know the offsets they must
    agree; where either does not, the counts decide as before."""
    from conformance.core.types import ExpectedOutcome
    from conformance.judge import finer_reasons

    def outcome(at: list[int] | None) -> ExpectedOutcome:
        return ExpectedOutcome(
            sender_outcome="cancelled",
            receiver_outcome="cancelled",
            delivered=LtpDelivery(green_bytes_delivered=1000, green_offsets=at),
        )

    end, seen = outcome([0]), outcome([2000])
    assert end.key() == seen.key() and not end.matches(seen)
    assert end.matches(outcome(None)) and outcome(None).matches(seen)
    assert end.matches(outcome([0, 0]))  # a duplicate is notified twice, one offset
    (r,) = finer_reasons(LTP, [end], seen)
    assert r.code == "unexpected-green-offsets" and "§7.6" in r.rule
    assert "observed green data at block offset 2000" in r.message
    assert "give green data at block offset 0" in r.message
    # the counters a table shows are unchanged: offsets are no part
    assert list(seen.parts()) == [
        "red_bytes_delivered", "green_bytes_delivered", "sender_outcome", "receiver_outcome",
    ]  # fmt: skip
    assert finer_reasons(LTP, [outcome([0]).model_copy(update={"sender_outcome": "completed"})],
                         seen) == []  # fmt: skip


def _crashed_receiver(in_order: bool | None, unjudged: str = "") -> tuple[Scenario, RunResult]:
    """The sender cancelled, the receiver open after its engine raised
    (its harness's "crashed"); the trace ends where the receiver is open."""
    scn = _scenario()
    scn.expect.in_order = in_order
    scn.expect.unjudged = unjudged
    res = _result(0, 1000, "cancelled", "open")
    res.receiver.crashed = "IndexError('x') at engine.py:9"
    return scn, res


def test_a_crashed_side_left_open_is_judged_final(tmp_path: Path) -> None:
    """Trace validation leaves a side open at the trace's end (its timers
    may yet expire), but a side whose engine raised takes no step again:
    where every outcome the model allows ends its session, a fail naming
    what it raised (a cfdp-rs 0.3.0 mutant, lost_segments.rs:131 + to -,
    panicked building a NAK and passed as "open" before)."""
    from conformance.core.types import TraceCheck

    log = _log(tmp_path, [_rs(1, 0), _rs(2, 0)])
    scn, res = _crashed_receiver(True)
    trace = TraceCheck(status="accepted", ends=[res.outcome()])
    v = judge(LTP, scn, res, log, [], trace=trace)
    assert v.status == "fail", v.reasons
    crash = next(r for r in v.reasons if r.code == "receiver-crashed")
    assert "IndexError" in crash.message and "receiver cancelled" in crash.message
    # the same run with the harness reporting no crash: open when it stopped
    res.receiver.crashed = ""
    assert judge(LTP, scn, res, log, [], trace=trace).status == "pass"


def test_a_crash_where_the_set_does_not_decide_is_not_judged(tmp_path: Path) -> None:
    """No outcome set computed by the model (a transfer past its bounds):
    whether the side may stay open for good is unknown, so inconclusive,
    saying so; with a set that leaves the side open, the crash passes."""
    from conformance.core.types import TraceCheck

    log = _log(tmp_path, [_rs(1, 0), _rs(2, 0)])
    scn, res = _crashed_receiver(True, unjudged="past the model's bounds")
    trace = TraceCheck(status="accepted", ends=[res.outcome()])
    v = judge(LTP, scn, res, log, [], trace=trace)
    assert v.status == "inconclusive", v.reasons
    assert (
        "past the model's bounds"
        in next(r for r in v.reasons if r.code == "crash-unjudged").message
    )
    open_allowed = _scenario([*ALLOWED, (0, 1000, "cancelled", "open")])
    open_allowed.expect.in_order = True
    v = judge(LTP, open_allowed, res, log, [], trace=trace)
    assert v.status == "pass", v.reasons


def _ds(i: int, number: int) -> dict[str, object]:
    return {"t_ns": i, "dir": "forward", "index": i, "len": 60, "kind": "udp", "proto": "ltp",
            "seg": i, "fields": {"type": "DS", "session_originator": 1, "session_number": number},
            "decision": "pass", "release_ns": i}  # fmt: skip


def test_the_session_told_to_the_user_must_be_the_one_on_the_wire(tmp_path: Path) -> None:
    """A sender's harness that reports the session ID its implementation
    told the user (told_session) is held to the session its segments carry
    (RFC 5326 §7.1; CFDP's Transaction.indication, 727.0-B-5 3.4.6): a
    mutant of cfdp-py that gives its Transaction.indication no ID was
    invisible on the wire."""
    log = _log(tmp_path, [_rs(1, 0), _rs(2, 0), _ds(3, 7), _ds(4, 7)])

    def told(ids: list[int] | None, tester: str | None = None) -> list[str]:
        res = _result(3000, 1000, "cancelled", "cancelled")
        res.sender.told_session = ids
        res.tester = tester  # type: ignore[assignment]
        v = judge(LTP, _scenario(), res, log, [])
        return [r.message for r in v.reasons if r.code == "session-told" and v.status == "fail"]

    assert told([1, 7]) == [] and told(None) == []
    wrong = told([1, 8])
    assert len(wrong) == 1 and "carry as (1, 7)" in wrong[0] and "told its user (1, 8)" in wrong[0]
    assert "no session ID" in told([])[0]
    # the tester's own sender is not an implementation with a user
    assert told([1, 8], tester="sender") == []
    # what is no session ID of the protocol is our harness's error, not a fail
    res = _result(3000, 1000, "cancelled", "cancelled")
    res.sender.told_session = [7]
    odd = judge(LTP, _scenario(), res, log, [])
    assert odd.status == "error" and odd.reasons[0].code == "told-session-unreadable"
    res = _result(3000, 1000, "cancelled", "cancelled")
    res.sender.told_session = []
    rule = next(
        r for r in judge(LTP, _scenario(), res, log, []).reasons if r.code == "session-told"
    )
    assert rule.rule is not None and "§7.1" in rule.rule
