"""The CFDP interoperability matrix: its configurations cover what issue 10
asks (each ID width, sequence-number width, checksum type, PDU CRC setting,
segment size and class), a cell an implementation cannot take is "not
supported" (never run, never a fail), and live: cfdp-py and cfdp-rs each
send to each through the emulator, judged by the model, with the matrix in
interop.html."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance import interop
from conformance.protocols.cfdp import SPEC as CFDP
from generators.cfdp.interop import CONFIGS as CFDP_CONFIGS
from reports.html import cell_status
from suts.registry import get


def test_the_configurations_cover_every_value_asked_for() -> None:
    seen: dict[str, set[object]] = {}
    for c in CFDP_CONFIGS:
        for k, v in c.params.items():
            seen.setdefault(k, set()).add(v)
    assert {1, 2, 4} <= seen["entity_id_len"]
    assert {1, 2, 4} <= seen["sequence_number_len"]  # 8-, 16- and 32-bit
    assert seen["checksum_type"] == {"modular", "crc32", "crc32c", "null"}
    assert seen["pdu_crc"] == {True, False}
    assert min(seen["segment_size"]) == 512 and max(seen["segment_size"]) == 4096  # type: ignore[type-var]
    assert {"class1", "class2"} <= seen["mode"]
    # a segment over the Ethernet MTU needs a link that carries it whole
    for c in CFDP_CONFIGS:
        assert c.mtu >= int(c.params["segment_size"]) + 100  # type: ignore[call-overload]


def test_a_mark_is_the_worst_verdict_and_unsupported_is_no_fail() -> None:
    assert cell_status(["pass", "pass"]) == "pass"
    assert cell_status(["pass", "inconclusive"]) == "inconclusive"
    assert cell_status(["inconclusive", "fail", "pass"]) == "fail"
    assert cell_status(["unsupported", "unsupported"]) == "unsupported"
    assert cell_status([]) == "not run"


def test_cells_an_implementation_cannot_take_say_why(tmp_path: Path) -> None:
    cfg = next(c for c in CFDP_CONFIGS if c.params["segment_size"] == 4096)
    scn = tmp_path / f"cfdp-interop-{cfg.name}-nominal.json"
    scn.write_text(json.dumps({"params": cfg.params}))
    by = {(c.sender, c.receiver): c for c in interop.cells([(cfg, scn)], [get("cfdp-py"),
                                                                         get("cfdp-rs")])}  # fmt: skip
    assert by[("cfdp-py", "cfdp-py")].unsupported == ""
    assert (
        "cfdp-rs: segment_size 4096: File Data segments of at most 4080"
        in by[("cfdp-py", "cfdp-rs")].unsupported
    )
    assert "cfdp-rs" in by[("cfdp-rs", "cfdp-py")].unsupported


@pytest.mark.integration
@pytest.mark.netns
def test_two_implementations_interoperate_live(tmp_path: Path) -> None:
    for name in ("cfdp-py", "cfdp-rs"):
        try:
            get(name).ensure_built()
        except Exception as exc:  # noqa: BLE001
            pytest.skip(f"{name}: {exc}")
    cfg = CFDP_CONFIGS[:1]
    seen: list[tuple[int, int, str]] = []
    # two lanes: pabot runs the four cells two at once, in processes of its own
    out = interop.interop(CFDP, ["cfdp-py", "cfdp-rs"], tmp_path, configs=cfg,
                          only="-nominal", on_test=lambda *a: seen.append(a),
                          lanes=2)  # fmt: skip
    assert len(out.cells) == 4 and len(out.runs) == 4
    assert seen[-1][:2] == (4, 4)  # progress from pabot's processes
    for name, run in out.runs.items():
        # the nominal transfer: each pair completes, as the model requires
        assert run.verdict.status == "pass", (name, run.verdict.reasons)
        assert run.result is not None and run.result.receiver.payload_ok is True
        assert " -> " in run.verdict.sut  # both implementations named
    page = out.report.read_text(encoding="utf-8")
    # sender rows, receiver columns, one mark per configuration linking to its runs
    assert len(re.findall(r'class="mark pass" href="#cfdp-(?:py|rs)--cfdp-(?:py|rs)--', page)) == 4
    assert 'id="cfdp-rs--cfdp-py--c2-e2-s32-modular"' in page
    # pabot's merged output: the four tests in one output.xml, each passed
    root = ET.parse(tmp_path / "robot" / "output.xml").getroot()
    tests = {t.get("name"): t.find("status") for t in root.iter("test")}
    assert len(tests) == 4
    assert all(st is not None and st.get("status") == "PASS" for st in tests.values()), tests
    assert (tmp_path / "robot" / "log.html").exists()


def test_ltp_losses_hold_for_any_segmentation_and_absent_peers_are_no_fail(
    tmp_path: Path,
) -> None:
    from generators.ltp.interop import CONFIGS as LTP_CONFIGS
    from generators.ltp.interop import config_names

    red = LTP_CONFIGS[0]
    assert red.params["red_len"] == red.params["block_len"] and red.losses
    # ION's least retransmission limit, in every configuration
    assert {c.params["retransmission_limit"] for c in LTP_CONFIGS} == {3}
    assert config_names(red)[1:] == [
        "ltp-interop-red-10000-s1000-lost-reddata.1",
        "ltp-interop-red-10000-s1000-lost-RS.1",
        "ltp-interop-red-10000-s1000-lost-RA.1",
    ]
    # an optional implementation that was not built: its cells are not
    # supported, saying why, and never run
    absent = tmp_path / "absent.toml"
    absent.write_text(
        'name = "absent"\nprotocol = "ltp"\nversion = "0"\noptional = true\n'
        '[build]\ncommand = ["true"]\nmakes = "bin/x"\nrequires = ["nowhere.h"]\n'
        'hint = "build it"\n[run]\nsender = ["x"]\nreceiver = ["x"]\n'
    )
    scn = tmp_path / "ltp-interop-red-nominal.json"
    scn.write_text(json.dumps({"params": {"protocol": "ltp", **red.params}}))
    by = {
        (c.sender, c.receiver): c.unsupported
        for c in interop.cells([(red, scn)], [get("licklider"), get(str(absent))])
    }
    assert by[("licklider", "licklider")] == ""
    assert by[("licklider", "absent")].startswith("absent: not built here (")
    assert "nowhere.h not found" in by[("absent", "absent")]
