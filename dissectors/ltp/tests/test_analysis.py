"""ltp.lua's session analysis through the real tshark (two passes): the links
between checkpoint, report, acknowledgment and cancel frames, response
times, block sizes, copies, and every analysis expert on a crafted capture
that triggers it. Also: every expert the dissector registers is triggered by
some capture in these tests."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from conformance.protocols.ltp import SPEC
from dissectors.ltp.layer import LTP
from dissectors.ltp.tests.test_dissector import MALFORMED_CASES, PROTOCOL_CASES
from dissectors.tshark import DecodedFrame, decode

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed"),
]


def _seg(number: int, type_: str, **fields: Any) -> bytes:
    return bytes(LTP(type=type_, session_originator=1, session_number=number, **fields))


def _data(number: int, type_: str, off: int, n: int, **fields: Any) -> bytes:
    return _seg(number, type_, client_service_id=1, offset=off, data=b"d" * n, **fields)


# (frame payload, the analysis experts it must carry), in capture order
CAPTURE: list[tuple[bytes, set[str]]] = [
    # session 10: a red part, its checkpoint answered and acknowledged; then
    # green data past the end of block and red data above green
    (_data(10, "RD", 0, 1000), set()),  # 1
    (_data(10, "RD-CP-EORP", 1000, 1000, checkpoint_serial=5, report_serial=0), set()),  # 2
    (_data(10, "GD-EOB", 2000, 1000), set()),  # 3
    (
        _seg(
            10,
            "RS",
            report_serial=7,
            checkpoint_serial=5,
            upper_bound=2000,
            lower_bound=0,
            claims=[(0, 2000)],
        ),
        set(),
    ),  # 4  # fmt: skip
    (_seg(10, "RA", report_serial=7), set()),  # 5
    (_data(10, "GD", 3000, 100), {"beyond_eob"}),  # 6
    (_data(10, "RD", 2500, 100), {"miscolored"}),  # 7
    # session 11: a checkpoint sent three times and never answered (limit 1)
    (
        _data(11, "RD-CP-EORP-EOB", 0, 500, checkpoint_serial=1, report_serial=0),
        {"checkpoint_no_report"},
    ),  # 8  # fmt: skip
    (
        _data(11, "RD-CP-EORP-EOB", 0, 500, checkpoint_serial=1, report_serial=0),
        {"checkpoint_no_report", "copy"},
    ),  # 9  # fmt: skip
    (
        _data(11, "RD-CP-EORP-EOB", 0, 500, checkpoint_serial=1, report_serial=0),
        {"checkpoint_no_report", "copy", "rtx_limit"},
    ),  # 10  # fmt: skip
    # ... a report for a checkpoint never seen, never acknowledged; an RA,
    # a CAS for nothing; a CR never acknowledged
    (
        _seg(
            11,
            "RS",
            report_serial=4,
            checkpoint_serial=99,
            upper_bound=500,
            lower_bound=0,
            claims=[(0, 500)],
        ),
        {"report_unknown_cp", "report_no_ack"},
    ),  # 11  # fmt: skip
    (_seg(11, "RA", report_serial=55), {"ack_unknown_report"}),  # 12
    (_seg(11, "CAS"), {"ack_no_cancel"}),  # 13
    (_seg(11, "CR", reason=2), {"cancel_no_ack"}),  # 14
    # session 12: two end-of-block segments that disagree
    (_data(12, "GD-EOB", 0, 100), set()),  # 15
    (_data(12, "GD-EOB", 0, 200), {"size_changed"}),  # 16
    # session 13: green data below red data
    (_data(13, "RD", 500, 100), set()),  # 17
    (_data(13, "GD", 100, 100), {"miscolored"}),  # 18
    # session 14: a cancel acknowledged
    (_seg(14, "CS", reason=0), set()),  # 19
    (_seg(14, "CAS"), set()),  # 20
]
ANALYSIS_EXPERTS = {
    "miscolored",
    "beyond_eob",
    "size_changed",
    "copy",
    "rtx_limit",
    "report_unknown_cp",
    "ack_unknown_report",
    "ack_no_cancel",
    "checkpoint_no_report",
    "report_no_ack",
    "cancel_no_ack",
}


@pytest.fixture(scope="module")
def frames(tmp_path_factory: pytest.TempPathFactory) -> list[DecodedFrame]:
    from dissectors.ltp.tests.test_dissector import write_pcap

    pcap = write_pcap(tmp_path_factory.mktemp("ltp") / "analysis.pcap", [p for p, _ in CAPTURE])
    out = decode(pcap, protocol="ltp", analysis=True, prefs={"rtx_limit": "1"})
    assert len(out) == len(CAPTURE)
    return out


def _analysis_experts(frame: DecodedFrame) -> set[str]:
    prefix = "dtnltp.expert."
    return {
        e["name"][len(prefix) :]
        for e in frame.experts
        if e["name"][len(prefix) :] in ANALYSIS_EXPERTS
    }


@pytest.mark.parametrize(
    "index", range(len(CAPTURE)), ids=[f"frame{i + 1}" for i in range(len(CAPTURE))]
)
def test_each_frame_carries_exactly_its_analysis_experts(
    frames: list[DecodedFrame], index: int
) -> None:
    assert _analysis_experts(frames[index]) == CAPTURE[index][1], frames[index].experts


def test_links_response_times_and_sizes(frames: list[DecodedFrame]) -> None:
    f = {fr.number: fr.fields for fr in frames}
    # the checkpoint (2) answered by the report (4), acknowledged by the RA (5)
    assert f[2]["analysis.report_frame"] == 4
    assert f[4]["analysis.checkpoint_frame"] == 2
    assert f[4]["analysis.ack_frame"] == 5
    assert f[5]["analysis.acks_frame"] == 4
    assert isinstance(f[4]["analysis.response_time"], str)
    # sizes: the end of block and of the red part, on every segment of the session
    assert (f[1]["analysis.block_size"], f[1]["analysis.red_part_size"]) == (3000, 2000)
    # copies: the checkpoint of session 11 three times
    assert [f[n]["analysis.copy"] for n in (8, 9, 10)] == [1, 2, 3]
    assert f[9]["analysis.copy_of"] == 8 and f[10]["analysis.copy_of"] == 8
    # the acknowledged cancel of session 14
    assert f[19]["analysis.ack_frame"] == 20 and f[20]["analysis.acks_frame"] == 19
    # analysis is its own group: sequence (PROTOCOL for the RFC's data rules)
    groups = {e["name"]: e["group"] for fr in frames for e in fr.experts}
    assert groups["dtnltp.expert.miscolored"] == "protocol"
    assert groups["dtnltp.expert.report_no_ack"] == "sequence"


def test_one_pass_gives_no_look_ahead(tmp_path: Path) -> None:
    """Without the second pass, what needs later frames is absent, and
    what looks back is there."""
    from dissectors.ltp.tests.test_dissector import write_pcap

    pcap = write_pcap(tmp_path / "a.pcap", [p for p, _ in CAPTURE])
    one = decode(pcap, protocol="ltp", prefs={"analysis": "TRUE", "rtx_limit": "1"})
    names = {e["name"] for fr in one for e in fr.experts}
    assert "dtnltp.expert.checkpoint_no_report" not in names
    assert "dtnltp.expert.miscolored" in names


def test_runs_are_decoded_without_analysis(frames: list[DecodedFrame], tmp_path: Path) -> None:
    from dissectors.ltp.tests.test_dissector import write_pcap

    pcap = write_pcap(tmp_path / "a.pcap", [p for p, _ in CAPTURE])
    plain = decode(pcap, protocol="ltp")
    assert not any(k.startswith("analysis.") for fr in plain for k in fr.fields)
    assert not any(_analysis_experts(fr) for fr in plain)


def test_every_registered_expert_is_triggered_by_a_test_capture() -> None:
    lua = SPEC.dissector.lua.read_text()
    registered = set(re.findall(r'new_expert\("([a-z_0-9]+)"', lua))
    triggered = {c[2] for c in MALFORMED_CASES} | {c[2] for c in PROTOCOL_CASES}
    triggered |= set().union(*(want for _, want in CAPTURE))
    assert registered == triggered, (registered - triggered, triggered - registered)
