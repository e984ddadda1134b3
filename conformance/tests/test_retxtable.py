"""The retransmission table (conformance/retxtable.py): its rows come from
the catalogue's data and report loss patterns, each runs live against
licklider, and the table's files say what the model expects and what
arrived."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance import retxtable
from conformance.protocols.ltp import SPEC as LTP
from generators.ltp import catalogue
from suts.registry import get

pytestmark = [pytest.mark.netns, pytest.mark.integration]


def test_rows_are_data_and_report_losses(tmp_path: Path) -> None:
    rows = catalogue.retx_scenarios(tmp_path)
    assert rows[0].name.endswith("-nominal")
    keys = {k for s in rows for imp in s.impairments for k in imp.match.values()}
    # r3g1: red 0, 1000 and the checkpoint by the red part's last byte, the EOB by the block's
    assert keys <= {"red_data", "green_data", "RS", 0, 1000, 2999, 3999}
    assert len(rows) == len({s.name for s in rows}) >= 20


def test_table_of_three_rows(tmp_path: Path) -> None:
    """The nominal row and two single losses of data, run live: licklider
    delivers bytes the model allows, and the table says so in all three files."""
    wanted = {f"ltp-r3g1l1-{x}" for x in ("nominal", "red0.1", "green3000.1")}
    scenarios = [s for s in catalogue.retx_scenarios(tmp_path / "tlc") if s.name in wanted]
    assert len(scenarios) == 3
    rows = retxtable.build(LTP, scenarios, get("licklider"), tmp_path)
    assert [r.within for r in rows] == [True, True, True], rows
    # each judged at its trace's end: one exact value, the one delivered
    assert all(r.exact and r.expected == [r.observed] for r in rows), rows
    table = json.loads((tmp_path / "retx-table.json").read_text())
    assert [r["scenario"] for r in table["rows"]] == [s.name for s in scenarios]
    md = (tmp_path / "retx-table.md").read_text()
    assert "red_data 0 #1" in md and "3000/1000" in md
    assert "(set)" not in md.split("\n\n")[1] and "end of the run's validated trace" in md
    assert "<table>" in (tmp_path / "retx-table.html").read_text()
    # and as a section of the certification report
    from reports.html import render_certification

    report = render_certification(
        LTP, get("licklider"), tmp_path, [], [], tmp_path / "none.html",
        retx_table=tmp_path / "retx-table.json",
    )  # fmt: skip
    page = report.read_text()
    assert 'id="retx-table"' in page and "red_data 0 #1" in page


def test_the_ns3_papers_geometry_is_built_in() -> None:
    """`--geometry ns3`: a 5000-byte block, 1500 bytes red, 1461-byte
    segments (red 0 and 1461, green 1500, 2961 and 4422), every pattern of
    at most 4 first copies lost among them and the first report: 57 rows,
    with no TLC. Its all-red and all-green variants too."""
    g = catalogue.RETX_GEOMETRIES
    rows = catalogue.retx_grid(**g["ns3"])
    assert len(rows) == 1 + 6 + 15 + 20 + 15
    offsets = {(i.match.get("kind"), i.match.get("holds")) for s in rows for i in s.impairments}
    # each part's last segment named by the part's last byte (outcomes.holding_byte)
    assert offsets == {("red_data", 0), ("red_data", 1499), ("green_data", 1500),
                       ("green_data", 2961), ("green_data", 4999), (None, None)}  # fmt: skip
    assert all(s.channel.mtu >= 1461 + 23 + 28 for s in rows)
    assert len(catalogue.retx_grid(**g["ns3-all-red"])) == 1 + 5 + 10 + 10 + 5
    # no report to lose in a block with no red part
    assert len(catalogue.retx_grid(**g["ns3-all-green"])) == 1 + 4 + 6 + 4 + 1


def test_a_row_of_the_ns3_geometry_is_judged_exactly(tmp_path: Path) -> None:
    """A row past every outcome set TLC enumerates (the ns-3 paper's block:
    segment 1461 of the red part and the green segment at 2961 lost), run
    live: judged at its trace's end, the model's bytes exactly, and
    licklider's delivery equal to them."""
    name = "ltp-retx-5000-1500-1461-red1461.1-green2961.1"
    (scn,) = [s for s in catalogue.retx_grid(**catalogue.RETX_GEOMETRIES["ns3"]) if s.name == name]
    (row,) = retxtable.build(LTP, [scn], get("licklider"), tmp_path)
    assert row.exact and row.expected == [row.observed], row
    # the lost green segment (1461 bytes) is never resent (RFC 5326 §6.13: red only)
    assert row.observed == f"1500/{3500 - 1461}", row
    assert row.verdict == "pass", row
