"""A run's outcome judged from its validated trace (issue 29): the model's
state at the trace's end says what each endpoint must have reported, so a
run of any size is judged exactly, without an outcome set enumerated by
TLC. Real TLC on crafted captures (conformance.pcapkit)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance import tracecheck
from conformance.core.types import (
    EndpointResult,
    ExpectedOutcome,
    Outcome,
    RunResult,
    Scenario,
    SegmentCounts,
    SegmentRecord,
    TraceCheck,
    Verdict,
)
from conformance.judge import judge
from conformance.protocols.ltp import SPEC as LTP_SPEC
from conformance.protocols.ltp import LtpDelivery
from conformance.segments import records_from_captures
from conformance.tests.test_tracecheck import IP_A, PORT, SCENARIO, T0, Wire, data, nominal, seg

# The endpoints exit half a second after the session ends, as the harnesses
# linger: past the reaction window, so every arrival was processed by then
# (an arrival within the window of an exit may be left unread, and then its
# data is not owed).
LINGER = {"sender": 0.5, "receiver": 0.52}


def _outcome(red: int, green: int, tx: Outcome = "completed", rx: Outcome = "completed") -> Any:
    return ExpectedOutcome(
        delivered=LtpDelivery(red_bytes_delivered=red, green_bytes_delivered=green),
        sender_outcome=tx,
        receiver_outcome=rx,
    )


def _result(seen: ExpectedOutcome) -> RunResult:
    d = seen.delivered
    assert isinstance(d, LtpDelivery)
    return RunResult(
        scenario="crafted",
        protocol="ltp",
        sut="stand-in 1.0",
        started_at="2026-11-29T00:00:00+00:00",
        duration_s=1.0,
        sender=EndpointResult(role="sender", outcome=seen.sender_outcome),
        receiver=EndpointResult(role="receiver", outcome=seen.receiver_outcome, delivered=d),
        delivered_bytes=d.red_bytes_delivered + d.green_bytes_delivered,
        goodput_bps=None,
        segments=SegmentCounts(),
        dropped=SegmentCounts(),
    )


def _unjudged(params: dict[str, Any] | None = None) -> Scenario:
    """The crafted scenario with no outcome set to consult: a placeholder,
    as a campaign plans a transfer past the model's bounds."""
    raw = dict(SCENARIO, params=params or SCENARIO["params"])
    raw["expect"] = {
        "outcomes": [json.loads(_outcome(0, 0, "open", "open").model_dump_json())],
        "unjudged": "past the outcome sets' bounds (this test)",
    }
    return Scenario.model_validate(raw)


class LossWire(Wire):
    """A wire that remembers which copy it lost, as the channel's log does:
    a lost segment resent with the same bytes is otherwise ambiguous."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: dict[str, list[tuple[float, bool]]] = {"forward": [], "return": []}

    def send(self, t: float, direction: str, s: Any, *, lost: bool = False) -> None:
        super().send(t, direction, s, lost=lost)
        self.sent[direction].append((t, lost))

    def told(self, records: list[SegmentRecord]) -> list[SegmentRecord]:
        """``records`` with each one's loss as sent (records and sends of a
        direction are both in time order)."""
        flags = {d: iter(sorted(v)) for d, v in self.sent.items()}
        return [r.model_copy(update={"lost": next(flags[r.direction])[1]}) for r in records]


def _judged(
    w: Wire,
    tmp: Path,
    seen: ExpectedOutcome,
    scn: Scenario,
    exits: dict[str, float],
    readings: list[str] | None = None,
) -> tuple[TraceCheck, Any]:
    a, b = w.write(tmp)
    records = records_from_captures(LTP_SPEC, a, b, port=PORT, ip_a=IP_A)
    if isinstance(w, LossWire):
        records = w.told(records)
    tc = tracecheck.check(
        LTP_SPEC, scn, records, a, b, port=PORT, ip_a=IP_A,
        exits={k: T0 + v for k, v in exits.items()}, workdir=tmp / "trace", observed=seen,
        readings=readings,
    )  # fmt: skip
    log = tmp / "channel.jsonl"
    log.write_text("")
    return tc, judge(LTP_SPEC, scn, _result(seen), log, [], trace=tc)


def test_a_clean_run_is_judged_at_its_traces_end(tmp_path: Path) -> None:
    """No outcome set (a placeholder, 'unjudged'): the end of the trace
    says the whole block was delivered and both sides completed."""
    w = Wire()
    nominal(w)
    whole = _outcome(2000, 1000)
    tc, v = _judged(w, tmp_path, whole, _unjudged(), LINGER)
    assert tc.status == "accepted", tc.message
    assert [e.key() for e in tc.ends] == [whole.key()]
    assert v.status == "pass", v.reasons
    assert not any(r.code == "outcome-unjudged" for r in v.reasons)
    # the ends survive verdict.json whole (the protocol's delivery counters)
    again = Verdict.model_validate_json(v.model_dump_json())
    assert again.trace is not None and [e.key() for e in again.trace.ends] == [whole.key()]
    assert '"green_bytes_delivered":1000' in v.model_dump_json()


def test_a_receiver_that_drops_green_data_on_a_clean_link_fails(tmp_path: Path) -> None:
    """The green end-of-block segment reached the receiver (the wire shows
    it arrive), and the stand-in reports no green data delivered: the model
    holds 1000 green bytes received there (RFC 5326 §7.2), so the run fails,
    naming the part and the value the model holds."""
    w = Wire()
    nominal(w)
    dropped = _outcome(2000, 0)
    tc, v = _judged(w, tmp_path, dropped, _unjudged(), LINGER)
    assert tc.status == "accepted", tc.message
    assert [e.key() for e in tc.ends] == [_outcome(2000, 1000).key()]
    assert v.status == "fail"
    head = v.reasons[0]
    assert head.code == "outcome-not-at-end"
    assert "green 1000 B" in head.message and "green 0 B" in head.message
    part = next(r for r in v.reasons if r.code == "unexpected-green-bytes-delivered")
    assert "observed 0" in part.message and "allows 1000" in part.message


def test_a_receiver_that_never_closes_fails(tmp_path: Path) -> None:
    """A stand-in receiver that delivers everything but never closes its
    session, so its harness reports no end (``open``), on a clean link: the
    EOB and the RA for its only report reached it, so RFC 5326 §6.14 and
    §8.2 (WAIT_RP_REC to CLOSED) close the model's receiver at once. The run
    fails, naming the receiver's end the model holds."""
    w = Wire()
    nominal(w)
    never = _outcome(2000, 1000, rx="open")
    tc, v = _judged(w, tmp_path, never, _unjudged(), LINGER)
    assert tc.status == "accepted", tc.message
    assert [e.key() for e in tc.ends] == [_outcome(2000, 1000).key()]
    assert v.status == "fail"
    assert v.reasons[0].code == "outcome-not-at-end"
    part = next(r for r in v.reasons if r.code == "unexpected-receiver-outcome")
    assert "observed open" in part.message and "allows completed" in part.message


def test_a_receiver_whose_green_eob_was_lost_may_stay_open(tmp_path: Path) -> None:
    """The green EOB lost: the red part is delivered and acknowledged, but
    8.2 keeps a receiver that never saw the EOB out of WAIT_RP_REC, so the
    model may leave it open (and §6.14 may close it at the RA). A receiver
    still open at the end, reported as such, passes; it is never
    ``completed`` for a session that did not close."""
    w = LossWire()
    w.send(0.000, "forward", data("RD", 0))
    w.send(0.001, "forward", data("RD-CP-EORP", 1000, checkpoint_serial=40, report_serial=0))
    w.send(0.002, "forward", data("GD-EOB", 2000), lost=True)
    w.send(0.004, "return", seg("RS", report_serial=90, checkpoint_serial=40, upper_bound=2000,
                                lower_bound=0, claims=[(0, 2000)]))  # fmt: skip
    w.send(0.007, "forward", seg("RA", report_serial=90))
    still_open = _outcome(2000, 0, rx="open")
    tc, v = _judged(w, tmp_path, still_open, _unjudged(), LINGER)
    assert tc.status == "accepted", tc.message
    assert still_open.key() in [e.key() for e in tc.ends]
    assert v.status == "pass", v.reasons
    # and the verdict says the receiver never reported an end
    assert [r.code for r in v.reasons] == ["endpoint-open"], v.reasons
    assert "receiver reported no end" in v.reasons[0].message


def test_a_block_of_many_segments_with_losses_is_judged(tmp_path: Path) -> None:
    """16 red and 6 green segments, two red segments lost and resent after
    the report that claims around them: past what TLC enumerates outcome
    sets for, judged all the same; the green segment the channel lost is
    not delivered, and the run that says so passes."""
    n_red, n_green, lost = 16, 6, {5, 11}
    w = LossWire()
    t = 0.0
    for i in range(n_red):
        t += 0.001
        kind = "RD-CP-EORP" if i == n_red - 1 else "RD"
        extra = {"checkpoint_serial": 40, "report_serial": 0} if i == n_red - 1 else {}
        w.send(t, "forward", data(kind, 1000 * i, **extra), lost=i in lost)
    for j in range(n_green):
        t += 0.001
        kind = "GD-EOB" if j == n_green - 1 else "GD"
        w.send(t, "forward", data(kind, 1000 * (n_red + j)), lost=j == 2)
    red = 1000 * n_red
    claims = [(0, 5000), (6000, 5000), (12000, 4000)]
    w.send(t + 0.003, "return", seg("RS", report_serial=90, checkpoint_serial=40,
                                    upper_bound=red, lower_bound=0, claims=claims))  # fmt: skip
    w.send(t + 0.006, "forward", seg("RA", report_serial=90))
    w.send(t + 0.007, "forward", data("RD", 5000))
    w.send(t + 0.008, "forward", data("RD-CP", 11000, checkpoint_serial=41, report_serial=90))
    w.send(t + 0.011, "return", seg("RS", report_serial=91, checkpoint_serial=41,
                                    upper_bound=red, lower_bound=0, claims=[(0, red)]))  # fmt: skip
    w.send(t + 0.014, "forward", seg("RA", report_serial=91))
    params = {"block_len": red + 1000 * n_green, "red_len": red, "segment_size": 1000,
              "retransmission_limit": 1, "max_claims_per_rs": 20}  # fmt: skip
    seen = _outcome(red, 1000 * (n_green - 1))
    exits = {k: t + v for k, v in LINGER.items()}
    scn = _unjudged(params)
    tc, v = _judged(w, tmp_path, seen, scn, exits)
    assert tc.status == "accepted", tc.message
    assert [e.key() for e in tc.ends] == [seen.key()]
    assert v.status == "pass", v.reasons
    # a harness that reports the lost green segment delivered fails
    claimed = _outcome(red, 1000 * n_green)
    v = judge(LTP_SPEC, scn, _result(claimed), tmp_path / "channel.jsonl", [], trace=tc)
    assert v.status == "fail" and v.reasons[0].code == "outcome-not-at-end"


def test_a_sender_that_resends_part_of_a_reports_gaps_is_rejected(tmp_path: Path) -> None:
    """The report claims red 0-1000 and 3000-4000: segments 1000 and 2000
    are missing, and RFC 5326 §6.13 queues both, the last as a new
    checkpoint. A stand-in sender resends 1000 and nothing more, then exits:
    the model's sender could hold the rest indefinitely, so without a
    deadline the trace was accepted. The report obliged it to send the
    checkpoint at 2000 within its reaction window; the trace is rejected,
    naming the report's arrival and what was owed."""
    w = LossWire()
    for i in range(4):
        kind = "RD-CP-EORP" if i == 3 else "RD"
        extra = {"checkpoint_serial": 40, "report_serial": 0} if i == 3 else {}
        w.send(0.001 * i, "forward", data(kind, 1000 * i, **extra), lost=i in (1, 2))
    w.send(0.004, "forward", data("GD-EOB", 4000))
    w.send(0.007, "return", seg("RS", report_serial=90, checkpoint_serial=40, upper_bound=4000,
                                lower_bound=0, claims=[(0, 1000), (3000, 1000)]))  # fmt: skip
    w.send(0.010, "forward", seg("RA", report_serial=90))
    w.send(0.011, "forward", data("RD", 1000))
    params = {"block_len": 5000, "red_len": 4000, "segment_size": 1000,
              "retransmission_limit": 1, "max_claims_per_rs": 20}  # fmt: skip
    seen = _outcome(0, 1000, tx="open", rx="open")
    # the default reading only: the readings do not bear on retransmission,
    # and trying each one on a rejected trace costs a minute
    tc, _v = _judged(
        w, tmp_path, seen, _unjudged(params), {"sender": 0.6, "receiver": 0.62}, readings=[""]
    )
    assert tc.status == "rejected", tc.message
    # due a window after the report's arrival (9 ms), or after the last unit
    # of the same request it sent (the segment at 1000, 11 ms): 261 ms
    assert "obliged it to send the" in tc.message and "by 261.0 ms" in tc.message, tc.message
    assert "arrive RS" in tc.message, tc.message
