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
    """Offset of each data segment against time, report and ack segments as
    ticks, dropped segments crossed out. Returns False when there is nothing to plot."""
    if not segments:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t0 = min(s.time for s in segments)
    fig, ax = plt.subplots(figsize=(7.5, 3.2), dpi=100)
    styles = {
        "red_data": ("#c0392b", "s"),
        "green_data": ("#27ae60", "s"),
        "report": ("#2c3e50", "^"),
        "report_ack": ("#8e44ad", "v"),
        "cancel": ("#e67e22", "X"),
        "cancel_ack": ("#e67e22", "x"),
    }
    seen: set[str] = set()
    top = max((int(s.fields.get("offset", 0)) for s in segments), default=0)  # type: ignore[arg-type]
    for s in segments:
        kind = str(s.fields.get("kind", "?"))
        color, marker = styles.get(kind, ("grey", "o"))
        ms = (s.time - t0) * 1000
        if kind in ("red_data", "green_data"):
            y = int(s.fields.get("offset", 0))  # type: ignore[arg-type]
        else:
            y = top * 1.1 + 1 if s.direction == "return" else -top * 0.1 - 1
        label = kind if kind not in seen else None
        seen.add(kind)
        ax.scatter([ms], [y], c=color, marker=marker, s=36, label=label, zorder=3)
        if s.dropped:
            ax.scatter([ms], [y], c="black", marker="x", s=90, zorder=4,
                       label="dropped by channel" if "drop" not in seen else None)  # fmt: skip
            seen.add("drop")
    ax.set_xlabel("time since first segment (ms)")
    ax.set_ylabel("data offset (bytes)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


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
