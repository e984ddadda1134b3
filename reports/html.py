"""HTML report of a certification run.

One page: a verdict summary; the provenance of the runs (date, dtnconform
commit, the implementation's version and every knob it ran with, the tshark,
kernel and TLC versions); the model's action coverage with the actions no
scenario covers; then per scenario the test purpose, the impairments (by
protocol field), the channel as run, every outcome the model allows against
the observed one, the verdict with its reasons and spec rules, a ladder
diagram of the segments on a time axis, and links to both captures, the
channel log and the Robot Framework log.
"""

from __future__ import annotations

import html
import json
import math
import os
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from conformance.core.contract import ProtocolSpec
from conformance.core.types import (
    Provenance,
    RunResult,
    Scenario,
    SegmentRecord,
    load_scenario,
    mark_readings,
    mark_status,
    verdict_mark,
)

if TYPE_CHECKING:
    from conformance.core.types import RunOutcome
    from suts.base import SutAdapter

TEMPLATES = Path(__file__).resolve().parent / "templates"
# a scenario -> the channel it asks for, as a run's provenance records it
PlannedChannel = Callable[[Scenario], dict[str, Any]]


# ---------------------------------------------------------------------------
# Segment labels
# ---------------------------------------------------------------------------


def segment_label(spec: ProtocolSpec, s: SegmentRecord) -> str:
    """One line for a unit on the ladder (the protocol's own label)."""
    return spec.label(s.fields)


# ---------------------------------------------------------------------------
# Ladder diagram (inline SVG)
# ---------------------------------------------------------------------------

# Vertical layout. y is the segment's send time: proportional, with a floor
# between successive segments so that their labels never collide, and a cut
# (broken axis) for an idle gap that dwarfs the rest of the run.
FLOOR_PX = 20.0
"""Least vertical distance between two successive segments."""
BREAK_PX = 46.0
"""Height of a cut gap."""
BREAK_SHARE = 0.8
"""A gap is cut when it is longer than this share of the remaining (uncut)
time: longer than four times all the other gaps together."""
TOP_PX = 52.0
BOTTOM_PX = 40.0
SLANT_PX = 8.0
"""How far an arrow descends from sender to receiver (direction cue only:
the capture gives send times, the ladder does not claim arrival times)."""

# Horizontal layout: time axis | forward labels | A | arrows | B | return labels.
AXIS_X = 76.0
A_X = 430.0
B_X = 650.0
WIDTH = 1040.0
LABEL_GAP = 10.0
LABEL_CHARS = 50
FONT_PX = 11


@dataclass
class LadderLayout:
    """y of each event (same order as the times given), the cut gaps
    (index i: between event i and i+1) and the scale of the uncut part."""

    ys: list[float]
    cuts: dict[int, float] = field(default_factory=dict)
    px_per_s: float = 0.0
    height: float = 0.0


def ladder_layout(times: Sequence[float]) -> LadderLayout:
    """Place events (send times, ascending) on the y axis.

    Successive events are ``max(FLOOR_PX, px_per_s * gap)`` apart: in
    proportion to time wherever that is wider than the floor. The scale
    spreads the run over a budget of ``clamp(22 px x events, 360, 1200)``.
    A gap longer than BREAK_SHARE of the time still uncut is cut first
    (drawn BREAK_PX high, labelled with its length), one at a time from
    the longest, and the scale is computed again without it; the last gap
    is never cut."""
    n = len(times)
    if n == 0:
        return LadderLayout([], height=TOP_PX + BOTTOM_PX)
    gaps = [max(0.0, times[i + 1] - times[i]) for i in range(n - 1)]
    cut: set[int] = set()
    while True:
        live = [i for i in range(len(gaps)) if i not in cut]
        total = sum(gaps[i] for i in live)
        if len(live) <= 1 or total <= 0:
            break
        longest = max(live, key=lambda i: gaps[i])
        if gaps[longest] <= BREAK_SHARE * total:
            break
        cut.add(longest)
    live_total = sum(g for i, g in enumerate(gaps) if i not in cut)
    budget = min(1200.0, max(360.0, 22.0 * n))
    px_per_s = budget / live_total if live_total > 0 else 0.0
    ys = [TOP_PX]
    cuts: dict[int, float] = {}
    for i, gap in enumerate(gaps):
        if i in cut:
            cuts[i] = gap
            ys.append(ys[-1] + BREAK_PX)
        else:
            ys.append(ys[-1] + max(FLOOR_PX, px_per_s * gap))
    return LadderLayout(ys, cuts, px_per_s, ys[-1] + SLANT_PX + BOTTOM_PX)


def _fmt_time(seconds: float) -> str:
    if seconds < 0.01:
        return f"{1000 * seconds:.2f} ms"
    if seconds < 1:
        return f"{1000 * seconds:.1f} ms"
    if seconds < 600:
        return f"{seconds:.3f} s"
    m, s = divmod(round(seconds, 1), 60.0)
    h, m = divmod(int(m), 60)
    return f"{h} h {m:02d} min {s:04.1f} s" if h else f"{m} min {s:04.1f} s"


def _scale_note(px_per_s: float) -> str:
    if px_per_s <= 0:
        return ""
    for unit, per in (("µs", 1e-6), ("ms", 1e-3), ("s", 1.0), ("min", 60.0)):
        if px_per_s * per >= 0.5 or unit == "min":
            return f"{px_per_s * per:.3g} px per {unit}"
    return ""


def ladder_svg(spec: ProtocolSpec, segments: list[SegmentRecord], title: str = "") -> str:
    """The ladder diagram as an SVG element: block sender (A) left, block
    receiver (B) right, one arrow per segment at its send time; forward
    labels left of A, return labels right of B (never across an arrow);
    times on the axis at the far left; a dropped segment stops halfway at a
    cross. Empty string when there are no segments."""
    if not segments:
        return ""
    segs = sorted(segments, key=lambda s: s.time)
    t0 = segs[0].time
    lay = ladder_layout([s.time for s in segs])
    h = lay.height
    esc = html.escape
    out: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="ladder" width="{WIDTH:.0f}" '
        f'height="{h:.0f}" viewBox="0 0 {WIDTH:.0f} {h:.0f}" '
        f'font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="{FONT_PX}" '
        f'data-px-per-s="{lay.px_per_s:.6g}">',
        f"<title>{esc(title)}</title>" if title else "",
        '<defs><marker id="ah" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'fill="context-stroke"/></marker></defs>',
    ]
    top, bottom = TOP_PX - 14, h - BOTTOM_PX + 10
    # Headers and the time axis.
    out.append(
        f'<text x="{A_X}" y="16" text-anchor="middle" font-weight="bold" '
        f'font-family="system-ui, sans-serif" font-size="12">block sender (A)</text>'
        f'<text x="{B_X}" y="16" text-anchor="middle" font-weight="bold" '
        f'font-family="system-ui, sans-serif" font-size="12">block receiver (B)</text>'
        f'<text x="{AXIS_X - 6}" y="16" text-anchor="end" fill="#555">t</text>'
        f'<text x="{AXIS_X - 6}" y="30" text-anchor="end" fill="#888" font-size="9">'
        f"since 1st</text>"
    )
    # Lifelines and axis, interrupted at the cuts.
    spans: list[tuple[float, float]] = []
    start = top
    for i in sorted(lay.cuts):
        y_a, y_b = lay.ys[i], lay.ys[i + 1]
        spans.append((start, y_a + SLANT_PX + 6))
        start = y_b - 8
    spans.append((start, bottom))
    for x, color in ((AXIS_X, "#999"), (A_X, "#666"), (B_X, "#666")):
        for y1, y2 in spans:
            out.append(
                f'<line x1="{x}" y1="{y1:.1f}" x2="{x}" y2="{y2:.1f}" stroke="{color}" '
                f'stroke-width="{1 if x == AXIS_X else 1.5}"/>'
            )
    for i, gap in sorted(lay.cuts.items()):
        y_a, y_b = lay.ys[i] + SLANT_PX + 6, lay.ys[i + 1] - 8
        mid = (y_a + y_b) / 2
        for x in (AXIS_X, A_X, B_X):
            out.append(
                f'<path d="M{x - 6},{y_a + 3:.1f} l12,-6 M{x - 6},{y_b + 3:.1f} l12,-6" '
                f'stroke="#666" stroke-width="1.2" fill="none"/>'
            )
        out.append(
            f'<text class="cut" x="{(A_X + B_X) / 2}" y="{mid + 4:.1f}" text-anchor="middle" '
            f'fill="#555" font-style="italic" data-gap-s="{gap:.6f}">'
            f"axis cut: {esc(_fmt_time(gap))} idle</text>"
        )
    # One row per segment.
    for s, y in zip(segs, lay.ys, strict=True):
        kind = str(s.fields.get("kind", "?"))
        color = spec.colors.get(kind, "#666")
        forward = s.direction == "forward"
        x0, x1 = (A_X, B_X) if forward else (B_X, A_X)
        y1 = y + SLANT_PX
        full = segment_label(spec, s)
        label = full if len(full) <= LABEL_CHARS else full[: LABEL_CHARS - 1] + "…"
        tip = f"frame {s.frame}, {s.length} B, {_fmt_time(s.time - t0)}: {full}"
        if s.summary:
            tip += f"\n{s.summary}"
        if s.dropped:
            tip += "\ndropped by the channel"
        out.append(
            f'<g class="seg" data-t="{s.time - t0:.6f}" data-y="{y:.2f}" '
            f'data-direction="{s.direction}" data-kind="{esc(kind)}" '
            f'data-dropped="{str(s.dropped).lower()}"><title>{esc(tip)}</title>'
        )
        out.append(
            f'<line x1="{AXIS_X - 3}" y1="{y:.1f}" x2="{AXIS_X + 3}" y2="{y:.1f}" '
            f'stroke="#999"/><text x="{AXIS_X - 6}" y="{y + 4:.1f}" text-anchor="end" '
            f'fill="#555" font-size="10">{esc(_fmt_time(s.time - t0))}</text>'
        )
        if s.dropped:
            mx, my = (x0 + x1) / 2, (y + y1) / 2
            out.append(
                f'<line x1="{x0}" y1="{y:.1f}" x2="{mx}" y2="{my:.1f}" stroke="{color}" '
                f'stroke-width="1.6" stroke-dasharray="5 3"/>'
                f'<path d="M{mx - 5},{my - 5:.1f} l10,10 M{mx - 5},{my + 5:.1f} l10,-10" '
                f'stroke="#000" stroke-width="2"/>'
            )
        else:
            out.append(
                f'<line x1="{x0}" y1="{y:.1f}" x2="{x1}" y2="{y1:.1f}" stroke="{color}" '
                f'stroke-width="1.6" marker-end="url(#ah)"/>'
            )
        lx, anchor = (A_X - LABEL_GAP, "end") if forward else (B_X + LABEL_GAP, "start")
        out.append(
            f'<text x="{lx}" y="{y + 4:.1f}" text-anchor="{anchor}" fill="{color}">{esc(label)}'
            f"{' ✗' if s.dropped else ''}</text></g>"
        )
    out.append("</svg>")
    return "".join(p for p in out if p)


def ladder_caption(segments: list[SegmentRecord]) -> str:
    if not segments:
        return ""
    lay = ladder_layout(sorted(s.time for s in segments))
    parts = [
        "y: send time from the sender-side capture, in proportion"
        + (f" ({_scale_note(lay.px_per_s)})" if lay.px_per_s else ""),
        f"at least {FLOOR_PX:.0f} px between successive segments",
    ]
    if lay.cuts:
        parts.append(
            f"{len(lay.cuts)} idle gap{'s' if len(lay.cuts) > 1 else ''} longer than four "
            "times the rest of the run together cut from the axis (labelled with its length)"
        )
    parts.append("✗: dropped by the channel; hover a segment for its frame and dissector summary")
    return "; ".join(parts) + "."


# ---------------------------------------------------------------------------
# Outcomes, channel, provenance
# ---------------------------------------------------------------------------


def goodput_text(res: RunResult | None) -> str | None:
    """None when there is no goodput to show (no result, no receiver
    session time, or goodput not computed)."""
    if res is None or res.goodput_bps is None or not res.receiver.duration_s > 0:
        return None
    if not math.isfinite(res.goodput_bps):
        return None
    return f"{_bits_per_s(res.goodput_bps)} over {_fmt_time(res.receiver.duration_s)}"


def _bits_per_s(bps: float, digits: int = 3) -> str:
    for unit, per in (("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)):
        if bps >= per:
            return f"{bps / per:.{digits}g} {unit}"
    return f"{bps:.{digits}g} b/s"


def _rate(bps: object) -> str:
    if not isinstance(bps, int | float) or bps <= 0:
        return "unlimited"
    return _bits_per_s(float(bps), digits=6)


def channel_rows(ch: Mapping[str, Any]) -> list[dict[str, str]]:
    """The two directions of a provenance channel, as table cells."""
    rows = []
    for name in ("forward", "return"):
        d = ch.get(name)
        if not isinstance(d, Mapping):
            continue
        rows.append(
            {
                "direction": "forward A→B" if name == "forward" else "return B→A",
                "delay": f"{d.get('delay_ms', 0):g} ms",
                "rate": _rate(d.get("rate_bps")),
                "loss": f"{d.get('loss', 0):g}",
                "ber": f"{d.get('ber', 0):g}",
                "packet_error": f"{d.get('packet_error', 0):g}",
                "duplicate": f"{d.get('duplicate', 0):g}",
                "reorder": f"{d.get('reorder', 0):g}",
                "outages": str(d.get("outages", 0)),
                "timeline": str(d.get("timeline_events", 0)),
            }
        )
    return rows


def _planned(scn: Scenario, planned: PlannedChannel | None) -> dict[str, Any]:
    """The channel a scenario asks for, when no run recorded its provenance."""
    if planned is not None:
        return planned(scn)
    return {"profile": scn.channel.profile, "seed": scn.channel.seed}


def summarize_provenance(provs: list[Provenance]) -> dict[str, Any] | None:
    """What the runs share (each field's distinct values, in order), the
    date range, and the knobs every run set alike."""
    if not provs:
        return None

    def distinct(values: list[str]) -> list[str]:
        return list(dict.fromkeys(v for v in values if v))

    dates = sorted(p.date for p in provs if p.date)
    common = dict(provs[0].knobs)
    for p in provs[1:]:
        common = {k: v for k, v in common.items() if k in p.knobs and p.knobs[k] == v}
    return {
        "dates": (dates[0], dates[-1]) if dates else None,
        "tool_commit": distinct([p.tool_commit for p in provs]),
        "sut": distinct([f"{p.sut} {p.sut_version}".strip() for p in provs]),
        "tshark": distinct([p.tshark for p in provs]),
        "kernel": distinct([p.kernel for p in provs]),
        "tlc": distinct([p.tlc for p in provs]),
        "common_knobs": common,
        "varying_knobs": sorted({k for p in provs for k in p.knobs if k not in common}),
        "runs": len(provs),
    }


def coverage_view(coverage: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Normalize the generator's coverage summary: covered/total/uncovered
    given as lists of action names (or counts); purposes, if any, as
    (purpose, status) pairs."""
    if not coverage:
        return None

    def count(v: object) -> int | None:
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        if isinstance(v, list | tuple | set):
            return len(v)
        return None

    covered, total = coverage.get("covered"), coverage.get("total")
    uncovered = coverage.get("uncovered")
    if not isinstance(uncovered, list | tuple) and isinstance(total, list | tuple):
        have = set(covered) if isinstance(covered, list | tuple) else set()
        uncovered = [a for a in total if a not in have]
    purposes: list[tuple[str, str]] = []
    raw = coverage.get("purposes")
    if isinstance(raw, Mapping):
        for name, val in raw.items():
            if isinstance(val, Mapping):
                text = str(val.get("status", ""))
                if val.get("same_as"):
                    text += f" (same test as {val['same_as']})"
                elif val.get("scenario"):
                    text += f" ({str(val['scenario']).removesuffix('.json')})"
                if val.get("detail") and val.get("status") != "reached":
                    text += f": {val['detail']}"
                val = text
            purposes.append((str(name), str(val)))
    elif isinstance(raw, list):
        purposes = [(str(p), "") for p in raw]
    n_cov, n_tot = count(covered), count(total)
    return {
        "covered": n_cov,
        "total": n_tot,
        "percent": round(100 * n_cov / n_tot) if n_cov is not None and n_tot else None,
        "uncovered": [str(a) for a in uncovered] if isinstance(uncovered, list | tuple) else [],
        "purposes": purposes,
    }


# ---------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------


def roles_label(sut: str, tester: str | None) -> str:
    """Who played which side: "licklider → licklider", "tester → licklider"."""
    if tester == "sender":
        return f"tester → {sut}"
    if tester == "receiver":
        return f"{sut} → tester"
    return f"{sut} → {sut}"


def render_certification(
    spec: ProtocolSpec,
    sut: SutAdapter,
    out: Path,
    scenarios: list[Path],
    runs: list[RunOutcome],
    robot_log: Path,
    coverage: Mapping[str, Any] | None = None,
    retx_table: Path | None = None,
    planned: PlannedChannel | None = None,
) -> Path:
    """The certification report; ``retx_table``: a retransmission table's
    JSON (conformance/retxtable.py) to show as a section of its own.
    ``planned``: the channel a scenario asks for, shown where no run
    recorded its provenance (the caller's, e.g. conformance.provenance's
    planned_channel; without it, the scenario's profile and seed)."""
    by_name: dict[str, list[RunOutcome]] = {}
    for r in runs:
        by_name.setdefault(r.verdict.scenario, []).append(r)
    # the template's rows: mixed values, as jinja2 takes them
    rows: list[dict[str, Any]] = []
    provs: list[Provenance] = []
    not_run: list[RunOutcome | None] = [None]
    # one row per run, with the scenario it ran (its run folder keeps it: a
    # profile bound to one side runs an adapted copy of the same name in
    # some roles and the scenario itself in others); a scenario's name once
    seen: set[str] = set()
    pairs: list[tuple[Scenario, RunOutcome | None]] = []
    for scn in (load_scenario(p) for p in scenarios):
        if scn.name in seen:
            continue
        seen.add(scn.name)
        for run in by_name.get(scn.name) or not_run:
            own = run.run_dir / "scenario.json" if run else None
            pairs.append((load_scenario(own) if own and own.is_file() else scn, run))
    for scn, run in pairs:
        res = run.result if run else None
        prov = res.provenance if res else None
        if prov is not None:
            provs.append(prov)
        svg = ""
        if run is not None and run.segments:
            svg = ladder_svg(spec, run.segments, f"{scn.name} on {sut.name}")
            (run.run_dir / "sequence.svg").write_text(svg + "\n", encoding="utf-8")
        observed = res.outcome() if res else None
        outcomes = [
            {"o": o, "matched": observed is not None and o.key() == observed.key()}
            for o in scn.expect.outcomes
        ]
        tester = res.tester if res else None
        rows.append(
            {
                "scn": scn,
                "anchor": run.run_dir.name if run else scn.name,
                "roles": roles_label(sut.name, tester),
                "probes": [pr for e in (res.sender, res.receiver) for pr in e.probes]
                if res
                else [],
                "run": run,
                "res": res,
                "prov": prov,
                "status": run.verdict.status if run else "not run",
                "mark": run.verdict.mark if run else "not run",
                "outcomes": outcomes,
                "observed": observed,
                "observed_allowed": any(o["matched"] for o in outcomes),
                "goodput": goodput_text(res),
                "channel": prov.channel if prov and prov.channel else _planned(scn, planned),
                "ladder": Markup(svg) if svg else None,
                "ladder_caption": ladder_caption(run.segments) if run else "",
                "ladder_file": _rel(run.run_dir / "sequence.svg", out) if svg and run else None,
                "dir": _rel(run.run_dir, out) if run else None,
                "files": _files(run.run_dir, out) if run else [],
            }
        )
    summary = summarize_provenance(provs)
    for row in rows:
        prov = row["prov"]
        row["knobs"] = (
            {k: v for k, v in prov.knobs.items() if k not in summary["common_knobs"]}
            if prov is not None and summary is not None
            else {}
        )
        row["channel_rows"] = channel_rows(row["channel"])
    counts = mark_counts(r["mark"] for r in rows)
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]))
    readings = [
        {
            "r": reading,
            "runs": [
                {"name": r["scn"].name, "anchor": r["anchor"], "roles": r["roles"]}
                for r in rows
                if r["run"] is not None and reading.id in r["run"].verdict.readings
            ],
        }
        for reading in spec.readings
    ]
    page = env.get_template("certification.html").render(
        protocol=spec.name.upper(),
        spec_name=spec.spec,
        readings=readings,
        delivery_labels=spec.delivery.labels(),
        dissector_proto=spec.dissector.proto,
        sut=f"{sut.name} {sut.version}"
        + "".join(f" [{k}={v}]" for k, v in getattr(sut, "options", {}).items()),
        rows=rows,
        counts=counts,
        provenance=summary,
        coverage=coverage_view(coverage),
        retx=json.loads(retx_table.read_text(encoding="utf-8"))
        if retx_table is not None and retx_table.exists()
        else None,
        retx_dir=_rel(retx_table.parent, out) if retx_table is not None else "",
        robot_log=_rel(robot_log, out) if robot_log.exists() else None,
        floor_px=FLOOR_PX,
    )
    report = out / "report.html"
    report.write_text(page, encoding="utf-8")
    return report


def _files(run_dir: Path, base: Path) -> list[tuple[str, str]]:
    names = ["a.pcap", "b.pcap", "channel.jsonl", "sender.log", "receiver.log", "sender.cmd",
             "receiver.cmd", "result.json", "verdict.json", "trace.ndjson", "sequence.svg"]  # fmt: skip
    return [(n, _rel(run_dir / n, base)) for n in names if (run_dir / n).exists()]


def _rel(path: Path, base: Path) -> str:
    return os.path.relpath(path, base)


# ---------------------------------------------------------------------------
# Interoperability matrix
# ---------------------------------------------------------------------------

# A cell's mark per configuration, by its runs' verdicts.
MARKS = {"pass": "✔", "fail": "✘", "inconclusive": "?", "error": "!",
         "unsupported": "–", "not run": "·"}  # fmt: skip


def cell_status(statuses: Sequence[str]) -> str:
    """One mark for a configuration's runs in a cell: fail if any failed,
    then error, inconclusive, pass; unsupported if none could run."""
    if not statuses:
        return "not run"
    for s in ("fail", "error", "inconclusive", "not run"):
        if s in statuses:
            return s
    return "unsupported" if all(s == "unsupported" for s in statuses) else "pass"


def _reading_order(rid: str) -> tuple[int, str]:
    return (len(rid), rid)  # "2" before "12"


def cell_mark(marks: Sequence[str]) -> str:
    """The verdict a cell of runs shows (:func:`cell_status` over their
    statuses): a pass names every alternative reading one of its runs
    needed, ``pass (reading 5)``."""
    status = cell_status([mark_status(m) for m in marks])
    if status != "pass":
        return status
    needed = {r for m in marks for r in mark_readings(m)}
    return verdict_mark(status, sorted(needed, key=_reading_order))


def mark_counts(marks: Iterable[str]) -> list[tuple[str, str, int]]:
    """(mark, status, count) of verdicts, worst status last and each pass
    under an alternative reading apart from the plain passes."""
    order = ["pass", "fail", "inconclusive", "error", "unsupported", "not run"]
    counts = Counter(marks)
    return sorted(
        ((m, mark_status(m), n) for m, n in counts.items()),
        key=lambda x: (order.index(x[1]) if x[1] in order else len(order), x[0] != x[1], x[0]),
    )


def reading_hazard(followed: Mapping[str, frozenset[str]], tx: str, rx: str) -> str:
    """Why a pair of implementations is an interoperability hazard, or "":
    each follows the alternative readings its runs with itself needed
    (``followed``, from the matrix's diagonal), and two that follow
    different ones disagree where the standard leaves the choice open, so
    what passes against each may not work between them."""
    if tx == rx or tx not in followed or rx not in followed or followed[tx] == followed[rx]:
        return ""

    def said(name: str) -> str:
        got = sorted(followed[name], key=_reading_order)
        return f"{name} follows " + (
            "the default readings" if not got else "reading " + ", ".join(got) + "'s alternative"
        )

    return f"interoperability hazard: {said(tx)}, {said(rx)} (with itself)"


def readings_followed(cells: Mapping[tuple[str, str], Sequence[str]]) -> dict[str, frozenset[str]]:
    """Each implementation's alternative readings, as its runs with itself
    (the diagonal cells) needed them: implementation -> reading ids."""
    return {
        tx: frozenset(r for m in marks for r in mark_readings(m))
        for (tx, rx), marks in cells.items()
        if tx == rx and marks
    }


def render_interop(
    spec: ProtocolSpec,
    suts: Sequence[Any],
    configs: Sequence[Any],
    cells: Sequence[Any],
    runs: Mapping[str, RunOutcome],
    out: Path,
    robot_log: Path,
) -> Path:
    """``out/interop.html``: the matrix (sender rows, receiver columns, one
    mark per configuration linking to its runs), then each configuration's
    runs with their evidence (captures, verdict, dissector findings)."""
    names = [s.name for s in suts]
    by: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for c in cells:
        run = runs.get(c.name)
        status = "unsupported" if c.unsupported else (run.verdict.status if run else "not run")
        by.setdefault((c.sender, c.receiver, c.config.name), []).append(
            {
                "cell": c,
                "scenario": c.scenario.stem,
                "status": status,
                "mark": run.verdict.mark if run and not c.unsupported else status,
                "run": run,
                "reasons": [r for r in run.verdict.reasons if r.code != "observed-outcome"]
                if run
                else [],
                "trace": run.verdict.trace.status if run and run.verdict.trace else "",
                "files": _files(run.run_dir, out) if run else [],
                "dir": _rel(run.run_dir, out) if run else None,
            }
        )
    pairs: dict[tuple[str, str], list[str]] = {}
    for (tx, rx, _cfg), cell_runs in by.items():
        pairs.setdefault((tx, rx), []).extend(r["mark"] for r in cell_runs)
    followed = readings_followed(pairs)
    matrix = [
        {
            "sender": tx,
            "cells": [
                {
                    "receiver": rx,
                    "hazard": reading_hazard(followed, tx, rx),
                    "marks": [
                        {
                            "config": cfg.name,
                            "label": (label := cell_mark([r["mark"] for r in rs])),
                            "status": (st := mark_status(label)),
                            "mark": MARKS[st],
                            "readings": ", ".join(mark_readings(label)),
                            "anchor": f"{tx}--{rx}--{cfg.name}",
                        }
                        for cfg in configs
                        if (rs := by.get((tx, rx, cfg.name))) is not None
                    ],
                }
                for rx in names
            ],
        }
        for tx in names
    ]
    details = [
        {"anchor": f"{tx}--{rx}--{cfg.name}", "sender": tx, "receiver": rx, "config": cfg,
         "runs": by[(tx, rx, cfg.name)]}
        for tx in names for rx in names for cfg in configs if (tx, rx, cfg.name) in by
    ]  # fmt: skip
    counts = mark_counts(r["mark"] for rs in by.values() for r in rs)
    # each configuration's scenarios, named after it: "nominal", "lost-RS.1", ...
    scenarios: dict[str, list[str]] = {}
    for c in cells:
        short = c.scenario.stem.split(f"-{c.config.name}-", 1)[-1]
        if short not in scenarios.setdefault(c.config.name, []):
            scenarios[c.config.name].append(short)
    for names_ in scenarios.values():
        names_.sort(key=lambda n: n != "nominal")
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]))
    page = env.get_template("interop.html").render(
        scenarios=scenarios,
        protocol=spec.name.upper(),
        spec_name=spec.spec,
        suts=[f"{s.name} {s.version}" for s in suts],
        names=names,
        configs=configs,
        matrix=matrix,
        details=details,
        counts=counts,
        marks=MARKS,
        robot_log=_rel(robot_log, out) if robot_log.exists() else None,
    )
    report = out / "interop.html"
    report.write_text(page, encoding="utf-8")
    return report
