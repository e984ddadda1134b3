"""A campaign's results: ``results.csv`` and ``results.json`` (one row per
run, its figures and verdict), and ``report.html`` with the plots of the
NASA Glenn study's kind: goodput as box plots per link, one box per
implementation pair, and the units each way.

Written from the database alone, so a partial campaign has its report too.
"""

from __future__ import annotations

import csv
import html
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from conformance.campaign.store import Row, Store

COLUMNS = (
    "seq", "key", "protocol", "sender", "receiver", "link", "size", "replicate", "status",
    "attempts", "lane", "wall_s", "verdict", "trace", "goodput_bps", "throughput_bps",
    "units_forward", "units_return", "bytes_forward", "bytes_return", "lost_forward",
    "lost_return", "data_units", "retransmissions", "time_to_last_data_s", "time_to_close_s",
    "physical_minimum_s", "efficiency", "delivered_bytes", "run_dir", "detail",
)  # fmt: skip


def flat(r: Row) -> dict[str, Any]:
    s = r.spec
    out: dict[str, Any] = {
        "seq": r.seq, "key": s.key, "protocol": s.protocol, "sender": s.sender,
        "receiver": s.receiver, "link": s.link, "size": s.size, "replicate": s.replicate,
        "status": r.status, "attempts": r.attempts, "lane": r.lane,
        "wall_s": round(r.wall_s, 3) if r.wall_s is not None else None,
        "verdict": r.verdict, "trace": r.trace, "run_dir": r.run_dir, "detail": r.detail,
        "physical_minimum_s": r.phys_min_s,
    }  # fmt: skip
    out |= {k: v for k, v in r.metrics.items() if k in COLUMNS and out.get(k) is None}
    return {k: out.get(k) for k in COLUMNS}


def export(st: Store, out: Path) -> list[dict[str, Any]]:
    rows = [flat(r) for r in st.rows()]
    with (out / "results.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(COLUMNS))
        w.writeheader()
        w.writerows(rows)
    (out / "results.json").write_text(
        json.dumps({"plan": json.loads(st.get("plan") or "{}"), "runs": rows}, indent=1) + "\n",
        encoding="utf-8",
    )
    return rows


def _boxes(rows: list[dict[str, Any]], value: str, ylabel: str, path: Path) -> bool:
    """One panel per link, one box per protocol and pair: ``value`` of the
    runs that ended with a verdict (not error, not unsupported)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_link: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if (
            r["status"] == "done"
            and r[value] is not None
            and r["verdict"]
            not in (
                "error",
                "unsupported",
            )
        ):
            label = f"{r['protocol']}\n{r['sender']}>\n{r['receiver']}\n{r['size']} B"
            by_link[r["link"]][label].append(float(r[value]))
    if not by_link:
        return False
    links = sorted(by_link)
    fig, axes = plt.subplots(
        1, len(links), figsize=(max(4.0, 3.2 * len(links)), 4.2), squeeze=False, sharey=True
    )
    for ax, link in zip(axes[0], links, strict=True):
        groups = by_link[link]
        names = sorted(groups)
        ax.boxplot([groups[n] for n in names], tick_labels=names, widths=0.5)
        ax.set_title(link, fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel(ylabel)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def write(st: Store, out: Path) -> Path:
    """results.csv, results.json and report.html in ``out``."""
    rows = export(st, out)
    plan = st.plan()
    figs = []
    for value, ylabel, name in (
        ("goodput_bps", "goodput (bit/s)", "goodput.png"),
        ("units_forward", "units sender -> receiver", "units-forward.png"),
        ("units_return", "units receiver -> sender", "units-return.png"),
        ("efficiency", "physical minimum / time to close", "efficiency.png"),
    ):
        if _boxes(rows, value, ylabel, out / name):
            figs.append((name, ylabel))
    counts: dict[str, int] = defaultdict(int)
    for r in rows:
        counts[r["verdict"] or r["status"]] += 1
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS[:16])
    body = "".join(
        "<tr>"
        + "".join(
            f"<td class='{html.escape(str(r['verdict']))}'>"
            + (
                f"<a href='{html.escape(_rel(r['run_dir'], out))}'>{html.escape(str(r[c]))}</a>"
                if c == "key" and r["run_dir"]
                else html.escape("" if r[c] is None else _fmt(r[c]))
            )
            + "</td>"
            for c in COLUMNS[:16]
        )
        + "</tr>"
        for r in rows
    )
    page = (
        "<!doctype html><meta charset='utf-8'>"
        f"<title>campaign {html.escape(plan.name)}</title>"
        "<style>body{font-family:sans-serif;margin:1.5em}td,th{border:1px solid #ccc;"
        "padding:2px 6px;font-size:12px}table{border-collapse:collapse}"
        ".pass{background:#d5f5e3}.fail{background:#fadbd8}.inconclusive{background:#fcf3cf}"
        ".error{background:#e5e7e9}.unsupported{color:#777}figure{display:inline-block;"
        "margin:0 1em 1em 0}</style>"
        f"<h1>Campaign {html.escape(plan.name)}</h1>"
        f"<p>{html.escape(plan.description)}</p>"
        + (f"<p>Reproduces: {html.escape(plan.source)}</p>" if plan.source else "")
        + "<p id='counts'>"
        + ", ".join(f"{html.escape(k)}: {v}" for k, v in sorted(counts.items()))
        + " &middot; <a href='results.csv'>results.csv</a> &middot; "
        "<a href='results.json'>results.json</a></p>"
        + "".join(
            f"<figure><img src='{n}' alt='{html.escape(t)}'><figcaption>{html.escape(t)}, "
            "per link and implementation pair</figcaption></figure>"
            for n, t in figs
        )
        + f"<h2>Runs</h2><table id='runs'><tr>{head}</tr>{body}</table>"
    )
    path = out / "report.html"
    path.write_text(page + "\n", encoding="utf-8")
    return path


def _rel(p: str, out: Path) -> str:
    try:
        return str(Path(p).relative_to(out)) + "/"
    except ValueError:
        return p


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)
