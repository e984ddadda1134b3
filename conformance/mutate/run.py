"""``dtnconform mutate``: the generated suite against each mutant of an
implementation's engine (docs/mutation.md).

A mutation run is a campaign whose runs are (mutant, case) pairs, in the
campaign's database (conformance.campaign.store.RunStore,
``mutation.sqlite``): it resumes as a campaign does, runs ``lanes`` at a
time on its own threads or on a Dask cluster's workers, and each run is a
``dtnconform run`` in a child process (conformance.campaign.engine).

- First the engine as published (``original``) runs every case. Only the
  cases it passes can kill a mutant: one it fails already says nothing
  about a mutant that fails it too.
- Then each mutant, built into the harness, runs those cases, the
  nominal ones first. Its first ``fail`` kills it, and its other cases are
  skipped. A run that ends in ``error`` (the engine panicked in its
  harness, or hung) kills it too, as a crash.
- A mutant that does not build, or fails its nominal case (no impairment,
  both sides its own), is trivially killed: counted apart, not in the
  score.
- A case the original fails without crashing still runs for a mutant,
  after the cases the original passes. It kills the mutant if the
  mutant's harness crashes there, or if the mutant deviates differently
  (``deviation``, ``its_own``), steadily: the original and the mutant each
  run it once more, and each deviates as in its first run. A case whose
  original deviates otherwise when run again kills no mutant.
- A mutant that passes every case survives. Each survivor is explained in
  the implementation's mutation notes (docs/mutation.md): equivalent, left
  open by the standard, or a gap in the suite.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from conformance.campaign.engine import Done, execute_command
from conformance.campaign.store import Record, RunStore
from conformance.certify import Case
from conformance.core.errors import DtncError
from conformance.mutate.mutants import Engine, Mutant, build

ORIGINAL = "original"
SHRUNK = "shrunk:"  # a suite kill's shrink, in the store (shrink.py)
DB = "mutation.sqlite"
# A run's longest wall time before it is stopped (an error: a mutant that
# hangs its engine is killed as a crash, as any other error).
TIMEOUT_S = 600.0


class MutationStore(RunStore):
    KIND, MADE_BY = "mutation run", "mutant set"


@dataclass(frozen=True)
class MutantRun:
    """One run: ``mutant`` (a Mutant.key, or ORIGINAL) on one case."""

    mutant: str
    case: str
    scenario: str  # the scenario file, relative to the run's folder
    tester: str | None
    nominal: bool

    @property
    def key(self) -> str:
        return f"{self.mutant}/{self.case}"


def is_nominal(scn: dict[str, Any], tester: str | None) -> bool:
    """The nominal transfer: both sides the implementation's, no
    impairment, no probe and no user request (a suspend or a cancel is a
    purpose, not the transfer every build must make)."""
    return (
        tester is None
        and not scn.get("impairments")
        and not scn.get("probes")
        and not (scn.get("params") or {}).get("requests")
    )


def sample(mutants: Sequence[Mutant], n: int | None, seed: int) -> list[Mutant]:
    """``n`` of the tool's mutants drawn with ``random.Random(seed)``, in
    the tool's order (all of them with no ``n``)."""
    if n is None or n >= len(mutants):
        return list(mutants)
    drawn = set(random.Random(seed).sample(range(len(mutants)), n))
    return [m for i, m in enumerate(mutants) if i in drawn]


def create(
    out: Path,
    engine: Engine,
    mutants: Sequence[Mutant],
    cases: Sequence[Case],
    first: Collection[str] = (),
) -> MutationStore:
    """The run's database: the original on every case, then each mutant on
    every case (a mutant's runs of cases the original does not pass are
    skipped when their turn comes), the nominal cases first, then those of
    the scenarios named in ``first`` (what --add named: the purposes meant
    to kill the survivors, so a kill comes early)."""

    def rank(c: Case) -> tuple[bool, bool]:
        scn = json.loads(c.path.read_text(encoding="utf-8"))
        return not is_nominal(scn, c.tester), scn.get("name") not in first

    order = sorted(cases, key=rank)
    specs = []
    for mk in [ORIGINAL, *(m.key for m in mutants)]:
        for c in order:
            scn = json.loads(c.path.read_text(encoding="utf-8"))
            r = MutantRun(
                mk, c.name, str(c.path.relative_to(out)), c.tester, is_nominal(scn, c.tester)
            )
            specs.append((r.key, r.__dict__, None))
    meta = {
        "sut": engine.sut.name,
        "tool": engine.tool,
        "mutants": json.dumps([m.as_dict() for m in mutants]),
    }
    st: MutationStore = MutationStore.create_runs(
        out / DB, digest(engine, mutants, order), meta, specs
    )
    return st


def digest(engine: Engine, mutants: Sequence[Mutant], cases: Sequence[Case]) -> str:
    text = json.dumps(
        [
            engine.sut.name,
            engine.package,
            engine.version,
            [m.name for m in mutants],
            sorted(c.name for c in cases),
        ]
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def reopen(
    out: Path, engine: Engine, mutants: Sequence[Mutant], cases: Sequence[Case]
) -> tuple[MutationStore, int]:
    st, cut = MutationStore.reopen_runs(
        out / DB,
        digest(engine, mutants, cases),
        "resume it with the --sample, --seed, --mutant, --catalogue and --add it started "
        "with, or start anew elsewhere",
    )
    return st, cut


def mutants_of(st: RunStore) -> list[Mutant]:
    return [Mutant(**m) for m in json.loads(st.get("mutants") or "[]")]


def _command(sut: str, run: MutantRun, run_dir: Path) -> Callable[[Path], list[str]]:
    import sys

    def cmd(scn_path: Path) -> list[str]:
        c = [sys.executable, "-m", "conformance.cli", "run", str(scn_path), "--sut", sut]
        if run.tester:
            c += ["--tester", run.tester]
        return [*c, "--out", str(run_dir), "--force"]

    return cmd


def kill_rule(original: str, original_crashed: Callable[[], bool]) -> str:
    """What a mutant's run of a case must show to kill it, given the
    original's verdict there: ``any`` fail or error where the original
    passed; where the original failed without crashing, a fail that
    ``differs`` from the original's: a crash of the implementation's
    harness (no deviation of the original's explains it), or a deviation
    of its own, shown steadily (``deviation``, run's confirmation); ''
    where the case cannot judge a mutant (not run)."""
    if original.startswith("pass"):
        return "any"
    if original == "fail" and not original_crashed():
        return "differs"
    return ""


_UNSTEADY = ("t_us", "frame", "session")  # a trace line's parts that vary from run to run


def _verdict(run_dir: Path) -> dict[str, Any]:
    """A run's verdict.json ({} where the run left none)."""
    vfile = run_dir / "verdict.json"
    return dict(json.loads(vfile.read_text(encoding="utf-8"))) if vfile.is_file() else {}


def _lines(run_dir: Path, tr: dict[str, Any]) -> list[dict[str, Any]]:
    """A run's trace lines (``tr``: its verdict's trace), less what varies
    from run to run."""
    tfile = run_dir / (tr.get("trace_file") or "trace.ndjson")
    if not tfile.is_file():
        return []
    with tfile.open(encoding="utf-8") as fh:
        return [
            {k: x for k, x in json.loads(text).items() if k not in _UNSTEADY}
            for text in fh
            if text.strip()
        ]


def _rejected_at(tr: dict[str, Any]) -> int | None:
    """The trace line (1-based) a verdict's trace validation rejected, or
    None where it did not reject the trace."""
    return int(tr.get("line") or 0) or None if tr.get("status") == "rejected" else None


def rejected_at(run_dir: Path) -> int | None:
    """The trace line a run's trace validation rejected (1-based), or None."""
    return _rejected_at(_verdict(run_dir).get("trace") or {})


# How many trace lines apart the original's copy of a PDU may be for the
# mutant's, rejected at or before the original's line, to be the same two
# sends in the other order (its_own).
RACE_LINES = 2


def its_own(mutant: Path, original: Path) -> bool:
    """Whether the mutant's deviation cannot be one the original makes too,
    hidden behind the original's first: trace validation stops at the
    first line it cannot explain, so the original's trace is judged only
    that far. It can be the original's where the mutant's run was rejected
    past the original's line at a PDU the original's trace shows too, or
    for something owed and not sent (an omission, or a line that is no
    send). At or before the original's line a rejected send is the
    mutant's own unless the original's trace shows the same PDU within
    RACE_LINES of it, and an omission unless it is noticed at the
    original's line: two entities' sends at nearly the same time come in
    either order from run to run (a cfdp-py mutant of a PermissionError
    branch, never reached, was credited with a kill so: the sender's
    EOF(cancel) and the receiver's Finished(cancel) at the same ACK limit,
    3 ms apart, the other way round, each side's answer then overdue at
    line 21)."""
    ours, theirs = _verdict(mutant).get("trace") or {}, _verdict(original).get("trace") or {}
    mine, at = _rejected_at(ours), _rejected_at(theirs)
    if at is None:
        return True
    if mine is None:
        return False
    lines = _lines(mutant, ours)
    line = lines[mine - 1] if mine <= len(lines) else {}
    if ours.get("overdue") or line.get("kind") != "send":
        return mine < at
    shown = _lines(original, theirs)
    if mine <= at:
        shown = shown[max(0, mine - 1 - RACE_LINES) : mine + RACE_LINES]
    return line not in shown


def deviation(run_dir: Path) -> str:
    """What a failed run's verdict holds against the implementation, as a
    text without times, frame numbers or session numbers. Where trace
    validation rejected a line no behaviour of the model explains: that
    line (its kind, direction, actor and the model's unit for its PDU).
    Where it rejected the trace for something owed and not sent in time:
    the actions owed (the line it noticed it at is only the first one past
    the due time). Else each failing reason's code and actions. The
    actions blamed for an unexplained line are left out: they are the
    model's steps enabled there, which vary with the order of arrivals
    from run to run. Two runs that deviate the same way give the same
    text; '' where the run left no verdict."""
    v = _verdict(run_dir)
    tr = v.get("trace") or {}
    at = _rejected_at(tr)
    if tr.get("status") == "rejected":
        if tr.get("overdue"):
            return json.dumps({"overdue": sorted(tr.get("actions") or [])})
        lines = _lines(run_dir, tr)
        seen = lines[at - 1] if at is not None and at <= len(lines) else {}
        return json.dumps({"line": seen}, sort_keys=True)
    reasons = [
        [r.get("code", ""), sorted(r.get("actions") or [])]
        for r in v.get("reasons", [])
        if r.get("severity") != "note"
    ]
    return json.dumps({"reasons": reasons}, sort_keys=True) if reasons else ""


def run(
    st: MutationStore,
    out: Path,
    engine: Engine,
    *,
    lanes: int = 1,
    pool: Executor | None = None,
    on_progress: Callable[[int, int, str], None] | None = None,
    timeout_s: float = TIMEOUT_S,
) -> None:
    """Every pending run of ``st``, ``lanes`` at a time (on ``pool``, a
    Dask cluster's executor, where given). The original's runs go first,
    all of them; then the mutants', each built when its first run is due
    (in this process: cargo builds one at a time), a killed mutant's
    pending runs skipped.

    A case the original fails still runs for a mutant when the original
    did not crash there: it kills the mutant only if the mutant's own
    harness crashes or hangs on it (judge ``crash``), a difference no
    deviation of the original's can explain, or if the mutant deviates
    otherwise than the original, steadily: ``confirm`` runs the case once
    more for each, here, and both must deviate as before. Code reached
    only in a case the published engine already fails is tested that
    far."""
    scratch = out / "scratch"
    by_mutant = {m.key: m for m in mutants_of(st)}
    total = len(st.records())
    done = total - len(st.records("pending"))
    running: dict[Future[Done], Record] = {}
    # each run under way: its kill_rule ("any" for the original's) and folder
    under_way: dict[int, tuple[str, Path]] = {}
    original_crashed: dict[str, bool] = {}  # by case, read once
    original_again: dict[str, Path] = {}  # by case: the original's second run (confirm)
    unsteady: set[str] = set()  # cases whose original deviated otherwise when run again
    own = pool is None
    executor = pool or ThreadPoolExecutor(max_workers=lanes)
    builds: dict[str, str | None] = {}

    def original_verdicts() -> dict[str, str]:
        return {
            r.spec["case"]: r.verdict or ""
            for r in st.records("done")
            if r.spec["mutant"] == ORIGINAL
        }

    def crashed_in(run_dir: Path) -> bool:
        """Whether the run's verdict blames the implementation's harness
        crashing or hanging (report.judges_of's ``crash``)."""
        from conformance.mutate.report import judges_of

        return "crash" in judges_of(_verdict(run_dir))

    def crashed_in_case(case: str) -> bool:
        """Whether the original crashed in ``case`` (its run is done)."""
        if case not in original_crashed:
            original_crashed[case] = crashed_in(original_dir(case))
        return original_crashed[case]

    def original_dir(case: str) -> Path:
        """The original's run of ``case`` (done)."""
        row = next(
            r for r in st.records("done") if r.spec["mutant"] == ORIGINAL and r.spec["case"] == case
        )
        return Path(row.run_dir or "")

    def confirm(r: Record, run_dir: Path) -> dict[str, str] | None:
        """Whether the mutant's fail in a case the original fails is a
        deviation of its own, shown steadily: the two deviations differ,
        the mutant's cannot be the original's own hidden behind its first
        (``its_own``), and one more run of each, here, deviates as its first
        did. The kill's evidence, or None."""
        case = r.spec["case"]
        if case in unsteady:
            return None
        first = original_dir(case)
        theirs, mine = deviation(first), deviation(run_dir)
        if not theirs or not mine or theirs == mine or not its_own(run_dir, first):
            return None
        scn_text = (out / r.spec["scenario"]).read_text(encoding="utf-8")
        spec = MutantRun(**r.spec)

        def rerun(mk: str, beside: Path) -> Path | None:
            made = sut_file(mk)
            if made is None:
                return None
            d = beside.with_name(f"{beside.name}.again")
            execute_command(_command(made, spec, d), scn_text, d, timeout_s)
            return d

        if case not in original_again:  # the original runs each such case again once
            d = rerun(ORIGINAL, first)
            if d is None:
                return None
            original_again[case] = d
            if deviation(d) != theirs:
                unsteady.add(case)  # the original's own deviation varies: no kill here
                return None
        mutant_again = rerun(r.spec["mutant"], run_dir)
        if mutant_again is None or deviation(mutant_again) != mine:
            return None
        if not its_own(mutant_again, original_again[case]):
            return None
        again = {"original": original_again[case], "mutant": mutant_again}
        return {
            "original_run": str(first),
            "original_again": str(again["original"]),
            "mutant_again": str(again["mutant"]),
            "original_deviation": theirs,
            "mutant_deviation": mine,
        }

    def settled(mk: str) -> str:
        """Why a mutant's runs are over ('' while it is not)."""
        if st.get(f"killed:{mk}") is not None:
            return "killed"
        if st.get(f"unviable:{mk}") is not None:
            return "unviable"
        return ""

    def skip(r: Record, why: str) -> None:
        nonlocal done
        st.start(r.seq, "-", out / "runs" / r.key.replace("/", "--"))
        st.finish(r.seq, verdict="skipped", detail=why)
        done += 1

    def sut_file(mk: str) -> str | None:
        if mk not in builds:
            mutant = None if mk == ORIGINAL else by_mutant[mk]
            made, why = build(engine, mutant, scratch)
            builds[mk] = made
            if made is None:
                with st.tx():
                    st.put(f"unviable:{mk}", why or "it does not build")
        return builds[mk]

    try:
        while True:
            # (a run under way is 'running' in the database, not pending)
            ready = st.records("pending")
            originals_left = any(r.spec["mutant"] == ORIGINAL for r in [*ready, *running.values()])
            base = original_verdicts()
            if not originals_left and not any(v.startswith("pass") for v in base.values()):
                first = next((r for r in st.records("done") if r.spec["mutant"] == ORIGINAL), None)
                raise DtncError(
                    f"the engine as published passed none of its {len(base)} cases, so no "
                    "mutant can be judged"
                    + (f" ({first.spec['case']}: {first.verdict}: {first.detail})" if first else "")
                )
            # a mutant's cases the original fails wait for those it passes
            passes_left = {
                x.spec["mutant"]
                for x in [*ready, *running.values()]
                if x.spec["mutant"] != ORIGINAL and base.get(x.spec["case"], "").startswith("pass")
            }
            for r in ready:
                if len(running) >= lanes:
                    break
                mk = r.spec["mutant"]
                rule = "any"
                if mk != ORIGINAL:
                    if originals_left:
                        break  # the original's verdicts first
                    why = settled(mk)
                    if why:
                        skip(r, f"the mutant is {why}")
                        continue
                    case = r.spec["case"]
                    verdict = base.get(case, "")
                    rule = kill_rule(verdict, partial(crashed_in_case, case))
                    if not rule:
                        skip(r, f"the original's verdict is {verdict or 'none'}")
                        continue
                    if rule == "differs" and mk in passes_left:
                        continue  # its turn comes once the cases the original passes ran
                made = sut_file(mk)
                if made is None:
                    skip(r, f"the mutant is unviable: {st.get(f'unviable:{mk}')}")
                    continue
                run_dir = out / "runs" / (mk + "--" + r.spec["case"])
                if r.attempts:
                    run_dir = run_dir.with_name(f"{run_dir.name}.{r.attempts + 1}")
                st.start(r.seq, "", run_dir)
                under_way[r.seq] = (rule, run_dir)
                scn_text = (out / r.spec["scenario"]).read_text(encoding="utf-8")
                spec = MutantRun(**r.spec)
                fut = executor.submit(
                    execute_command, _command(made, spec, run_dir), scn_text, run_dir, timeout_s
                )
                running[fut] = r
            if not running:
                if not st.records("pending"):
                    break
                continue  # every run looked at was skipped: the next ones
            finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for fut in finished:
                r = running.pop(fut)
                res = fut.result()
                st.finish(
                    r.seq, verdict=res.verdict, trace=res.trace, detail=res.detail, lane=res.where
                )
                done += 1
                mk = r.spec["mutant"]
                rule, run_dir = under_way.pop(r.seq)
                differs: dict[str, str] | None = None
                if rule == "differs":
                    killing = res.verdict == "fail" and crashed_in(run_dir)
                    if res.verdict == "fail" and not killing and not settled(mk):
                        differs = confirm(r, run_dir)
                        killing = differs is not None
                else:
                    killing = res.verdict in ("fail", "error")
                if mk != ORIGINAL and not settled(mk) and killing:
                    kill: dict[str, Any] = {
                        "case": r.spec["case"],
                        "verdict": res.verdict,
                        "seq": r.seq,
                    }
                    if rule == "differs":
                        kill["original"] = "fail"  # it failed there without crashing
                        if differs:
                            kill["differs"] = differs
                    with st.tx():
                        st.put(f"killed:{mk}", json.dumps(kill))
                if on_progress:
                    on_progress(done, total, f"{r.key}: {res.verdict}")
    except BaseException:
        for fut in running:
            fut.cancel()
        raise
    finally:
        if own:
            executor.shutdown(wait=True, cancel_futures=True)
    st.put("finished", str(time.time()))
