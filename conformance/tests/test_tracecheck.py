"""Trace validation (conformance/tracecheck.py, specs/trace/TraceCore.tla,
specs/ltp/TraceLTP.tla) on crafted captures: both sides' pcaps are written
with our Scapy layer, decoded (conformance.segments) and checked by TLC, as
a live run's are. Each deviation is one a real
implementation could make; each must be rejected with the RFC rule behind
it, and the same session without the deviation must be accepted."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from scapy.layers.inet import IP

from conformance import pcapkit, tracecheck
from conformance.core.contract import Unrepresentable
from conformance.core.types import Scenario, SegmentRecord, TraceCheck
from conformance.protocols.ltp import SPEC as LTP_SPEC
from conformance.protocols.ltp import LtpBlock
from conformance.segments import records_from_captures
from conformance.tests.stored import stored_run
from dissectors.ltp.layer import LTP

IP_A, IP_B, PORT = pcapkit.IP_A, pcapkit.IP_B, 1113
DELAY = 0.002  # one-way, seconds
T0 = 1_800_000_000.0

SCENARIO: dict[str, Any] = {
    "schema": "dtnconform/scenario/1",
    "name": "crafted",
    "protocol": "ltp",
    "params": {"block_len": 3000, "red_len": 2000, "segment_size": 1000,
               "retransmission_limit": 1},
    "impairments": [],
    "timers": {"retransmission_ms": 1000.0},
    "expect": {"outcomes": [{"sender_outcome": "completed", "receiver_outcome": "completed",
                             "delivered": {"protocol": "ltp", "red_bytes_delivered": 2000,
                                           "green_bytes_delivered": 1000}}]},
}  # fmt: skip


def seg(kind: str, **fields: Any) -> LTP:
    return LTP(type=kind, session_originator=1, session_number=7, **fields)


def data(kind: str, off: int, **fields: Any) -> LTP:
    return seg(kind, client_service_id=1, offset=off, data=b"x" * 1000, **fields)


class Wire(pcapkit.Wire):
    def __init__(self) -> None:
        super().__init__(port=PORT, t0=T0, delay=DELAY)

    def check(
        self,
        tmp: Path,
        *,
        exits: Mapping[str, float | None] | None = None,
        readings: list[str] | None = None,
        scenario: dict[str, Any] | None = None,
        processing_ms: Mapping[str, float | None] | None = None,
        slowdown: float = 1.0,
    ) -> TraceCheck:
        a, b = self.write(tmp)
        records = records_from_captures(LTP_SPEC, a, b, port=PORT, ip_a=IP_A)
        scn = Scenario.model_validate(scenario or SCENARIO)
        ends = {k: (T0 + v if v is not None else None) for k, v in (exits or {}).items()}
        return tracecheck.check(
            LTP_SPEC, scn, records, a, b, port=PORT, ip_a=IP_A, exits=ends,
            workdir=tmp / "trace", out=tmp / "trace.ndjson", readings=readings,
            processing_ms=processing_ms, slowdown=slowdown,
        )  # fmt: skip

    def send(self, t: float, direction: str, s: Any, *, lost: bool = False) -> None:
        super().send(t, direction, bytes(s), lost=lost)


def block_sent(w: Wire, claims: list[tuple[int, int]] | None = None) -> LTP:
    """Red 0-2000 (the checkpoint at 1000) and green 2000-3000 sent and
    delivered; returns the RS that answers the checkpoint."""
    w.send(0.000, "forward", data("RD", 0))
    w.send(0.001, "forward", data("RD-CP-EORP", 1000, checkpoint_serial=40, report_serial=0))
    w.send(0.002, "forward", data("GD-EOB", 2000))
    return seg("RS", report_serial=90, checkpoint_serial=40, upper_bound=2000, lower_bound=0,
               claims=claims or [(0, 2000)])  # fmt: skip


def nominal(w: Wire, *, claims: list[tuple[int, int]] | None = None) -> None:
    """The block, its RS, the RA."""
    w.send(0.004, "return", block_sent(w, claims))
    w.send(0.007, "forward", seg("RA", report_serial=90))


def test_nominal_session_is_accepted(tmp_path: Path) -> None:
    w = Wire()
    nominal(w)
    tc = w.check(tmp_path, exits={"sender": 0.010, "receiver": 0.012})
    assert tc.status == "accepted", tc.message
    lines = (tmp_path / "trace.ndjson").read_text().splitlines()
    # 5 sends, 5 arrivals, 2 exits, the end
    assert tc.lines == len(lines) == 13


def test_a_relative_workdir_is_checked_and_the_trace_module_is_compact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TLC runs in a scratch copy of the spec's folder: a workdir given
    relative to the caller's folder (``dtnconform trace runs/X``) still
    resolves. The trace module names each unit and each kind of line once,
    and a line is three numbers."""
    w = Wire()
    nominal(w)
    a, b = w.write(tmp_path)
    records = records_from_captures(LTP_SPEC, a, b, port=PORT, ip_a=IP_A)
    monkeypatch.chdir(tmp_path)
    tc = tracecheck.check(
        LTP_SPEC, Scenario.model_validate(SCENARIO), records, a, b, port=PORT, ip_a=IP_A,
        exits={"sender": T0 + 0.010, "receiver": T0 + 0.012}, workdir=Path("trace"),
    )  # fmt: skip
    assert tc.status == "accepted", tc.message
    module = (tmp_path / "trace" / "session-1" / "TraceData_eager.tla").read_text()
    for name in ("TraceKind", "TraceUnit", "TraceTime"):
        row = re.search(rf"^{name} == <<([\d, ]*)>>$", module, re.M)
        assert row is not None and len(row[1].split(", ")) == tc.lines
    units = module[module.index("Units ==") : module.index("LineKinds ==")]
    # RD, RD-CP-EORP, GD-EOB, RS, RA and the blank unit of exit/end lines, each once
    assert units.count("U1(<<") == 6


def test_a_long_block_is_written_as_a_run_and_checked_segment_by_segment(tmp_path: Path) -> None:
    """A 12-segment red block: the trace module writes its data segments as
    one run (a function of i, not a dozen records), from which TLC takes
    each line's segment. The block sent whole and claimed is accepted; with
    RD 5000 lost and the RS claiming it all, the RS is rejected (§6.11):
    the run's segments are the ones the wire carried, offset by offset."""
    n = 12
    scn = {**SCENARIO, "params": {**SCENARIO["params"], "block_len": n * 1000,
                                  "red_len": n * 1000},
           "expect": {"outcomes": [{**SCENARIO["expect"]["outcomes"][0], "delivered": {
               "protocol": "ltp", "red_bytes_delivered": n * 1000,
               "green_bytes_delivered": 0}}]}}  # fmt: skip
    for lost in (None, 5000):
        w = Wire()
        for i in range(n - 1):
            w.send(i * 0.0001, "forward", data("RD", i * 1000), lost=i * 1000 == lost)
        last = data("RD-CP-EORP-EOB", (n - 1) * 1000, checkpoint_serial=40, report_serial=0)
        w.send((n - 1) * 0.0001, "forward", last)
        rs = seg("RS", report_serial=90, checkpoint_serial=40, upper_bound=n * 1000,
                 lower_bound=0, claims=[(0, n * 1000)])  # fmt: skip
        w.send(0.005, "return", rs)
        w.send(0.008, "forward", seg("RA", report_serial=90))
        tmp = tmp_path / str(lost)
        tmp.mkdir()
        tc = w.check(tmp, exits={"sender": 0.011, "receiver": 0.013}, scenario=scn)  # fmt: skip
        module = (tmp / "trace" / "session-1" / "TraceData_eager.tla").read_text()
        assert f'[i \\in 1..{n - 1} |-> U1(<<"RD", i - 1,' in module
        if lost is None:
            assert tc.status == "accepted", tc.message
        else:
            assert tc.status == "rejected" and tc.side == "b", tc.message
            assert "§6.11" in tc.rule and "ReceiverRxCheckpoint" in tc.actions


def one_claim_per_rs(n: int) -> dict[str, Any]:
    """SCENARIO with a red block of ``n`` 1000-byte segments, whose receiver
    puts one reception claim in each RS."""
    return {**SCENARIO, "params": {"block_len": n * 1000, "red_len": n * 1000,
                                   "segment_size": 1000, "retransmission_limit": 1,
                                   "max_claims_per_rs": 1},
            "expect": {"outcomes": [{**SCENARIO["expect"]["outcomes"][0], "delivered": {
                "protocol": "ltp", "red_bytes_delivered": n * 1000,
                "green_bytes_delivered": 0}}]}}  # fmt: skip


def split_report(w: Wire, n: int, *, lost_rs: int, resent: bool = True) -> None:
    """A red block of ``n`` 1000-byte segments, RD 5000 lost, a receiver
    whose RSs carry one claim each: the report answering the checkpoint is
    RS 90 [0, 5000) and RS 91 [5000, n000), the second with the gap. RS
    ``lost_rs`` is lost; the receiver's report timer sends it again (or,
    ``resent`` False, never). Each RS that arrives gets its RA; RS 91 gets
    RD 5000 again as a checkpoint, answered by the secondary report RS 92
    [5000, 6000) (§6.11's SHOULD bounds)."""
    ub = n * 1000
    for i in range(n - 1):
        w.send(i * 0.0001, "forward", data("RD", i * 1000), lost=i == 5)
    w.send((n - 1) * 0.0001, "forward",
           data("RD-CP-EORP-EOB", ub - 1000, checkpoint_serial=40, report_serial=0))  # fmt: skip
    rss = {90: (0, 5000, [(0, 5000)]), 91: (5000, ub, [(1000, ub - 6000)])}
    for k, (r, (lb, hi, claims)) in enumerate(rss.items()):
        rs = seg("RS", report_serial=r, checkpoint_serial=40, lower_bound=lb, upper_bound=hi,
                 claims=claims)  # fmt: skip
        w.send(0.004 + k * 0.0001, "return", rs, lost=r == lost_rs)
        if r == lost_rs and resent:
            w.send(0.500, "return", rs)  # the report timer (§6.8)
    t91 = 0.004 + 0.0001 + (0.496 if lost_rs == 91 else 0)
    t90 = 0.004 + (0.496 if lost_rs == 90 else 0)
    if not resent and lost_rs == 91:
        return
    if resent or lost_rs != 90:
        w.send(t90 + DELAY + 0.0005, "forward", seg("RA", report_serial=90))
    w.send(t91 + DELAY + 0.0005, "forward", seg("RA", report_serial=91))
    w.send(t91 + DELAY + 0.0006, "forward",
           data("RD-CP", 5000, checkpoint_serial=41, report_serial=91))  # fmt: skip
    t = t91 + 2 * DELAY + 0.0010
    w.send(t, "return", seg("RS", report_serial=92, checkpoint_serial=41, lower_bound=5000,
                            upper_bound=6000, claims=[(0, 1000)]))  # fmt: skip
    w.send(t + DELAY + 0.0005, "forward", seg("RA", report_serial=92))


def test_a_report_split_over_a_long_red_part_with_one_rs_lost_is_checked(tmp_path: Path) -> None:
    """Several RSs per checkpoint, one of them lost (nasa-jpl/ION-DTN issue
    #14 reports sessions that never end this way), on a block of 16 red
    segments: one RS of the report leaves gaps, so the model follows it at
    any size. Losing either RS, the receiver sends it again by its report
    timer (§6.8), and the model's end state says both sides completed.
    Where the receiver never sends RS 90 again, the sender never has the
    whole red part claimed (§6.12): both must still be open, and a harness
    that reported either one completed would be judged fail."""
    n = 16
    scn = one_claim_per_rs(n)
    for lost_rs, resent in ((90, True), (91, True), (90, False)):
        w = Wire()
        split_report(w, n, lost_rs=lost_rs, resent=resent)
        tmp = tmp_path / f"{lost_rs}-{resent}"
        tmp.mkdir()
        # both exit well past the report timer (SCENARIO's 1000 ms)
        tc = w.check(tmp, exits={"sender": 3.0, "receiver": 3.0}, scenario=scn)
        assert tc.status == "accepted", (lost_rs, tc.message)
        (end,) = tc.ends
        assert end.delivered.model_dump()["red_bytes_delivered"] == n * 1000
        # the lost RS never sent again: its claims never reach the sender
        want = "completed" if resent else "open"
        assert (end.sender_outcome, end.receiver_outcome) == (want, want), end


def test_a_report_with_two_rss_that_leave_gaps_is_judged_up_to_the_second(tmp_path: Path) -> None:
    """Two losses in a red part of five segments and one claim per RS: two
    RSs of the report leave gaps, which the model's one-at-a-time sender
    cannot follow once both reach it. The trace up to the second one's
    arrival is validated: accepted, the run is unchecked and says why; with
    a deviation before it (the first RS claims red 0, which was lost), it
    is rejected there (§6.11)."""
    n = 5
    scn = one_claim_per_rs(n)
    for honest in (True, False):
        w = Wire()
        lost = (1, 3) if honest else (0, 1, 3)
        for i in range(n - 1):
            w.send(i * 0.0001, "forward", data("RD", i * 1000), lost=i in lost)
        last = data("RD-CP-EORP-EOB", n * 1000 - 1000, checkpoint_serial=40, report_serial=0)
        w.send((n - 1) * 0.0001, "forward", last)
        rss = [(0, 1000, [(0, 1000)]), (1000, 3000, [(1000, 1000)]), (3000, 5000, [(1000, 1000)])]
        for k, (lb, ub, claims) in enumerate(rss):
            rs = seg("RS", report_serial=90 + k, checkpoint_serial=40, lower_bound=lb,
                     upper_bound=ub, claims=claims)  # fmt: skip
            w.send(0.004 + k * 0.0001, "return", rs)
        tmp = tmp_path / str(honest)
        tmp.mkdir()
        tc = w.check(tmp, exits={"sender": 0.6, "receiver": 0.6}, scenario=scn, readings=[""])
        if honest:
            assert tc.status == "unchecked", tc.message
            assert "2 RSs answering" in tc.message and "[1, 3), [3, 5)" in tc.message
            assert "the trace up to there is accepted" in tc.message
            assert tc.ends == []
        else:
            assert tc.status == "rejected", tc.message
            assert "§6.11" in tc.rule and "2 RSs answering" in tc.message, tc


def test_claim_for_lost_data_is_rejected(tmp_path: Path) -> None:
    """RD 0 is lost, yet the RS claims it: RFC 5326 §6.11 (claims report what
    arrived), held against ReceiverRxCheckpoint."""
    w = Wire()
    w.send(0.000, "forward", data("RD", 0), lost=True)
    w.send(0.001, "forward", data("RD-CP-EORP", 1000, checkpoint_serial=40, report_serial=0))
    w.send(0.002, "forward", data("GD-EOB", 2000))
    rs = seg("RS", report_serial=90, checkpoint_serial=40, upper_bound=2000, lower_bound=0,
             claims=[(0, 2000)])  # fmt: skip
    w.send(0.004, "return", rs)
    tc = w.check(tmp_path, exits={"sender": 0.5, "receiver": 0.5})
    assert tc.status == "rejected", tc.message
    assert tc.side == "b" and tc.frame is not None
    assert "ReceiverRxCheckpoint" in tc.actions
    assert "§6.11" in tc.rule


def sender_cancels(w: Wire) -> None:
    """Both transmissions of the checkpoint lost (limit 1), so the sender
    cancels: a CS (RLEXC) at 2.001 s that reaches the receiver."""
    w.send(0.000, "forward", data("RD", 0))
    for t in (0.001, 1.001):
        cp = data("RD-CP-EORP", 1000, checkpoint_serial=40, report_serial=0)
        w.send(t, "forward", cp, lost=True)
        if t == 0.001:
            w.send(0.002, "forward", data("GD-EOB", 2000))
    w.send(2.001, "forward", seg("CS", reason=2))


def test_unanswered_cancel_is_rejected(tmp_path: Path) -> None:
    """The sender cancels; the receiver ignores the first CS and answers only
    the retransmitted one: RFC 5326 §6.17 (a CAS for every CS)."""
    w = Wire()
    sender_cancels(w)
    w.send(3.001, "forward", seg("CS", reason=2))
    w.send(3.0035, "return", seg("CAS"))
    tc = w.check(tmp_path, exits={"sender": 3.01, "receiver": 3.02})
    assert tc.status == "rejected", tc.message
    assert "ReceiverRxCancel" in tc.actions
    assert "§6.17" in tc.rule
    assert "CS" in tc.message


def test_answered_cancel_is_accepted(tmp_path: Path) -> None:
    """The same session with the first CS answered at once."""
    w = Wire()
    sender_cancels(w)
    w.send(2.0035, "return", seg("CAS"))
    tc = w.check(tmp_path, exits={"sender": 2.01, "receiver": 2.02})
    assert tc.status == "accepted", tc.message


def report_unacknowledged(w: Wire, *, resent: bool) -> None:
    """The block, its RS, the RA lost; the receiver's RS timer expires (1 s):
    the RS queued again (limit 1) and its RA lost again, or not."""
    rs = block_sent(w)
    w.send(0.004, "return", rs)
    w.send(0.007, "forward", seg("RA", report_serial=90), lost=True)
    if resent:
        w.send(1.004, "return", rs)
        w.send(1.007, "forward", seg("RA", report_serial=90), lost=True)
    w.send(2.004 if resent else 1.004, "return", seg("CR", reason=2))
    w.send(2.007 if resent else 1.007, "forward", seg("CAR"))


def test_a_cancel_after_the_rs_was_queued_again_is_accepted(tmp_path: Path) -> None:
    """The same session with the RS sent again before the cancel."""
    w = Wire()
    report_unacknowledged(w, resent=True)
    tc = w.check(tmp_path, exits={"sender": 2.01, "receiver": 2.02})
    assert tc.status == "accepted", tc.message


def test_a_cancel_at_the_first_rs_timer_expiry_is_rejected(tmp_path: Path) -> None:
    """The RS sent once, its RA lost, and the receiver cancels (RLEXC) at the
    first expiry of its timer: below the limit (1) §6.8 queues a new copy
    instead. The model may not let the timer expire before its copy left
    (§6.3: the timer starts at the de-queuing), so it cannot queue a copy
    that the cancel then purges: a licklider-core mutant
    (src/engine.rs:1258:33) once passed so."""
    w = Wire()
    report_unacknowledged(w, resent=False)
    tc = w.check(tmp_path, exits={"sender": 1.01, "receiver": 1.02})
    assert tc.status == "rejected", tc.message
    assert "CR" in tc.message, tc.message


def _stored_run(
    name: str, tmp_path: Path
) -> tuple[Path, Scenario, list[SegmentRecord], TraceCheck]:
    """A live LTP run stored in data/NAME, validated again."""
    return stored_run(LTP_SPEC, name, tmp_path)


def test_a_retransmission_cut_otherwise_is_validated(tmp_path: Path) -> None:
    """A live run of ION-DTN 4.1.3 at both ends (data/ltp-ion-recut-checkpoint-lost,
    2026-11-30; the generated ltp-checkpoint-lost, its limit adapted to 3):
    the segment holding byte 2000 is lost, which in ION's segmentation is
    [1999, 2998), not the checkpoint. ION sends that gap again as [1999,
    2997) and a 1-byte checkpoint at 2997: the first copy spans two of the
    model's segments, and is read as both, sent and lost together. Until
    then such a trace was left unchecked."""
    _, _, segments, tc = _stored_run("ltp-ion-recut-checkpoint-lost", tmp_path)
    spans = [(s.fields["offset"], s.fields["length"]) for s in segments if "offset" in s.fields]
    assert (1999, 999) in spans and (1999, 998) in spans and (2997, 1) in spans
    assert tc.status == "accepted", tc.message


def test_a_cancel_after_a_lost_first_copy_is_blamed_on_its_answer(tmp_path: Path) -> None:
    """A live run (licklider 0.1.1 sending, the tester receiving with an
    unknown client service, data/ltp-refused-first-cr-lost, recorded again on
    2026-11-30 once the tester refused each data segment with a CR of its
    own, §6's preamble): the tester's first CR (UNREACH, §8.2) is lost, the
    second reaches licklider, which never answers it (its known §6.17
    deviation; the third and the timer's copy get their CARs, which the
    channel drops). The model's channel merges identical copies, so some of
    its explanations have a CR still to be put back; the diagnosis names the
    model's answer to the CR (§6.17) all the same, not what else the sender
    could do (SenderCancelSession, §6.7)."""
    _, _, _, tc = _stored_run("ltp-refused-first-cr-lost", tmp_path)
    assert tc.status == "rejected", tc.message
    assert "had to send a CAR" in tc.message or "had not answered the CR" in tc.message
    assert set(tc.actions) <= {"SenderRxCancel", "SenderRxRedundantCancel"}, tc.actions
    assert tc.actions and "§6.17" in tc.rule


@pytest.mark.parametrize("after", [0.600, 0.950])
def test_late_report(tmp_path: Path, after: float) -> None:
    """The RS leaves ``after`` seconds after the checkpoint arrived, beyond the
    reaction window (250 ms with 1000 ms timers), and nothing but that
    checkpoint could cause it. 600 ms late, before the sender's timer could
    have sent the checkpoint again, it is only slow: accepted as late (the
    model is untimed; a loaded machine does this). 950 ms late, past 0.9 of
    the timer (conformance.timers.LATE_SHARE), it is rejected: a report that late
    cannot be told from one answering a retransmission."""
    w = Wire()
    w.send(0.003 + after, "return", block_sent(w))
    w.send(0.006 + after, "forward", seg("RA", report_serial=90))
    tc = w.check(tmp_path, exits={"sender": 1.1, "receiver": 1.1})
    assert tc.window_ms == 250
    if after < 0.9:
        assert tc.status == "accepted" and tc.late, tc.message
        assert "had to send a RS by 253.0 ms" in tc.message
    else:
        assert tc.status == "rejected", tc.message
        assert not tc.late and "ReceiverRxCheckpoint" in tc.actions


def test_what_the_model_cannot_express_is_unchecked(tmp_path: Path) -> None:
    """A green segment inside another ([2500, 2510) within [2000, 3000)): the
    model's segments cannot be cut so that each is one of them; the check
    says so, never fails."""
    w = Wire()
    nominal(w)
    w.send(0.003, "forward", seg("GD", client_service_id=1, offset=2500, data=b"y" * 10))
    tc = w.check(tmp_path)
    assert tc.status == "unchecked"
    assert "spans or splits them" in tc.message and "2500, 2510" in tc.message


def test_a_duplicated_arrival_is_unchecked(tmp_path: Path) -> None:
    """The RS reaches the sender twice though it was sent once: the model's
    channel does not duplicate, so the trace is not judged."""
    w = Wire()
    nominal(w)
    rs_arrival = next(f for f in w.a if f[IP].src == IP_B)
    again = rs_arrival.copy()
    again.time = rs_arrival.time + 0.0001
    w.a.append(again)
    tc = w.check(tmp_path)
    assert tc.status == "unchecked"
    assert "match no sent segment" in tc.message


def test_a_copy_the_channel_made_is_checked_as_a_second_arrival(tmp_path: Path) -> None:
    """The same duplicated RS, with the channel's log saying it made the
    copy (copies 2): both arrivals are trace lines, and the model takes the
    second as a redundant report that the sender acknowledges again (RFC
    5326 §6.13), so a second RA is due: with it the trace is accepted,
    without it rejected at the end, the RA owed."""
    for second_ra in (True, False):
        w = Wire()
        w.send(0.004, "return", block_sent(w))
        rs_arrival = next(f for f in w.a if f[IP].src == IP_B)
        again = rs_arrival.copy()
        again.time = rs_arrival.time + 0.0001
        w.a.append(again)
        w.send(0.007, "forward", seg("RA", report_serial=90))
        if second_ra:
            w.send(0.0072, "forward", seg("RA", report_serial=90))
        out = tmp_path / str(second_ra)
        out.mkdir()
        a, b = w.write(out)
        records = records_from_captures(LTP_SPEC, a, b, port=PORT, ip_a=IP_A)
        for r in records:
            if r.direction == "return":
                r.copies = 2  # as the channel's log would say
        tc = tracecheck.check(
            LTP_SPEC, Scenario.model_validate(SCENARIO), records, a, b, port=PORT, ip_a=IP_A,
            exits={}, workdir=out / "trace", out=out / "trace.ndjson",
        )  # fmt: skip
        arrivals = [x for x in (out / "trace.ndjson").read_text().splitlines() if '"RS"' in x]
        assert sum('"arrive"' in x for x in arrivals) == 2
        assert tc.status == ("accepted" if second_ra else "rejected"), tc.message


@pytest.mark.parametrize("reason", [0, 1])
def test_cancel_reasons_outside_the_model_are_unchecked(tmp_path: Path, reason: int) -> None:
    w = Wire()
    w.send(0.000, "forward", data("RD", 0))
    w.send(0.001, "forward", seg("CS", reason=reason))
    w.send(0.0035, "return", seg("CAS"))
    tc = w.check(tmp_path)
    assert tc.status == "unchecked"
    assert "RLEXC" in tc.message


def test_a_truncated_capture_is_unchecked_with_the_frame(tmp_path: Path) -> None:
    w = Wire()
    nominal(w)
    a, b = w.write(tmp_path)
    records = records_from_captures(LTP_SPEC, a, b, port=PORT, ip_a=IP_A)
    with a.open("r+b") as fh:  # cut the last frame of A's capture short
        fh.truncate(a.stat().st_size - 10)
    tc = tracecheck.check(
        LTP_SPEC, Scenario.model_validate(SCENARIO), records, a, b, port=PORT, ip_a=IP_A, exits={},
        workdir=tmp_path / "trace",
    )  # fmt: skip
    assert tc.status == "unchecked"
    assert "a.pcap is truncated" in tc.message


def test_sessions_are_validated_one_by_one(tmp_path: Path) -> None:
    """Two sessions in one capture: each is its own trace; a deviation in the
    second is found and named with its session."""
    w = Wire()
    nominal(w)
    # session 8: its RS claims data that never arrived
    other: dict[str, Any] = {"session_originator": 1, "session_number": 8}
    w.send(0.010, "forward", LTP(type="RD", client_service_id=1, offset=0, data=b"x" * 1000,
                                 **other), lost=True)  # fmt: skip
    w.send(0.011, "forward", LTP(type="RD-CP-EORP", client_service_id=1, offset=1000,
                                 data=b"x" * 1000, checkpoint_serial=3, report_serial=0,
                                 **other))  # fmt: skip
    w.send(0.012, "forward", LTP(type="GD-EOB", client_service_id=1, offset=2000,
                                 data=b"x" * 1000, **other))  # fmt: skip
    w.send(0.014, "return", LTP(type="RS", report_serial=5, checkpoint_serial=3,
                                upper_bound=2000, lower_bound=0, claims=[(0, 2000)],
                                **other))  # fmt: skip
    tc = w.check(tmp_path, exits={"sender": 0.5, "receiver": 0.5})
    assert tc.sessions == 2
    assert tc.status == "rejected", tc.message
    assert tc.message.startswith("session 2:"), tc.message


def test_clean_sessions_side_by_side_are_accepted_together(tmp_path: Path) -> None:
    """Sessions are validated side by side (one TLC per core): two clean
    sessions are both accepted, each in its own folder."""
    w = Wire()
    nominal(w)
    other: dict[str, Any] = {"session_originator": 1, "session_number": 8}
    cp: dict[str, Any] = {"checkpoint_serial": 3, "report_serial": 0}
    for k, (kind, extra) in enumerate([("RD", {}), ("RD-CP-EORP", cp), ("GD-EOB", {})]):
        w.send(0.010 + k * 0.001, "forward", LTP(type=kind, client_service_id=1, offset=k * 1000,
                                                  data=b"x" * 1000, **extra, **other))  # fmt: skip
    w.send(0.014, "return", LTP(type="RS", report_serial=5, checkpoint_serial=3, upper_bound=2000,
                                lower_bound=0, claims=[(0, 2000)], **other))  # fmt: skip
    w.send(0.017, "forward", LTP(type="RA", report_serial=5, **other))
    tc = w.check(tmp_path, exits={"sender": 0.5, "receiver": 0.5})
    assert (tc.sessions, tc.status) == (2, "accepted"), tc.message
    assert "2 session(s)" in tc.message
    assert {p.name for p in (tmp_path / "trace").iterdir()} >= {"session-1", "session-2"}


def test_identical_copies_in_flight_are_checked(tmp_path: Path) -> None:
    """The receiver's RS timer fires while its first RS is still in flight,
    so two identical RS copies cross the channel at once (the model's set
    channel holds one): both arrive, each gets its RA, and the trace is
    accepted. Without the second RA it is rejected (RFC 5326 §6.13)."""
    for answered in (True, False):
        w = Wire()
        rs = block_sent(w)
        w.send(0.004, "return", rs)
        w.send(0.005, "return", rs)  # before the first copy arrives (at 0.006)
        w.send(0.007, "forward", seg("RA", report_serial=90))
        if answered:
            w.send(0.008, "forward", seg("RA", report_serial=90))
        folder = tmp_path / str(answered)
        folder.mkdir()
        tc = w.check(folder, exits={"sender": 0.9, "receiver": 0.9})
        want = "accepted" if answered else "rejected"
        assert tc.status == want, tc.message
    assert "SenderRxRedundantReport" in tc.actions and "§6.13" in tc.rule, tc


def red_part_lost(w: Wire, *, cs_answered: bool = True) -> None:
    """The whole red part lost (RD 0 and the checkpoint), the green EOB
    delivered; the receiver answers neither the retransmitted checkpoint
    nor anything else until the sender cancels, then acknowledges the CS
    (or, ``cs_answered`` False, not even that)."""
    w.send(0.000, "forward", data("RD", 0), lost=True)
    w.send(0.001, "forward", data("RD-CP-EORP", 1000, checkpoint_serial=40, report_serial=0),
           lost=True)  # fmt: skip
    w.send(0.002, "forward", data("GD-EOB", 2000))
    w.send(1.001, "forward", data("RD-CP-EORP", 1000, checkpoint_serial=40, report_serial=0))
    w.send(2.001, "forward", seg("CS", reason=2))
    if cs_answered:
        w.send(2.0035, "return", seg("CAS"))


def test_a_reading_explains_what_the_default_rejects(tmp_path: Path) -> None:
    """Reading 5 (specs/ltp/readings.json): a receiver with the green EOB and
    no red data that closes, as licklider 0.1.1 does. The model's default
    rejects the trace (the retransmitted checkpoint goes unanswered); the
    alternative accepts it, and the check says which reading it needed."""
    default = Wire()
    red_part_lost(default)
    (tmp_path / "default").mkdir()
    tc = default.check(tmp_path / "default", exits={"sender": 2.01, "receiver": 2.02},
                       readings=[""])  # fmt: skip
    assert tc.status == "rejected", tc.message
    assert tc.reading == ""
    w = Wire()
    red_part_lost(w)
    (tmp_path / "both").mkdir()
    tc = w.check(tmp_path / "both", exits={"sender": 2.01, "receiver": 2.02})
    assert tc.status == "accepted", tc.message
    assert tc.reading == "5"
    assert "reading 5" in tc.message


def late_checkpoint_after_close(w: Wire, *, answered: bool) -> None:
    """The nominal session, and a copy of the checkpoint that the sender's
    timer sent early (at 5.5 ms, before the RS reached it) held back by the
    channel until both sides have closed (it arrives at 20 ms). With
    ``answered``, the receiver opens a session anew for it and answers with
    an RS that claims only that segment; the closed sender acknowledges it."""
    nominal(w)
    w.send(0.0055, "forward", data("RD-CP-EORP", 1000, checkpoint_serial=40, report_serial=0))
    w.b[-1].time = T0 + 0.020
    if answered:
        rs = seg("RS", report_serial=91, checkpoint_serial=40, upper_bound=2000, lower_bound=0,
                 claims=[(1000, 1000)])  # fmt: skip
        w.send(0.021, "return", rs)
        w.send(0.0235, "forward", seg("RA", report_serial=91))


def test_reading_4_a_late_checkpoint_after_close(tmp_path: Path) -> None:
    """Reading 4 (specs/ltp/readings.json): a data segment that reaches a
    receiver that has closed. Discarding it (the default) and opening a
    session anew for it (8.2, the alternative, whose RS claims only the late
    segment) are each accepted under their own reading; the new session's
    RS is rejected under the default, so a run says which one the
    implementation follows."""
    exits = {"sender": 0.03, "receiver": 0.03}
    for answered in (False, True):
        out = tmp_path / str(answered)
        out.mkdir()
        w = Wire()
        late_checkpoint_after_close(w, answered=answered)
        tc = w.check(out, exits=exits)
        assert tc.status == "accepted", tc.message
        assert tc.reading == ("4" if answered else ""), tc
        assert tc.default_rejected == answered  # the default was tried first
    w = Wire()
    late_checkpoint_after_close(w, answered=True)
    (tmp_path / "default").mkdir()
    tc = w.check(tmp_path / "default", exits=exits, readings=[""])
    assert tc.status == "rejected", tc.message
    # the first line the default cannot take is the new session's RS
    assert "has the receiver send this RS" in tc.message and tc.frame == 7, tc


def test_no_reading_explains_a_real_deviation(tmp_path: Path) -> None:
    """The same loss with the CS left unanswered: every reading rejects it,
    and the message says where each stopped."""
    w = Wire()
    red_part_lost(w, cs_answered=False)
    tc = w.check(tmp_path, exits={"sender": 2.9, "receiver": 2.9})
    assert tc.status == "rejected", tc.message
    assert tc.reading == ""
    # the diagnosis is made under the readings that explain the most (5's
    # alternative among them: the receiver closed on the green EOB; the
    # widening alternatives 2, 5 and 13 are tried as one union), so it names
    # the real deviation, the CS left unanswered (§6.17), not the checkpoint
    # reading 5 explains
    assert tc.message.startswith("under reading 2+5+13's alternative"), tc.message
    assert "(with its 7 narrower combinations) stops at line" in tc.message
    assert "§6.17" in tc.rule and "ReceiverRxRedundantCancel" in tc.actions, tc
    assert "no other reading explains the trace either" in tc.message
    assert "the default reading stops at line" in tc.message


def test_a_long_block_whose_reports_need_no_split_is_checked(tmp_path: Path) -> None:
    """Five red segments with at most 2 claims per RS: no RS here carries 2
    claims, so no report was split, no RS leaves a gap the model's sender
    could not follow, and the trace is checked - as `dtnconform bench
    validate`'s 10 MB block is."""
    w = Wire()
    for i in range(4):
        w.send(0.001 * i, "forward", data("RD", 1000 * i))
    w.send(0.004, "forward", data("RD-CP-EORP-EOB", 4000, checkpoint_serial=40, report_serial=0))
    w.send(0.007, "return", seg("RS", report_serial=90, checkpoint_serial=40, upper_bound=5000,
                                lower_bound=0, claims=[(0, 5000)]))  # fmt: skip
    w.send(0.010, "forward", seg("RA", report_serial=90))
    a, b = w.write(tmp_path)
    records = records_from_captures(LTP_SPEC, a, b, port=PORT, ip_a=IP_A)
    spec = dict(SCENARIO, params={"block_len": 5000, "red_len": 5000, "segment_size": 1000,
                                  "retransmission_limit": 1, "max_claims_per_rs": 2})  # fmt: skip
    spec["expect"] = {"outcomes": [{"sender_outcome": "completed", "receiver_outcome": "completed",
                                    "delivered": {"protocol": "ltp", "red_bytes_delivered": 5000,
                                                  "green_bytes_delivered": 0}}]}  # fmt: skip
    tc = tracecheck.check(
        LTP_SPEC, Scenario.model_validate(spec), records, a, b, port=PORT, ip_a=IP_A, exits={},
        workdir=tmp_path / "trace", out=tmp_path / "trace.ndjson",
    )  # fmt: skip
    assert tc.status == "accepted", tc.message


def test_an_implementations_own_segmentation_is_the_models(tmp_path: Path) -> None:
    """A live run of ION-DTN 4.1.3 at both ends (data/ltp-ion-offgrid-nominal,
    2026-11-30): its segment size counts the header, so its red data falls
    at 0, 1000, 1999 and a 2-byte checkpoint at 2998, not on the scenario's
    1000-byte grid. The model's segments are cut where the trace's are, and
    the trace is validated, not left unchecked."""
    _, scn, segments, tc = _stored_run("ltp-ion-offgrid-nominal", tmp_path)
    offsets = [s.fields["offset"] for s in segments if "offset" in s.fields]
    assert offsets == [0, 1000, 1999, 2998, 3000, 3999]  # off the 1000-byte grid
    assert tc.status == "accepted", tc.message
    # the cuts: the trace's own, and the grid where the trace sent nothing
    from generators.ltp.trace import _Geometry

    assert isinstance(scn.params, LtpBlock)
    geo = _Geometry(scn.params, [(1000, 1999), (1999, 2998)])
    assert geo.units == [(0, 1000), (1000, 1999), (1999, 2998), (2998, 3000), (3000, 4000)]
    assert (geo.n_red, geo.n_green, geo.data_index(1999, 999, True)) == (4, 1, 2)
    # ION sending a gap again as 998 bytes and a 1-byte checkpoint splits
    # its first copy: that copy is read as the two model segments it spans,
    # sent together (red only: green is never sent again)
    split = _Geometry(scn.params, [(1000, 1999), (1000, 1998), (1998, 1999)])
    with pytest.raises(Unrepresentable, match=r"\[1000, 1999\) is not one of .* spans or splits"):
        split.data_index(1000, 999, True)
    assert split.data_pieces(1000, 999, True) == [1, 2]
    assert split.data_pieces(1998, 1, True) == [2]
    green = _Geometry(scn.params, [(3000, 4000), (3000, 3500), (3500, 4000)])
    with pytest.raises(Unrepresentable, match="spans or splits"):
        green.data_pieces(3000, 1000, False)


@pytest.mark.parametrize(
    ("processing", "slowdown", "late", "windows"),
    [
        # nothing declared, an idle machine: 250 ms, and the answer 400 ms
        # on is late (accepted by the late pass)
        (None, 1.0, True, {"sender": 250.0, "receiver": 250.0}),
        # the same under a measured slowdown of 1.8: 450 ms, in time
        (None, 1.8, False, {"sender": 450.0, "receiver": 450.0}),
        # a receiver that declares 450 ms: in time on an idle machine
        ({"receiver": 450.0}, 1.0, False, {"sender": 250.0, "receiver": 450.0}),
        # one that declares 100 ms: late, and more so than the sender's 250
        ({"receiver": 100.0}, 1.0, True, {"sender": 250.0, "receiver": 100.0}),
        # 300 ms × 3 is past half the 1000 ms timer: the cap holds
        ({"receiver": 300.0}, 3.0, False, {"sender": 500.0, "receiver": 500.0}),
    ],
)
def test_window_from_declared_processing_and_load(
    tmp_path: Path,
    processing: dict[str, float] | None,
    slowdown: float,
    late: bool,
    windows: dict[str, float],
) -> None:
    """The reaction window is each actor's declared processing time (250 ms
    where it declares none) times the load the run met, at most half the
    retransmission interval (tracecheck.windows_ms). A report 400 ms after
    its checkpoint arrived is in time where that comes to 400 ms or more, and late
    (accepted by the late pass, trace-late) where it does not."""
    w = Wire()
    w.send(0.403, "return", block_sent(w))
    w.send(0.406, "forward", seg("RA", report_serial=90))
    tc = w.check(
        tmp_path,
        exits={"sender": 1.1, "receiver": 1.1},
        processing_ms=processing,
        slowdown=slowdown,
    )
    assert tc.status == "accepted", tc.message
    assert tc.late is late, tc.message
    assert tc.windows_ms == windows
    assert tc.window_ms == min(windows.values())
    assert tc.slowdown == slowdown
    if not late and len(set(windows.values())) > 1:
        assert "reaction windows of 250 ms (sender) and 450 ms (receiver)" in tc.message
