"""A mutation run's account: each mutant's fate, the judge that killed it,
the score per implementation and per source file (``mutation.json``), and
``mutation.html`` in the campaign report's style."""

from __future__ import annotations

import inspect
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.campaign.store import RunStore
from conformance.mutate.run import ORIGINAL, SHRUNK, mutants_of

# reason codes (docs/verdicts.md) by the judge that gives them
OUTCOME_CODES = (
    "outcome-not-at-end",
    "outcome-not-allowed",
    "unexpected-",
    "payload-corrupt",
    "session-told",
    "segment-told",
)
# our side's failures: an error with one of these kills nothing
OURS = (
    "channel-crash",
    "channel-missed",
    "capture-failed",
    "socket-overflow",
    "run-error",
    "trace-error",
    "tester-deviation",
    "told-session-unreadable",
)


NOTES = "mutation-notes.json"
KINDS = ("equivalent", "open", "gap")


def notes_of(sut: Any) -> dict[str, dict[str, str]]:
    """The implementation's explanations of its survivors, beside its
    endpoint file (``mutation-notes.json``): the tool's mutant name ->
    ``kind`` (``equivalent``: it changes nothing observable; ``open``: the
    standard leaves it open, ``why`` names the section; ``gap``: the suite
    misses it) and ``why``; a gap may say what would kill it (``kill``),
    and, once the suite or the judge was mended so that it is killed, what
    closed it (``closed``)."""
    home = (
        Path(sut.path).parent if hasattr(sut, "path") else Path(inspect.getfile(type(sut))).parent
    )
    path = home / NOTES
    if not path.is_file():
        return {}
    notes: dict[str, dict[str, str]] = json.loads(path.read_text(encoding="utf-8"))
    bad = [
        k
        for k, v in notes.items()
        if v.get("kind") not in KINDS
        or not v.get("why")
        or (v.get("closed") and v.get("kind") != "gap")
    ]
    if bad:
        from conformance.core.errors import InputError

        raise InputError(
            f"{path}: {bad[0]}: each note needs a kind ({', '.join(KINDS)}) and a why; only a "
            "gap is closed"
        )
    return notes


def judges_of(verdict: dict[str, Any]) -> list[str]:
    """The judges whose reasons made ``verdict`` (a verdict.json) a fail or
    an error, in the order of its reasons: ``outcome``, ``trace
    validation``, ``obligation`` (trace validation rejected the trace for
    something owed and never sent in time: its ``overdue``), ``probe``,
    ``dissector`` (an expert check of our dissector), ``crash`` (the
    implementation's own harness died or hung)."""
    out: list[str] = []
    tester = (verdict.get("sut") or "").find("tester") >= 0
    for r in verdict.get("reasons", []):
        code, msg = r.get("code", ""), r.get("message", "")
        if r.get("severity") == "note" or code in ("observed-outcome", "trace-late"):
            continue
        if code == "trace-rejected":
            j = "obligation" if (verdict.get("trace") or {}).get("overdue") else "trace validation"
        elif code.startswith("reading-") and code.endswith("-deviation"):
            j = "trace validation"
        elif code.startswith(OUTCOME_CODES):
            j = "outcome"
        elif code.startswith("probe-"):
            j = "probe"
        elif code in ("sender-error", "receiver-error", "sender-crashed", "receiver-crashed"):
            j = "crash" if not (tester and "tester" in msg) else ""
        elif (
            code in OURS
            or code.startswith("expectation-")
            or code
            in (
                "impairment-unmet",
                "request-unmade",
                "outcome-unjudged",
                "crash-unjudged",
                "endpoint-open",
                "trace-unchecked",
                "outcome-after-rejection",
            )
        ):
            j = ""
        else:
            j = "dissector"
        if j and j not in out:
            out.append(j)
    return out


def said(deviation: str) -> str:
    """A deviation (run.deviation) in a few words: the line trace validation
    could not explain, with its unit's fields that say something; what was
    owed; or the failing reasons."""
    if not deviation:
        return "no verdict"
    d = json.loads(deviation)
    if "overdue" in d:
        return "owed and not sent in time: " + ", ".join(d["overdue"])
    if "line" in d:
        ln = d["line"]
        unit = {k: v for k, v in (ln.get("unit") or {}).items() if v not in (False, "", [], 0)}
        fields = " ".join(f"{k}={json.dumps(v)}" for k, v in unit.items())
        return f"rejected at the {ln.get('actor', '')}'s {ln.get('kind', '')} {fields}".strip()
    return "; ".join(f"{c} ({', '.join(a) or 'no action'})" for c, a in d.get("reasons", []))


@dataclass
class Fate:
    """What became of one mutant."""

    mutant: dict[str, Any]
    status: str  # killed, trivial, survived, unviable, unexercised, pending
    case: str = ""  # the killing case
    verdict: str = ""
    judges: list[str] = field(default_factory=list)
    rule: str = ""
    run_dir: str = ""
    detail: str = ""
    cases_run: int = 0
    by: str = "suite"  # or "search": the Hypothesis search's kill (hunt.py)
    # the kill's scenario shrunk (shrink.py): its file and the mutant's run
    # there, relative to the run's folder; the impairments it keeps and the
    # ones taken away; why it was not shrunk
    minimal: dict[str, Any] = field(default_factory=dict)


def fates(st: RunStore) -> list[Fate]:
    recs = st.records()
    by_mutant: dict[str, list[Any]] = defaultdict(list)
    for r in recs:
        by_mutant[r.spec["mutant"]].append(r)
    out = []
    for m in mutants_of(st):
        mine = by_mutant.get(m.key, [])
        ran = [r for r in mine if r.status == "done" and r.verdict not in ("skipped", None)]
        unviable = st.get(f"unviable:{m.key}")
        kill = st.get(f"killed:{m.key}")
        f = Fate(m.as_dict(), "pending", cases_run=len(ran))
        if unviable is not None:
            f.status, f.detail = "unviable", unviable
        elif kill is not None:
            k = json.loads(kill)
            f.case, f.verdict = k["case"], k["verdict"]
            row = next((r for r in mine if r.seq == k["seq"]), None)
            if row is None:  # the search's kill (hunt.py): its shrunk plan
                f.run_dir, f.status, f.by = str(k.get("run_dir", "")), "killed", "search"
                f.detail = f"found by the Hypothesis search, shrunk: {k.get('search', '')}"
            else:
                f.run_dir, f.detail = row.run_dir or "", row.detail or ""
                f.status = "trivial" if row.spec["nominal"] else "killed"
            shrunk = st.get(SHRUNK + m.key)
            if shrunk is not None:
                f.minimal = json.loads(shrunk)
            vfile = Path(f.run_dir) / "verdict.json"
            if vfile.is_file():
                v = json.loads(vfile.read_text(encoding="utf-8"))
                f.judges = judges_of(v)
                if k.get("original") == "fail" and "crash" in f.judges:
                    # a case the original fails kills by the crash alone
                    # (run.kill_rule): that is the judge it is credited to
                    f.judges = ["crash", *(j for j in f.judges if j != "crash")]
                elif k.get("differs"):
                    # or by a deviation of the mutant's own, shown twice
                    d = k["differs"]
                    f.detail = (
                        "the original fails this case too, otherwise, twice ("
                        f"{said(d.get('original_deviation', ''))}); the mutant, twice: "
                        f"{said(d.get('mutant_deviation', ''))}. " + f.detail
                    )
                f.rule = next(
                    (r.get("rule", "") for r in v.get("reasons", []) if r.get("rule")), ""
                )
        elif mine and all(r.status == "done" for r in mine):
            # no case the original passes ran: nothing was asked of it
            f.status = "survived" if ran else "unexercised"
        out.append(f)
    return out


def summary(st: RunStore, notes: dict[str, dict[str, str]] | None = None) -> dict[str, Any]:
    """The score: killed over killed and survived, less the survivors the
    notes call equivalent (``notes``: mutant name -> {"kind", "why"});
    trivially killed and unviable mutants apart."""
    notes = notes or {}
    fs = fates(st)
    count = Counter(f.status for f in fs)

    def note(f: Fate) -> dict[str, str]:
        return notes.get(f.mutant["name"], {})

    survivors = [f for f in fs if f.status == "survived"]
    equivalent = [f for f in survivors if note(f).get("kind") == "equivalent"]
    scored = count["killed"] + count["survived"] - len(equivalent)
    gaps_open = [f.mutant["name"] for f in survivors if note(f).get("kind") == "gap"]
    gaps_closed = [f.mutant["name"] for f in fs if f.status == "killed" and note(f).get("closed")]
    per_file: dict[str, Counter[str]] = defaultdict(Counter)
    for f in fs:
        per_file[f.mutant["file"]][f.status] += 1
    originals = [r for r in st.records() if r.spec["mutant"] == ORIGINAL]
    return {
        "sut": st.get("sut"),
        "mutants": len(fs),
        "killed": count["killed"],
        "killed_by_search": sum(1 for f in fs if f.status == "killed" and f.by == "search"),
        "survived": count["survived"],
        "equivalent": len(equivalent),
        "unexplained": sum(1 for f in survivors if not note(f)),
        "gaps_open": gaps_open,
        "gaps_closed": gaps_closed,
        "trivially_killed": count["trivial"] + count["unviable"],
        "pending": count["pending"],
        "unexercised": count["unexercised"],
        "score": round(count["killed"] / scored, 4) if scored else None,
        "judges": dict(Counter(j for f in fs if f.status == "killed" for j in f.judges[:1])),
        "per_file": {k: dict(v) for k, v in sorted(per_file.items())},
        "cases": len(originals),
        "cases_original_passes": sum(1 for r in originals if (r.verdict or "").startswith("pass")),
    }


def write(st: RunStore, out: Path, notes: dict[str, dict[str, str]] | None = None) -> Path:
    """``mutation.json``, ``mutation.html`` and its plot in ``out``; the
    page's path."""
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    from conformance.mutate.mutants import CARGO_MUTANTS
    from reports.html import TEMPLATES

    tool = st.get("tool") or CARGO_MUTANTS  # runs made before mutmut came say none
    notes = notes or {}
    s = summary(st, notes)
    fs = fates(st)
    (out / "mutation.json").write_text(
        json.dumps({**s, "fates": [f.__dict__ for f in fs]}, indent=1) + "\n", encoding="utf-8"
    )
    shown = []
    for f in fs:
        d = Path(f.run_dir)
        link = (
            str(d.relative_to(out) / "verdict.json") if f.run_dir and d.is_relative_to(out) else ""
        )
        mn = f.minimal
        shrunk = bool(mn.get("removed"))
        shown.append(
            {
                **f.__dict__,
                "link": link,
                "min_link": mn.get("scenario", "") if shrunk else "",
                "min_run": f"{mn['run_dir']}/verdict.json" if shrunk and mn.get("run_dir") else "",
            }
        )
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]))
    page = env.get_template("mutation.html").render(
        s=s,
        fates=shown,
        notes=notes,
        score="none yet" if s["score"] is None else f"{100 * s['score']:.1f} %",
        tool=tool,
        plot=_plot(s, out / "mutation-files.png"),
    )
    path = out / "mutation.html"
    path.write_text(page, encoding="utf-8")
    return path


def _plot(s: dict[str, Any], path: Path) -> str:
    """Mutants per source file, stacked by fate; the file's name ('' with
    no mutant)."""
    if not s["per_file"]:
        return ""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    files = list(s["per_file"])
    fates = [("killed", "#27ae60"), ("survived", "#c0392b"), ("trivial", "#95a5a6"),
             ("unviable", "#bdc3c7"), ("pending", "#ecf0f1")]  # fmt: skip
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(files) + 1.2))
    left = [0] * len(files)
    for fate, colour in fates:
        n = [s["per_file"][f].get(fate, 0) for f in files]
        ax.barh(files, n, left=left, color=colour, label=fate)
        left = [a + b for a, b in zip(left, n, strict=True)]
    ax.set_xlabel("mutants")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.invert_yaxis()
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path.name
