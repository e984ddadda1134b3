"""Time-sequence graphs of a run, in the manner of tcptrace/xplot (and of
the Lamar study's plots through cislunar outages): time on x, the data
offset on y; each data unit a vertical bar over the bytes it carries (black
the first time, red when sent again; a cross marks a unit the channel
lost);
the other side's units (reports, ACKs, NAKs, Finished) as green marks at
the highest offset sent so far; the link's outage windows shaded.
"""

from __future__ import annotations

import json
from pathlib import Path

from conformance.channel import control as emulator
from conformance.core.contract import ProtocolSpec
from conformance.core.types import load_scenario


def plot(spec: ProtocolSpec, run_dir: Path, out: Path, title: str = "") -> int | None:
    """Write the run's graph to ``out``: the number of outage windows it
    shades, or None (nothing written) for a run with no segments. ``spec``:
    the run's protocol, as the caller resolved it."""
    path = run_dir / "segments.jsonl"
    if not path.is_file():
        return None
    segs = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    if not segs:
        return None
    scn = load_scenario(run_dir / "scenario.json")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t0 = min(s["time"] for s in segs)
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    seen: set[tuple[int, int]] = set()
    top = 0.0
    other_x: list[float] = []
    other_y: list[float] = []
    ctrl_x: list[float] = []
    ctrl_y: list[float] = []
    for s in sorted(segs, key=lambda s: s["time"]):
        x = s["time"] - t0
        span = spec.data_span(s.get("fields", {})) if s["direction"] == "forward" else None
        if span is None:
            (ctrl_x if s["direction"] == "forward" else other_x).append(x)
            (ctrl_y if s["direction"] == "forward" else other_y).append(top)
            if s.get("dropped"):
                ax.plot([x], [top], marker="x", color="#c0392b", markersize=5)
            continue
        lo, hi = span[0] / 1000, (span[0] + span[1]) / 1000
        color = "#c0392b" if span in seen else "#17202a"
        seen.add(span)
        ax.vlines(x, lo, hi, colors=color, linewidth=1.2)
        if s.get("dropped"):
            ax.plot([x], [hi], marker="x", color="#c0392b", markersize=5)
        top = max(top, hi)
    ax.plot(other_x, other_y, "v", color="#1e8449", markersize=4, label="receiver's units")
    ax.plot(ctrl_x, ctrl_y, "^", color="#2e86c1", markersize=4, label="sender's other units")
    # the link's outages, from the scenario clock's zero
    clock = run_dir / "channel-clock.json"
    fwd, _ret, k = emulator.resolve(scn.channel)
    shaded = 0
    if clock.is_file() and fwd.outages:
        zero = json.loads(clock.read_text())["started_ns"] / 1e9 - t0
        for o in fwd.outages:
            ax.axvspan(zero + o.start / k, zero + (o.start + o.duration) / k, color="#d5d8dc",
                       alpha=0.7, label="outage")  # fmt: skip
            shaded += 1
    ax.plot([], [], color="#17202a", label="data, first sent")
    ax.plot([], [], color="#c0392b", label="data, sent again")
    ax.set_xlabel("time since the first unit (s)")
    ax.set_ylabel("offset (kB)")
    ax.set_title(title or scn.name, fontsize=9)
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    uniq = dict(zip(labels, handles, strict=True))
    ax.legend(uniq.values(), uniq.keys(), fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return shaded
