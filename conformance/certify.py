"""Certification run: scenarios -> a generated Robot Framework suite -> report.

The suite has one test case per scenario (Test Template ``Scenario Should
Pass``), tagged with the protocol, every test purpose it stands for, the
TLA+ actions of its trace and the spec sections it exercises (``RFC5326-6.8``).
Robot's log.html, report.html and output.xml stay in the certification
directory beside every run directory and the HTML report.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.core.errors import DtncError, InputError, NotRun
from conformance.core.types import (
    RunOutcome,
    RunResult,
    Scenario,
    SegmentRecord,
    Verdict,
    dump_model,
    load_model,
    load_scenario,
)
from conformance.protocols import ProtocolSpec
from conformance.robot import suitefile
from suts.base import SutAdapter

RESOURCE = Path(__file__).resolve().parent / "robot" / "res_dtnconform.robot"
COVERAGE = "coverage.json"
# Robot's console output, beside its log
CONSOLE = "robot-console.txt"
# the generator's last file in a scenarios folder: its absence means the
# generation was cut short (cli._generate writes it)
GENERATED = ".generated"


@dataclass
class CertifyOutcome:
    runs: list[RunOutcome]
    robot_log: Path
    report: Path
    # Robot's exit status, and the cases it ran that left no verdict (a
    # Robot error: the keyword never ran, or died before judging)
    robot_rc: int = 0
    unrun: dict[str, str] = field(default_factory=dict)
    # cases a role of the implementation refused at run time (exit 127): why
    unsupported: dict[str, str] = field(default_factory=dict)
    # scenarios run as the implementation's profile moves them: what moved
    adapted: dict[str, list[str]] = field(default_factory=dict)


# Who plays which side of a case: the SUT both, or the tester one of them.
SUT_ROLES = ("both", "sender", "receiver")
ROBUSTNESS = "robustness"
CATALOGUE, CATALOGUE_INDEX = "catalogue", "catalogue.json"


@dataclass(frozen=True)
class Case:
    """One test case: a scenario, and the role the tester plays (None: the
    SUT plays both sides). ``name`` is its Robot test and run directory."""

    path: Path
    tester: str | None

    @property
    def name(self) -> str:
        stem = json.loads(self.path.read_text())["name"]
        return stem if self.tester is None else f"{stem}--tester-{self.tester}"


def cases(spec: ProtocolSpec, scenarios: list[Path], sut_roles: Sequence[str]) -> list[Case]:
    """Every scenario once per SUT role ("both": the SUT on each side;
    "sender": the SUT sends to the tester; "receiver": the tester sends to
    the SUT; a scenario one of whose sides only the tester plays, e.g. a
    miscolored sender, in that role alone), then each robustness scenario in
    the one role its probes need, when that role is asked for."""
    from conformance.runner import tester_role

    tester_for = {"both": None, "sender": "receiver", "receiver": "sender"}
    out = []
    for p in scenarios:
        # a scenario whose one side only the tester plays runs in that role
        need = tester_role(load_scenario(p))
        out += [Case(p, tester_for[r]) for r in sut_roles if need in (None, tester_for[r])]
    if not scenarios:
        return out
    top = next((p.parent for p in scenarios if p.parent.name != CATALOGUE), scenarios[0].parent)
    for path in sorted((top / ROBUSTNESS).glob("*.json")):
        scn = load_scenario(path)
        tester = probe_role(spec, scn)
        if tester is not None and {"sender": "receiver", "receiver": "sender"}[tester] in sut_roles:
            out.append(Case(path, tester))
    return out


def unsupported(spec: ProtocolSpec, sut: SutAdapter, case: Case) -> str:
    """Why ``sut`` cannot play its side(s) of a case, or the model-driven
    tester its own ('' if both can)."""
    scn = load_scenario(case.path)
    params = scn.params.model_dump(mode="json")
    roles = ("sender", "receiver") if case.tester is None else (
        "receiver" if case.tester == "sender" else "sender",)  # fmt: skip
    why = [w for r in roles if (w := sut.supports(params, r))]
    if case.tester is not None:
        from conformance.tester import launch
        from conformance.tester.core import CannotPlay

        try:
            launch.module(spec).check(scn, case.tester)
        except CannotPlay as exc:
            why.append(f"the model-driven tester: {exc}")
    return "; ".join(why)


def probe_role(spec: ProtocolSpec, scn: Scenario) -> str | None:
    """The tester role a scenario's probes are sent from (None: no probes)."""
    if not scn.probes:
        return None
    probes = spec.need("probes", spec.capabilities.probes)
    return str(probes.PROBES[scn.probes[0].kind].role)


def write_suite(
    spec: ProtocolSpec, cases: list[Case], suite: Path, *, resource: Path = RESOURCE
) -> None:
    """The Robot suite of ``cases``: every value in it (paths, names, tags)
    written through :func:`suitefile.cell`, so that a folder named
    ``${{...}}`` or with two spaces is read back as itself."""
    protocol = spec.name
    lines = [
        "*** Settings ***",
        f"Documentation     Certification of {protocol.upper()} scenarios generated from the "
        "TLA+ model (one test case per scenario and SUT role).",
        suitefile.row("Resource", str(resource)),
        "Test Template     Scenario Should Pass",
        suitefile.row("Test Tags", protocol),
        "",
        "*** Test Cases ***    SCENARIO    TESTER    RUN",
    ]
    for case in cases:
        scn = load_scenario(case.path)
        tags = scenario_tags(spec, scn)
        tags.append(f"tester:{case.tester}" if case.tester else "sut:both")
        tags += [f"probe:{p.kind}" for p in scn.probes]
        lines.append(
            suitefile.row(case.name, str(case.path.resolve()), case.tester or "none", case.name)
        )
        lines.append(suitefile.setting("Tags", tags))
    suite.write_text("\n".join(lines) + "\n", encoding="utf-8")


def scenario_tags(spec: ProtocolSpec, scn: Scenario) -> list[str]:
    """A scenario's Robot tags: every purpose it stands for (``purpose:X``),
    the TLA+ actions of its trace, and the spec sections its description
    cites (``RFC5326-6.8``), so that ``--include`` finds tests by any of them."""
    purposes = (scn.origin.purposes or [scn.origin.purpose]) if scn.origin else ["hand-written"]
    tags = [f"purpose:{p}" for p in purposes]
    tags += list(dict.fromkeys(scn.origin.actions if scn.origin else []))
    std = spec.spec.replace(" ", "")
    for cited in re.findall(r"§\s*(\d+(?:\.\d+)*)", scn.description):
        tag = f"{std}-{cited}"
        if tag not in tags:
            tags.append(tag)
    return tags


class _Progress:
    ROBOT_LISTENER_API_VERSION = 3

    def __init__(self, total: int, cb: Callable[[int, int, str], None] | None) -> None:
        self.total, self.done, self.cb = total, 0, cb

    def start_test(self, data: object, result: object) -> None:
        if self.cb:
            self.cb(self.done, self.total, str(getattr(data, "name", "")))

    def end_test(self, data: object, result: object) -> None:
        self.done += 1
        if self.cb:
            self.cb(self.done, self.total, str(getattr(data, "name", "")))


@dataclass(frozen=True)
class RobotRun:
    """Where Robot Framework put its log, report and output.xml, and its
    exit status: the number of failed tests (at most 250), or 252 for
    invalid data or options, 253 for a stop by the user, 255 for an
    internal error (Robot Framework User Guide, "Return codes")."""

    dir: Path
    rc: int

    @property
    def log(self) -> Path:
        return self.dir / "log.html"

    @property
    def broken(self) -> bool:
        """Robot failed as a tool (not a test that failed, not a stop)."""
        return self.rc in (252, 255)


def run_robot(
    suite: Path,
    out: Path,
    variables: list[str],
    total: int,
    on_test: Callable[[int, int, str], None] | None,
    lanes: int = 1,
) -> RobotRun:
    """Robot Framework on ``suite``: its log, report and output.xml in
    ``out/robot``, its console in ``out/robot-console.txt``, progress by
    test through ``on_test``. ``lanes`` > 1: pabot, one test per process,
    that many at once (each run has its own namespaces and folder); its
    merged output is the same log, report and output.xml."""
    robot_dir = out / "robot"
    if lanes > 1:
        rc = _run_pabot(suite, robot_dir, out, variables, total, on_test, lanes)
        return RobotRun(robot_dir, rc)
    from robot.run import run as robot_run

    with (out / CONSOLE).open("w", encoding="utf-8") as console_out:
        try:
            rc = robot_run(
                str(suite),
                outputdir=str(robot_dir),
                variable=variables,
                listener=[_Progress(total, on_test)],
                stdout=console_out,
                stderr=console_out,
                console="verbose",
            )
        except Exception as exc:  # Robot failing as a tool (its output files, most often)
            _raise_if_full(out)
            raise NotRun(f"Robot Framework failed: {type(exc).__name__}: {exc}") from None
    return RobotRun(robot_dir, int(rc))


def _raise_if_full(folder: Path) -> None:
    """The OSError a full disk is, when ``folder``'s file system has no
    room left (a tool that died of it says something else)."""
    import errno

    if shutil.disk_usage(folder).free < 64 * 1024:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(folder))


def no_verdicts(
    names: Sequence[str], runs_dir: Path, robot: RobotRun, console: Path
) -> dict[str, str]:
    """The cases among ``names`` that Robot ran to no verdict, each with
    Robot's own message (from its output.xml, else its console): a case
    whose keyword never ran (a row Robot could not read), or died before
    judging. Empty when every case left a verdict."""
    # (a case whose implementation exited 127 left unsupported.txt instead)
    missing = [
        n
        for n in names
        if not (runs_dir / n / "verdict.json").is_file()
        and not (runs_dir / n / "unsupported.txt").is_file()
    ]
    if not missing:
        return {}
    messages: dict[str, str] = {}
    output = robot.dir / "output.xml"
    if output.is_file():
        from robot.api import ExecutionResult

        try:
            result = ExecutionResult(str(output))
        except Exception:  # an output.xml cut short: the console says more
            result = None
        if result is not None:
            for test in result.suite.all_tests:
                if test.name in missing and test.message:
                    messages[test.name] = " ".join(str(test.message).split())
    if len(messages) < len(missing):
        tail = ""
        if console.is_file():
            lines = [ln for ln in console.read_text(errors="replace").splitlines() if ln.strip()]
            errs = [ln for ln in lines if ln.startswith("[ ERROR ]")]
            tail = " ".join((errs or lines[-1:] or [""])[0].split())
        for n in missing:
            messages.setdefault(n, tail or f"no verdict (Robot exit {robot.rc}; see {console})")
    return {n: messages[n] for n in missing}


def raise_if_unrun(unrun: dict[str, str], total: int, robot: RobotRun, console: Path) -> None:
    """NotRun (exit 2) when Robot failed as a tool or left cases with no
    verdict: what ran is reported first, but the command cannot stand for
    the cases it never judged."""
    if robot.broken and not unrun:
        raise NotRun(f"Robot Framework failed (exit {robot.rc}): see {console}")
    if unrun:
        name, why = next(iter(unrun.items()))
        raise NotRun(
            f"{len(unrun)} of {total} cases ran to no verdict (Robot exit {robot.rc}); "
            f"{name}: {why[:300]} (console: {console})"
        )


def _run_pabot(
    suite: Path,
    robot_dir: Path,
    out: Path,
    variables: list[str],
    total: int,
    on_test: Callable[[int, int, str], None] | None,
    lanes: int,
) -> int:
    import subprocess
    import sys
    import time

    from conformance.core.errors import ToolMissing

    try:
        import pabot  # noqa: F401
    except ImportError as exc:
        raise ToolMissing("pabot is not installed: pip install robotframework-pabot") from exc
    progress = out / "robot-progress.txt"
    progress.write_text("", encoding="utf-8")
    listener = Path(__file__).resolve().parent / "robot" / "ProgressFile.py"
    argv = [
        # Robot from this interpreter (not whatever "robot" is on PATH); no
        # PabotLib (a server on a fixed port: two certifications would clash)
        sys.executable, "-m", "pabot.pabot", "--command", sys.executable, "-m", "robot",
        "--end-command", "--no-pabotlib", "--testlevelsplit", "--processes", str(lanes),
        "--outputdir", str(robot_dir), "--listener", f"{listener}:{progress}",
        *(x for v in variables for x in ("--variable", v)), "--consolewidth", "100",
        str(suite),
    ]  # fmt: skip
    with (out / CONSOLE).open("w", encoding="utf-8") as console_out:
        # pabot keeps its split (.pabotsuitenames) in its working folder
        proc = subprocess.Popen(argv, cwd=out, stdout=console_out, stderr=subprocess.STDOUT)
        try:
            seen = -1
            while proc.poll() is None:
                names = progress.read_text(encoding="utf-8").splitlines()
                if on_test and len(names) != seen:
                    seen = len(names)
                    on_test(seen, total, names[-1] if names else "")
                time.sleep(0.2)
        finally:
            if proc.poll() is None:  # interrupted: pabot passes the signal on to its robots
                proc.terminate()
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
    if on_test:
        names = progress.read_text(encoding="utf-8").splitlines()
        on_test(len(names), total, names[-1] if names else "")
    if total and not (robot_dir / "output.xml").exists():
        raise NotRun(f"pabot wrote no output.xml: see {out / CONSOLE}")
    return int(proc.returncode)


def load_outcome(run_dir: Path) -> RunOutcome:
    verdict = load_model(Verdict, run_dir / "verdict.json")
    result = (
        load_model(RunResult, run_dir / "result.json")
        if (run_dir / "result.json").exists()
        else None
    )
    segs = []
    seg_file = run_dir / "segments.jsonl"
    if seg_file.exists():
        segs = [
            SegmentRecord.model_validate_json(ln) for ln in seg_file.read_text().splitlines() if ln
        ]
    return RunOutcome(result, verdict, segs, run_dir)


def read_coverage(out: Path) -> dict[str, Any] | None:
    """The generator's model-coverage summary (scenarios/coverage.json:
    covered, total and uncovered actions, purposes), None when absent or
    unreadable (the report then leaves coverage out)."""
    path = out / "scenarios" / COVERAGE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _settled(run_dir: Path) -> bool:
    """A run with a verdict that is not ``error`` (an error is our harness's,
    or a run cut short: worth running again)."""
    try:
        return json.loads((run_dir / "verdict.json").read_text())["status"] != "error"
    except (OSError, ValueError, KeyError):
        return False


def certify(
    spec: ProtocolSpec,
    sut: SutAdapter,
    out: Path,
    *,
    on_test: Callable[[int, int, str], None] | None = None,
    only: str | None = None,
    retx_table: bool = False,
    sut_roles: Sequence[str] = SUT_ROLES,
    catalogue: bool = False,
    sample: tuple[int, int] | None = None,
    resume: bool = False,
    lanes: int = 1,
) -> CertifyOutcome:
    """Run the certification in ``out`` (its ``scenarios`` folder made by
    the generator). ``resume``: a case whose run directory holds a verdict
    other than ``error`` is not run again; a run cut short (by a signal: its
    verdict is ``error``) or with no verdict is redone from scratch, and the
    report covers every case (Robot's own log only this invocation's).
    ``lanes`` > 1: that many cases at once, under pabot. ``sample`` (N,
    seed): N scenarios of the catalogue drawn with that seed, besides the
    generated ones (the whole catalogue with ``catalogue``)."""
    from reports.html import render_certification

    every = _chosen(cases(spec, _scenarios(out, catalogue, sample), sut_roles), out, only)
    every, adapted = _adapted(sut, every, out)
    if (sample or (out / "scenarios" / SAMPLE).is_file()) and not catalogue and not only:
        every += _topped_up(spec, sut, out, every, adapted, sut_roles)
    every = _supported(spec, sut, every)
    runs_dir = out / "runs"
    todo = every
    if resume:
        todo = [c for c in every if not _settled(runs_dir / c.name)]
        for c in todo:  # a run cut short: its files would mix with the new run's
            shutil.rmtree(runs_dir / c.name, ignore_errors=True)
    robot = RobotRun(out / "robot", 0)
    unrun: dict[str, str] = {}
    if todo:
        robot, unrun = _run_cases(spec, sut, out, todo, on_test, lanes)
    runs = [
        load_outcome(runs_dir / c.name)
        for c in every
        if (runs_dir / c.name / "verdict.json").exists()
    ]
    from conformance.provenance import planned_channel

    report = render_certification(
        spec,
        sut,
        out,
        list(dict.fromkeys(c.path for c in every)),
        runs,
        robot.log,
        coverage=read_coverage(out),
        retx_table=_retx_table(spec, sut, out) if retx_table else None,
        planned=planned_channel,
    )
    if not todo:
        raise NotRun(
            f"{out}: nothing to resume: each of its {len(every)} cases has a verdict "
            f"(report: {report})"
        )
    refused = {
        c.name: f.read_text(encoding="utf-8").strip()
        for c in every
        if (f := runs_dir / c.name / "unsupported.txt").is_file()
    }
    return CertifyOutcome(
        runs=runs,
        robot_log=robot.log,
        report=report,
        robot_rc=robot.rc,
        unrun=unrun,
        unsupported=refused,
        adapted=adapted,
    )


SAMPLE = "catalogue-sample.json"


def _scenarios(out: Path, catalogue: bool, sample: tuple[int, int] | None = None) -> list[Path]:
    """The generated scenario files, and the catalogue's when asked for:
    all of it, or ``sample`` (N, seed), N of its scenarios drawn with
    ``random.Random(seed)`` from their sorted names. The same N and seed
    draw the same scenarios from the same catalogue (so ``--resume`` finds
    its cases); the draw is written to scenarios/catalogue-sample.json."""
    # coverage.json beside the scenarios is the generator's summary, not a scenario.
    scenarios = sorted(p for p in (out / "scenarios").glob("*.json") if p.name != COVERAGE)
    scenarios = [p for p in scenarios if p.name != SAMPLE]
    record = out / "scenarios" / SAMPLE
    if record.is_file() and not catalogue:
        # a certification drawn before (--resume): the same draw, or a refusal
        drawn = json.loads(record.read_text(encoding="utf-8"))
        if sample is None:
            sample = (int(drawn["n"]), int(drawn["seed"]))
        elif sample != (drawn["n"], drawn["seed"]):
            raise InputError(
                f"{out}: its catalogue sample was drawn with --sample {drawn['n']} --seed "
                f"{drawn['seed']}, not --sample {sample[0]} --seed {sample[1]}"
            )
    if catalogue or sample:
        # every loss pattern within the catalogue's bounds (generators.ltp.catalogue)
        pool = _catalogue_pool(out)
        if sample and not catalogue:
            n, seed = sample
            if not pool:
                raise NotRun(f"{out / 'scenarios' / CATALOGUE}: no catalogue to sample")
            pool = sorted(itertools.islice(_draw(pool, seed), n))
            draw = {"n": n, "seed": seed, "scenarios": [p.stem for p in pool]}
            record.write_text(json.dumps(draw, indent=1) + "\n")
        scenarios += pool
    return scenarios


def _catalogue_pool(out: Path) -> list[Path]:
    """The catalogue's scenario files (every loss pattern within its
    bounds, generators.ltp.catalogue), sorted by name."""
    return sorted(
        p
        for p in (out / "scenarios" / CATALOGUE).glob("*.json")
        if p.name not in (CATALOGUE_INDEX, COVERAGE)
    )


def _draw(pool: list[Path], seed: int) -> Iterator[Path]:
    """``pool``'s scenarios in the order ``seed`` draws them, without
    replacement: its first N are the sample of N, and the ones after them
    replace drawn scenarios that cannot run (``_topped_up``), so a bigger
    N or a replacement never changes the scenarios drawn before it."""
    rng, taken = random.Random(seed), set[int]()
    while len(taken) < len(pool):
        j = rng.randrange(len(pool))
        if j not in taken:
            taken.add(j)
            yield pool[j]


def _topped_up(
    spec: ProtocolSpec,
    sut: SutAdapter,
    out: Path,
    kept: list[Case],
    adapted: dict[str, list[str]],
    sut_roles: Sequence[str],
) -> list[Case]:
    """The cases of the scenarios drawn in place of sampled ones that have
    no case to run under the implementation's profile (``_adapted``: the
    model has no outcome for them), so that the N of ``--sample N`` are
    scenarios it runs; next in the seed's draw order, each adapted in turn.
    The draw record (scenarios/catalogue-sample.json) gets the replacements
    and what they replace; ``adapted`` gets their adaptations."""
    record = out / "scenarios" / SAMPLE
    drawn = json.loads(record.read_text(encoding="utf-8"))
    run = {c.path.stem for c in kept}
    order = _draw(_catalogue_pool(out), int(drawn["seed"]))
    names = [p.stem for p in itertools.islice(order, int(drawn["n"]))]
    missing = [n for n in names if n not in run]
    more: list[Case] = []
    replaced: list[str] = []
    while missing:
        extra = list(itertools.islice(order, len(missing)))
        if not extra:
            break  # the catalogue has no more: fewer than N run, as said
        replaced += missing
        got, moved = _adapted(sut, cases(spec, extra, sut_roles), out)
        adapted.update(moved)
        more += got
        names += [p.stem for p in extra]
        ran = {c.path.stem for c in got}
        missing = [p.stem for p in extra if p.stem not in ran]
    if replaced:
        drawn.update(scenarios=names, replaced=replaced)
        record.write_text(json.dumps(drawn, indent=1) + "\n")
    return more


def _chosen(every: list[Case], out: Path, only: str | None) -> list[Case]:
    """The cases ``--only`` names (all without it); NotRun when there is
    none to certify, InputError when --only names none."""
    if not every:
        raise NotRun(f"{out / 'scenarios'}: no scenario to certify")
    if not only:
        return every
    chosen = [c for c in every if only in c.name]
    if not chosen:
        names = ", ".join(c.name for c in every[:4])
        raise InputError(
            f"--only {only}: no case's name holds it (the {len(every)} cases here: {names}"
            + (", ..." if len(every) > 4 else "")
            + ")"
        )
    return chosen


def _adapted(
    sut: SutAdapter, every: list[Case], out: Path
) -> tuple[list[Case], dict[str, list[str]]]:
    """Each case whose scenario the implementation's declared profile moves,
    on the sides it plays there, runs its adapted copy, written under
    ``out/adapted`` with the outcome set the model computes for it
    (conformance/adapt.py); and what moved, by scenario name. A case the
    profile leaves as it is (bound to a side it does not play there) runs
    the scenario itself; a scenario whose cases move in different ways gets
    a copy per set of sides, under ``out/adapted/<sides>``."""
    from conformance import adapt

    scns = {c.path: load_scenario(c.path) for c in every}
    plays = {c: adapt.plays(sut, c.tester) for c in every}  # the sides it plays in each
    moves = {c: adapt.changes(scns[c.path], plays[c]) for c in every}
    kinds: dict[Path, set[str]] = {}
    for c in every:  # the different ways a scenario's cases are moved
        if moves[c]:
            kinds.setdefault(c.path, set()).add(repr(sorted(moves[c].items())))
    done: dict[tuple[Path, str], Path | None] = {}
    moved: dict[str, list[str]] = {}
    kept: list[Case] = []
    for c in every:
        scn, key = scns[c.path], repr(sorted(moves[c].items()))
        if (c.path, key) not in done:
            done[c.path, key] = c.path
            side = "" if len(kinds.get(c.path, ())) <= 1 else "+".join(r for _, r in plays[c])
            try:
                new, said = adapt.adapt(scn, plays[c], out / "tlc-adapted")
            except DtncError as exc:
                # under the profile the scenario's losses cannot all happen (a
                # catalogue pattern whose last loss needs the smaller limit):
                # no test of the implementation, said, and not run
                moved.setdefault(scn.name, []).append(
                    f"not run{f' as {side}' if side else ''}: the model has no outcome for it "
                    f"under the profile ({exc})"
                )
                done[c.path, key] = None
                continue
            if said:
                rel = c.path.relative_to(out) if c.path.is_relative_to(out) else Path(c.path.name)
                target = out / "adapted" / side / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                dump_model(new, target)
                done[c.path, key] = target
                moved.setdefault(scn.name, []).extend(
                    said if not side else [f"{line} [as {side}]" for line in said]
                )
        path = done[c.path, key]
        if path is not None:
            kept.append(Case(path, c.tester))
    return kept, moved


def _supported(
    spec: ProtocolSpec, sut: SutAdapter, every: list[Case], why: dict[Case, str] | None = None
) -> list[Case]:
    """The cases the implementation can take: "not supported" (its adapter
    says why) is no verdict on it, and such a case is not run. ``why``:
    each case's reason ('' if it can), when the caller computed them."""
    if why is None:
        why = {c: unsupported(spec, sut, c) for c in every}
    if all(why.values()):
        first = next(iter(why.items()))
        raise NotRun(
            f"none of the {len(every)} cases can run on {sut.name}: {first[0].name}: {first[1]}"
        )
    return [c for c in every if not why[c]]


def _run_cases(
    spec: ProtocolSpec,
    sut: SutAdapter,
    out: Path,
    todo: list[Case],
    on_test: Callable[[int, int, str], None] | None,
    lanes: int,
) -> tuple[RobotRun, dict[str, str]]:
    """The cases run under Robot (its suite written first), and those it
    ran to no verdict with its reason (none when the user stopped it: the
    caller reports the interrupt)."""
    runs_dir = out / "runs"
    sut.ensure_built()
    suite = out / f"{spec.name}_certification.robot"
    write_suite(spec, todo, suite)
    options = ",".join(f"{k}={v}" for k, v in getattr(sut, "options", {}).items())
    robot = run_robot(
        suite,
        out,
        [f"RUNS_DIR:{runs_dir}", f"SUT:{sut.ref}", f"SUT_OPTIONS:{options}"],
        len(todo),
        on_test,
        lanes,
    )
    if robot.rc == 253:  # stopped by the user: the caller reports the interrupt
        return robot, {}
    return robot, no_verdicts([c.name for c in todo], runs_dir, robot, out / CONSOLE)


def _retx_table(spec: ProtocolSpec, sut: SutAdapter, out: Path) -> Path:
    """``--retx-table``: the retransmission table run into out/retx-table;
    its JSON, for the report."""
    from conformance import retxtable

    gen = spec.need("retx_table", spec.capabilities.retx_table)
    table = out / "retx-table"
    retxtable.build(spec, gen.retx_scenarios(table / "tlc"), sut, table)
    return table / "retx-table.json"
