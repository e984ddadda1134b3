"""HTML report of a certification run.

One page: a verdict summary, then per scenario the test purpose, the
impairments (by protocol field), expected vs. observed outcome, the verdict
with its reasons and spec rules, a time-sequence graph of the segments, and
links to both captures, the channel log and the Robot Framework log.
"""

from __future__ import annotations

import html
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from jinja2 import Environment, FileSystemLoader, select_autoescape

from conformance.types import SegmentRecord, load_scenario

if TYPE_CHECKING:
    from conformance.runner import RunOutcome
    from suts.base import SutAdapter

TEMPLATES = Path(__file__).resolve().parent / "templates"


def time_sequence_plot(segments: list[SegmentRecord], path: Path, title: str) -> bool:
    """A ladder diagram: block sender on the left, block receiver on the right,
    one arrow per segment in the order they were sent, labelled with type,
    offset or serials and send time; a segment the channel dropped stops
    halfway at a cross. Returns False when there is nothing to plot."""
    if not segments:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"red_data": "#c0392b", "green_data": "#27ae60", "report": "#2c3e50",
              "report_ack": "#8e44ad", "cancel": "#e67e22", "cancel_ack": "#d35400"}  # fmt: skip
    t0 = min(s.time for s in segments)
    n = len(segments)
    fig, ax = plt.subplots(figsize=(7.0, 0.9 + 0.32 * n), dpi=100)
    for x, name in ((0.0, "block sender (A)"), (1.0, "block receiver (B)")):
        ax.plot([x, x], [-0.5, n - 0.5], color="#888", lw=1)
        ax.text(x, -0.9, name, ha="center", va="bottom", fontsize=9, weight="bold")
    for i, s in enumerate(segments):
        kind = str(s.fields.get("kind", "?"))
        color = colors.get(kind, "grey")
        x0, x1 = (0.0, 1.0) if s.direction == "forward" else (1.0, 0.0)
        y0, y1 = i, i + 0.6
        end_x = x1 if not s.dropped else (x0 + x1) / 2
        end_y = y1 if not s.dropped else (y0 + y1) / 2
        ax.annotate("", xy=(end_x, end_y), xytext=(x0, y0),
                    arrowprops={"arrowstyle": "-|>" if not s.dropped else "-", "color": color,
                                "lw": 1.4, "ls": "-" if not s.dropped else "--"})  # fmt: skip
        if s.dropped:
            ax.plot([end_x], [end_y], marker="x", color="black", ms=9, mew=2)
        label = _segment_label(s) + f"  {1000 * (s.time - t0):.1f} ms"
        ax.text(0.5, (y0 + y1) / 2 - 0.12, label, ha="center", va="bottom", fontsize=7.5,
                color=color, bbox={"fc": "white", "ec": "none", "pad": 0.3})  # fmt: skip
    ax.set_xlim(-0.15, 1.15)
    ax.set_ylim(n + 0.2, -1.2)
    ax.axis("off")
    ax.set_title(title + "  (x: dropped by the channel)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def _segment_label(s: SegmentRecord) -> str:
    f = s.fields
    parts = [str(f.get("type", "?"))]
    if "offset" in f:
        parts.append(f"off={f['offset']} len={f.get('length')}")
    if f.get("type") == "RS":
        parts.append(f"rs={f.get('report_serial')} cp={f.get('checkpoint_serial')} "
                     f"[{f.get('lower_bound')}-{f.get('upper_bound')})")  # fmt: skip
        offs, lens = f.get("claim.offset", []), f.get("claim.length", [])
        if isinstance(offs, list) and isinstance(lens, list):
            parts.append(
                "claims " + ",".join(f"{o}+{ln}" for o, ln in zip(offs, lens, strict=False))
            )
    elif f.get("type") == "RA":
        parts.append(f"rs={f.get('report_serial')}")
    elif f.get("checkpoint"):
        parts.append(f"cp={f.get('checkpoint_serial')}")
    if "reason" in f:
        parts.append(f"reason={f['reason']}")
    return " ".join(parts)


def render_certification(
    protocol: str,
    sut: SutAdapter,
    out: Path,
    scenarios: list[Path],
    runs: list[RunOutcome],
    robot_log: Path,
) -> Path:
    by_name = {r.verdict.scenario: r for r in runs}
    rows = []
    for path in scenarios:
        scn = load_scenario(path)
        run = by_name.get(scn.name)
        plot = None
        if run is not None and time_sequence_plot(
            run.segments, run.run_dir / "sequence.png", f"{scn.name} on {sut.name}"
        ):
            plot = _rel(run.run_dir / "sequence.png", out)
        rows.append(
            {
                "scn": scn,
                "run": run,
                "status": run.verdict.status if run else "not run",
                "plot": plot,
                "dir": _rel(run.run_dir, out) if run else None,
                "files": _files(run.run_dir, out) if run else [],
            }
        )
    counts = Counter(r["status"] for r in rows)
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]))
    page = env.get_template("certification.html").render(
        protocol=protocol.upper(),
        sut=f"{sut.name} {sut.version}",
        rows=rows,
        counts=counts,
        robot_log=_rel(robot_log, out) if robot_log.exists() else None,
        esc=html.escape,
    )
    report = out / "report.html"
    report.write_text(page, encoding="utf-8")
    return report


def _files(run_dir: Path, base: Path) -> list[tuple[str, str]]:
    names = ["a.pcap", "b.pcap", "channel.jsonl", "sender.log", "receiver.log", "result.json",
             "verdict.json"]  # fmt: skip
    return [(n, _rel(run_dir / n, base)) for n in names if (run_dir / n).exists()]


def _rel(path: Path, base: Path) -> str:
    return os.path.relpath(path, base)
