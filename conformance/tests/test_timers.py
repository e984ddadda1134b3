"""Timers derived from the channel (conformance.timers), on the built-in link
profiles: RFC 5326 §6.2 wants every retransmission timer past the round trip;
RFC 5325 §3.1.3 adds serialization ("radiation") time and a margin."""

from __future__ import annotations

import math
from typing import Any

import pytest

from conformance import timers
from conformance.channel import profiles
from conformance.core.types import Impairment, Scenario
from suts.endpoint import EndpointFile
from suts.registry import get

BLOCK = {"block_len": 2000, "red_len": 1000, "segment_size": 500}


def _scn(channel: dict[str, Any], **extra: Any) -> Scenario:
    ltp = {**BLOCK, **extra.pop("ltp", {})}
    return Scenario.model_validate(
        {
            "name": "t",
            "protocol": "ltp",
            "ltp": ltp,
            "channel": channel,
            "expect": {
                "outcomes": [
                    {
                        "red_bytes_delivered": 1000,
                        "green_bytes_delivered": 1000,
                        "sender_outcome": "completed",
                        "receiver_outcome": "completed",
                    }
                ]
            },
            **extra,
        }
    )


def _frame_bits_forward() -> int:
    fwd, _ret = timers.queued_bytes(_scn({}))
    return fwd * 8


@pytest.mark.parametrize(
    "profile",
    ["grc-1mbps-250ms-pe0", "grc-10mbps-1250ms-pe1e-3", "nmsu-sgls-asymmetric",
     "acts-622mbps-return-1mbps", "lamar-cislunar-5000ms-ber0", "leo-pass"],
)  # fmt: skip
def test_timer_exceeds_round_trip_and_serialization(profile: str) -> None:
    prof = profiles.load(profile)
    t = timers.derive(_scn({"profile": profile}))
    rtt = prof.forward.link.delay_ms + prof.ret.link.delay_ms
    # The whole block, headers and frame overhead included, at the forward rate.
    block_ms = _frame_bits_forward() * 1000 / prof.forward.link.rate_bps
    assert t.round_trip_ms >= rtt
    assert t.retransmission_ms > rtt + block_ms
    assert t.retransmission_ms >= t.needed_ms + t.margin_ms
    assert t.retransmission_ms <= t.needed_ms + t.margin_ms + 1  # rounded up to the ms
    assert t.derived == {"retransmission_ms", "linger_ms", "close_wait_ms", "time_limit_s"}
    assert timers.warnings(_scn({"profile": profile})) == []


def test_grc_1mbps_250ms_figures() -> None:
    """500 ms round trip, 2356 frame bytes of data at 1 Mb/s (18.8 ms), one
    report back (0.8 ms), 1000 ms margin: 1520 ms, where 300 ms used to fail."""
    t = timers.derive(_scn({"profile": "grc-1mbps-250ms-pe0"}))
    assert t.path.round_trip_ms == 500
    assert 18 < t.block_serialization_ms < 20
    assert t.retransmission_ms == 1520
    assert t.linger_ms == 2 * 1520  # two timer periods: more than two round trips + margin
    assert t.close_wait_ms == t.retransmission_ms
    # (limit 1 + 2) × 2 timers + block + linger + 5 s slack, rounded up
    assert t.time_limit_s == math.ceil((3 * 2 * 1520 + t.block_serialization_ms + 3040) / 1000 + 5)


def test_asymmetric_link_uses_each_direction_rate() -> None:
    """NMSU SGLS asymmetric: 2.4 kb/s forward carries the block (seconds),
    115.2 kb/s return carries the report."""
    t = timers.derive(_scn({"profile": "nmsu-sgls-asymmetric"}))
    fwd, ret = timers.queued_bytes(_scn({}))
    assert t.block_serialization_ms == pytest.approx(fwd * 8 * 1000 / 2400)
    assert t.serialization_ms == pytest.approx(fwd * 8 * 1000 / 2400 + ret * 8 * 1000 / 115200)
    assert t.retransmission_ms > 10_000 + 7_800


def test_acts_slow_return_link() -> None:
    t = timers.derive(_scn({"profile": "acts-622mbps-return-1mbps"}))
    _fwd, ret = timers.queued_bytes(_scn({}))
    assert t.serialization_ms > ret * 8 * 1000 / 1e6
    assert t.retransmission_ms > 540


def test_worst_timeline_values_count() -> None:
    """A timeline event that lengthens the delay or slows the link later in
    the run sizes the timer."""
    base = timers.derive(_scn({"forward": {"link": {"delay_ms": 100, "rate_bps": 1e6}}}))
    later = timers.derive(
        _scn(
            {
                "forward": {
                    "link": {"delay_ms": 100, "rate_bps": 1e6},
                    "timeline": [{"t": 30, "set": {"delay_ms": 2000, "rate_bps": 1e5}}],
                }
            }
        )
    )
    assert later.path.fwd_delay_ms == 2000 and later.path.fwd_rate_bps == 1e5
    assert later.retransmission_ms > base.retransmission_ms + 1900
    leo = timers.derive(_scn({"profile": "leo-pass"}))
    assert leo.path.fwd_delay_ms == 8.3  # at the horizon, the pass's worst


def test_scenario_overrides_profile_link() -> None:
    t = timers.derive(
        _scn({"profile": "grc-1mbps-25ms-pe0", "return": {"link": {"delay_ms": 900}}})
    )
    assert t.path.ret_delay_ms == 900 and t.path.fwd_delay_ms == 25
    assert t.retransmission_ms > 925


def test_explicit_values_win_and_are_marked() -> None:
    scn = _scn(
        {"profile": "grc-1mbps-250ms-pe0"},
        timers={"retransmission_ms": 5000, "linger_ms": 42},
        time_limit_s=99,
    )
    t = timers.derive(scn)
    assert (t.retransmission_ms, t.linger_ms, t.time_limit_s) == (5000, 42, 99)
    assert t.explicit == {"retransmission_ms", "linger_ms", "time_limit_s"}
    assert t.derived == {"close_wait_ms"}
    assert t.as_dict()["retransmission_ms.source"] == "explicit"
    assert timers.warnings(scn) == []


def test_warning_when_explicit_timer_is_below_round_trip() -> None:
    scn = _scn({"profile": "grc-1mbps-250ms-pe0"}, timers={"retransmission_ms": 300})
    notes = timers.warnings(scn)
    assert len(notes) == 1
    assert "retransmission_ms 300 ms is below" in notes[0] and "round trip 500" in notes[0]
    assert "RFC 5326 §6.2" in notes[0] and "1520 ms" in notes[0]
    # Above the round trip but below round trip + serialization: still a warning.
    slow = {"profile": "nmsu-sgls-asymmetric"}
    assert timers.warnings(_scn(slow, timers={"retransmission_ms": 10_500}))
    assert not timers.warnings(_scn(slow, timers={"retransmission_ms": 20_000}))


def test_time_limit_grows_with_retransmission_limit_and_is_capped() -> None:
    ch = {"profile": "grc-1mbps-1250ms-pe1e-1"}
    one = timers.derive(_scn(ch))
    twenty = timers.derive(_scn(ch, ltp={"retransmission_limit": 20}))
    assert twenty.time_limit_s - one.time_limit_s == pytest.approx(
        19 * 2 * one.retransmission_ms / 1000, abs=1
    )
    far = _scn({"profile": "earth-mars-farthest"}, ltp={"retransmission_limit": 20})
    t = timers.derive(far)
    assert t.capped and t.time_limit_s == timers.TIME_LIMIT_CAP_S
    assert any("cut to" in w for w in timers.warnings(far))


def test_extra_rule_delay_lengthens_time_limit_not_timer() -> None:
    plain = timers.derive(_scn({}))
    held = timers.derive(
        _scn(
            {},
            impairments=[
                {"direction": "return", "match": {"type": "RS"}, "action": "delay",
                 "delay_ms": 4000}
            ],
        )
    )  # fmt: skip
    assert held.retransmission_ms == plain.retransmission_ms
    assert held.time_limit_s >= plain.time_limit_s + 4


def test_licklider_endpoint_file_passes_the_derived_knobs() -> None:
    from suts.base import Endpoint

    scn = _scn(
        {"profile": "grc-1mbps-250ms-pe0"}, ltp={"client_service_id": 3, "retransmission_limit": 4}
    )
    t = timers.derive(scn)
    ep = Endpoint(ip="10.0.0.1", peer_ip="10.0.0.2", port=1113)
    sut = get("licklider")
    assert isinstance(sut, EndpointFile)

    def flags(s: Scenario, role: str) -> dict[str, str]:
        argv = sut.sender_argv(s, ep) if role == "sender" else sut.receiver_argv(s, ep)
        sut.cleanup()
        return {a: b for a, b in zip(argv, argv[1:], strict=False) if a.startswith("--")}

    snd, rcv = flags(scn, "sender"), flags(scn, "receiver")
    for f in (snd, rcv):
        assert f["--rtx-timeout-ms"] == str(math.ceil(t.retransmission_ms))
        assert f["--linger-ms"] == str(math.ceil(t.linger_ms))
        assert f["--time-limit-ms"] == str(math.ceil(t.time_limit_s * 1000))
        assert f["--max-retransmissions"] == f["--cancel-rtx-limit"] == "4"
        assert f["--client-service-id"] == "3"
    assert (
        rcv["--close-wait-ms"] == str(math.ceil(t.close_wait_ms)) and "--close-wait-ms" not in snd
    )
    other = _scn({}, ltp={"client_service_id": 3, "receiver_client_service_id": 8})
    assert flags(other, "receiver")["--client-service-id"] == "8"
    assert flags(other, "sender")["--client-service-id"] == "3"
    knobs = sut.knobs(scn)
    assert knobs["retransmission-ms"] == 1520
    assert knobs["timers.retransmission_ms.source"] == "derived"
    assert knobs["sender.engine"] == 1 and knobs["receiver.engine"] == 2
    assert knobs["udp-port"] == 1113


def test_fragmented_run_is_announced() -> None:
    scn = _scn({"fragment": True})
    scn.impairments = [Impairment(direction="return", match={"type": "RS"})]
    assert any("impairments cannot see" in w for w in timers.warnings(scn))
