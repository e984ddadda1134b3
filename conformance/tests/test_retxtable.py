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
    assert keys <= {"red_data", "green_data", "RS", 0, 1000, 2000, 3000}
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
