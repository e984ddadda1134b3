"""A campaign's results: ``results.csv`` and ``results.json`` (one row per
run, its figures and verdict), ``stats.csv`` and ``report.html``, with the
plots of the NASA Glenn study's kind (goodput, units each way and
efficiency as box plots per link, one box per implementation pair), a
time-sequence graph of each group's first run (conformance.campaign.tsg),
the interoperability matrix of each protocol (sender rows, receiver
columns, as the ACTS 118x matrix), and the statistics of the NMSU study's kind (scipy): mean, standard
deviation and 95 % confidence interval of the goodput per group; between
two implementations on the same link and size, the paired 95 % CI of the
difference (replicate r of each saw the same channel seed); and Tukey's HSD
across the implementations of a protocol on each link and size.

Written from the database alone, so a partial campaign has its report too.
"""

from __future__ import annotations

import csv
import html
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance.campaign.store import Row, Store
from conformance.core.types import mark_readings, mark_status

if TYPE_CHECKING:
    from conformance.campaign.plan import Plan

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

    judged = [r for r in rows if _judged(r, value)]
    # a label names what differs between the boxes: the protocol and the
    # size only where the campaign has several
    protos = len({r["protocol"] for r in judged}) > 1
    sizes = len({r["size"] for r in judged}) > 1
    by_link: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in judged:
        parts = [r["protocol"]] * protos + [f"{r['sender']}>{r['receiver']}"]
        parts += [f"{r['size']} B"] * sizes
        by_link[r["link"]][" ".join(parts)].append(float(r[value]))
    if not by_link:
        return False
    links = sorted(by_link)
    cols = min(6, len(links))
    rows_n = -(-len(links) // cols)
    boxes = max(len(g) for g in by_link.values())
    # labels that would run into each other (7-point characters, about
    # 0.06 inch wide, side by side in a 3-inch panel) stand upright, and
    # each box has 0.35 inch
    longest = max(map(len, _labels(by_link)))
    upright = boxes * longest * 0.06 > 2.6
    width = max(3.0, 0.35 * boxes + 1.0)
    label_h = 0.07 * longest if upright else 0.6
    fig, axes = plt.subplots(
        rows_n,
        cols,
        figsize=(max(4.0, width * cols), (3.0 + label_h) * rows_n),
        squeeze=False,
        sharey=True,
    )
    flat_axes = [ax for row in axes for ax in row]
    for ax in flat_axes[len(links) :]:
        ax.set_visible(False)
    for ax, link in zip(flat_axes, links, strict=False):
        groups = by_link[link]
        names = sorted(groups)
        ax.boxplot([groups[n] for n in names], tick_labels=names, widths=0.5)
        ax.set_title(link, fontsize=9)
        ax.tick_params(axis="x", labelsize=7, labelrotation=90 if upright else 0)
        ax.grid(axis="y", alpha=0.3)
    every = [v for groups in by_link.values() for xs in groups.values() for v in xs]
    if min(every) > 0 and max(every) / min(every) > 100:
        flat_axes[0].set_yscale("log")  # (shared: all panels) orders of magnitude apart
    for row in axes:
        row[0].set_ylabel(ylabel)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def _labels(by_link: dict[str, dict[str, list[float]]]) -> list[str]:
    return [name for groups in by_link.values() for name in groups]


def _group(r: dict[str, Any]) -> tuple[str, str, int]:
    """What a box, a graph and a line of statistics stand for, but the pair."""
    return (r["protocol"], r["link"], r["size"])


def _judged(r: dict[str, Any], value: str = "goodput_bps") -> bool:
    return (
        r["status"] == "done"
        and r.get(value) is not None
        and r["verdict"] not in ("error", "unsupported")
    )


def statistics(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(per group and pair: n, mean, sd, 95 % CI of the goodput; per link
    and size, between pairs: paired difference CIs and Tukey HSD p-values)."""
    import numpy as np
    from scipy import stats

    samples: dict[tuple[str, str, int], dict[str, dict[int, float]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for r in rows:
        if _judged(r):
            samples[_group(r)][f"{r['sender']}>{r['receiver']}"][r["replicate"]] = float(
                r["goodput_bps"]
            )
    per: list[dict[str, Any]] = []
    between: list[dict[str, Any]] = []
    for (proto, link, size), pairs in sorted(samples.items()):
        for pair, reps in sorted(pairs.items()):
            x = np.array(list(reps.values()))
            mean = float(x.mean())
            sd = float(x.std(ddof=1)) if len(x) > 1 else None
            lo = hi = None
            if len(x) > 1 and sd:
                lo, hi = (
                    float(v) for v in stats.t.interval(0.95, len(x) - 1, mean, sd / len(x) ** 0.5)
                )
            elif len(x) > 1:
                lo = hi = mean
            per.append({"protocol": proto, "link": link, "size": size, "pair": pair,
                        "n": len(x), "mean_bps": mean, "sd_bps": sd, "ci95_low": lo,
                        "ci95_high": hi})  # fmt: skip
        names = sorted(pairs)
        tukey = None
        groups = [np.array(list(pairs[n].values())) for n in names]
        if len(names) > 1 and all(len(g) > 1 for g in groups) and any(g.std() > 0 for g in groups):
            tukey = stats.tukey_hsd(*groups)
        for i, a in enumerate(names):
            for j in range(i + 1, len(names)):
                b = names[j]
                common = sorted(set(pairs[a]) & set(pairs[b]))
                d = np.array([pairs[a][k] - pairs[b][k] for k in common])
                lo = hi = None
                if len(d) > 1 and d.std(ddof=1) > 0:
                    lo, hi = (
                        float(v)
                        for v in stats.t.interval(
                            0.95, len(d) - 1, d.mean(), d.std(ddof=1) / len(d) ** 0.5
                        )
                    )
                between.append({"protocol": proto, "link": link, "size": size, "a": a, "b": b,
                                "paired_n": len(d),
                                "mean_diff_bps": float(d.mean()) if len(d) else None,
                                "paired_ci95_low": lo, "paired_ci95_high": hi,
                                "tukey_p": float(tukey.pvalue[i][j]) if tukey is not None
                                else None})  # fmt: skip
    return per, between


def _graphs(rows: list[dict[str, Any]], plan: Plan, out: Path) -> list[tuple[str, str]]:
    """A time-sequence graph of each group and pair's first run."""
    from conformance.campaign import tsg

    firsts: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in sorted(rows, key=lambda r: r["replicate"]):
        key = (*_group(r), r["sender"], r["receiver"])
        if key not in firsts and r["status"] == "done" and r["run_dir"]:
            firsts[key] = r
    (out / "tsg").mkdir(exist_ok=True)
    made = []
    for r in firsts.values():
        png = out / "tsg" / f"{Path(r['run_dir']).name}.png"
        title = f"{r['key']}: {r['verdict']}"
        spec = plan.specs[r["protocol"]]
        if png.is_file() or tsg.plot(spec, Path(r["run_dir"]), png, title) is not None:
            made.append((f"tsg/{png.name}", title))
    return made


def _table(items: list[dict[str, Any]], table_id: str) -> str:
    if not items:
        return "<p>none yet (two finished replicates of a group at least)</p>"
    cols = list(items[0])
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_fmt(x[c]) if x[c] is not None else '')}</td>"
                         for c in cols) + "</tr>"
        for x in items
    )  # fmt: skip
    return f"<table id='{table_id}'><tr>{head}</tr>{body}</table>"


def _link_figures(plan: Any) -> dict[str, tuple[float, float, float]]:
    """Link label -> (forward rate in bit/s, forward one-way delay in ms,
    error: packet error probability, else BER, else frame loss)."""
    from conformance.channel import control as emulator

    out = {}
    for link in plan.links:
        fwd, _ret, _k = emulator.resolve(link.channel())
        lk = fwd.link
        out[link.label] = (lk.rate_bps, lk.delay_ms, lk.packet_error or lk.ber or lk.loss)
    return out


def _curves(rows: list[dict[str, Any]], plan: Any, out: Path) -> list[tuple[str, str]]:
    """Goodput against the link's error rate (one line per pair, rate and
    delay) and against the transfer size (one line per pair and link), each
    point the mean with its 95 % CI: the NASA study's other figures."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from scipy import stats

    figs = _link_figures(plan)
    made = []
    judged = [r for r in rows if _judged(r)]

    def mean_ci(xs: list[float]) -> tuple[float, float]:
        m = float(np.mean(xs))
        if len(xs) < 2 or np.std(xs) == 0:
            return m, 0.0
        lo, _hi = stats.t.interval(0.95, len(xs) - 1, m, np.std(xs, ddof=1) / len(xs) ** 0.5)
        return m, m - float(lo)

    for what, xlabel, name, key, series_of in (
        (
            "error",
            "packet error probability (BER for a BER link)",
            "goodput-vs-error.png",
            lambda r: figs[r["link"]][2],
            lambda r: (
                f"{r['protocol']} {r['sender']}>{r['receiver']} "
                f"{figs[r['link']][0] / 1e6:g} Mb/s {figs[r['link']][1]:g} ms, {r['size']} B"
            ),
        ),
        (
            "size",
            "transfer size (bytes)",
            "goodput-vs-size.png",
            lambda r: float(r["size"]),
            lambda r: f"{r['protocol']} {r['sender']}>{r['receiver']} {r['link']}",
        ),
    ):
        series: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
        for r in judged:
            series[series_of(r)][key(r)].append(float(r["goodput_bps"]))
        if not any(len(pts) > 1 for pts in series.values()):
            continue  # one point per line: nothing to draw a curve through
        fig, ax = plt.subplots(figsize=(8.5, 5))
        for label, pts in sorted(series.items()):
            xs = sorted(pts)
            ms = [mean_ci(pts[x]) for x in xs]
            ax.errorbar(xs, [m for m, _ in ms], yerr=[c for _, c in ms], marker="o",
                        markersize=3, capsize=2, linewidth=1, label=label)  # fmt: skip
        if what == "error":
            ax.set_xscale("symlog", linthresh=1e-6)  # 0 (a clean link) among the rest
        else:
            ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("goodput (bit/s), mean and 95 % CI")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=6, ncol=2)
        fig.tight_layout()
        fig.savefig(out / name)
        plt.close(fig)
        made.append((name, f"goodput against the {what}"))
    return made


def matrices(rows: list[dict[str, Any]]) -> dict[str, dict[tuple[str, str], dict[str, Any]]]:
    """Per protocol, the ACTS-style interoperability matrix of the runs:
    (sender, receiver) -> the cell's mark (reports.html.cell_status over
    its runs' verdicts, every link and size together) and its counts."""
    from reports.html import cell_mark, reading_hazard, readings_followed

    out: dict[str, dict[tuple[str, str], dict[str, Any]]] = defaultdict(dict)
    by: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[(r["protocol"], r["sender"], r["receiver"])].append(r)
    marks = {key: [r["verdict"] or "not run" for r in rs] for key, rs in by.items()}
    followed = {
        proto: readings_followed({(tx, rx): m for (p, tx, rx), m in marks.items() if p == proto})
        for proto in {p for p, _, _ in by}
    }
    for (proto, tx, rx), rs in by.items():
        statuses = marks[(proto, tx, rx)]
        links: dict[str, list[str]] = defaultdict(list)
        for r, x in zip(rs, statuses, strict=True):
            links[r["link"]].append(x)
        # a cell of runs still to come is marked by those that ran
        label = cell_mark([x for x in statuses if x != "not run"])
        out[proto][(tx, rx)] = {
            "status": mark_status(label),
            "label": label,
            "counts": dict(Counter(statuses)),
            "traces": sum(1 for r in rs if r["trace"] == "accepted"),
            "links": {k: cell_mark(v) for k, v in sorted(links.items())},
            "hazard": reading_hazard(followed[proto], tx, rx),
        }
    return dict(out)


def _matrix_html(rows: list[dict[str, Any]]) -> str:
    """One table per protocol: sender rows, receiver columns (as the ACTS
    118x matrix), each cell its mark, its verdict counts and how many of its
    traces the model accepted; the title lists the mark per link."""
    from reports.html import MARKS

    parts = []
    for proto, cells in sorted(matrices(rows).items()):
        names = sorted({n for pair in cells for n in pair})
        head = "".join(f"<th>{html.escape(n)}</th>" for n in names)
        body = ""
        for tx in names:
            body += f"<tr><th>{html.escape(tx)}</th>"
            for rx in names:
                c = cells.get((tx, rx))
                if c is None:
                    body += "<td></td>"
                    continue
                n = sum(c["counts"].values())
                counts = ", ".join(f"{k} {v}" for k, v in sorted(c["counts"].items()))
                title = "; ".join(f"{k}: {v}" for k, v in c["links"].items())
                if c["hazard"]:
                    title = f"{c['hazard']}; {title}"
                readings = ", ".join(mark_readings(c["label"]))
                body += (
                    f"<td class='{html.escape(c['status'])}' title='{html.escape(title)}'>"
                    f"<b>{MARKS[c['status']]}</b>"
                    + (f"<sup>r{html.escape(readings)}</sup>" if readings else "")
                    + (" <b class='hazard'>⚠</b>" if c["hazard"] else "")
                    + f" {html.escape(counts)}"
                    f"<br><small>traces accepted {c['traces']}/{n}</small></td>"
                )
            body += "</tr>"
        parts.append(
            f"<h3>{html.escape(proto.upper())}</h3><table class='matrix' "
            f"id='matrix-{html.escape(proto)}'><tr><th>sender \\ receiver</th>{head}</tr>"
            f"{body}</table>"
        )
    return "".join(parts)


def write(st: Store, out: Path) -> Path:
    """results.csv, results.json and report.html in ``out``."""
    rows = export(st, out)
    plan = st.plan()
    figs = _figures(rows, plan, out)
    per, between = statistics(rows)
    with (out / "stats.csv").open("w", newline="", encoding="utf-8") as fh:
        for items in (per, between):
            if items:
                w = csv.DictWriter(fh, fieldnames=list(items[0]))
                w.writeheader()
                w.writerows(items)
                fh.write("\n")
    graphs = _graphs(rows, plan, out)
    counts: dict[str, int] = defaultdict(int)
    for r in rows:
        counts[r["verdict"] or r["status"]] += 1
    page = (
        _page_head(plan)
        + "<p id='counts'>"
        + ", ".join(f"{html.escape(k)}: {v}" for k, v in sorted(counts.items()))
        + " &middot; <a href='results.csv'>results.csv</a> &middot; "
        "<a href='results.json'>results.json</a></p>"
        + "".join(
            f"<figure><img src='{n}' alt='{html.escape(t)}'><figcaption>{html.escape(t)}"
            "</figcaption></figure>"
            for n, t in figs
        )
        + "<h2>Interoperability matrix (sender rows, receiver columns; a cell's mark is "
        "its worst verdict over every link and size, its title the mark per link)</h2>"
        + _matrix_html(rows)
        + "<h2>Goodput: mean, standard deviation, 95 % confidence interval</h2>"
        + _table(per, "stats")
        + "<h2>Between implementations: paired 95 % CI of the goodput difference "
        "(a minus b, replicate by replicate) and Tukey's HSD p-value</h2>"
        + _table(between, "between")
        + "<h2>Time-sequence graphs (each group's first run)</h2>"
        + "".join(
            f"<figure><img src='{n}' alt='{html.escape(t)}' width='560'>"
            f"<figcaption>{html.escape(t)}</figcaption></figure>"
            for n, t in graphs
        )
        + _runs_table(rows, out)
    )
    path = out / "report.html"
    path.write_text(page + "\n", encoding="utf-8")
    return path


def _figures(rows: list[dict[str, Any]], plan: Plan, out: Path) -> list[tuple[str, str]]:
    """The box plots per link and pair, then the goodput curves: (file,
    caption) of each drawn (a figure with nothing to show is not)."""
    figs = []
    for value, ylabel, name in (
        ("goodput_bps", "goodput (bit/s)", "goodput.png"),
        ("units_forward", "units sender -> receiver", "units-forward.png"),
        ("units_return", "units receiver -> sender", "units-return.png"),
        ("efficiency", "physical minimum / time to close", "efficiency.png"),
    ):
        if _boxes(rows, value, ylabel, out / name):
            figs.append((name, f"{ylabel}, per link and implementation pair"))
    return figs + _curves(rows, plan, out)


def _page_head(plan: Plan) -> str:
    """The page's head, style and title: the plan's name, description and
    what it reproduces."""
    return (
        "<!doctype html><meta charset='utf-8'>"
        f"<title>campaign {html.escape(plan.name)}</title>"
        "<style>body{font-family:sans-serif;margin:1.5em}td,th{border:1px solid #ccc;"
        "padding:2px 6px;font-size:12px}table{border-collapse:collapse}"
        ".pass{background:#d5f5e3}.fail{background:#fadbd8}.inconclusive{background:#fcf3cf}"
        ".error{background:#e5e7e9}.unsupported{color:#777}figure{display:inline-block;"
        "margin:0 1em 1em 0}</style>"
        # once loaded, the page says how many of its images a browser decoded
        # (the tests read it back from headless Chromium's DOM)
        "<script>addEventListener('load',()=>{const i=[...document.images];"
        "document.body.dataset.images=i.length;document.body.dataset.imagesOk="
        "i.filter(x=>x.complete&&x.naturalWidth>0).length})</script>"
        f"<h1>Campaign {html.escape(plan.name)}</h1>"
        f"<p>{html.escape(plan.description)}</p>"
        + (f"<p>Reproduces: {html.escape(plan.source)}</p>" if plan.source else "")
    )


def _runs_table(rows: list[dict[str, Any]], out: Path) -> str:
    """The runs, one row each (the first 16 columns), each key linking to
    its run directory."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS[:16])
    body = "".join(
        "<tr>"
        + "".join(
            f"<td class='{html.escape(mark_status(str(r['verdict'])))}'>"
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
    return f"<h2>Runs</h2><table id='runs'><tr>{head}</tr>{body}</table>"


def _rel(p: str, out: Path) -> str:
    try:
        return str(Path(p).relative_to(out)) + "/"
    except ValueError:
        return p


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)
