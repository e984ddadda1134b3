"""The retransmission table (the LTP issue; in the manner of Table 1 of the
ns-3 LTP paper): for one block geometry, one row per loss pattern of data
segments and reports, with the bytes the model expects the receiver to get
(red and green, every value it allows) and the bytes the implementation
delivered, its verdict and its trace validation. The rows and their geometry
come from the protocol's ``retx_table`` capability (LTP's catalogue,
generators/ltp/catalogue.py); each is run live like any scenario.

Written as ``retx-table.json``, ``retx-table.md`` and ``retx-table.html`` in
the table's folder, row by row, so an interrupted table keeps its rows.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from conformance.core.contract import ProtocolSpec
from conformance.core.errors import NotSupported
from conformance.core.types import Impairment, RunOutcome, Scenario, mark_status
from conformance.runner import error_outcome, run_scenario
from suts.base import SutAdapter

_SOURCE = (
    "Expected: the bytes the model holds at the end of the run's validated trace, exactly; "
    "marked (set) where the trace was not judged at its end, every value the scenario's "
    "outcome set allows."
)


@dataclass
class Row:
    scenario: str
    losses: list[str]
    # "red/green" bytes the model expects: at the end of the run's validated
    # trace (exact: the model's state for what the wire showed), else every
    # value the scenario's outcome set allows
    expected: list[str]
    observed: str  # "red/green" bytes delivered, or "-"
    within: bool  # observed is one of expected
    verdict: str
    trace: str
    exact: bool = False  # expected comes from the trace's end

    @property
    def loss_text(self) -> str:
        return ", ".join(self.losses) or "none"

    @property
    def expected_text(self) -> str:
        """The expected bytes; "(set)" where they are the outcome set's,
        the trace not having been judged at its end."""
        return " or ".join(self.expected) + ("" if self.exact else " (set)")


def loss_text(imp: Impairment) -> str:
    """One loss as the table shows it: "RS #2", "red_data 1000 #1"."""
    what = " ".join(str(v) for v in imp.match.values())
    return f"{what} #{imp.occurrence}" + (f"-{imp.occurrence + imp.count - 1}" * (imp.count > 1))


def row_of(scn: Scenario, outcome: RunOutcome) -> Row:
    trace = outcome.verdict.trace
    ends = trace.ends if trace is not None and trace.status == "accepted" else []
    expected = sorted({o.delivered.cell() for o in (ends or scn.expect.outcomes)})
    res = outcome.result
    delivered = res.receiver.delivered if res is not None else None
    observed = delivered.cell() if delivered is not None else "-"
    return Row(
        scenario=scn.name,
        losses=[loss_text(imp) for imp in scn.impairments],
        expected=expected,
        observed=observed,
        within=observed in expected,
        verdict=outcome.verdict.mark,
        trace=trace.status if trace is not None else "-",
        exact=bool(ends),
    )


def write(rows: list[Row], out: Path, title: str) -> None:
    (out / "retx-table.json").write_text(
        json.dumps({"title": title, "rows": [asdict(r) for r in rows]}, indent=2) + "\n",
        encoding="utf-8",
    )
    head = "| # | losses | expected red/green B | observed red/green B | verdict | trace |"
    lines = [f"# {title}", "", head, "|---|---|---|---|---|---|"]
    for i, r in enumerate(rows, 1):
        mark = "" if r.within else " (not allowed)"
        lines.append(
            f"| {i} | {r.loss_text} | {r.expected_text} | {r.observed}{mark} "
            f"| {r.verdict} | {r.trace} |"
        )
    lines += ["", _SOURCE]
    (out / "retx-table.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    cells = "".join(
        f"<tr><td>{i}</td><td>{html.escape(r.loss_text)}</td>"
        f"<td>{html.escape(r.expected_text)}</td>"
        f"<td class='{'ok' if r.within else 'bad'}'>{html.escape(r.observed)}</td>"
        f"<td class='{mark_status(r.verdict)}'>{html.escape(r.verdict)}</td><td>{r.trace}</td></tr>"
        for i, r in enumerate(rows, 1)
    )
    page = (
        "<!doctype html><meta charset='utf-8'><title>" + html.escape(title) + "</title>"
        "<style>body{font-family:sans-serif}td,th{border:1px solid #ccc;padding:2px 6px}"
        "table{border-collapse:collapse}.pass,.ok{background:#d5f5e3}"
        ".fail,.bad{background:#fadbd8}.inconclusive{background:#fcf3cf}</style>"
        f"<h1>{html.escape(title)}</h1><table><tr><th>#</th><th>losses</th>"
        "<th>expected red/green bytes (model)</th><th>observed red/green bytes</th>"
        f"<th>verdict</th><th>trace</th></tr>{cells}</table><p>{html.escape(_SOURCE)}</p>"
    )
    (out / "retx-table.html").write_text(page + "\n", encoding="utf-8")


def build(
    spec: ProtocolSpec,
    scenarios: list[Scenario],
    sut: SutAdapter,
    out: Path,
    *,
    on_row: Callable[[int, int, str], None] | None = None,
) -> list[Row]:
    """Run every row's scenario into ``out/runs/<name>`` and write the table
    after each row. ``spec``: the protocol ``sut`` plays, which the table is of."""
    rows: list[Row] = []
    table = spec.need("retx_table", spec.capabilities.retx_table)
    geometry = table.retx_geometry(scenarios[0]) if scenarios else "no rows"
    title = f"{spec.name.upper()} retransmission table, {sut.name} {sut.version}: {geometry}"
    for i, scn in enumerate(scenarios, 1):
        run_dir = out / "runs" / scn.name
        try:
            outcome = run_scenario(scn, sut, run_dir)
        except NotSupported:  # a row the implementation does not take (exit 127)
            continue
        except KeyboardInterrupt:
            error_outcome(scn, sut, run_dir, KeyboardInterrupt())
            write(rows, out, title)
            raise
        rows.append(row_of(scn, outcome))
        write(rows, out, title)
        if on_row:
            on_row(i, len(scenarios), scn.name)
    return rows
