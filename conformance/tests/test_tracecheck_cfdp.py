"""CFDP trace validation (specs/cfdp/TraceCFDP.tla, generators/cfdp/trace.py)
on crafted captures: both sides' pcaps are written with our Scapy CFDP
layer, decoded (conformance.segments) and checked by TLC, as a live run's
are. Each deviation is one a live implementation made (the
findings under reports/findings/cfdp/ name them); each must be rejected
with the 727.0-B-5 rule behind it, and the same transaction without the
deviation must be accepted."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conformance import pcapkit, tracecheck
from conformance.core.types import Scenario
from conformance.protocols.cfdp import SPEC as CFDP
from conformance.segments import records_from_captures
from dissectors.cfdp.layer import (
    CFDPEOF,
    CFDPAck,
    CFDPFileData,
    CFDPFinished,
    CFDPKeepAlive,
    CFDPMetadata,
    CFDPNak,
    CFDPPrompt,
)
from generators.cfdp import trace as cfdp_trace

IP_A, PORT = pcapkit.IP_A, 5111
T0 = 1_800_000_000.0
SEG = 1024
FILE = bytes(range(256)) * 7 + b"tail"  # 1796 octets: segments [0, 1024), [1024, 1796)
HEAD: dict[str, Any] = {"source_entity": 1, "dest_entity": 2, "transaction": 9}


def scenario(**params: Any) -> Scenario:
    file_len = params.pop("file_len", len(FILE))
    return Scenario.model_validate(
        {
            "schema": "dtnconform/scenario/1",
            "name": "crafted",
            "protocol": "cfdp",
            "params": {"protocol": "cfdp", "file_len": file_len, "segment_size": SEG,
                       "ack_limit": 1, "nak_limit": 1, **params},
            "timers": {"retransmission_ms": 1000.0},
            "expect": {"outcomes": [{"sender_outcome": "completed",
                                     "receiver_outcome": "completed",
                                     "delivered": {"protocol": "cfdp",
                                                   "file_bytes_delivered": file_len}}]},
        }
    )  # fmt: skip


class Wire(pcapkit.Wire):
    def __init__(self, mode: int = 0) -> None:
        super().__init__(port=PORT, t0=T0, delay=0.002)
        self.mode = mode  # 0: acknowledged (Class 2), 1: unacknowledged

    def pdu(self, t: float, direction: str, p: Any, *, lost: bool = False) -> None:
        p.mode = self.mode
        self.send(t, direction, bytes(p), lost=lost)

    def check(
        self,
        tmp: Path,
        scn: Scenario,
        *,
        corrupted: int | None = None,
        lost: dict[int, bool] | None = None,
        duplicated: int | None = None,
        **kw: Any,
    ) -> Any:
        a, b = self.write(tmp)
        records = records_from_captures(CFDP, a, b, port=PORT, ip_a=IP_A)
        for i, dropped in (lost or {}).items():
            # what the channel's log says where the captures alone cannot
            # tell which copy of a PDU sent twice was lost
            records[i] = records[i].model_copy(update={"dropped": dropped})
        if duplicated is not None:
            # what the channel's log says of a PDU it delivered twice
            records[duplicated] = records[duplicated].model_copy(update={"copies": 2})
        if corrupted is not None:
            # what the channel's log says of a PDU it corrupted and let through
            records[corrupted] = records[corrupted].model_copy(
                update={"dropped": False, "corrupted": True}
            )
        return tracecheck.check(
            CFDP, scn, records, a, b, port=PORT, ip_a=IP_A, exits=kw.pop("exits", {}),
            workdir=tmp / "trace", out=tmp / "trace.ndjson", **kw,
        )  # fmt: skip


def md() -> Any:
    return CFDPMetadata(file_size=len(FILE), checksum_type=15, source_file_name=b"a",
                        dest_file_name=b"b", **HEAD)  # fmt: skip


def fd(off: int) -> Any:
    return CFDPFileData(offset=off, data=FILE[off : off + SEG], **HEAD)


def eof(cond: str = "no_error") -> Any:
    return CFDPEOF(condition=cond, file_size=len(FILE), checksum=0, **HEAD)


def ack(of: str, cond: str = "no_error") -> Any:
    return CFDPAck(ack_of=of, condition=cond, **HEAD)


def fin(cond: str = "no_error", complete: bool = True) -> Any:
    code = "data_complete" if complete else "data_incomplete"
    return CFDPFinished(condition=cond, delivery_code=code, **HEAD)


def data_sent(w: Wire, *, lose_first: bool = False) -> None:
    w.pdu(0.000, "forward", md())
    w.pdu(0.001, "forward", fd(0), lost=lose_first)
    w.pdu(0.002, "forward", fd(SEG))
    w.pdu(0.003, "forward", eof())


def closed(w: Wire, t: float) -> None:
    """The receiver's Finished(complete) at t, and its acknowledgment."""
    w.pdu(t, "return", fin())
    w.pdu(t + 0.004, "forward", ack("finished"))


def test_class2_nominal_accepted(tmp_path: Path) -> None:
    w = Wire()
    data_sent(w)
    w.pdu(0.006, "return", ack("eof"))
    closed(w, 0.007)
    tc = w.check(tmp_path, scenario())
    assert tc.status == "accepted", tc.message
    assert tc.lines == 17  # 7 sends, 7 arrivals, 2 exits and the end
    lines = [json.loads(x) for x in (tmp_path / "trace.ndjson").read_text().splitlines()]
    sent = [x["unit"] for x in lines if x["kind"] == "send"]
    assert [(u["k"], u["seg"]) for u in sent[:3]] == [("MD", 0), ("FD", 0), ("FD", 1)]


def test_lost_segment_renaked_and_resent_accepted(tmp_path: Path) -> None:
    w = Wire()
    data_sent(w, lose_first=True)
    # the immediate NAK of segment 0 as segment 1 arrives (4.6.4.3.1)
    w.pdu(0.005, "return", CFDPNak(start_of_scope=0, end_of_scope=SEG,
                                   segment_requests=[(0, SEG)], **HEAD))  # fmt: skip
    w.pdu(0.006, "return", ack("eof"))
    w.pdu(0.009, "forward", fd(0))
    closed(w, 0.013)
    tc = w.check(tmp_path, scenario())
    assert tc.status == "accepted", tc.message


def _arrives_at_b(w: Wire, t: float, payload: bytes) -> None:
    """A datagram in the receiver's capture only (taken before its stack's
    UDP checksum check)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    got = Ether() / IP(src=IP_A, dst=pcapkit.IP_B) / UDP(sport=PORT, dport=PORT) / payload
    got.time = T0 + t
    w.b.append(got)


@pytest.mark.parametrize("flipped", [1, 200])
def test_segment_corrupted_past_its_udp_checksum_reads_as_lost(
    tmp_path: Path, flipped: int
) -> None:
    """Segment 0 corrupted with its UDP checksum left wrong: the receiving
    stack discards it, yet the receiver's capture shows it. A few flipped
    bits from the lost segment: that segment, lost, and the trace of its
    recovery is accepted. A datagram that far from every lost segment is
    no copy of one: the trace is unchecked, as any datagram nothing sent."""
    w = Wire()
    data_sent(w, lose_first=True)
    first = fd(0)
    first.mode = 0
    bad = bytearray(bytes(first))
    for k in range(flipped):
        bad[-1 - k] ^= 0x01
    _arrives_at_b(w, 0.003, bytes(bad))
    w.pdu(0.005, "return", CFDPNak(start_of_scope=0, end_of_scope=SEG,
                                   segment_requests=[(0, SEG)], **HEAD))  # fmt: skip
    w.pdu(0.006, "return", ack("eof"))
    w.pdu(0.009, "forward", fd(0))
    closed(w, 0.013)
    # the first FD(0) lost, its retransmission (record 6) not
    tc = w.check(tmp_path, scenario(), readings=[""], lost={1: True, 6: False})
    if flipped <= 64:
        assert tc.status == "accepted", tc.message
    else:
        assert tc.status == "unchecked" and "match no sent segment" in tc.message, tc.message


def test_over_its_budget_a_trace_is_unchecked_not_rejected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no TLC time to spare, the first pass still runs: a trace it
    accepts is accepted; one it rejects, with passes (other readings) still
    to run, is unchecked, naming the budget, not rejected."""
    monkeypatch.setenv("DTNC_TRACE_BUDGET_S", "0")
    w = Wire()
    data_sent(w)
    w.pdu(0.006, "return", ack("eof"))
    closed(w, 0.007)
    (tmp_path / "ok").mkdir()
    assert w.check(tmp_path / "ok", scenario()).status == "accepted"
    w = Wire()
    data_sent(w, lose_first=True)
    w.pdu(0.005, "return", CFDPNak(start_of_scope=0, end_of_scope=len(FILE),
                                   segment_requests=[(SEG, len(FILE))], **HEAD))  # fmt: skip
    (tmp_path / "bad").mkdir()
    tc = w.check(tmp_path / "bad", scenario())
    assert tc.status == "unchecked", tc.message
    assert "budget of 0 s" in tc.message and "after 1 pass(es)" in tc.message


def two_gaps(scope: int, second: list[tuple[int, int]]) -> Wire:
    """Four 512-octet segments, 0 and 2 lost: the receiver NAKs segment 0
    as segment 1 arrives, then sends a NAK of scope [``scope``, end) with
    the requests ``second`` as segment 3 arrives."""
    w = Wire()
    part = lambda off: CFDPFileData(offset=off, data=FILE[off : off + 512], **HEAD)  # noqa: E731
    w.pdu(0.000, "forward", md())
    w.pdu(0.001, "forward", part(0), lost=True)
    w.pdu(0.002, "forward", part(512))
    w.pdu(0.0045, "return", CFDPNak(start_of_scope=0, end_of_scope=1024,
                                    segment_requests=[(0, 512)], **HEAD))  # fmt: skip
    w.pdu(0.005, "forward", part(1024), lost=True)
    w.pdu(0.006, "forward", part(1536))
    w.pdu(0.0085, "return", CFDPNak(start_of_scope=scope, end_of_scope=len(FILE),
                                    segment_requests=second, **HEAD))  # fmt: skip
    # the sender's first pass ends with its EOF (a sender that stops before
    # it is rejected at its exit: TraceCFDP's prompt steps)
    w.pdu(0.0088, "forward", eof())
    return w


@pytest.mark.parametrize(
    ("scope", "second", "status"),
    [
        (0, [(1024, 1536)], "rejected"),
        (512, [(1024, 1536)], "unchecked"),
        (0, [(0, 512), (1024, 1536)], "accepted"),
    ],
)
def test_an_immediate_nak_names_every_gap_of_its_scope(
    tmp_path: Path, scope: int, second: list[tuple[int, int]], status: str
) -> None:
    """two_gaps, its second NAK scoped to the file's end: of segment 2
    only, scope from 0 (as cfdp-py and cfdp-rs do), which leaves out
    segment 0, still missing inside its scope (4.6.4.3.3: rejected); of
    segment 2 only, scope from 512, past segment 0 (allowed, and not
    expressible in the model: unchecked); of both (the model's NAK:
    accepted)."""
    w = two_gaps(scope, second)
    tc = w.check(tmp_path, scenario(segment_size=512), readings=[""])
    assert tc.status == status, tc.message
    if status == "rejected":
        assert "NAK t1 {2}" in tc.message and tc.side == "b", tc.message
        assert "4.6.4.3.3" in tc.rule, tc.rule
    elif status == "unchecked":
        assert "scope [512, 1796), past [0]" in tc.message, tc.message


def test_readings_that_act_on_no_arrival_before_the_rejection_are_not_run_again(
    tmp_path: Path,
) -> None:
    """two_gaps' NAK that leaves out an earlier gap, judged under every reading:
    readings 1, 2 and 4 act only on a Finished or an EOF arriving
    (readings.json acts_on_arrival_of), and none arrives up to the line
    where the default stops. Their passes would explore what the default
    did, so they are not run, and the message still says each stops there."""
    tc = two_gaps(0, [(1024, 1536)]).check(tmp_path, scenario(segment_size=512))
    assert tc.status == "rejected", tc.message
    for rid in ("1", "2", "4", "1+2", "1+2+4"):
        assert f"reading {rid} stops at line {tc.line}" in tc.message, tc.message
    logs = sorted(p.name for p in (tmp_path / "trace").rglob("*.tlc.log"))
    assert not [n for n in logs if "reading" in n], logs
    assert any(n.endswith("_trace.tlc.log") for n in logs), logs


def test_nak_for_segment_received_rejected(tmp_path: Path) -> None:
    w = Wire()
    data_sent(w, lose_first=True)
    # the receiver asks for segment 1, which it has, instead of segment 0
    w.pdu(0.005, "return", CFDPNak(start_of_scope=0, end_of_scope=len(FILE),
                                   segment_requests=[(SEG, len(FILE))], **HEAD))  # fmt: skip
    tc = w.check(tmp_path, scenario(), readings=[""])
    assert tc.status == "rejected"
    assert "NAK" in tc.message and tc.side == "b"
    assert "4.6.4.3.1" in tc.rule


@pytest.mark.parametrize("where", ["eof", "metadata"])
def test_a_file_size_other_than_the_files_is_rejected(tmp_path: Path, where: str) -> None:
    """cfdp-rs 0.3.0 counts octets it sent again in its EOF's file size
    (reports/findings/cfdp): a 1796-octet file's EOF(no error) states 2820.
    The model's sender states the file's length in its Metadata (5.2.5) and
    its EOF (5.2.2), so the trace is rejected at that PDU's frame, naming
    the size it states; the same transaction stating the right size is
    accepted (test_class2_nominal_accepted)."""
    wrong = len(FILE) + SEG
    w = Wire()
    if where == "metadata":
        w.pdu(0.000, "forward", CFDPMetadata(file_size=wrong, checksum_type=15,
                                             source_file_name=b"a", dest_file_name=b"b",
                                             **HEAD))  # fmt: skip
    else:
        w.pdu(0.000, "forward", md())
    w.pdu(0.001, "forward", fd(0))
    w.pdu(0.002, "forward", fd(SEG))
    if where == "eof":
        w.pdu(0.003, "forward", CFDPEOF(condition="no_error", file_size=wrong, checksum=0,
                                        **HEAD))  # fmt: skip
    else:
        w.pdu(0.003, "forward", eof())
    w.pdu(0.006, "return", ack("eof"))
    closed(w, 0.007)
    tc = w.check(tmp_path, scenario(), readings=[""])
    assert tc.status == "rejected", tc.message
    assert tc.side == "a" and tc.frame == (4 if where == "eof" else 1), tc
    assert f"stating file size {wrong}, not the file's length" in tc.message, tc.message
    assert ("5.2.2" if where == "eof" else "5.2.5") in tc.rule, tc.rule


def test_cancel_eof_unacknowledged_rejected(tmp_path: Path) -> None:
    """cfdp-py 0.7.0's receiver answers a sender's EOF(positive ACK limit)
    with a Finished, never with its ACK (reports/findings/cfdp)."""
    w = Wire()
    data_sent(w)
    w.pdu(0.006, "return", ack("eof"), lost=True)
    w.pdu(1.004, "forward", eof())
    w.pdu(1.007, "return", ack("eof"), lost=True)
    w.pdu(2.004, "forward", eof("positive_ack_limit_reached"))
    w.pdu(2.007, "return", fin("positive_ack_limit_reached", complete=False))
    tc = w.check(tmp_path, scenario(), readings=[""])
    assert tc.status == "rejected"
    # rejected at the Finished itself: the model answers the EOF(cancel)
    # with its ACK, and no timer of the model's receiver makes that
    # Finished where the wire shows it (TraceCore's SentSoon)
    assert tc.line == 17 and tc.side == "b", tc
    assert "no behaviour of the model has the receiver send this Finished t1 AckLimit" in (
        tc.message
    )
    assert "ReceiverRxCancelEof had it send the ACK(EOF) t1 AckLimit instead" in tc.message
    assert "4.6.6" in tc.rule


def test_corrupted_segment_then_checksum_failure(tmp_path: Path) -> None:
    """An undetected corruption (no PDU CRC): the model's receiver must fail
    the checksum (4.6.1.2); Finished(no error) is rejected, Finished(file
    checksum failure) accepted."""
    scn = scenario(mode="class1-closure")
    for cond, accepted in (("no_error", False), ("file_checksum_failure", True)):
        w = Wire(mode=1)
        w.pdu(0.000, "forward", md())
        w.pdu(0.001, "forward", fd(0))
        w.pdu(0.002, "forward", fd(SEG))
        w.pdu(0.003, "forward", eof())
        # the receiver's capture shows segment 0 with a flipped bit
        first = fd(0)
        first.mode = 1
        bad = bytearray(bytes(first))
        bad[-1] ^= 1
        w.b = [f for f in w.b if bytes(f.payload.payload.payload) != bytes(first)]
        w.send(0.001, "forward", bytes(bad))
        w.a.pop()
        w.pdu(0.007, "return", CFDPFinished(mode=1, condition=cond,
                                            delivery_code="data_complete", **HEAD))  # fmt: skip
        out = tmp_path / cond
        out.mkdir()
        tc = w.check(out, scn, corrupted=1, readings=[""])
        assert (tc.status == "accepted") is accepted, tc.message
        if not accepted:
            assert "4.6.1.2" in tc.rule


def test_repeated_eof_reacknowledged_accepted(tmp_path: Path) -> None:
    """The EOF sent again while its first copy is in flight (two identical
    PDUs: the model's channel holds one, TraceCFDP puts the copy back)."""
    w = Wire()
    data_sent(w)
    w.pdu(0.004, "forward", eof())
    w.pdu(0.006, "return", ack("eof"))
    w.pdu(0.007, "return", ack("eof"))
    closed(w, 0.008)
    tc = w.check(tmp_path, scenario())
    assert tc.status == "accepted", tc.message


def test_off_grid_file_data_is_unchecked(tmp_path: Path) -> None:
    w = Wire()
    w.pdu(0.000, "forward", md())
    w.pdu(0.001, "forward", CFDPFileData(offset=0, data=FILE[:500], **HEAD))
    tc = w.check(tmp_path, scenario())
    assert tc.status == "unchecked"
    assert "not one segment of 1024 octets" in tc.message


@pytest.mark.parametrize("cond", ["filestore_rejection", "keep_alive_limit_reached"])
def test_condition_outside_model_is_unchecked(tmp_path: Path, cond: str) -> None:
    w = Wire()
    data_sent(w)
    w.pdu(0.006, "return", ack("eof"))
    w.pdu(0.007, "return", fin(cond, complete=False))
    tc = w.check(tmp_path, scenario())
    assert tc.status == "unchecked"
    assert cond in tc.message


def test_a_keep_alive_on_the_receivers_own_timer_is_judged(tmp_path: Path) -> None:
    """727.0-B-5 4.6.5.2.1: the receiver "may periodically send a Keep
    Alive PDU" (CFDP.tla ReceiverTxKeepAlive), and 4.6.5.2.3: it "shall
    cease upon receipt of the transaction's EOF (No error) PDU". One sent
    while the data is arriving is accepted; one sent well after the EOF was
    acknowledged is rejected."""
    w = Wire()
    data_sent(w)  # each PDU arrives 2 ms after it is sent: the EOF at 5 ms
    w.pdu(0.0035, "return", CFDPKeepAlive(progress=SEG, **HEAD))
    w.pdu(0.006, "return", ack("eof"))
    closed(w, 0.007)
    (tmp_path / "before").mkdir()
    tc = w.check(tmp_path / "before", scenario())
    assert tc.status == "accepted", tc.message

    w = Wire()
    data_sent(w)
    w.pdu(0.006, "return", ack("eof"))
    # past the reaction window: not one queued before the EOF was processed
    w.pdu(0.400, "return", CFDPKeepAlive(progress=len(FILE), **HEAD))
    (tmp_path / "after").mkdir()
    # (rejected traces are diagnosed under the default reading only: trying
    # every reading's combination costs a minute and says nothing here)
    tc = w.check(tmp_path / "after", scenario(), readings=[""])
    assert tc.status == "rejected", tc.message
    assert "Keep Alive" in tc.message or "KeepAlive" in tc.message, tc.message

    # The same once the first EOF was lost and its timer's copy got in: the
    # File Data waiting there must not let a Keep Alive be made early and
    # sent 400 ms later (TraceCore's OwnLineOnly; a review found it).
    w = Wire()
    w.pdu(0.000, "forward", md())
    w.pdu(0.001, "forward", fd(0))
    w.pdu(0.002, "forward", fd(SEG))
    w.pdu(0.003, "forward", eof(), lost=True)
    w.pdu(1.003, "forward", eof())  # arrives at 1.005 s
    w.pdu(1.006, "return", ack("eof"))
    w.pdu(1.400, "return", CFDPKeepAlive(progress=len(FILE), **HEAD))
    closed(w, 1.5)
    (tmp_path / "eof-lost").mkdir()
    tc = w.check(tmp_path / "eof-lost", scenario(), readings=[""])
    assert tc.status == "rejected", tc.message


@pytest.mark.parametrize("suspended", [False, True])
def test_suspended_receiver_answers_after_its_resumption(tmp_path: Path, suspended: bool) -> None:
    """A receiver whose user suspends it after the first File Data for 600 ms
    answers the EOF only once resumed: within its reaction window and the
    suspension's span (TraceCore's Hold). Without the suspension, that answer
    is late: past the window, yet before the sender's 1 s timer could have
    asked again, which the untimed model does not forbid: the trace is
    accepted as late, with where the window was first overrun."""
    w = Wire()
    data_sent(w)
    w.pdu(0.650, "return", ack("eof"))
    closed(w, 0.651)
    after = {"direction": "forward", "match": {"pdu_type": "file_data", "offset": 0}}
    asks = [{"entity": "receiver", "request": "suspend", "after": after,
             "resume_after_ms": 600}] if suspended else []  # fmt: skip
    tc = w.check(tmp_path, scenario(requests=asks), readings=[""])
    assert tc.status == "accepted", tc.message
    assert tc.late is not suspended
    if not suspended:
        # the answer was due within the 250 ms window of the EOF's arrival
        assert "with reaction times of up to 900 ms" in tc.message
        assert "receiver had to send a ACK(EOF) t1 NoError by 255.0 ms" in tc.message


@pytest.mark.parametrize("resumed", [True, False])
def test_a_sender_that_ignores_its_resume_is_rejected(tmp_path: Path, resumed: bool) -> None:
    """The sender's user suspends it once its Metadata is sent and resumes
    it 300 ms later. Resumed, it sends the rest of the file and the
    transaction completes. Left suspended (a LibreCube mutant did this), it
    sends nothing more until the receiver's inactivity fault 5 s later
    cancels the transaction. The model used to accept that: it may leave
    its sender idle in the first pass (the standard times no new data) and
    the receiver's inactivity timer may expire at any time. A sender still
    in its first pass must now send something between the resume's earliest
    time and its window after the latest (TraceCFDP's SenderCarriesOn), and
    the rejection says so, held against its first-pass steps."""
    w = Wire()
    w.pdu(0.000, "forward", md())
    if resumed:
        w.pdu(0.400, "forward", fd(0))
        w.pdu(0.401, "forward", fd(SEG))
        w.pdu(0.402, "forward", eof())
        w.pdu(0.406, "return", ack("eof"))
        closed(w, 0.407)
    else:
        w.pdu(5.000, "return", fin("inactivity_detected", complete=False))
        w.pdu(5.003, "forward", ack("finished", "inactivity_detected"))
    after = {"direction": "forward", "match": {"directive": "metadata"}}
    asks = [{"entity": "sender", "request": "suspend", "after": after, "resume_after_ms": 300}]
    tc = w.check(tmp_path, scenario(requests=asks), readings=[""])
    if resumed:
        assert tc.status == "accepted", tc.message
        return
    assert tc.status == "rejected", tc.message
    assert "did not carry on once resumed" in tc.message, tc.message
    assert "SenderTxFileData" in tc.actions and tc.overdue, tc
    assert "a resumed transaction carries on" in tc.rule, tc.rule


def _four_segments(
    w: Wire, resend: list[tuple[float, int]], renak: bool, end: bool = True
) -> Scenario:
    """A four-segment file whose segments 1 and 2 are lost; the receiver
    NAKs both in one request after the EOF, and the sender resends
    ``resend`` ([(t, offset)]); with ``renak`` the receiver's NAK timer asks
    again, a second later, for what is still missing."""
    body = bytes(range(256)) * 16  # 4096 octets, segments at 0, 1024, 2048, 3072
    head = dict(HEAD)

    def seg(off: int) -> Any:
        return CFDPFileData(offset=off, data=body[off : off + SEG], **head)

    w.pdu(0.000, "forward", CFDPMetadata(file_size=len(body), checksum_type=15,
                                         source_file_name=b"a", dest_file_name=b"b", **head))  # fmt: skip
    for i, off in enumerate(range(0, len(body), SEG)):
        w.pdu(0.001 + 0.001 * i, "forward", seg(off), lost=off in (SEG, 2 * SEG))
    w.pdu(0.005, "forward", CFDPEOF(condition="no_error", file_size=len(body), checksum=0, **head))
    w.pdu(0.008, "return", ack("eof"))
    w.pdu(0.009, "return", CFDPNak(start_of_scope=0, end_of_scope=len(body),
                                   segment_requests=[(SEG, 3 * SEG)], **head))  # fmt: skip
    for t, off in resend:
        w.pdu(t, "forward", seg(off))
    if renak:
        w.pdu(1.020, "return", CFDPNak(start_of_scope=0, end_of_scope=len(body),
                                       segment_requests=[(2 * SEG, 3 * SEG)], **head))  # fmt: skip
        w.pdu(1.025, "forward", seg(2 * SEG))
    if end:
        closed(w, 1.030)
    return scenario(file_len=len(body), nak_limit=2)


def test_a_nak_is_answered_with_every_segment_it_asks_for(tmp_path: Path) -> None:
    """The NAK asks for segments 1 and 2 in one range; the sender resends
    both at once: the obligation the NAK made is met."""
    w = Wire()
    scn = _four_segments(w, [(0.012, SEG), (0.013, 2 * SEG)], renak=False)
    seen = scn.expect.outcomes[0]
    tc = w.check(tmp_path, scn, observed=seen)
    assert tc.status == "accepted", tc.message
    # judged at the trace's end: both sides completed, the file delivered
    assert seen.key() in [e.key() for e in tc.ends], tc.ends


def test_a_sender_resending_only_the_first_segment_of_a_naked_range_is_rejected(
    tmp_path: Path,
) -> None:
    """A stand-in sender that answers a NAK of segments 1-2 with segment 1
    only, as cfdp-rs 0.3.0 does (suts/cfdp/cfdprs/README.md): the
    receiver's NAK timer recovers the rest a second later, within its limit,
    so without a deadline the run would pass. The NAK obliged the sender to
    resend both (4.6.4.2.1) within its reaction window; the trace is rejected
    at the first line past that deadline, naming the NAK's frame, what was
    owed and the action that should have sent it."""
    w = Wire()
    scn = _four_segments(w, [(0.012, SEG)], renak=True)
    # the stand-in reports both sides completed, as cfdp-rs does; the default
    # reading only (the readings do not bear on retransmission, and trying
    # each on a rejected trace costs a minute)
    tc = w.check(tmp_path, scn, observed=scn.expect.outcomes[0], readings=[""])
    assert tc.status == "rejected", tc.message
    assert "as its harness reported (sender completed, receiver completed)" in tc.message
    assert tc.line is not None and tc.line < 20, tc  # the re-NAK, past the deadline
    # a window after the segment at 1024 went out (12 ms), the last unit of
    # that NAK sent: an implementation may pace what it owes, not stop
    assert "obliged it to send the FD t1 seg=2 by 262.0 ms" in tc.message, tc.message
    # the request named by its line and frame: the NAK's arrival at the sender
    assert "arrive NAK" in tc.message and "frame" in tc.message, tc.message
    assert "SenderTxRetransmittedData" in tc.actions, tc.actions
    assert "4.6.4.2.1" in tc.rule, tc.rule


def test_a_sender_stopped_soon_after_a_nak_owes_nothing_more(tmp_path: Path) -> None:
    """The sender resends the first segment the NAK asked for, and its
    process is stopped 40 ms after the NAK, within its window: what it had
    not sent yet is forgiven at its exit and owed no longer (TraceCore
    OwesAtExit, Gone), so the trace's end does not reject it."""
    w = Wire()
    scn = _four_segments(w, [(0.012, SEG)], renak=False, end=False)
    tc = w.check(tmp_path, scn, exits={"sender": T0 + 0.050, "receiver": T0 + 0.060})
    assert tc.status == "accepted", tc.message


def test_a_timers_expiry_is_taken_only_where_the_wire_shows_its_emission_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trace validation lets timers expire early (PrematureTimeouts), so a
    timer's emission could wait unsent through any stretch of the trace,
    each placement a behaviour of its own. TraceCore's SentSoon takes an
    expiry that emits only where the trace shows that emission among the
    actor's next sends. The sender that resends only the first segment of a
    NAKed range (above) needs every pass, and is rejected at the same line,
    for the same reason, in fewer states than with no timer action held to
    SentSoon (the set monkeypatched empty)."""
    seen = {}
    for held in (True, False):
        if not held:
            monkeypatch.setattr(cfdp_trace, "timer_actions", list)
        w = Wire()
        scn = _four_segments(w, [(0.012, SEG)], renak=True)
        (tmp_path / str(held)).mkdir()
        tc = w.check(tmp_path / str(held), scn, observed=scn.expect.outcomes[0], readings=[""])
        assert tc.status == "rejected", tc.message
        seen[held] = (tc.states, tc.line, tc.message.split(" Actions the model could")[0])
    assert seen[True][1:] == seen[False][1:]
    # (the actions it lists as possible there come from other states)
    assert seen[True][0] < seen[False][0], seen


def test_a_step_that_emits_on_its_own_is_taken_only_where_the_trace_needs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sender's new File Data, its EOF, a receiver's NAK: steps that emit
    without consuming could be taken anywhere before their PDU's line, each
    place a behaviour of its own; so could the processing of an arrival.
    TraceCore's Wanted takes such a step only where the current line is a
    send of its actor that nothing waiting shows, or an arrival waits at its
    actor; with LazyArrivals, Needs takes an arrival only where the trace
    needs it (a send of its actor's, its exit, the end, the window running
    out). Either can be put off until then. The NAKed-range trace is
    rejected at the same line, for the same reason, in fewer states than
    with both rules off (monkeypatched); the NAK trace its sender answers in
    full is accepted either way."""
    seen = {}
    for held in (True, False):
        if not held:
            monkeypatch.setattr(cfdp_trace, "on_demand_actions", list)
            monkeypatch.setattr(cfdp_trace, "LAZY_ARRIVALS", False)
        for renak, ranges in ((True, [(0.012, SEG)]), (False, [(0.012, SEG), (0.013, 2 * SEG)])):
            w = Wire()
            scn = _four_segments(w, ranges, renak=renak)
            d = tmp_path / f"{held}-{renak}"
            d.mkdir()
            tc = w.check(d, scn, observed=scn.expect.outcomes[0], readings=[""])
            assert tc.status == ("rejected" if renak else "accepted"), tc.message
            seen[held, renak] = (tc.states, tc.line, tc.message.split(" Actions the model")[0])
    assert seen[True, True][1:] == seen[False, True][1:]
    assert seen[True, True][0] < seen[False, True][0], seen


def _nak_mid_transfer(w: Wire) -> Scenario:
    """A 16-segment file whose segment 2 is lost: the receiver NAKs it as
    segment 3 arrives, and the NAK reaches the sender while it is still
    sending new data; the sender resends segment 2 after segment 8, then
    leaves segment 9 out, as cfdp-rs 0.3.0 does after a resend
    (suts/cfdp/cfdprs/README.md), and sends it after segment 15, once the
    receiver's immediate NAK of it has come."""
    body = bytes(range(256)) * 64  # 16 segments of 1024 octets
    seg = lambda off: CFDPFileData(offset=off, data=body[off : off + SEG], **HEAD)  # noqa: E731
    nak = lambda n, i: CFDPNak(start_of_scope=0, end_of_scope=n * SEG,  # noqa: E731
                               segment_requests=[(i * SEG, (i + 1) * SEG)], **HEAD)  # fmt: skip
    w.pdu(0.000, "forward", CFDPMetadata(file_size=len(body), checksum_type=15,
                                         source_file_name=b"a", dest_file_name=b"b", **HEAD))  # fmt: skip
    for i in range(9):
        w.pdu(0.001 + 0.001 * i, "forward", seg(i * SEG), lost=i == 2)
    w.pdu(0.0065, "return", nak(4, 2))
    w.pdu(0.0095, "forward", seg(2 * SEG))
    rest = [10, 11, 12, 13, 14, 15]
    for n, i in enumerate(rest):
        w.pdu(0.010 + 0.001 * n, "forward", seg(i * SEG))
    w.pdu(0.0125, "return", nak(11, 9))
    t = 0.010 + 0.001 * len(rest)
    w.pdu(t, "forward", seg(9 * SEG))
    t += 0.001
    w.pdu(t, "forward", CFDPEOF(condition="no_error", file_size=len(body), checksum=0, **HEAD))
    w.pdu(t + 0.003, "return", ack("eof"))
    closed(w, t + 0.004)
    return scenario(file_len=len(body))


def test_new_data_is_emitted_ahead_of_the_wire_only_on_the_way_to_what_it_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the wire shows the sender resending a NAKed segment, the model
    could emit any number of new segments first, each count a behaviour of
    its own that later lines carry along. TraceCFDP's FileDataOnTheWay
    takes SenderTxFileData there only on the way to a later new segment, an
    EOF, or a NAK asking for what is not emitted yet. _nak_mid_transfer's
    trace (whose left-out segment the model emits on the way to the next
    one, and which the eager pass therefore rejects) is accepted as with
    every such step allowed (AnyOnTheWay, monkeypatched), in fewer states."""
    seen = {}
    for rule in ("FileDataOnTheWay", "AnyOnTheWay"):
        monkeypatch.setattr(cfdp_trace, "ON_THE_WAY", rule)
        w = Wire()
        scn = _nak_mid_transfer(w)
        d = tmp_path / rule
        d.mkdir()
        tc = w.check(d, scn, observed=scn.expect.outcomes[0], readings=[""])
        assert tc.status == "accepted", (rule, tc.message)
        seen[rule] = tc.states
    assert seen["FileDataOnTheWay"] < seen["AnyOnTheWay"], seen


def test_a_resend_that_goes_out_before_its_nak_is_processed_meets_it(tmp_path: Path) -> None:
    """The sender leaves segment 5 out of its first pass; the receiver's
    immediate NAK of it reaches the sender, whose next PDU on the wire is
    segment 5, then its EOF; the Finished comes 1.5 s later. The model has
    segment 5 emitted already (on the way to segment 6), so that send is
    no step of the model's; the NAK is processed before the line all the
    same, since it asks for what the line sends (TraceCore's AsksFor), and
    the send meets it. Otherwise the NAK's obligation would lapse a window
    after the EOF, and a sender that answered its NAK at once would be
    rejected."""
    body = bytes(range(256)) * 32  # 8 segments of 1024 octets
    seg = lambda i: CFDPFileData(offset=i * SEG, data=body[i * SEG : (i + 1) * SEG], **HEAD)  # noqa: E731
    w = Wire()
    w.pdu(0.000, "forward", CFDPMetadata(file_size=len(body), checksum_type=15,
                                         source_file_name=b"a", dest_file_name=b"b", **HEAD))  # fmt: skip
    for n, i in enumerate([0, 1, 2, 3, 4, 6, 7]):
        w.pdu(0.001 + 0.001 * n, "forward", seg(i))
    w.pdu(0.0085, "return", CFDPNak(start_of_scope=0, end_of_scope=7 * SEG,
                                    segment_requests=[(5 * SEG, 6 * SEG)], **HEAD))  # fmt: skip
    w.pdu(0.011, "forward", seg(5))
    w.pdu(0.012, "forward", CFDPEOF(condition="no_error", file_size=len(body), checksum=0, **HEAD))
    w.pdu(0.0145, "return", ack("eof"))
    closed(w, 1.5)  # past the late pass's longer window too (0.9 s)
    scn = scenario(file_len=len(body))
    tc = w.check(tmp_path, scn, observed=scn.expect.outcomes[0], readings=[""])
    assert tc.status == "accepted", tc.message
    assert "reaction times" not in tc.message, tc.message


def test_new_data_the_wire_shows_after_the_transaction_closed_is_still_explained(
    tmp_path: Path,
) -> None:
    """The receiver's inactivity fault cancels the transaction after
    segment 0 (a Finished(inactivity)); the sender acknowledges it, and only
    then does segment 1, which it had queued before, reach the wire. The
    model has the sender emit segment 1 before it takes the Finished, which
    closes the transaction, and the PDU wait unsent (TraceCore's pend): the
    line that needs the Finished taken, the ACK, is one that new data may be
    emitted on the way to (TraceCFDP's FileDataOnTheWay), or no behaviour
    would explain segment 1."""
    w = Wire()
    w.pdu(0.000, "forward", md())
    w.pdu(0.001, "forward", fd(0))
    w.pdu(0.004, "return", fin("inactivity_detected", complete=False))
    w.pdu(0.007, "forward", ack("finished", "inactivity_detected"))
    w.pdu(0.008, "forward", fd(SEG))
    tc = w.check(tmp_path, scenario(), readings=[""])
    assert tc.status == "accepted", tc.message


def _file_of_segments(w: Wire, n: int) -> tuple[bytes, Callable[[int], Any]]:
    """A file of ``n`` segments of SEG octets, its Metadata sent at 0, and
    the File Data PDU of each segment."""
    body = bytes(range(256)) * (n * SEG // 256)

    def seg(i: int) -> Any:
        return CFDPFileData(offset=i * SEG, data=body[i * SEG : (i + 1) * SEG], **HEAD)

    w.pdu(0.000, "forward", CFDPMetadata(file_size=len(body), checksum_type=15,
                                         source_file_name=b"a", dest_file_name=b"b", **HEAD))  # fmt: skip
    return body, seg


def test_a_nak_answered_at_a_pace_before_it_is_processed_keeps_its_pace(
    tmp_path: Path,
) -> None:
    """The sender leaves segments 1 and 2 out before its EOF; their NAK
    reaches it at 6.5 ms, and it sends them 150 ms and 300 ms later, each
    within a window (250 ms) of the one before, as an endpoint pacing what
    a request asked for may (TraceCore's Met). Both were emitted already,
    so nothing but segment 1's send line makes the model process the NAK
    (TraceCore's AsksFor): that send meets it and moves segment 2's
    deadline to a window after it (Met), as in the eager pass."""
    w = Wire()
    body, seg = _file_of_segments(w, 4)
    w.pdu(0.001, "forward", seg(0))
    w.pdu(0.002, "forward", seg(3))
    w.pdu(0.003, "forward", CFDPEOF(condition="no_error", file_size=len(body), checksum=0, **HEAD))
    w.pdu(0.0045, "return", CFDPNak(start_of_scope=0, end_of_scope=4 * SEG,
                                    segment_requests=[(SEG, 3 * SEG)], **HEAD))  # fmt: skip
    w.pdu(0.0055, "return", ack("eof"))
    w.pdu(0.1565, "forward", seg(1))
    w.pdu(0.3065, "forward", seg(2))
    closed(w, 0.309)
    scn = scenario(file_len=len(body))
    tc = w.check(tmp_path, scn, observed=scn.expect.outcomes[0], readings=[""])
    assert tc.status == "accepted", tc.message
    assert "reaction times" not in tc.message, tc.message


def test_a_send_before_the_nak_arrived_does_not_answer_it(tmp_path: Path) -> None:
    """As above, but segment 1 goes out just before the receiver's NAK of it
    reaches the sender, and never again; the Finished comes 1.5 s later.
    The NAK still asks for segment 1 (4.6.4.2.1: every received NAK is
    answered by retransmitting what it asks for): a send before the
    request arrived meets nothing, so the trace is rejected."""
    w = Wire()
    body, seg = _file_of_segments(w, 4)
    w.pdu(0.001, "forward", seg(0))
    w.pdu(0.002, "forward", seg(2))
    w.pdu(0.003, "forward", seg(3))
    w.pdu(0.0035, "forward", CFDPEOF(condition="no_error", file_size=len(body), checksum=0, **HEAD))
    w.pdu(0.0045, "return", CFDPNak(start_of_scope=0, end_of_scope=3 * SEG,
                                    segment_requests=[(SEG, 2 * SEG)], **HEAD))  # fmt: skip
    w.pdu(0.006, "forward", seg(1))
    w.pdu(0.0065, "return", ack("eof"))
    closed(w, 1.5)
    scn = scenario(file_len=len(body))
    tc = w.check(tmp_path, scn, observed=scn.expect.outcomes[0], readings=[""])
    assert tc.status == "rejected", tc.message
    assert "obliged it to send the FD t1 seg=1" in tc.message, tc.message


def _metadata_held_back(w: Wire, nak: Any) -> None:
    """The Metadata held back behind both File Data PDUs and the EOF; the
    receiver's immediate NAK as the first File Data PDU arrives."""
    w.delay = 0.010
    w.pdu(0.000, "forward", md())  # arrives at 10 ms
    w.delay = 0.002
    w.pdu(0.001, "forward", fd(0))  # arrives at 3 ms
    w.pdu(0.004, "return", nak)
    w.pdu(0.005, "forward", fd(SEG))
    w.pdu(0.006, "forward", eof())


@pytest.mark.parametrize("asks_again", [False, True])
def test_file_data_ahead_of_the_metadata_is_kept(tmp_path: Path, asks_again: bool) -> None:
    """727.0-B-5 §4.6.1.2.8: reception completes once the Metadata, the File
    Data and the EOF have all been received, in any order; only repeated
    data is discarded (§4.6.1.2.7). A receiver that asks only for the
    Metadata is accepted; one that asks again for the segment it was given
    (cfdp-py, cfdp-rs) is rejected at that NAK, not left unchecked."""
    w = Wire()
    asked = [(0, 0), (0, SEG)] if asks_again else [(0, 0)]
    _metadata_held_back(
        w, CFDPNak(start_of_scope=0, end_of_scope=SEG, segment_requests=asked, **HEAD)
    )
    if asks_again:
        w.pdu(0.010, "forward", fd(0))
    w.pdu(0.014, "return", ack("eof"))
    w.pdu(0.015, "forward", md())  # the Metadata again, as the NAK asked
    closed(w, 0.020)
    tc = w.check(tmp_path, scenario(), readings=[""])
    if not asks_again:
        assert tc.status == "accepted", tc.message
        return
    assert tc.status == "rejected", tc.message
    assert "NAK" in tc.message and "frame 2 of b.pcap" in tc.message and tc.side == "b"
    assert "4.6.1.2.8" in tc.rule


@pytest.mark.parametrize(("first_at", "second_at"), [(0.006, 0.5), (0.006, 1.2), (None, 1.2)])
def test_an_immediate_nak_paced_past_the_late_window_is_unchecked(
    tmp_path: Path, first_at: float | None, second_at: float
) -> None:
    """Yamcs sends at most one immediate NAK per NAK timer interval. Segments
    1 and 4 of 8 are lost: segment 2's arrival is answered at once (the NAK
    of 1 at ``first_at``), segment 5's only at ``second_at``. Named past the
    late pass's window (0.9 of the 1 s timer), the trace is left unchecked,
    naming the question, since the immediate NAK mode's text cannot be read
    here; named late but within it, it is judged (and accepted: late, not
    wrong). A receiver that sends no NAK before the EOF is judged too: the
    model rejects it."""
    w = Wire()
    body, seg = _file_of_segments(w, 8)
    for i in range(4):
        w.pdu(0.001 + 0.001 * i, "forward", seg(i), lost=i == 1)
    if first_at is not None:  # segment 1 asked for and resent before segment 5 arrives
        w.pdu(first_at, "return", CFDPNak(start_of_scope=0, end_of_scope=3 * SEG,
                                          segment_requests=[(SEG, 2 * SEG)], **HEAD))  # fmt: skip
        w.pdu(first_at + 0.004, "forward", seg(1))
    for i in range(4, 8):
        w.pdu(0.020 + 0.001 * i, "forward", seg(i), lost=i == 4)
    w.pdu(0.030, "forward", CFDPEOF(condition="no_error", file_size=len(body), checksum=0, **HEAD))
    w.pdu(0.033, "return", ack("eof"))
    asked = [(4 * SEG, 5 * SEG)] if first_at is not None else [(SEG, 2 * SEG), (4 * SEG, 5 * SEG)]
    w.pdu(second_at, "return", CFDPNak(start_of_scope=0, end_of_scope=len(body),
                                       segment_requests=asked, **HEAD))  # fmt: skip
    if first_at is None:
        w.pdu(second_at + 0.004, "forward", seg(1))
    w.pdu(second_at + 0.005, "forward", seg(4))
    closed(w, second_at + 0.010)
    tc = w.check(tmp_path, scenario(file_len=len(body), nak_limit=2), readings=[""])
    if first_at is None:
        assert tc.status == "rejected", tc.message
        return
    if second_at < 0.9:
        assert tc.status == "accepted", tc.message
        return
    assert tc.status == "unchecked", tc.message
    assert "paces its immediate NAKs" in tc.message and "segment 4" in tc.message
    assert "frame 7 of b.pcap" in tc.message  # segment 5's arrival opened the gap


def test_the_earliest_thing_the_model_cannot_express_sets_the_cut() -> None:
    """Every pre-check runs on the whole trace: the cut is at the earliest
    point any of them names, whichever ran first (a check that needs what
    comes later would not fire on a prefix), and one with no known point
    leaves nothing to validate."""
    from conformance.core.contract import Unrepresentable, first_unrepresentable

    def raises(msg: str, at: float | None) -> Callable[[], None]:
        def check() -> None:
            raise Unrepresentable(msg, at=at)

        return check

    with pytest.raises(Unrepresentable, match="^early$"):
        first_unrepresentable([raises("late", 5.0), lambda: None, raises("early", 2.0)])
    with pytest.raises(Unrepresentable, match="^anywhere$"):
        first_unrepresentable([raises("early", 2.0), raises("anywhere", None)])
    first_unrepresentable([lambda: None])


def test_a_transaction_opened_again_after_its_end_is_unchecked(tmp_path: Path) -> None:
    """cfdp-py and cfdp-rs forget a finished transaction: a held copy of File
    Data that arrives after the ACK(Finished) opens it again, and their NAK
    asks for the Metadata. The model discards it; whether the book lets an
    entity forget a terminated transaction is not settled, so the trace is
    not judged."""
    w = Wire()
    data_sent(w)
    # the channel's second copy of File Data 0 (sent at 1 ms, delivered at
    # 3 ms), held back past the transaction's end and the receiver's timers
    copy = w.b[1].copy()
    copy.time = T0 + 1.520
    w.b.append(copy)
    w.pdu(0.006, "return", ack("eof"))
    closed(w, 0.007)
    w.pdu(1.525, "return", CFDPNak(start_of_scope=0, end_of_scope=SEG,
                                   segment_requests=[(0, 0)], **HEAD))  # fmt: skip
    scn = scenario()
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
    tc = w.check(tmp_path / "a", scn, readings=[""], duplicated=1)
    assert tc.status == "unchecked", tc.message
    assert "after its Finished was acknowledged" in tc.message and "frame" in tc.message
    # the trace before that NAK is validated, and accepted
    assert "the trace up to there is accepted" in tc.message
    # The run's own end may come from what follows the cut (the transaction
    # opened again and then abandoned): the outcome the harnesses reported
    # at the end does not confine the prefix, which is not rejected for it.
    ended = scn.expect.outcomes[0].model_copy(update={"receiver_outcome": "abandoned"})
    tc = w.check(tmp_path / "b", scn, readings=[""], duplicated=1, observed=ended)
    assert tc.status == "unchecked", tc.message
    assert tc.ends == []


def test_a_nak_repeated_before_the_eof_is_unchecked(tmp_path: Path) -> None:
    """File Data 0 is lost; File Data 1 opens the gap and the receiver asks
    for it. When File Data 2 arrives it asks again, with no new gap: the
    model's immediate NAK answers a new gap only, and whether the immediate
    NAK mode allows a repeat cannot be read here. The trace is validated up
    to that NAK and not judged past it; without the repeat it is accepted."""
    file = bytes(range(256)) * 12  # 3 segments
    meta = CFDPMetadata(file_size=len(file), checksum_type=15, source_file_name=b"a",
                        dest_file_name=b"b", **HEAD)  # fmt: skip

    def data(off: int) -> Any:
        return CFDPFileData(offset=off, data=file[off : off + SEG], **HEAD)

    def nak(end: int) -> Any:
        return CFDPNak(start_of_scope=0, end_of_scope=end, segment_requests=[(0, SEG)], **HEAD)

    for repeat in (False, True):
        w = Wire()
        w.pdu(0.000, "forward", meta)
        w.pdu(0.001, "forward", data(0), lost=True)
        w.pdu(0.002, "forward", data(SEG))
        w.pdu(0.003, "forward", data(2 * SEG))
        w.pdu(0.0045, "return", nak(2 * SEG))  # File Data 1 arrived at 4 ms
        if repeat:
            w.pdu(0.0055, "return", nak(3 * SEG))  # File Data 2 arrived at 5 ms
        w.pdu(0.007, "forward", data(0))  # the first NAK arrived at 6.5 ms
        w.pdu(0.008, "forward", CFDPEOF(condition="no_error", file_size=len(file), checksum=0,
                                        **HEAD))  # fmt: skip
        w.pdu(0.0105, "return", ack("eof"))
        closed(w, 0.011)
        (tmp_path / str(repeat)).mkdir()
        tc = w.check(tmp_path / str(repeat), scenario(nak_mode="immediate", file_len=len(file)))
        if not repeat:
            assert tc.status == "accepted", tc.message
        else:
            assert tc.status == "unchecked", tc.message
            assert "asks again for segment(s) [0]" in tc.message, tc.message
            assert "the trace up to there is accepted" in tc.message, tc.message


@pytest.mark.parametrize("prompt_first", [False, True])
def test_a_prompted_nak_is_not_taken_for_a_repeat(tmp_path: Path, prompt_first: bool) -> None:
    """File Data 0 and the EOF are lost; File Data 1 opens the gap and a
    Prompt (NAK) follows. The receiver's immediate NAK and its answer to the
    Prompt both ask for segment 0: both are the model's, whichever reached
    the receiver first (a review found the Prompt credited to the immediate
    NAK and its own answer taken for a repeat)."""

    def nak0() -> Any:
        return CFDPNak(start_of_scope=0, end_of_scope=SEG, segment_requests=[(0, SEG)], **HEAD)

    w = Wire()
    w.pdu(0.000, "forward", md())
    w.pdu(0.001, "forward", fd(0), lost=True)
    w.pdu(0.002, "forward", fd(SEG))  # arrives at 4 ms
    w.pdu(0.0025, "forward", eof(), lost=True)
    w.pdu(
        0.0026 if prompt_first else 0.0035, "forward", CFDPPrompt(response_required="nak", **HEAD)
    )
    w.pdu(0.0050, "return", nak0())
    w.pdu(0.0058, "return", nak0())
    w.pdu(0.0075, "forward", fd(0))  # the first NAK arrived at 7 ms
    w.pdu(0.0085, "forward", fd(0))  # the second at 7.8 ms
    w.pdu(1.0025, "forward", eof())  # the EOF's timer; arrives at 1.0045 s
    w.pdu(1.005, "return", ack("eof"))
    closed(w, 1.006)
    after = {"direction": "forward", "match": {"directive": "eof"}}
    scn = scenario(nak_mode="immediate",
                   requests=[{"entity": "sender", "request": "prompt_nak", "after": after}])  # fmt: skip
    tc = w.check(tmp_path, scn)
    assert tc.status == "accepted", tc.message


def test_a_fault_at_the_nak_limit_goes_out_when_its_timer_fires(tmp_path: Path) -> None:
    """A live run of a cfdp-rs 0.3.0 mutant (cargo-mutants'
    `src/dest.rs:967:62: replace <= with > in ...::lost_segment_handling`,
    data/cfdp-rs-mutant-resend-never-cleared, 2026-12-02): the tester sends,
    the first File Data is lost and resent at once, and the receiver, which
    no longer clears a resent segment from its lost list, NAKs it at 1 s and
    declares the NAK limit at 2 s. Timers fire at any time in the trace
    model; with no deadline on what they emit, the model fired both expiries
    before the resend arrived (making it redundant) and sent their NAK and
    Finished a second later, and the run passed. A timer's emission is now
    due within the window of the line after which it fired."""
    from conformance.tests.stored import stored_run

    _, _, _, tc = stored_run(CFDP, "cfdp-rs-mutant-resend-never-cleared", tmp_path)
    assert tc.status == "rejected", tc.message
    assert "Finished" in tc.message and "nak_limit_reached" in tc.message


def _class1_sent(observed_receiver: str) -> tuple[Wire, Scenario, Any]:
    """A Class 1 transfer whole on the wire; the receiver reports
    ``observed_receiver``."""
    w = Wire(mode=1)
    data_sent(w)
    scn = scenario(mode="class1")
    seen = scn.expect.outcomes[0].model_copy(update={"receiver_outcome": observed_receiver})
    return w, scn, seen


@pytest.mark.parametrize("receiver", ["completed", "open"])
def test_a_class1_receiver_with_the_whole_file_and_its_eof_ends_its_transaction(
    tmp_path: Path, receiver: str
) -> None:
    """The EOF (No error) in with the whole file, a Class 1 receiver's
    completion follows at once (TraceCFDP's prompt steps): one that
    reports its transaction still open when it exits stopped where the
    standard has it end (cfdp-rs 0.3.0's mutant dest.rs:988:40, which let
    the EOF by, passed as "open" before), one that completed is accepted."""
    w, scn, seen = _class1_sent(receiver)
    tc = w.check(tmp_path, scn, observed=seen, readings=[""])
    if receiver == "completed":
        assert tc.status == "accepted", tc.message
        return
    assert tc.status == "rejected", tc.message
    assert "the model's receiver still had a step" in tc.message, tc.message
    assert "ReceiverTxFinished" in tc.message, tc.message


def test_a_sender_that_stops_after_its_metadata_is_rejected_at_its_exit(
    tmp_path: Path,
) -> None:
    """A sender whose engine raised after the Metadata (a LibreCube mutant
    in machines/base.py did) sends nothing more: its first pass was a
    prompt step still to take, so the run is rejected at its exit, not
    judged a transaction still open."""
    w = Wire(mode=1)
    w.pdu(0.000, "forward", md())
    scn = scenario(mode="class1")
    seen = scn.expect.outcomes[0].model_copy(
        update={"sender_outcome": "open", "receiver_outcome": "open",
                "delivered": scn.expect.outcomes[0].delivered.model_copy(
                    update={"file_bytes_delivered": 0})}
    )  # fmt: skip
    tc = w.check(tmp_path, scn, observed=seen, readings=[""])
    assert tc.status == "rejected", tc.message
    assert "the model's sender still had a step" in tc.message, tc.message
    assert "SenderTxFileData" in tc.message, tc.message


@pytest.mark.parametrize(
    ("nak_mode", "lost", "naks"),
    [
        ("deferred", 0, True),
        ("deferred", 0, False),
        ("immediate", SEG, True),
        ("immediate", SEG, False),
    ],
)
def test_a_receiver_owes_a_nak_for_what_its_eof_leaves_missing(
    tmp_path: Path, nak_mode: str, lost: int, naks: bool
) -> None:
    """A LibreCube mutant (mutmut's `machines/receiver2.py:138` `mutmut_74`,
    2026-12-03) acknowledged an EOF that left a gap and never asked for it;
    its sender's inactivity fault ended the transaction 6 s later. The
    model's NAK after the EOF is not prompt, so against a sender that
    cancels on inactivity (a step it may take at any time) such a receiver
    passed. Upon initial receipt of the EOF (No error) a receiver missing
    data that no earlier NAK asked for shall issue a NAK (727.0-B-5, as
    TraceCFDP's NakOwes quotes it): with deferred NAKs any gap, with
    immediate ones the last segment, which no NAK before the EOF can name.
    With the NAK the transfer completes; without it, the run is rejected
    for the NAK owed, naming the EOF."""
    w = Wire()
    w.pdu(0.000, "forward", md())
    w.pdu(0.001, "forward", fd(0), lost=lost == 0)
    w.pdu(0.002, "forward", fd(SEG), lost=lost == SEG)
    w.pdu(0.003, "forward", eof())
    w.pdu(0.006, "return", ack("eof"))
    if naks:
        w.pdu(0.007, "return", CFDPNak(start_of_scope=0, end_of_scope=len(FILE),
                                       segment_requests=[(lost, min(lost + SEG, len(FILE)))],
                                       **HEAD))  # fmt: skip
        w.pdu(0.011, "forward", fd(lost))
        closed(w, 0.015)
    else:
        w.pdu(5.000, "forward", eof("inactivity_detected"))
        w.pdu(5.004, "return", ack("eof", "inactivity_detected"))
    scn = scenario(nak_mode=nak_mode)
    if not naks:
        seen = scn.expect.outcomes[0].model_copy(
            update={"sender_outcome": "cancelled", "receiver_outcome": "cancelled"}
        )
        scn = scn.model_copy(update={"expect": scn.expect.model_copy(update={"outcomes": [seen]})})
    tc = w.check(tmp_path, scn)
    if naks:
        assert tc.status == "accepted", tc.message
        return
    assert tc.status == "rejected", tc.message
    assert "NAK of t1's missing data that its EOF called for" in tc.message, tc.message
    assert tc.overdue, tc


@pytest.mark.parametrize("naks", [True, False])
def test_a_receiver_resumed_before_the_eof_owes_its_nak(tmp_path: Path, naks: bool) -> None:
    """The LibreCube mutant's own case (`machines/receiver2.py:138`
    `mutmut_74`, `cfdp-c2-receiver-suspend-after-md-resumed-fd1.1-eof.1`):
    the receiver's user suspends it as the Metadata arrives and resumes it
    100 ms later; File Data 1 and the first EOF are lost, and the EOF's
    resend reaches the resumed receiver at 1 s. Without its NAK, the model
    used to place the receiver's one suspension after that EOF, which
    dropped the NAK it owed, and resume it before the sender's inactivity
    cancel. A suspend step now comes no later than the resume's latest
    time (TraceCFDP's SuspendedInTime), so the NAK is owed."""
    w = Wire()
    w.pdu(0.000, "forward", md())
    w.pdu(0.001, "forward", fd(0))
    w.pdu(0.002, "forward", fd(SEG), lost=True)
    w.pdu(0.003, "forward", eof(), lost=True)
    w.pdu(1.003, "forward", eof())
    w.pdu(1.006, "return", ack("eof"))
    if naks:
        w.pdu(1.007, "return", CFDPNak(start_of_scope=0, end_of_scope=len(FILE),
                                       segment_requests=[(SEG, len(FILE))], **HEAD))  # fmt: skip
        w.pdu(1.011, "forward", fd(SEG))
        closed(w, 1.015)
    else:
        w.pdu(7.000, "forward", eof("inactivity_detected"))
        w.pdu(7.004, "return", ack("eof", "inactivity_detected"))
    after = {"direction": "forward", "match": {"directive": "metadata"}}
    asks = [{"entity": "receiver", "request": "suspend", "after": after, "resume_after_ms": 100}]
    scn = scenario(nak_mode="deferred", requests=asks)
    if not naks:
        seen = scn.expect.outcomes[0].model_copy(
            update={"sender_outcome": "cancelled", "receiver_outcome": "cancelled"}
        )
        scn = scn.model_copy(update={"expect": scn.expect.model_copy(update={"outcomes": [seen]})})
    tc = w.check(tmp_path, scn, readings=[""])
    if naks:
        assert tc.status == "accepted", tc.message
        return
    assert tc.status == "rejected", tc.message
    assert "NAK of t1's missing data that its EOF called for" in tc.message, tc.message


def test_a_receiver_that_exits_without_its_finished_is_rejected_at_its_exit(
    tmp_path: Path,
) -> None:
    """A live run of cfdp-py 0.7.0 receiving from the tester
    (`cfdp-c2-a1n1k1-l3-fd0.1-fd1.1-md.1`, 2026-12-03): the Metadata and
    both File Data are lost, the EOF opens the transaction, the receiver
    NAKs all three and gets them, and never sends its Finished (its finding
    cfdp-py-0.7.0-metadata-after-eof-stalls); the tester's sender cancels on
    its inactivity timer, the receiver stops, and the sender sends its
    EOF(cancel) once more when no ACK comes. The model's receiver had to
    make its Finished (a prompt step), which then waited unsent: the trace
    was rejected only at the sender's repeated EOF, which no send line left
    room for, and the judge held that against our tester (an error, not the
    implementation's fail). What an actor made with no deadline and never
    sent now rejects its exit (TraceCore)."""
    w = Wire()
    w.pdu(0.000, "forward", md(), lost=True)
    w.pdu(0.001, "forward", fd(0), lost=True)
    w.pdu(0.002, "forward", fd(SEG), lost=True)
    w.pdu(0.003, "forward", eof())
    w.pdu(0.006, "return", ack("eof"))
    w.pdu(0.007, "return", CFDPNak(start_of_scope=0, end_of_scope=len(FILE),
                                   segment_requests=[(0, 0), (0, len(FILE))], **HEAD))  # fmt: skip
    w.pdu(0.010, "forward", md())
    w.pdu(0.011, "forward", fd(0))
    w.pdu(0.012, "forward", fd(SEG))
    w.pdu(6.000, "forward", eof("inactivity_detected"))
    w.pdu(7.000, "forward", eof("inactivity_detected"))
    scn = scenario()
    seen = scn.expect.outcomes[0].model_copy(
        update={"sender_outcome": "abandoned", "receiver_outcome": "open"}
    )
    scn = scn.model_copy(update={"expect": scn.expect.model_copy(update={"outcomes": [seen]})})
    tc = w.check(tmp_path, scn, observed=seen, exits={"receiver": T0 + 6.050, "sender": T0 + 9.0})
    assert tc.status == "rejected", tc.message
    assert tc.actor == "receiver" and "the receiver's exit" in tc.message, tc.message
    assert "ReceiverTxFinished" in tc.actions, tc.actions


def _three_segments(w: Wire, lost: tuple[int, ...]) -> tuple[Scenario, Any]:
    """A three-segment file (offsets 0, 1024, 2048) whose segments at
    ``lost`` are lost; the Metadata and the EOF go through."""
    body = bytes(range(256)) * 12  # 3072 octets

    def seg(off: int) -> Any:
        return CFDPFileData(offset=off, data=body[off : off + SEG], **HEAD)

    w.pdu(0.000, "forward", CFDPMetadata(file_size=len(body), checksum_type=15,
                                         source_file_name=b"a", dest_file_name=b"b", **HEAD))  # fmt: skip
    for i, off in enumerate(range(0, len(body), SEG)):
        w.pdu(0.001 + 0.001 * i, "forward", seg(off), lost=off in lost)
    w.pdu(0.005, "forward", CFDPEOF(condition="no_error", file_size=len(body), checksum=0, **HEAD))
    return scenario(file_len=len(body), nak_limit=2), seg


def test_a_nak_paced_after_the_eof_by_one_sent_before_is_not_owed_at_once(
    tmp_path: Path,
) -> None:
    """Yamcs 5.13.2 sends one NAK per NAK timeout (CfdpIncomingTransfer's
    sendOrScheduleNak, as a review of the NAK rule read it): with immediate
    NAKs, a gap answered at once and the last segment lost too, its NAK for
    the last segment comes a timeout after the first, not at the EOF. Whether
    the text allows that pacing cannot be read here (the immediate NAKs'
    pacing is left unjudged for the same reason), so the NAK after the EOF
    is owed at once only from a receiver that has sent none before."""
    w = Wire()
    scn, seg = _three_segments(w, lost=(0, 2 * SEG))
    w.pdu(0.0045, "return", CFDPNak(start_of_scope=0, end_of_scope=2 * SEG,
                                   segment_requests=[(0, SEG)], **HEAD))  # fmt: skip
    w.pdu(0.008, "return", ack("eof"))
    w.pdu(0.009, "forward", seg(0))
    w.pdu(1.004, "return", CFDPNak(start_of_scope=0, end_of_scope=3 * SEG,
                                   segment_requests=[(2 * SEG, 3 * SEG)], **HEAD))  # fmt: skip
    w.pdu(1.008, "forward", seg(2 * SEG))
    closed(w, 1.012)
    tc = w.check(tmp_path, scn, readings=[""])
    assert tc.status == "accepted", tc.message


def test_a_receiver_without_a_suspend_request_cannot_be_suspended_to_drop_its_nak(
    tmp_path: Path,
) -> None:
    """The budget of suspensions counts both entities' requests: with only
    the sender's, the model could suspend the receiver at any time and for
    ever, and so drop the NAK it owed after the EOF (and be settled at its
    exit). A suspend step is now taken only for an entity whose request's
    trigger the trace shows (TraceCFDP's SuspendedInTime)."""
    w = Wire()
    w.pdu(0.000, "forward", md())
    w.pdu(0.400, "forward", fd(0), lost=True)
    w.pdu(0.401, "forward", fd(SEG))
    w.pdu(0.402, "forward", eof())
    w.pdu(0.406, "return", ack("eof"))
    w.pdu(6.000, "forward", eof("inactivity_detected"))
    w.pdu(6.004, "return", ack("eof", "inactivity_detected"))
    after = {"direction": "forward", "match": {"directive": "metadata"}}
    asks = [{"entity": "sender", "request": "suspend", "after": after, "resume_after_ms": 300}]
    scn = scenario(nak_mode="deferred", requests=asks)
    seen = scn.expect.outcomes[0].model_copy(
        update={"sender_outcome": "cancelled", "receiver_outcome": "cancelled"}
    )
    scn = scn.model_copy(update={"expect": scn.expect.model_copy(update={"outcomes": [seen]})})
    tc = w.check(tmp_path, scn, readings=[""])
    assert tc.status == "rejected", tc.message
    assert "NAK of t1's missing data that its EOF called for" in tc.message, tc.message
