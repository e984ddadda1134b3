"""An engine that stops listening during the robustness probes, read from
the captures (conformance/runner.py ``_engine_stopped``): the HDTN finding's
run, offline (hdtn-1.3.1-invalid-segment-type-stops-engine)."""

from __future__ import annotations

from pathlib import Path

from conformance import runner
from conformance.core.types import ALIVE_PROBE, RunResult
from conformance.segments import datagrams, port_unreachable

DATA = Path(__file__).parent / "data"
CAPTURES = Path(__file__).parents[2] / "reports" / "findings" / "ltp" / "captures"
RECEIVER_SIDE = CAPTURES / "hdtn-1.3.1-invalid-segment-type-stops-engine-receiver-side.pcap"
PORT = 1113


def _result() -> RunResult:
    text = (DATA / "ltp-probe-wrong-version-hdtn-result.json").read_text(encoding="utf-8")
    return RunResult.model_validate_json(text)


def test_the_refusals_are_read_with_the_datagram_they_quote() -> None:
    refused = port_unreachable(RECEIVER_SIDE, PORT)
    grams = datagrams(RECEIVER_SIDE, PORT)
    assert len(refused) == 2, refused
    # the receiver's host: where the report (type 8, RFC 5326 §3.1.2) came from
    receiver = next(g.src for g in grams if g.payload[0] & 0x0F == 8)
    for t, frame, src, quote in refused:
        # each quoting a datagram sent to it just before
        assert src == receiver, (src, receiver)
        assert quote and any(g.payload.startswith(quote) and g.t <= t for g in grams), frame
    # nothing of the kind on another port
    assert port_unreachable(RECEIVER_SIDE, PORT + 1) == []


def test_a_port_refused_before_the_alive_probe_fails_the_run_naming_the_probe() -> None:
    res = _result()
    ends = {"sender": res.sender, "receiver": res.receiver}
    grams = datagrams(RECEIVER_SIDE, PORT)
    runner._engine_stopped(res.sender, ends, grams, RECEIVER_SIDE, PORT)
    by_kind = {p.kind: p for p in res.sender.probes}
    stopped = by_kind["engine-stopped"]
    assert stopped.status == "fail" and "§6" in stopped.rule
    # the probe sent before the refusals is the suspect; the alive probe,
    # refused, is undelivered and never a suspect
    assert stopped.message.endswith("the probes wrong-version"), stopped.message
    assert by_kind[ALIVE_PROBE].status == "undelivered"
    assert by_kind["wrong-version"].status == "pass"


def test_a_refusal_after_the_implementation_stopped_is_no_fault() -> None:
    """An engine shut down at the run's end (ION's harness stops its node
    before the process exits) refuses what comes later: not a stop."""
    res = _result()
    res.receiver.exited_at = datagrams(RECEIVER_SIDE, PORT)[0].t  # it had already stopped
    ends = {"sender": res.sender, "receiver": res.receiver}
    runner._engine_stopped(res.sender, ends, datagrams(RECEIVER_SIDE, PORT), RECEIVER_SIDE, PORT)
    assert "engine-stopped" not in {p.kind for p in res.sender.probes}


def test_without_the_alive_probe_nothing_is_concluded() -> None:
    res = _result()
    res.sender.probes = [p for p in res.sender.probes if p.kind != ALIVE_PROBE]
    ends = {"sender": res.sender, "receiver": res.receiver}
    runner._engine_stopped(res.sender, ends, datagrams(RECEIVER_SIDE, PORT), RECEIVER_SIDE, PORT)
    assert [p.kind for p in res.sender.probes] == ["wrong-version"]
