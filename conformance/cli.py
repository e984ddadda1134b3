"""The `dtnconform` command line.

Every subcommand has --help; bad input ends with exit 2 and one line naming
what is wrong (the file, the field, the reason); long work shows a progress
bar. Exit status: 0 success, 1 a failing verdict or finding, 2 bad input or a
missing tool, 130 Ctrl-C, 141 stdout closed early (``dtnconform schema | head``:
no traceback, as if SIGPIPE had ended the command).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import errno
import fcntl
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeAlias

from pydantic import ValidationError
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from conformance.core.capabilities import Catalogue
from conformance.core.errors import DtncError, InputError, ToolMissing, first_error
from conformance.core.types import ExpectedOutcome, mark_status

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from conformance.campaign.plan import Plan as CampaignPlan
    from conformance.campaign.store import Store
    from conformance.core.modelcheck import GenerateReport
    from conformance.core.types import RunOutcome, RunResult, Scenario, SegmentRecord, TraceCheck
    from conformance.mutate.mutants import Mutant
    from conformance.protocols import ProtocolSpec
    from suts.base import SutAdapter

REPO = Path(__file__).resolve().parent.parent


class _Console(Console):
    def on_broken_pipe(self) -> None:
        # rich's default exits 1 at once; raise instead so that main() ends
        # every command the same way on a closed pipe (status 141).
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "output pipe closed")


console = _Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err_console = _Console(stderr=True, highlight=False)

STATUS_STYLE = {"pass": "green", "fail": "red", "inconclusive": "yellow", "error": "magenta"}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")

    def _print_message(self, message: str, file: Any = None) -> None:
        # argparse swallows write errors; let a closed pipe reach main() (141).
        if message:
            (file or sys.stderr).write(message)


def _progress() -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    )


def version_string() -> str:
    """``dtnconform <version> (<short git commit>[+dirty])``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        ver = version("dtnconform")
    except PackageNotFoundError:
        import tomllib

        ver = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    commit = "unknown commit"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        git = ["git", "-C", str(REPO)]
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()  # fmt: skip
        status = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10, check=True)  # fmt: skip
        commit = head + ("+dirty" if status.stdout.strip() else "")
    return f"dtnconform {ver} ({commit})"


class _VersionAction(argparse.Action):
    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_args: object) -> None:
        print(version_string())
        parser.exit(0)


# ---------------------------------------------------------------------------
# Checks of input files, output directories and tools, before any work
# ---------------------------------------------------------------------------


def _load_scenario_file(path: Path) -> Scenario:
    """One scenario file, or an InputError naming the file, field and reason."""
    from conformance.core.types import load_scenario

    if path.is_dir():
        raise InputError(
            f"{path}: is a directory, not a scenario file (run takes one scenario JSON file; "
            "`dtnconform certify` runs a generated set)"
        )
    if not path.exists():
        raise InputError(f"{path}: no such scenario file")
    try:
        return load_scenario(path)
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a scenario file (not UTF-8 JSON text)") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the scenario file: {exc.strerror or exc}") from None


def _writable(directory: Path) -> str | None:
    """Why files cannot be created in an existing directory, or None. Root
    passes every permission check, so a read-only file system is checked too."""
    if not os.access(directory, os.W_OK | os.X_OK):
        return f"{directory} is not writable"
    with contextlib.suppress(OSError):
        if os.statvfs(directory).f_flag & os.ST_RDONLY:
            return f"{directory} is on a read-only file system"
    return None


def _check_out(path: Path, *, force: bool, what: str = "--out") -> None:
    """An output directory must be creatable, or empty (unless --force),
    never a file; checked before any work, nothing is created yet."""
    if path.exists() or path.is_symlink():
        if not path.is_dir():
            raise InputError(f"{path}: {what}: is a file, not a directory")
        if _in_use(path):  # before "not empty": that is why it is not
            raise InputError(
                f"{path}: {what}: in use by another dtnconform{_holder(path.resolve())}; wait "
                "for it to end, or choose another folder"
            )
        try:
            non_empty = any(path.iterdir())
        except OSError as exc:
            raise InputError(f"{path}: {what}: cannot list it: {exc.strerror or exc}") from None
        if non_empty and not force:
            raise InputError(
                f"{path}: {what}: directory is not empty (--force writes into it anyway)"
            )
        if why := _writable(path):
            raise InputError(f"{path}: {what}: {why}")
        return
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise InputError(f"{path}: {what}: cannot create it: {parent} is a file, not a directory")
    if why := _writable(parent):
        raise InputError(f"{path}: {what}: cannot create it: {why}")


def _make_dir(path: Path, what: str = "--out") -> Path:
    """Make an output folder and hold it for this command (_lock)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{path}: {what}: cannot create it: {exc.strerror or exc}") from None
    _lock(path, what)
    return path


# Output folders this process holds, by path: the lock is an open file
# description, so each is held once and for the process's life.
_HELD: dict[Path, int] = {}


def _lock(path: Path, what: str) -> None:
    """An exclusive lock on an output folder for as long as this command
    runs (flock on the folder itself, so nothing is added to it): a second
    dtnconform given the same folder at once stops with exit 2 naming the
    first, instead of both writing into it. The kernel drops the lock when
    this process ends, however it ends."""
    key = path.resolve()
    if key in _HELD:
        return
    fd = os.open(key, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise InputError(
            f"{path}: {what}: in use by another dtnconform{_holder(key)}; wait for it to end, "
            "or choose another folder"
        ) from None
    _HELD[key] = fd


def _holder(path: Path) -> str:
    """ " (pid N: its command line)" of the process holding a folder's flock,
    from /proc/locks ('' if it cannot be told)."""
    try:
        st = path.stat()
        locks = Path("/proc/locks").read_text()
    except OSError:
        return ""
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in locks.splitlines():
        parts = line.split()
        if len(parts) > 5 and parts[1] == "FLOCK" and parts[5] == dev:
            pid = parts[4]
            with contextlib.suppress(OSError):
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                return f" (pid {pid}: {cmd.strip()[:120]})"
            return f" (pid {pid})"
    return ""


def _in_use(path: Path) -> bool:
    """Whether another process holds this folder's lock now."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return path.resolve() not in _HELD
    finally:
        os.close(fd)  # (closing our own probe drops only the probe's lock)
    return False


def _require_run_tools() -> None:
    """The programs a run calls, before any namespace is built."""
    from conformance.netns import require_tool
    from dissectors.tshark import find_tshark

    require_tool("ip", "apt-get install iproute2")
    require_tool("tcpdump", "apt-get install tcpdump")
    find_tshark()


def _require_binaries(sut: SutAdapter) -> None:
    """The channel emulator and the implementation's harness, built now if
    absent (cargo), before any namespace is built."""
    from conformance.channel import control as emulator

    emu = emulator.binary()
    if not emu.is_file() or not os.access(emu, os.X_OK):
        origin = "DTNC_EMU names" if os.environ.get("DTNC_EMU") else "expected"
        raise ToolMissing(
            f"{emu}: channel emulator dtnc-emu not found ({origin} this path); "
            "build it with `make setup` or `cargo build --release` in conformance/channel/emulator"
        )
    sut.ensure_built()


@contextlib.contextmanager
def _sigint_watch() -> Iterator[Callable[[], bool]]:
    """Notice a Ctrl-C even when another handler takes it: Robot Framework
    installs its own SIGINT handler while it runs and stops the suite
    gracefully instead of raising KeyboardInterrupt. The signal wakeup fd
    sees every signal whatever Python handler is installed."""
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    seen = closed = False

    def interrupted() -> bool:
        nonlocal seen
        with contextlib.suppress(BlockingIOError):
            while not closed and (data := os.read(r, 512)):
                seen = seen or signal.SIGINT in data
        return seen

    try:
        old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except ValueError:  # not the main thread: nothing to watch with
        os.close(r)
        os.close(w)
        yield lambda: False
        return
    try:
        yield interrupted
    finally:
        signal.set_wakeup_fd(old)
        interrupted()  # what arrived so far stays known after the pipe is closed
        closed = True
        os.close(r)
        os.close(w)


def _port_spec(text: str) -> list[int]:
    """``1113,4556,5000-5010`` -> the ports (argparse type of --port)."""
    ports: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        lo, sep, hi = part.partition("-")
        try:
            first = int(lo)
            last = int(hi) if sep else first
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{part!r} is not a port or a range like 5000-5010"
            ) from None
        if not (1 <= first <= 65535 and 1 <= last <= 65535):
            raise argparse.ArgumentTypeError(f"{part!r}: UDP ports are 1-65535")
        if first > last:
            raise argparse.ArgumentTypeError(f"{part!r}: the range runs backwards")
        ports.extend(range(first, last + 1))
    return ports


def _protocol(name: str) -> ProtocolSpec:
    """The registered protocol ``name`` (InputError naming the registered ones)."""
    from conformance import protocols

    return protocols.get(name)


def _sut_playing(name: str, spec: ProtocolSpec) -> SutAdapter:
    """The implementation ``--sut name``, which must play ``spec``."""
    from suts.registry import get

    sut = get(name)
    if sut.protocol != spec.name:
        raise InputError(f"--sut {sut.name}: it plays {sut.protocol}, not {spec.name}")
    return sut


def _registered() -> str:
    from conformance import protocols

    return ", ".join(protocols.names())


# ---------------------------------------------------------------------------
# check
# ---------------------------------------------------------------------------


def cmd_check(args: argparse.Namespace) -> int:
    spec = _protocol(args.protocol)
    gen = spec.need("checker", spec.capabilities.checker)

    with _progress() as prog:
        task = prog.add_task(f"TLC {args.protocol} ({args.bound})", total=None, info="starting")

        def on_progress(p: object) -> None:
            distinct = getattr(p, "distinct_states", None)
            queue = getattr(p, "queue", None)
            prog.update(task, info=f"{distinct or 0:,} distinct states, queue {queue or 0:,}")

        # TLC's files stay in a folder of this run's own (two checks at once
        # never share one); the log is kept there.
        workdir = (
            Path(args.out) if args.out else _run_dir(None, f"check-{args.protocol}-{args.bound}")
        )
        if args.distributed < 0:
            raise InputError(f"--distributed {args.distributed}: a number of workers, 1 or more")
        what = "--out" if args.out else "check folder"
        _check_out(workdir, force=True, what=what)  # TLC's files are rewritten in place
        _make_dir(workdir, what)
        res = gen.check(
            args.bound, progress=on_progress, workdir=workdir, distributed=args.distributed
        )
    table = Table(title=f"{res.version}: specs/{args.protocol}, {args.bound} bound")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_row("distinct states", f"{res.distinct_states:,}")
    table.add_row("states generated", f"{res.states_generated:,}")
    table.add_row("depth", str(res.depth))
    table.add_row("time", f"{res.seconds:.1f} s")
    console.print(table)
    props = Table(title="invariants and properties")
    props.add_column("name")
    props.add_column("kind")
    props.add_column("result")
    for p in res.properties:
        style = "green" if p.status == "ok" else "red"
        props.add_row(p.name, p.kind, f"[{style}]{p.status}[/]")
    console.print(props)
    if res.trace:
        console.print(gen.trace_table(res.trace))
    for err in res.errors:
        err_console.print(f"TLC: {err}")
    console.print(f"TLC log: {res.log_path}")
    return 0 if res.ok else 1


# ---------------------------------------------------------------------------
# generate
# ---------------------------------------------------------------------------


def cmd_generate(args: argparse.Namespace) -> int:
    _protocol(args.protocol)
    out = Path(args.out)
    _check_out(out, force=args.force)
    report = _generate(args.protocol, out, catalogue=not args.no_catalogue)
    return 0 if report.scenarios else 1


def _generate(protocol: str, out: Path, *, catalogue: bool = True) -> GenerateReport:
    spec = _protocol(protocol)
    gen = spec.need("generator", spec.capabilities.generator)

    _make_dir(out)
    with _progress() as prog:
        task = prog.add_task(f"test purposes ({protocol})", total=None, info="")

        def on_purpose(done: int, total: int, name: str) -> None:
            prog.update(task, completed=done, total=total, info=name)

        report = gen.generate(out, on_purpose=on_purpose)
    table = Table(title=f"scenarios generated into {out}")
    table.add_column("purpose")
    table.add_column("status")
    table.add_column("trace states", justify="right")
    table.add_column("scenario")
    for p in report.purposes:
        style = "green" if p.status == "reached" else "yellow"
        where = p.scenario.name if p.scenario else p.detail
        if p.same_as:
            where += f" (same test as {p.same_as})"
        table.add_row(p.purpose, f"[{style}]{p.status}[/]", str(p.trace_length or "-"), where)
    console.print(table)
    uncovered = report.actions_uncovered
    console.print(
        f"{len(report.scenarios)} distinct scenarios from {len(report.purposes)} test purposes "
        f"({len(report.reached)} reached) in {report.tlc_seconds:.1f} s of TLC; "
        f"model action coverage {len(report.actions_covered)}/{len(report.actions_total)} "
        f"({100 * report.coverage:.0f} %)"
        + (f"; not covered: {', '.join(uncovered)}" if uncovered else "")
    )
    if catalogue and spec.capabilities.catalogue is not None:
        _catalogue(spec.capabilities.catalogue, out / "catalogue")
    if spec.capabilities.robustness is not None:
        robust = spec.capabilities.robustness.robustness(out / "robustness", report)
        console.print(
            f"robustness: {len(robust)} scenarios of tester probes in {out / 'robustness'} "
            "(run with --tester, or by dtnconform certify)"
        )
    # the last file: a generation cut short has none (certify --resume
    # generates such a folder's scenarios again)
    from conformance.certify import GENERATED

    (out / GENERATED).write_text(
        json.dumps({"protocol": protocol, "catalogue": bool(catalogue)}) + "\n", encoding="utf-8"
    )
    return report


def _catalogue(gen: Catalogue, out: Path) -> None:
    """The generator's catalogue (every loss pattern within its bounds) into
    ``out``, with its count and action coverage."""
    with _progress() as prog:
        task = prog.add_task("catalogue bounds", total=None, info="")

        def on_bound(done: int, total: int, name: str) -> None:
            prog.update(task, completed=done, total=total, info=name)

        cat = gen.catalogue(out, on_bound=on_bound)
    per = ", ".join(f"{k}: {v}" for k, v in cat.per_bound.items())
    uncovered = cat.actions_uncovered
    console.print(
        f"catalogue: {len(cat.scenarios)} distinct scenarios in {out} ({per}) in "
        f"{cat.tlc_seconds:.1f} s of TLC; model action coverage "
        f"{len(cat.actions_covered)}/{len(cat.actions_total)} "
        f"({100 * len(cat.actions_covered) / max(1, len(cat.actions_total)):.0f} %)"
        + (f"; not covered: {', '.join(uncovered)}" if uncovered else "")
    )


# ---------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------


def _live_dir(args: argparse.Namespace, sut: Any, name: str, what: str) -> Path:
    """The folder of a live run (``--out`` or a new default), checked, and the
    tools, root and binaries it needs, all before any namespace exists; then
    the folder is made."""

    path = Path(args.out) if args.out else _run_dir(None, name)
    what = "--out" if args.out else what
    _check_out(path, force=args.force, what=what)
    _require_live(sut)
    _make_dir(path, what)
    return path


def _require_live(sut: Any) -> None:
    """What every live run needs before any namespace exists: the tools,
    root, the SUT's binaries."""
    from conformance.netns import require_root

    _require_run_tools()
    require_root()
    _require_binaries(sut)


def _resume_dir(args: argparse.Namespace, sut: Any) -> Path:
    """``certify --resume DIR``: a certification directory made before, with
    the scenarios it was generated with (not generated again: the cases
    stay those the finished runs belong to)."""
    path = Path(args.resume)
    if args.out and Path(args.out) != path:
        raise InputError(f"--out {args.out}: --resume {path} names the directory already")
    scenarios = path / "scenarios"
    if not scenarios.is_dir():
        raise InputError(f"{path}: --resume: not a certification directory (no scenarios/)")
    if why := _writable(path):
        raise InputError(f"{path}: --resume: {why}")
    _lock(path, "--resume")
    from conformance.certify import GENERATED

    complete = (scenarios / GENERATED).is_file()
    wants = "--catalogue" if args.catalogue else "--sample" if args.sample else None
    if complete and wants and not (scenarios / "catalogue").is_dir():
        raise InputError(
            f"{path}: --resume {wants}: its scenarios have no catalogue (it was certified "
            "without --catalogue or --sample)"
        )
    _require_live(sut)
    if not complete:
        # interrupted while the scenarios were generated: no case has run
        # yet, and a half-written scenario set is no set to run
        err_console.print(f"{scenarios}: its generation was cut short; generating it again")
        shutil.rmtree(scenarios)
        _generate(args.protocol, scenarios, catalogue=args.catalogue or bool(args.sample))
    return path


def _run_dir(base: Path | None, name: str) -> Path:
    """A default run folder no other run has: runs/<time>-<name>, with -2, -3,
    ... when two runs start within the same second. The path is returned
    unmade (the caller checks and creates it), so the suffix is chosen by
    what exists; a run started in the same instant elsewhere is told apart
    by its own checks."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    # DTNC_RUNS_DIR: where default run folders go (the tests' own scratch)
    root = base or Path(os.environ.get("DTNC_RUNS_DIR") or REPO / "runs")
    path = root / f"{stamp}-{name}"
    n = 2
    while path.exists():
        path = root / f"{stamp}-{name}-{n}"
        n += 1
    return path


def cmd_run(args: argparse.Namespace) -> int:
    from conformance.runner import error_outcome, run_scenario
    from suts.registry import get

    # Input first, then tools, then root: all before any namespace exists.
    scn = _load_scenario_file(Path(args.scenario))
    sut = get(args.sut)
    sut.set_options(args.sut_option)
    if scn.protocol != sut.protocol:
        raise InputError(f"{args.scenario}: a {scn.protocol} scenario cannot run on {sut.name}")
    if args.tester or scn.probes:
        from conformance.tester import launch

        launch.check(_protocol(scn.protocol), scn, args.tester)
    peer = get(args.receiver_sut) if args.receiver_sut else None
    from conformance import adapt

    plays = adapt.plays(sut, args.tester, peer)
    scn, said = adapt.adapt_run(scn, plays)
    for line in said:  # the implementation's declared profile moved the scenario
        console.print(f"adapted to the implementation's profile: {line}", markup=False)
    params = scn.params.model_dump(mode="json")
    for adapter, role in plays:
        why = adapter.supports(params, role)
        if why:
            raise InputError(f"{args.scenario}: {adapter.name} cannot play its {role}: {why}")
    if peer is not None:
        if args.tester:
            raise InputError("--receiver-sut: an interoperability run has no --tester")
        if peer.protocol != scn.protocol:
            raise InputError(f"--receiver-sut {peer.name}: it plays {peer.protocol}")
        _require_binaries(peer)
    run_dir = _live_dir(args, sut, scn.name, "run directory")
    who = f"{sut.name} vs tester {args.tester}" if args.tester else sut.name
    if peer is not None:
        who = f"{sut.name} -> {peer.name}"
    with _progress() as prog:
        task = prog.add_task(f"{scn.name} on {who}", total=None, info="")
        try:
            outcome = run_scenario(
                scn,
                sut,
                run_dir,
                step=lambda m: prog.update(task, info=m),
                tester=args.tester,
                receiver_sut=peer,
            )
        except KeyboardInterrupt:
            error_outcome(
                scn, sut, run_dir, KeyboardInterrupt(), tester=args.tester, receiver_sut=peer
            )
            # what the topology's teardown left (a clean-clone suite once
            # found a killed campaign's cut run had left its three), so that
            # the message below holds
            from conformance import netns

            left = netns.remove_own()
            err_console.print(
                "interrupted; namespaces removed"
                + (f" ({len(left)} left by the teardown, removed now)" if left else "")
                + f"; partial run in {run_dir}"
            )
            return 130
    print_verdicts([outcome])
    console.print(f"run directory: {run_dir}")
    return 0 if outcome.verdict.status == "pass" else 1


def print_verdicts(outcomes: Sequence[RunOutcome]) -> None:
    table = Table(title="verdicts")
    for col in ("scenario", "allowed outcomes", "observed", "segs fwd/ret", "trace", "verdict"):
        table.add_column(col)
    for o in outcomes:
        v = o.verdict
        r = o.result
        scn_file = o.run_dir / "scenario.json"
        allowed = "-"
        if scn_file.exists():
            from conformance.core.types import load_scenario

            with contextlib.suppress(DtncError):
                allowed = "\n".join(
                    _outcome_cell(x) for x in load_scenario(scn_file).expect.outcomes
                )
        observed = _outcome_cell(r.outcome()) if r else "-"
        segs = (
            f"{r.segments.forward}/{r.segments.ret} ({r.dropped.forward}/{r.dropped.ret} dropped)"
            if r
            else "-"
        )
        style = STATUS_STYLE[v.status]
        trace = v.trace.status if v.trace is not None else "-"
        name = v.scenario
        if r is not None and r.tester is not None:
            from reports.html import roles_label

            name += f"\n[dim]{roles_label(v.sut.split()[0], r.tester)}[/]"
        table.add_row(name, allowed, observed, segs, trace, f"[{style}]{v.mark}[/]")
    console.print(table)
    for o in outcomes:
        v = o.verdict
        r = o.result
        name = v.scenario
        if r is not None and r.tester is not None:
            from reports.html import roles_label

            name += f" ({roles_label(v.sut.split()[0], r.tester)})"
        for pr in [p for e in (r.sender, r.receiver) for p in e.probes] if r else []:
            style = {"pass": "green", "fail": "red"}.get(pr.status, "yellow")
            console.print(
                f"  {name}: probe {pr.kind}: [{style}]{pr.status}[/] ({pr.message})",
                highlight=False,
            )
        for reason in v.reasons:
            if v.status != "pass":
                rule = f" [{reason.rule}]" if reason.rule else ""
                console.print(f"  {name}: {reason.code}: {reason.message}{rule}", markup=False)


def _outcome_cell(o: ExpectedOutcome) -> str:
    """Delivered counters, sender/receiver outcome: one allowed or observed outcome."""
    return f"{o.delivered.cell()}, {o.sender_outcome}/{o.receiver_outcome}"


# ---------------------------------------------------------------------------
# certify
# ---------------------------------------------------------------------------


def _exit_status(verdicts: Iterable[str]) -> int:
    """The exit status of a command that judged runs (README, "Exit
    status"): 0 when every verdict is pass (a pass under an alternative
    reading is a pass; cells not supported have no verdict), 1 when one is
    fail, inconclusive or error, 2 when there is none at all."""
    seen = list(verdicts)
    if not seen:
        from conformance.core.errors import NotRun

        raise NotRun("no run was judged")
    return 0 if all(mark_status(v) == "pass" for v in seen) else 1


def _raise_if_unrun(outcome: Any, out: Path) -> None:
    """Exit 2 (after the verdicts were shown) when Robot failed as a tool or
    ran cases to no verdict: the command cannot stand for what it never
    judged."""
    from conformance.certify import CONSOLE, RobotRun, raise_if_unrun

    total = len(outcome.runs) + len(outcome.unrun)
    raise_if_unrun(
        outcome.unrun, total, RobotRun(outcome.robot_log.parent, outcome.robot_rc), out / CONSOLE
    )


def _lanes(lanes: int) -> int:
    """--lanes: runs at once, each in its own namespaces, up to the cores."""
    cores = os.cpu_count() or 1
    if lanes < 1 or lanes > cores:
        raise InputError(f"--lanes {lanes}: between 1 and the {cores} cores here")
    return lanes


def cmd_certify(args: argparse.Namespace) -> int:
    spec = _protocol(args.protocol)
    from conformance import certify

    sut = _sut_playing(args.sut, spec)
    sut.set_options(args.sut_option)
    lanes = _lanes(args.lanes)
    has_tester = spec.capabilities.tester is not None
    given = args.sut_roles or ("both,sender,receiver" if has_tester else "both")
    roles = [r.strip() for r in given.split(",") if r.strip()]
    if not has_tester and any(r != "both" for r in roles):
        raise InputError(
            f"--sut-roles: {args.protocol} has no model-driven tester yet, so the SUT plays both "
            "sides (--sut-roles both)"
        )
    bad = [r for r in roles if r not in certify.SUT_ROLES]
    if bad or not roles:
        raise InputError(
            f"--sut-roles: {', '.join(bad) or 'none given'}: use a comma-separated list of "
            f"{', '.join(certify.SUT_ROLES)}"
        )
    if args.sample is not None and args.sample < 1:
        raise InputError(f"--sample {args.sample}: draw at least one scenario")
    if args.sample is not None and args.catalogue:
        raise InputError("--sample draws from the catalogue; --catalogue runs all of it: give one")
    if args.seed is not None and args.sample is None:
        raise InputError("--seed draws --sample's scenarios: give --sample N too")
    sample = (args.sample, 1 if args.seed is None else args.seed) if args.sample else None
    if args.resume:
        out = _resume_dir(args, sut)
    else:
        out = _live_dir(args, sut, f"certify-{args.protocol}-{sut.name}", "certification directory")
        # the catalogue (minutes of TLC) only when it is to be run
        _generate(args.protocol, out / "scenarios", catalogue=args.catalogue or bool(sample))
    with _sigint_watch() as interrupted, _progress() as prog:
        task = prog.add_task(f"certify {args.protocol} on {sut.name}", total=None, info="")

        def on_test(done: int, total: int, name: str) -> None:
            prog.update(task, completed=done, total=total, info=name)

        try:
            outcome = certify.certify(
                spec,
                sut,
                out,
                on_test=on_test,
                only=args.only,
                retx_table=args.retx_table,
                sut_roles=roles,
                catalogue=args.catalogue,
                sample=sample,
                resume=args.resume,
                lanes=lanes,
            )
        except SystemExit:  # Robot's answer to a second Ctrl-C
            if interrupted():
                raise KeyboardInterrupt from None
            raise
    print_verdicts(outcome.runs)
    for name, said in outcome.adapted.items():
        console.print(f"  {name}: adapted to {sut.name}'s profile: {'; '.join(said)}", markup=False)
    for name, why in outcome.unsupported.items():
        console.print(f"  {name}: not supported (exit 127): {why}", markup=False)
    if (record := out / "scenarios" / certify.SAMPLE).is_file():
        drawn = json.loads(record.read_text(encoding="utf-8"))
        if swapped := drawn.get("replaced"):
            console.print(
                f"catalogue sample: {len(swapped)} drawn scenario(s) have no outcome under "
                f"{sut.name}'s profile, replaced by the next in seed {drawn['seed']}'s draw "
                f"({len(drawn['scenarios']) - len(swapped)} of {drawn['n']} run)",
                markup=False,
            )
    if outcome.robot_log.is_file():
        console.print(f"Robot Framework log: {outcome.robot_log}")
    console.print(f"HTML report: {outcome.report}")
    if interrupted():  # Robot stopped the suite on Ctrl-C and returned
        err_console.print(f"interrupted; partial certification in {out}")
        return 130
    _raise_if_unrun(outcome, out)
    return _exit_status(r.verdict.status for r in outcome.runs)


def cmd_interop(args: argparse.Namespace) -> int:
    """The interoperability matrix (conformance/interop.py); exit 1 when a
    run did not pass (unsupported cells aside)."""
    spec = _protocol(args.protocol)
    spec.need("interop", spec.capabilities.interop)
    from conformance import interop
    from suts.registry import get

    if args.suts is None:  # every registered implementation of the protocol
        from suts.registry import REGISTRY

        names = []
        for n in REGISTRY:
            a = get(n)
            if a.protocol == args.protocol and (why := a.missing()):
                err_console.print(f"{n} is left out: {why}", markup=False, highlight=False)
            elif a.protocol == args.protocol:
                names.append(n)
    else:
        names = [n.strip() for n in args.suts.split(",") if n.strip()]
    adapters = [get(n) for n in names]  # unknown names fail here, before any run
    wrong = [a.name for a in adapters if a.protocol != args.protocol]
    if wrong or not names:
        raise InputError(f"--suts: {', '.join(wrong) or 'none given'}: not {args.protocol}")
    for a in adapters[1:]:
        _require_binaries(a)
    lanes = _lanes(args.lanes)
    out = _live_dir(args, adapters[0], f"interop-{args.protocol}", "interop directory")
    with _sigint_watch() as interrupted, _progress() as prog:
        task = prog.add_task(f"interop {args.protocol}", total=None, info="")

        def on_test(done: int, total: int, name: str) -> None:
            prog.update(task, completed=done, total=total, info=name)

        try:
            outcome = interop.interop(
                spec, names, out, only=args.only, on_test=on_test, lanes=lanes
            )
        except SystemExit:
            if interrupted():
                raise KeyboardInterrupt from None
            raise
    print_verdicts(list(outcome.runs.values()))
    if outcome.robot_log.is_file():
        console.print(f"Robot Framework log: {outcome.robot_log}")
    console.print(f"interoperability matrix: {outcome.report}")
    if interrupted():
        err_console.print(f"interrupted; partial matrix in {out}")
        return 130
    _raise_if_unrun(outcome, out)
    return _exit_status(r.verdict.status for r in outcome.runs.values())


def cmd_search(args: argparse.Namespace) -> int:
    """Hypothesis search of impairment plans against a live implementation
    (conformance/search.py); exit 1 when it found a failure."""
    spec = _protocol(args.protocol)
    spec.need("search_space", spec.capabilities.search_space)
    if args.examples < 1:
        raise InputError(f"--examples: {args.examples}: at least 1")
    from conformance import search

    sut = _sut_playing(args.sut, spec)  # the search is of the protocol the SUT plays
    out = _live_dir(args, sut, f"search-{args.protocol}-{sut.name}", "search directory")
    with _progress() as prog:
        task = prog.add_task(f"search {args.protocol} on {sut.name}", total=None, info="")

        def on_example(n: int, name: str) -> None:
            prog.update(task, completed=n, info=name)

        try:
            log, minimal, text = search.search(
                spec,
                sut.ref,
                out,
                examples=args.examples,
                deterministic=args.deterministic,
                on_example=on_example,
            )
        except KeyboardInterrupt:
            err_console.print(f"interrupted; the examples so far are in {out / 'search.jsonl'}")
            return 130
    counts = ", ".join(f"{k} {v}" for k, v in sorted(log.verdicts.items())) or "none run"
    console.print(
        f"{log.examples} examples ({log.rejected} plans the model cannot express): {counts}"
    )
    console.print(f"examples: {out / 'search.jsonl'}")
    if minimal is None:
        console.print("no failing plan found")
        return 0
    console.print(f"failure: {text}", markup=False)
    console.print(f"minimal regression scenario: {out / 'regressions' / 'minimal.json'}")
    return 1


def cmd_retx_table(args: argparse.Namespace) -> int:
    """The retransmission table: the catalogue's data and report loss
    patterns for one geometry, run live, expected vs. observed bytes."""
    spec = _protocol(args.protocol)
    gen = spec.need("retx_table", spec.capabilities.retx_table)
    from conformance import retxtable

    geometry = _retx_geometry(args, gen)  # before anything is created
    sut = _sut_playing(args.sut, spec)  # the table is of the protocol the SUT plays
    out = _live_dir(args, sut, f"retx-table-{args.protocol}-{sut.name}", "table directory")
    with _progress() as prog:
        if geometry is None:
            task = prog.add_task("TLC: loss patterns", total=None, info="")
            scenarios = gen.retx_scenarios(out / "tlc")
        else:
            task = prog.add_task("rows", total=None, info="")
            scenarios = gen.retx_grid(**geometry)
        prog.update(task, total=len(scenarios), completed=0, info="running rows")

        def on_row(done: int, total: int, name: str) -> None:
            prog.update(task, completed=done, total=total, info=name)

        try:
            rows = retxtable.build(spec, scenarios, sut, out, on_row=on_row)
        except KeyboardInterrupt:
            err_console.print(f"interrupted; the rows so far are in {out}")
            return 130
    table = Table(title=f"retransmission table ({len(rows)} loss patterns)")
    for col in ("#", "losses", "expected red/green B", "observed", "verdict", "trace"):
        table.add_column(col)
    for i, r in enumerate(rows, 1):
        style = STATUS_STYLE.get(mark_status(r.verdict), "")
        table.add_row(str(i), r.loss_text, r.expected_text,
                      r.observed if r.within else f"[red]{r.observed}[/]",
                      f"[{style}]{r.verdict}[/]", r.trace)  # fmt: skip
    console.print(table)
    console.print(f"table: {out / 'retx-table.html'} (also .md, .json)")
    return 0 if all(r.within for r in rows) else 1


# ---------------------------------------------------------------------------
# expect, dissect, validate-trace, install-dissectors, schema, campaign, cleanup,
# profiles, bench
# ---------------------------------------------------------------------------


def cmd_expect(args: argparse.Namespace) -> int:
    """Every outcome the model allows for a scenario's impairments and channel."""
    from generators.outcomes import Unplannable
    from generators.tlc import scratch_dir

    path = Path(args.scenario)
    scn = _load_scenario_file(path)
    if args.write and (why := _writable(path.resolve().parent)):
        # (written beside itself, then renamed: the folder must take a file)
        raise InputError(f"{path}: --write: {why}")
    spec = _protocol(scn.protocol)
    outcomes = spec.need("outcomes", spec.capabilities.outcomes)
    with _progress() as prog:
        task = prog.add_task(f"TLC: outcomes of {scn.name}", total=None, info="")

        def on_progress(p: object) -> None:
            prog.update(task, info=f"{getattr(p, 'distinct_states', 0) or 0:,} distinct states")

        try:
            expect = outcomes.expectation_for(
                scn, scratch_dir("dtnconform-expect-"), progress=on_progress
            )
        except Unplannable as exc:
            raise InputError(f"{path}: {exc}") from None
    table = Table(title=f"{scn.name}: {len(expect.outcomes)} outcomes the model allows")
    delivery = _protocol(scn.protocol).delivery
    for col in (*delivery.labels().values(), "sender", "receiver", "readings",
                "in the file now"):  # fmt: skip
        table.add_column(col)
    for o in expect.outcomes:
        under = ", ".join(r or "default" for r in o.readings)
        table.add_row(*(str(v) for v in o.delivered.parts().values()),
                      o.sender_outcome, o.receiver_outcome, under,
                      "yes" if scn.expect.allows(o) else "no")  # fmt: skip
    console.print(table)
    console.print(expect.source, markup=False)
    stale = [o for o in scn.expect.outcomes if not expect.allows(o)]
    for o in stale:
        console.print(f"in the file but not allowed by the model: {o.describe()}", markup=False)
    if args.write:
        from conformance.core.types import dump_model

        scn.expect = expect
        dump_model(scn, path)
        console.print(f"wrote the outcome set into {path}")
        return 0
    same = {o.key() for o in expect.outcomes} == {o.key() for o in scn.expect.outcomes}
    return 0 if same else 1


def cmd_dissect(args: argparse.Namespace) -> int:
    """Decode a capture with our dissector and list its conformance findings
    (``dissect``; ``validate`` until 0.3)."""
    spec = _protocol(args.proto)
    from dissectors.tshark import CaptureTruncated, decode_capture, port_ranges

    cap = Path(args.capture)
    if cap.is_dir():
        raise InputError(f"{cap}: is a directory, not a capture file")
    if not cap.is_file():
        raise InputError(f"{cap}: no such capture file")
    ports = sorted({p for group in args.port for p in group}) if args.port else None
    decoded = decode_capture(cap, port=ports, protocol=spec.name, analysis=True)
    frames = decoded.frames
    on_ports = f" on UDP {port_ranges(ports)}" if ports else ""
    unit = f"{spec.name.upper()} {spec.unit}s"
    table = Table(title=f"{cap}: {len(frames)} {unit}{on_ports}")
    table.add_column("frame", justify="right")
    table.add_column(spec.unit)
    table.add_column("findings")
    n_findings = 0
    for f in frames:
        # chat-level analysis (a retransmitted copy) is shown with --all only
        shown = [e for e in f.experts if args.all or e.get("severity") != "chat"]
        notes = "; ".join(f"[{_sev_style(e)}]{e.get('name')}[/]: {e.get('message')}" for e in shown)
        n_findings += len(shown)
        if shown or args.all:
            table.add_row(str(f.number), f.summary, notes)
    console.print(table)
    console.print(f"{n_findings} conformance findings in {len(frames)} {spec.unit}s")
    if skipped := decoded.skipped_summary():
        console.print(f"skipped: {skipped}")
    if decoded.truncation is not None:  # what could be decoded is shown; exit 2
        raise CaptureTruncated(cap, decoded)
    return (
        1 if any(e.get("severity", "").lower() == "error" for f in frames for e in f.experts) else 0
    )


def cmd_validate_trace(args: argparse.Namespace) -> int:
    """Trace validation of a stored run directory (its scenario, segments,
    captures and result), as the runner does after each run
    (``validate-trace``; ``trace`` until 0.3)."""
    from conformance.core.types import RunResult, SegmentRecord, load_model
    from conformance.runner import PORTS, validate_trace
    from conformance.segments import datagrams

    run_dir = Path(args.run_dir)
    for name in ("scenario.json", "segments.jsonl", "a.pcap", "b.pcap"):
        if not (run_dir / name).is_file():
            raise InputError(f"{run_dir}: not a run directory (no {name})")
    if args.judge:  # what judging needs, before minutes of TLC
        for name in ("result.json", "channel.jsonl"):
            if not (run_dir / name).is_file():
                raise InputError(f"{run_dir}: no {name} to judge")
    scn = _load_scenario_file(run_dir / "scenario.json")
    spec = _protocol(scn.protocol)
    for side in "ab":  # a file that is no capture is bad input, not a trace to check
        datagrams(run_dir / f"{side}.pcap", PORTS[scn.protocol])
    result = (
        load_model(RunResult, run_dir / "result.json")
        if (run_dir / "result.json").is_file()
        else None
    )
    segments = []
    seg_file = run_dir / "segments.jsonl"
    try:
        lines = seg_file.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise InputError(f"{seg_file}: not UTF-8 text") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            segments.append(SegmentRecord.model_validate_json(line))
        except ValidationError as exc:
            raise InputError(f"{seg_file}: line {n}: {first_error(exc)}") from None
    with _progress() as prog:
        prog.add_task(f"TLC: trace of {run_dir.name}", total=None, info="")
        tc = validate_trace(
            spec, scn, segments, run_dir, port=PORTS[scn.protocol], ip_a=None, result=result
        )
    style = {"accepted": "green", "rejected": "red", "unchecked": "yellow", "error": "red"}[
        tc.status
    ]
    console.print(f"trace {run_dir / 'trace.ndjson'}: [{style}]{tc.status}[/]")
    console.print(tc.message, markup=False)
    if tc.rule:
        console.print(f"rule: {tc.rule}", markup=False)
    if tc.states is not None:
        console.print(f"{tc.lines} lines, {tc.states} states, {tc.seconds:g} s of TLC")
    if args.judge:
        return _rejudge(spec, run_dir, scn, segments, result, tc)
    return {"accepted": 0, "rejected": 1, "unchecked": 2, "error": 2}[tc.status]


def _rejudge(
    spec: ProtocolSpec,
    run_dir: Path,
    scn: Scenario,
    segments: list[SegmentRecord],
    result: RunResult | None,
    tc: TraceCheck,
) -> int:
    """Judge a stored run again (after the model or its scenario's outcome
    set changed): its captures decoded anew, the trace check just made;
    verdict.json is rewritten, the old one kept as verdict.previous.json."""
    from conformance import judge
    from conformance.core.types import Verdict, dump_model, load_model
    from conformance.runner import PORTS, channel_missed, ours_first, probe_payloads
    from conformance.segments import datagrams, dissector_findings, sender_address

    if result is None:
        raise InputError(f"{run_dir}: no result.json to judge")
    if not (run_dir / "channel.jsonl").is_file():
        raise InputError(f"{run_dir}: no channel.jsonl to judge")
    port = PORTS[scn.protocol]
    # a stored run does not record the sender's address: its captures show it
    sent_at_a = {d.number: d for d in datagrams(run_dir / "a.pcap", port)}
    ip_a = sender_address(segments, sent_at_a)
    if ip_a is None:
        raise InputError(f"{run_dir}: a.pcap shows no segment the sender sent: nothing to judge")
    experts = dissector_findings(
        spec,
        run_dir / "a.pcap",
        run_dir / "b.pcap",
        port=port,
        ip_a=ip_a,
        # our tester's robustness probes are malformed on purpose: not the
        # implementation's wire (as the run itself judged them)
        skip=probe_payloads([result.sender, result.receiver]),
    )
    verdict = judge.judge(
        spec, scn, result, run_dir / "channel.jsonl", experts, trace=tc, tester=result.tester
    )
    # frames the channel lost undecided make the run ours, as they did live
    try:
        stats = json.loads((run_dir / "channel-stats.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stats = {}  # none, or unreadable: as a live run without statistics
    verdict = ours_first(verdict, channel_missed(stats) if isinstance(stats, dict) else [])
    old = run_dir / "verdict.json"
    if old.is_file():
        before = load_model(Verdict, old).mark
        old.replace(run_dir / "verdict.previous.json")
        console.print(f"verdict was {before}")
    dump_model(verdict, old)
    console.print(
        f"verdict: {verdict.mark}"
        + (
            f" (readings {', '.join(verdict.readings)})"
            if verdict.readings and verdict.status != "pass"
            else ""
        )
    )
    for r in verdict.reasons:
        console.print(f"  {r.code}: {r.message}", markup=False)
    return 0 if verdict.status == "pass" else 1


def _sev_style(exp: Mapping[str, object]) -> str:
    return {"error": "red", "warn": "yellow", "warning": "yellow"}.get(
        str(exp.get("severity", "")).lower(), "cyan"
    )


def cmd_install_dissectors(args: argparse.Namespace) -> int:
    dest = (
        Path(args.dest).expanduser() if args.dest else Path.home() / ".local/lib/wireshark/plugins"
    )
    _check_out(dest, force=True, what="--dest")
    _make_dir(dest, "--dest")
    lua = sorted((REPO / "dissectors").glob("*/*.lua"))
    for f in lua:
        shutil.copy2(f, dest / f.name)
        console.print(f"installed {f.name} -> {dest / f.name}")
    console.print("Restart Wireshark (or Analyze > Reload Lua Plugins) to load them.")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    import conformance.campaign.plan  # noqa: F401  (registers campaign-plan)
    from conformance.core.types import SCHEMAS, json_schema

    names = [args.name] if args.name else list(SCHEMAS)
    for name in names:
        if name not in SCHEMAS:
            raise InputError(f"unknown schema {name!r} (one of: {', '.join(SCHEMAS)})")
    if args.out:
        out = Path(args.out)
        _check_out(out, force=True)  # schema files are rewritten in place
        _make_dir(out)
        for name in names:
            (out / f"{name}.schema.json").write_text(json.dumps(json_schema(name), indent=2) + "\n")
            console.print(f"wrote {out / f'{name}.schema.json'}")
    else:
        for name in names:
            print(json.dumps(json_schema(name), indent=2))
    return 0


def cmd_campaign(args: argparse.Namespace) -> int:
    from conformance import netns
    from conformance.campaign import plan

    p = plan.load(Path(args.plan))
    if args.replicates is not None:
        if args.replicates < 1:
            raise InputError(f"--replicates {args.replicates}: one at least")
        p = p.model_copy(update={"replicates": args.replicates})
    lanes = _lanes(args.lanes)
    if args.dask is None:
        netns.require_root()  # (with --dask, the workers are)
    client = pool = None
    if args.dask is not None:
        from conformance.campaign import cluster

        client, pool, lanes = cluster.connect(args.dask)
        console.print(f"Dask scheduler {client.scheduler.address}: {lanes} lanes on its workers")
    st, out = _campaign_resume(args, p) if args.resume else _campaign_create(args, p)
    return _campaign_run(args, p, st, out, lanes, client, pool)


def _campaign_resume(args: argparse.Namespace, p: CampaignPlan) -> tuple[Store, Path]:
    """``campaign --resume``: the database of the campaign in --out, reopened
    (the runs cut short are to be redone)."""
    from conformance.campaign import report
    from conformance.campaign.store import Store

    if not args.out:
        raise InputError("--resume: name the campaign's folder with --out DIR")
    out = Path(args.out)
    if out.is_dir():  # before reopening: another resume may be running it
        _lock(out, "--out")
    st, cut = Store.reopen(out / "campaign.sqlite", p)
    had = json.loads(st.get("only") or "[]")
    if args.only and args.only != had:
        raise InputError(
            f"--only: that campaign ran {' '.join(had) or 'every run'}; resume it as it was"
        )
    counts = st.counts()
    if not counts.get("pending"):
        from conformance.core.errors import NotRun

        raise NotRun(
            f"{out}: nothing to resume: its {counts.get('done', 0)} runs are done "
            f"(report: {report.write(st, out)})"
        )
    console.print(
        f"resuming {out}: {counts.get('done', 0)} runs done, {counts.get('pending', 0)} to "
        f"go ({cut} cut short before, redone)"
    )
    return st, out


def _campaign_create(args: argparse.Namespace, p: CampaignPlan) -> tuple[Store, Path]:
    """A new campaign: the whole plan checked, then its folder and database
    made (a campaign that never began leaves no folder)."""
    from conformance.campaign import engine, plan

    out = Path(args.out) if args.out else _run_dir(None, f"campaign-{p.name}")
    if (out / "campaign.sqlite").exists():
        raise InputError(
            f"{out}: a campaign is there already; --resume goes on with it, or choose another --out"
        )
    _check_out(out, force=args.force)
    # the whole plan, before its folder is made
    engine.validate(p, real_time=args.real_time, source=f"{args.plan}: ")
    made = not out.exists()
    _make_dir(out)
    try:
        with _progress() as prog:
            task = prog.add_task(f"campaign {p.name}: preparing", total=None, info="")
            st = engine.create(
                p,
                out,
                real_time=args.real_time,
                say=lambda m: prog.update(task, info=m),
                only=args.only,
            )
    except BaseException:
        if made:  # a campaign that never began leaves no folder
            shutil.rmtree(out, ignore_errors=True)
        raise
    console.print(f"campaign {p.name} in {out}: {plan.describe([r.spec for r in st.rows()])}")
    return st, out


def _campaign_run(
    args: argparse.Namespace,
    p: CampaignPlan,
    st: Store,
    out: Path,
    lanes: int,
    client: Any,
    pool: Executor | None,
) -> int:
    """The campaign's pending runs, with a bar and its ETA; then its report
    and the exit status of its verdicts."""
    from conformance.campaign import engine, report

    total = len(st.rows())
    done0 = st.counts().get("done", 0)
    eta0 = engine.Eta(lanes)
    for r in st.rows("done"):
        eta0.learn(r)
    first = eta0.left(st.rows("pending"))
    if not st.get("eta_first"):
        st.put("eta_first", json.dumps([time.time(), first]))
    cols = (
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("ETA {task.fields[eta]}"),
        TextColumn("{task.fields[info]}"),
    )
    try:
        with Progress(*cols, console=err_console, transient=True) as prog:
            task = prog.add_task(
                f"campaign {p.name}", total=total, completed=done0, eta=_hms(first), info=""
            )

            def tick(done: int, _total: int, left: float, last: str) -> None:
                prog.update(task, completed=done, eta=_hms(left), info=last[:60])

            engine.run(st, out, lanes=lanes, on_progress=tick, pool=pool)
    except KeyboardInterrupt:
        report.write(st, out)
        err_console.print(
            f"interrupted: the runs done are kept; go on with "
            f"`dtnconform campaign {args.plan} --out {out} --resume"
            + (f" --replicates {args.replicates}" if args.replicates else "")
            + "`"
        )
        return 130
    finally:
        if client is not None:
            client.close()
    path = report.write(st, out)
    counts: dict[str, int] = {}
    for r in st.rows():
        counts[r.verdict or r.status] = counts.get(r.verdict or r.status, 0) + 1
    console.print(", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    console.print(f"report: {path}")
    # a pair that cannot run a scenario has no verdict; inconclusive is 1
    return _exit_status(v for r in st.rows() if (v := r.verdict or r.status) != "unsupported")


def cmd_mutate(args: argparse.Namespace) -> int:
    """``dtnconform mutate``: the suite against the engine's mutants
    (conformance/mutate, docs/mutation.md)."""
    from conformance import certify, interop, netns
    from conformance.mutate import mutants as mm
    from conformance.mutate import report as mreport
    from conformance.mutate import run as mrun

    spec = _protocol(args.protocol)
    sut = _sut_playing(args.sut, spec)
    engine = mm.Engine.of(sut)
    if args.sample is not None and args.sample < 1:
        raise InputError(f"--sample {args.sample}: draw at least one mutant")
    if args.catalogue is not None and args.catalogue < 1:
        raise InputError(f"--catalogue {args.catalogue}: draw at least one scenario")
    if args.added_only and not args.add:
        raise InputError("--added-only runs the --add scenarios only: name them with --add")
    if args.added_only and args.catalogue:
        raise InputError("--added-only leaves the suite out: --catalogue would add to it")
    if args.search is not None:
        if args.search < 1:
            raise InputError(f"--search {args.search}: at least one example")
        spec.need("search_space", spec.capabilities.search_space)
        if args.dask is not None:
            raise InputError("--search runs here, not on --dask's workers: give one or the other")
    lanes = _lanes(args.lanes)
    client = pool = None
    if args.dask is None:
        netns.require_root()
    else:
        from conformance.campaign import cluster

        client, pool, lanes = cluster.connect(args.dask)
        console.print(f"Dask scheduler {client.scheduler.address}: {lanes} lanes on its workers")
    out = Path(args.out) if args.out else _run_dir(None, f"mutate-{args.protocol}-{sut.name}")
    if args.resume:
        if not (out / mrun.DB).is_file():
            raise InputError(f"{out}: no mutation run to resume (no {mrun.DB}); --out names it")
        _lock(out, "--out")
    else:
        if (out / mrun.DB).exists():
            raise InputError(f"{out}: a mutation run is there already; --resume goes on with it")
        _check_out(out, force=args.force)
        _make_dir(out)
        sut.ensure_built()  # cargo fetches the engine's source into its cache
        if spec.mutation_suite == "interop":
            with _progress() as prog:
                task = prog.add_task(f"interop scenarios ({args.protocol})", total=None, info="")

                def on_config(done: int, total: int, name: str) -> None:
                    prog.update(task, completed=done, total=total, info=name)

                interop.write_scenarios(spec, out, on_config=on_config)
        else:
            _generate(args.protocol, out / "scenarios", catalogue=False)
        if args.catalogue or args.add:
            drawn_from = out / "scenarios" / certify.CATALOGUE
            if spec.capabilities.catalogue is not None:
                _catalogue(spec.capabilities.catalogue, drawn_from)
            else:  # CFDP: its test purposes' scenarios are drawn from
                _generate(args.protocol, drawn_from, catalogue=False)
    # --catalogue N: N of the catalogue's scenarios too, drawn with --seed
    # (on --resume, the draw recorded in the run's scenarios)
    drawn = (args.catalogue, args.seed) if args.catalogue and not args.resume else None
    chosen_scenarios = certify._scenarios(out, False, drawn)
    if args.added_only:  # the suite's nominal transfers, for the trivial kills
        chosen_scenarios = [
            p
            for p in chosen_scenarios
            if mrun.is_nominal(json.loads(p.read_text(encoding="utf-8")), None)
        ]
    added = _added(out, args.add, chosen_scenarios) if args.add else []
    chosen_scenarios += added
    every = certify.cases(spec, chosen_scenarios, certify.SUT_ROLES)
    # as certify runs them: a scenario the implementation's declared profile
    # moves runs its adapted copy (out/adapted), its outcome set the model's
    every, moved = certify._adapted(sut, every, out)
    if moved:
        console.print(
            f"{len(moved)} scenario(s) run as {sut.name}'s profile moves them "
            f"({next(iter(moved.values()))[0]}, ...)",
            markup=False,
        )
    why = {c: certify.unsupported(spec, sut, c) for c in every}
    cases = certify._supported(spec, sut, every, why)
    if args.catalogue or args.add:
        _say_undrawn(sut, why, out)
    listed = made = mm.listed(engine, out / "scratch")
    if args.mutant:
        listed = _named_mutants(made, args.mutant)
    chosen = mrun.sample(listed, args.sample, args.seed)
    if args.resume:
        st, cut = mrun.reopen(out, engine, chosen, cases)
        console.print(f"resuming {out}: {st.counts()} ({cut} cut short before, redone)")
    else:
        st = mrun.create(out, engine, chosen, cases, first={p.stem for p in added})
        console.print(
            f"{len(chosen)} of the "
            + (f"{len(listed)} named by --mutant of the " if args.mutant else "")
            + f"{len(made)} mutants {engine.tool} makes of "
            f"{engine.package} {engine.version} ({', '.join(engine.files)}), seed {args.seed}; "
            f"{len(cases)} cases each, the engine as published first"
        )
    notes = mreport.notes_of(sut)
    try:
        with _progress() as prog:
            task = prog.add_task(f"mutate {sut.name}", total=len(st.records()), info="")

            def tick(done: int, total: int, last: str) -> None:
                prog.update(task, completed=done, total=total, info=last[:70])

            mrun.run(st, out, engine, lanes=lanes, pool=pool, on_progress=tick)
            if args.search:
                from conformance.mutate import hunt

                hunt.hunt(st, out, engine, spec, args.search, on_progress=tick)
            if args.shrink:
                from conformance.mutate import shrink

                shrink.shrink(st, out, engine, spec, on_progress=tick)
    except KeyboardInterrupt:
        mreport.write(st, out, notes)
        err_console.print(
            "interrupted: the runs done are kept; go on with `dtnconform mutate "
            f"{args.protocol} --sut {args.sut} --out {out} --resume"
            + (f" --sample {args.sample}" if args.sample else "")
            + "".join(f" --mutant '{m}'" for m in args.mutant or [])
            + (f" --catalogue {args.catalogue}" if args.catalogue else "")
            + "".join(f" --add '{a}'" for a in args.add or [])
            + (" --added-only" if args.added_only else "")
            + (f" --search {args.search}" if args.search else "")
            + (" --shrink" if args.shrink else "")
            + f" --seed {args.seed}`"
        )
        return 130
    finally:
        if client is not None:
            client.close()
    path = mreport.write(st, out, notes)
    s = mreport.summary(st, notes)
    score = "none" if s["score"] is None else f"{100 * s['score']:.1f} %"
    console.print(
        f"score {score}: {s['killed']} killed"
        + (f" ({s['killed_by_search']} by the search)" if s["killed_by_search"] else "")
        + f", {s['survived']} survived ({s['equivalent']} "
        f"equivalent), {s['trivially_killed']} trivially killed; kills by judge: "
        + (", ".join(f"{k} {v}" for k, v in sorted(s["judges"].items())) or "none")
    )
    console.print(f"report: {path}")
    return 0


def _named_mutants(listed: Sequence[Mutant], patterns: list[str]) -> list[Mutant]:
    """The mutants whose tool's name matches one of ``patterns`` (fnmatch),
    in the tool's order; a pattern that matches none is refused, with names
    that come close."""
    from fnmatch import fnmatchcase

    names = [m.name for m in listed]
    _each_matches("--mutant", names, patterns, f"none of the {len(names)} mutants")
    return [m for m in listed if any(fnmatchcase(m.name, pat) for pat in patterns)]


def _each_matches(option: str, names: list[str], patterns: list[str], none: str) -> None:
    """Refuse the first of ``patterns`` (fnmatch) that matches none of
    ``names``, with the names that come close; ``none`` says what it did
    not match."""
    import difflib
    from fnmatch import fnmatchcase

    for pat in patterns:
        if not any(fnmatchcase(n, pat) for n in names):
            near = difflib.get_close_matches(pat, names, n=3, cutoff=0.4)
            raise InputError(
                f"{option} {pat}: {none} matches" + (f" (close: {'; '.join(near)})" if near else "")
            )


def _added(out: Path, patterns: list[str], have: list[Path]) -> list[Path]:
    """The scenarios of out/scenarios/catalogue whose names match one of
    ``patterns`` (fnmatch), not already in ``have``, sorted; a pattern that
    matches none is refused, with names that come close."""
    from fnmatch import fnmatchcase

    from conformance import certify

    pool = certify._catalogue_pool(out)
    where = out / "scenarios" / certify.CATALOGUE
    _each_matches("--add", [p.stem for p in pool], patterns, f"no scenario of {where}")
    seen = {p.resolve() for p in have}
    return [
        p
        for p in pool
        if p.resolve() not in seen and any(fnmatchcase(p.stem, pat) for pat in patterns)
    ]


def _say_undrawn(sut: SutAdapter, why: Mapping[Any, str], out: Path) -> None:
    """Say how many of the cases --catalogue drew or --add named the
    implementation cannot take (``why``: each case's reason, '' if it can),
    and the commonest reason: a draw it plays none of adds nothing to its
    suite."""
    from collections import Counter

    from conformance import certify

    # drawn: under scenarios/catalogue, or its adapted copy under adapted/
    drawn = [c for c in why if certify.CATALOGUE in c.path.relative_to(out).parts]
    left = Counter(why[c] for c in drawn if why[c])
    if not left:
        return
    reason, n = left.most_common(1)[0]
    refused = sum(left.values())
    err_console.print(
        f"catalogue: {sut.name} takes {len(drawn) - refused} of the {len(drawn)} cases drawn; "
        f"{refused} are not supported ({n} of them: {reason})",
        markup=False,
    )


def _hms(seconds: float) -> str:
    s = max(0, int(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def cmd_cleanup(args: argparse.Namespace) -> int:
    from conformance import guard, netns

    # first the processes of owners that are gone (SIGTERM: a nested run
    # unwinds and removes its namespaces), then what is left of those
    ended = guard.end_orphans()
    console.print(
        f"ended {len(ended)} orphaned processes"
        + "".join(f"\n  {p.pid}: {p.command}" for p in ended),
        markup=False,
    )
    if os.geteuid() == 0:
        removed = netns.sweep_stale()
        console.print(
            f"removed {len(removed)} stale namespaces"
            + (f": {', '.join(removed)}" if removed else "")
        )
    else:
        console.print("namespaces: not checked (they need root)")
    roots = guard.remove_stale_roots()
    console.print(
        f"removed {len(roots)} stale temporary folders" + "".join(f"\n  {r}" for r in roots),
        markup=False,
    )
    return 0


def _fmt_rate(bps: float) -> str:
    if not bps:
        return "unlimited"
    for unit, scale in (("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)):
        if bps >= scale:
            return f"{bps / scale:g} {unit}"
    return f"{bps:g} b/s"


def _fmt_delay(ms: float) -> str:
    if ms < 1000:
        return f"{ms:g} ms"
    if ms < 60_000:
        return f"{ms / 1000:g} s"
    if ms < 3_600_000:
        return f"{ms / 60_000:.1f} min"
    return f"{ms / 3_600_000:.2f} h"


def cmd_profiles(args: argparse.Namespace) -> int:
    from conformance.channel import profiles

    if args.name:
        prof = profiles.load(args.name)
        console.print(f"[bold]{prof.name}[/]: {prof.description}")
        console.print(f"source: {prof.source}", markup=False)
        print(prof.model_dump_json(indent=2, by_alias=True, exclude={"description", "source"}))
        return 0
    table = Table(title='link profiles (scenario: "channel": {"profile": NAME})')
    for col in ("name", "forward", "return", "timeline / outages"):
        table.add_column(col)
    for prof in profiles.all_profiles():
        cells = []
        for d in (prof.forward, prof.ret):
            link = d.link
            rate = _fmt_rate(link.rate_bps)
            errs = "".join(
                f", {k} {getattr(link, k):g}" for k in ("loss", "ber", "packet_error")
                if getattr(link, k)
            )  # fmt: skip
            cells.append(f"{rate}, {_fmt_delay(link.delay_ms)}{errs}")
        extra = f"{len(prof.forward.timeline)} events, {len(prof.forward.outages)} outages"
        table.add_row(prof.name, *cells, extra)
    console.print(table)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from conformance import bench

    if args.quick:
        import os

        os.environ["DTNC_BENCH_QUICK"] = "1"
    return bench.run(args.name, console, args.size)


# ---------------------------------------------------------------------------
# The parser: one function per subcommand, grouped as docs/cli.md groups them
# ---------------------------------------------------------------------------

# Old names of renamed verbs -> the new ones. An old name keeps its options
# and behaviour for the 0.2.x releases, says on stderr what replaced it, and
# goes in the next release; it is never given another meaning.
RENAMED = {"validate": "dissect", "trace": "validate-trace"}


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="dtnconform",
        description="Spec-driven conformance and interoperability testing for LTP, Saratoga, "
        "CFDP and NORM.",
    )
    p.add_argument("--version", action=_VersionAction,
                   help="print the version and git commit, then exit")  # fmt: skip
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    protos = f"protocol: {_registered()}"
    from suts.registry import REGISTRY

    suts_list = ", ".join(REGISTRY)
    # (registered in the order --help has always listed them)
    _add_check(sub, protos)
    _add_generate(sub, protos)
    _add_expect(sub)
    _add_run(sub, suts_list)
    _add_interop(sub, suts_list)
    _add_certify(sub, protos)
    _add_search(sub, protos)
    _add_retx_table(sub, protos)
    _add_dissect(sub, protos)
    _add_validate_trace(sub)
    _add_install_dissectors(sub)
    _add_bench(sub)
    _add_profiles(sub)
    _add_schema(sub)
    _add_campaign(sub)
    _add_mutate(sub, protos)
    _add_cleanup(sub)
    _add_renamed(sub, protos)
    # --help lists the verbs by their current names only
    sub.metavar = "{" + ",".join(n for n in sub.choices if n not in RENAMED) + "}"
    return p


_Sub: TypeAlias = "argparse._SubParsersAction[_Parser]"


def _verb(sub: _Sub, name: str, text: str) -> _Parser:
    """The parser of a verb, ``text`` its line in --help. Under an old name
    (RENAMED) it is left out of that list, and its own --help names the
    new one."""
    if name in RENAMED:
        return sub.add_parser(
            name,
            description=f"Deprecated name of `dtnconform {RENAMED[name]}` ({text}): the same "
            "options; it works in 0.2.x and goes in the next release.",
        )
    return sub.add_parser(name, help=text)


def _add_out(s: _Parser, text: str) -> None:
    """--out and --force, as the verbs that write a new folder have them."""
    s.add_argument("--out", help=text)
    s.add_argument("--force", action="store_true", help="write into a non-empty --out directory")


# Models and scenarios -------------------------------------------------------


def _add_check(sub: _Sub, protos: str) -> None:
    s = sub.add_parser("check", help="model-check a protocol's TLA+ model with TLC")
    s.add_argument("protocol", help=protos)
    s.add_argument("--bound", default="ci",
                   help="ci: small, under a minute; deep: minutes; bug: a model that fails on "
                   "purpose; the others (LTP: reading2, reading4, reading5, reading12, claims, unknown, "
                   "early, late, miscolored, cues, nocues, outage, sessions, sessions_deep, "
                   "orphan; CFDP: deferred, cancel, late, suspend, prompt, outage, abandon, readings) "
                   "are in specs/<proto>/README.md")  # fmt: skip
    s.add_argument("--out", help="folder for TLC's files and log (default runs/<time>-check-...)")
    s.add_argument(
        "--distributed",
        type=int,
        default=0,
        metavar="N",
        help="TLC's distributed mode: its server and N TLCWorkers on this host (invariants "
        "and deadlock; TLC checks no temporal property distributed)",
    )
    s.set_defaults(func=cmd_check)


def _add_generate(sub: _Sub, protos: str) -> None:
    s = sub.add_parser("generate", help="derive scenario files from TLC traces of test purposes")
    s.add_argument("protocol", help=protos)
    s.add_argument("--out", required=True, help="directory for the scenario files (new or empty)")
    s.add_argument("--force", action="store_true", help="write into a non-empty --out directory")
    s.add_argument(
        "--no-catalogue",
        action="store_true",
        help="the test purposes only, without the catalogue of loss patterns (minutes of TLC)",
    )
    s.set_defaults(func=cmd_generate)


def _add_expect(sub: _Sub) -> None:
    s = sub.add_parser(
        "expect", help="the outcomes the model allows for a scenario (TLC); --write stores them"
    )
    s.add_argument("scenario", help="scenario JSON file")
    s.add_argument("--write", action="store_true", help="replace the file's expect section")
    s.set_defaults(func=cmd_expect)


# Live runs ------------------------------------------------------------------


def _add_sut_option(s: _Parser, text: str) -> None:
    s.add_argument("--sut-option", action="append", default=[], metavar="NAME=VALUE", help=text)


def _add_lanes(s: _Parser) -> None:
    s.add_argument(
        "--lanes",
        type=int,
        default=1,
        help="Robot test cases at once, up to the cores, under pabot (default 1: Robot alone)",
    )


def _add_run(sub: _Sub, suts_list: str) -> None:
    s = sub.add_parser("run", help="replay one scenario against a live implementation (root)")
    s.add_argument("scenario", help="scenario JSON file")
    s.add_argument("--sut", required=True, help=f"implementation under test: {suts_list}")
    s.add_argument(
        "--receiver-sut",
        help="another implementation plays the receiver (--sut sends): an interoperability run",
    )
    _add_out(s, "run directory, new or empty (default runs/<time>-<scenario>)")
    s.add_argument(
        "--tester",
        choices=("sender", "receiver"),
        help="dtnconform's model-driven tester plays this role, the SUT the other",
    )
    _add_sut_option(
        s,
        "a configuration choice the implementation offers (repeatable; licklider: "
        "report-upper-bound=cp-end|max-seen); recorded in the run's provenance",
    )
    s.set_defaults(func=cmd_run)


def _add_interop(sub: _Sub, suts_list: str) -> None:
    s = sub.add_parser(
        "interop", help="every implementation against every other, per configuration (Robot)"
    )
    s.add_argument("protocol", help="ltp or cfdp (the protocols with several implementations)")
    s.add_argument(
        "--suts",
        default=None,
        help=f"comma-separated implementations or endpoint files, each as sender and receiver "
        f"(default: every registered one of the protocol that is built here; registered: "
        f"{suts_list})",
    )
    _add_out(s, "directory, new or empty (default runs/<time>-interop-...)")
    s.add_argument(
        "--only", help="run only the cells whose name (SENDER--RECEIVER--SCENARIO) has this"
    )
    _add_lanes(s)
    s.set_defaults(func=cmd_interop)


def _add_certify(sub: _Sub, protos: str) -> None:
    s = sub.add_parser("certify", help="generate, run every scenario under Robot Framework, report")
    s.add_argument("protocol", help=protos)
    s.add_argument(
        "--sut", default="licklider", help="implementation under test (default licklider)"
    )
    _add_out(s, "certification directory, new or empty (default runs/<time>-certify-...)")
    s.add_argument("--only", help="run only scenarios whose name contains this text")
    s.add_argument(
        "--retx-table",
        action="store_true",
        help="also run the retransmission table (about 2 min) and put it in the report",
    )
    s.add_argument(
        "--catalogue",
        action="store_true",
        help="also run the catalogue: about 1,400 scenarios, one per pattern of losses, delays "
        "and duplicates within its bounds, in each SUT role (about 2 hours per role; --only "
        "narrows, e.g. --only ltp-r1g0l1-)",
    )
    s.add_argument(
        "--sample",
        type=int,
        metavar="N",
        help="also run N scenarios of the catalogue, drawn with --seed (the same N and seed "
        "draw the same ones); the draw is kept in scenarios/catalogue-sample.json",
    )
    s.add_argument("--seed", type=int, help="the seed of --sample's draw (default 1)")
    s.add_argument(
        "--resume",
        metavar="DIR",
        help="go on with an interrupted certification in DIR: cases with a verdict other than error are "
        "kept, the rest run (with the same options as before); the report covers them all",
    )
    s.add_argument(
        "--sut-roles",
        default=None,
        help="which sides the SUT plays, comma-separated (default all three where the protocol "
        "has a tester, else both): both (the SUT "
        "against itself), sender (the model-driven tester receives), receiver (the tester "
        "sends); the robustness probes run in the tester roles asked for",
    )
    _add_sut_option(
        s,
        "a configuration choice the implementation offers, for every run (repeatable; "
        "licklider: report-upper-bound=cp-end|max-seen)",
    )
    _add_lanes(s)
    s.set_defaults(func=cmd_certify)


def _add_search(sub: _Sub, protos: str) -> None:
    s = sub.add_parser(
        "search",
        help="Hypothesis search of loss plans against a live implementation, the model as "
        "oracle; shrinks a failure to a regression scenario (root)",
    )
    s.add_argument("protocol", help=protos)
    s.add_argument("--sut", default="licklider", help="implementation (default licklider)")
    s.add_argument("--examples", type=int, default=20, help="plans to try (default 20)")
    s.add_argument(
        "--deterministic", action="store_true", help="the same plans every time (derandomized)"
    )
    _add_out(s, "search directory, new or empty (default runs/<time>-search-...)")
    s.set_defaults(func=cmd_search)


def _retx_geometry(args: argparse.Namespace, gen: Any) -> dict[str, int] | None:
    """The geometry --geometry or --block-len and its peers ask for (None:
    the catalogue's, enumerated by TLC). A usage error names what is missing."""
    own = {k: getattr(args, k) for k in ("block_len", "red_len", "segment_size")}
    if args.geometry is None and all(v is None for v in own.values()):
        if args.max_losses is not None:
            raise InputError(
                "--max-losses needs a geometry (--geometry NAME or --block-len, --red-len and "
                "--segment-size): the catalogue's rows are TLC's patterns"
            )
        return None
    if args.geometry is not None:
        named = gen.RETX_GEOMETRIES.get(args.geometry)
        if named is None:
            raise InputError(
                f"--geometry {args.geometry}: not one of {', '.join(sorted(gen.RETX_GEOMETRIES))}"
            )
        geometry = dict(named)
        geometry |= {k: v for k, v in own.items() if v is not None}
    else:
        missing = [f"--{k.replace('_', '-')}" for k, v in own.items() if v is None]
        if missing:
            raise InputError(f"a geometry needs {', '.join(missing)} too (or --geometry NAME)")
        geometry = {k: int(v) for k, v in own.items()} | {"max_losses": 2}
    if args.max_losses is not None:
        geometry["max_losses"] = args.max_losses
    if not 0 <= geometry["red_len"] <= geometry["block_len"]:
        raise InputError("--red-len must be between 0 and --block-len")
    if geometry["segment_size"] <= 0 or geometry["max_losses"] < 0:
        raise InputError("--segment-size must be positive and --max-losses not negative")
    return geometry


def _add_retx_table(sub: _Sub, protos: str) -> None:
    s = sub.add_parser(
        "retx-table",
        help="retransmission table: loss patterns run live, expected vs. observed bytes",
    )
    s.add_argument("protocol", help=protos)
    s.add_argument("--sut", default="licklider", help="implementation (default licklider)")
    s.add_argument(
        "--geometry",
        metavar="NAME",
        help="a built-in geometry: ns3 (the ns-3 LTP paper's: 5000-byte block, 1500 red, "
        "1461-byte segments, up to 4 losses), ns3-all-red, ns3-all-green",
    )
    s.add_argument("--block-len", type=int, metavar="N", help="block length in bytes")
    s.add_argument("--red-len", type=int, metavar="R", help="red part in bytes")
    s.add_argument("--segment-size", type=int, metavar="S", help="segment size in bytes")
    s.add_argument(
        "--max-losses",
        type=int,
        metavar="K",
        help="losses per row, among the data segments and the first report (default 2; "
        "a named geometry's own)",
    )
    _add_out(s, "table directory, new or empty (default runs/<time>-retx-table-...)")
    s.set_defaults(func=cmd_retx_table)


# Campaigns ------------------------------------------------------------------


def _add_campaign(sub: _Sub) -> None:
    s = sub.add_parser(
        "campaign",
        help="run a campaign plan (pairs x links x sizes x replicates) into a resumable "
        "database, with its report (root)",
    )
    s.add_argument("plan", help="plan file, YAML or TOML (plans/*.yaml; schema campaign-plan)")
    s.add_argument("--out", help="campaign folder (default runs/<time>-campaign-<name>)")
    s.add_argument("--force", action="store_true", help="start in a non-empty --out folder")
    s.add_argument(
        "--resume", action="store_true", help="go on with the interrupted campaign in --out"
    )
    s.add_argument("--lanes", type=int, default=1, help="runs at once, up to the cores (1)")
    s.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="TEXT",
        help="only the runs whose key (protocol/sender>receiver/link/size/rN) holds TEXT "
        "(repeatable: any of them)",
    )
    s.add_argument(
        "--dask",
        metavar="ADDRESS|FILE",
        help="run on a Dask cluster (a scheduler address or scheduler file): one lane per "
        "worker thread; the workers run as root",
    )
    s.add_argument(
        "--replicates",
        type=int,
        help="replicates instead of the plan's (a reduced campaign; --resume needs the same)",
    )
    s.add_argument(
        "--real-time",
        action="store_true",
        help="run links at time scale 1 (no compression of outages and timelines)",
    )
    s.set_defaults(func=cmd_campaign)


def _add_mutate(sub: _Sub, protos: str) -> None:
    s = sub.add_parser(
        "mutate",
        help="the mutation score: the generated suite against mutants of an implementation's "
        "engine (root)",
    )
    s.add_argument("protocol", help=protos)
    s.add_argument(
        "--sut",
        required=True,
        help="an implementation with a [mutate] table (licklider, cfdp-rs, cfdp-py, librecube)",
    )
    s.add_argument("--sample", type=int, help="this many of the tool's mutants (all)")
    s.add_argument(
        "--catalogue",
        type=int,
        metavar="N",
        help="add N scenarios drawn with --seed from the protocol's catalogue (LTP) or, "
        "where it has none, its test purposes' scenarios (CFDP): generated first, minutes of TLC",
    )
    s.add_argument(
        "--mutant",
        action="append",
        metavar="PATTERN",
        help="only the mutants whose tool's name matches this shell pattern (as "
        "mutation.json and the notes name them): a survivor checked again against the "
        "purpose that closes it; repeatable, --sample then draws from them",
    )
    s.add_argument(
        "--add",
        action="append",
        metavar="PATTERN",
        help="add the catalogue's (LTP) or the test purposes' (CFDP) scenarios whose names "
        "match this shell pattern, in every role: the purpose that kills a gap "
        "(docs/mutation.md); repeatable, generated first as for --catalogue",
    )
    s.add_argument(
        "--search",
        type=int,
        metavar="N",
        help="then a Hypothesis search of N impairment plans against each survivor (LTP); a "
        "failing plan, shrunk, kills it if the original passes it",
    )
    s.add_argument(
        "--added-only",
        action="store_true",
        help="the suite is its nominal transfers and the --add scenarios only: a gap's "
        "purpose checked in minutes, not a score",
    )
    s.add_argument(
        "--shrink",
        action="store_true",
        help="then shrink each suite kill's scenario: its impairments taken away one at a "
        "time while the mutant still fails it and the original passes it (two live runs a "
        "try); the minimal one is the kill's in the report",
    )
    s.add_argument("--seed", type=int, default=1, help="the seed that draws --sample (1)")
    s.add_argument("--lanes", type=int, default=1, help="runs at once, up to the cores (1)")
    s.add_argument("--dask", metavar="ADDRESS|FILE", help="run on a Dask cluster's workers")
    s.add_argument("--out", help="the run's folder (default runs/<time>-mutate-<proto>-<sut>)")
    s.add_argument("--force", action="store_true", help="start in a non-empty --out folder")
    s.add_argument("--resume", action="store_true", help="go on with the run in --out")
    s.set_defaults(func=cmd_mutate)


# Captures and traces --------------------------------------------------------


def _add_dissect(sub: _Sub, protos: str, name: str = "dissect") -> None:
    s = _verb(sub, name, "decode a capture with our dissector and list findings")
    s.add_argument("capture", help="pcap or pcapng file")
    s.add_argument("--proto", required=True, help=protos)
    s.add_argument("--port", type=_port_spec, action="append", metavar="PORTS",
                   help="UDP ports decoded as --proto, e.g. 1113,4556,5000-5010; repeatable "
                   "(default: the protocol's own port, LTP 1113)")  # fmt: skip
    s.add_argument(
        "--all",
        action="store_true",
        help="list every segment, not just those with findings, and the chat-level analysis "
        "(retransmitted copies)",
    )
    s.set_defaults(func=cmd_dissect)


def _add_validate_trace(sub: _Sub, name: str = "validate-trace") -> None:
    s = _verb(sub, name, "validate a stored run's captures against the model with TLC")
    s.add_argument("run_dir", help="a run directory (dtnconform run --out)")
    s.add_argument(
        "--judge",
        action="store_true",
        help="also judge the run again (its verdict.json is rewritten, the old one kept as "
        "verdict.previous.json): after the model or the scenario's outcome set changed",
    )
    s.set_defaults(func=cmd_validate_trace)


def _add_renamed(sub: _Sub, protos: str) -> None:
    """The old names of renamed verbs (RENAMED): each the parser of its new
    name under the old one (main() says on stderr that it is deprecated)."""
    _add_dissect(sub, protos, "validate")
    _add_validate_trace(sub, "trace")


def _add_install_dissectors(sub: _Sub) -> None:
    s = sub.add_parser(
        "install-dissectors", help="copy our Lua dissectors into Wireshark's plugin folder"
    )
    s.add_argument("--dest", help="plugin folder (default ~/.local/lib/wireshark/plugins)")
    s.set_defaults(func=cmd_install_dissectors)


# Utilities ------------------------------------------------------------------


def _add_bench(sub: _Sub) -> None:
    s = sub.add_parser("bench", help="run a benchmark: human lines, then one JSON line of figures")
    s.add_argument("name", help="benchmark name (see `dtnconform bench list`)")
    s.add_argument("--quick", action="store_true", help="short trials (sets DTNC_BENCH_QUICK=1)")
    s.add_argument(
        "--size",
        type=_byte_size,
        metavar="SIZE",
        help="validate: the transfer's size, a whole number of 10MB blocks above 10MB "
        "(10MB, 100MB; default 10MB)",
    )
    s.set_defaults(func=cmd_bench)


def _byte_size(text: str) -> int:
    """ "10MB" -> 10,000,000 (kB, MB, GB are powers of 1000; plain digits: bytes)."""
    units = {"": 1, "B": 1, "KB": 1000, "MB": 1000**2, "GB": 1000**3}
    number = text.strip().upper().rstrip("BKMG")
    unit = text.strip().upper()[len(number) :]
    if not number.isdigit() or unit not in units or int(number) == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (10MB, 100MB, 5000000)")
    return int(number) * units[unit]


def _add_profiles(sub: _Sub) -> None:
    s = sub.add_parser("profiles", help="list the link profiles, or show one")
    s.add_argument("name", nargs="?", help="profile to show in full")
    s.set_defaults(func=cmd_profiles)


def _add_schema(sub: _Sub) -> None:
    s = sub.add_parser("schema", help="print or write the JSON schemas of our file types")
    s.add_argument("name", nargs="?", help="scenario, link-profile, segment-record, run-result, "
                   "verdict or channel-record (default: all)")  # fmt: skip
    s.add_argument("--out", help="write <name>.schema.json files into this directory")
    s.set_defaults(func=cmd_schema)


def _add_cleanup(sub: _Sub) -> None:
    s = sub.add_parser(
        "cleanup",
        help="end processes and remove namespaces and temporary folders left by a killed run "
        "(namespaces need root)",
    )
    s.set_defaults(func=cmd_cleanup)


def _stdout_gone() -> int:
    """stdout's reader went away (``| head``): stop quietly with 141, the
    status of a process ended by SIGPIPE; later writes go to /dev/null so
    the interpreter's final flush cannot fail again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return 141


# A file system that takes no more: full, over quota, read-only, or a file
# over its size limit.
_STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG}


def _storage_failure(exc: BaseException, folder: str | None = None) -> str | None:
    """The one-line reason for a write the file system refused (a full
    disk, a read-only one), wherever it happened; None for any other error
    (a bug, which keeps its traceback). A write to an open file names no
    file: then the command's output folder is named. SQLite says it in
    words."""
    if isinstance(exc, OSError) and exc.errno in _STORAGE_ERRNOS:
        where = f"{exc.filename}: " if exc.filename else ""
        if not where and folder:
            where = f"{folder}: writing in it: "
        return f"{where}{exc.strerror}: stopped, its results incomplete"
    if isinstance(exc, sqlite3.Error):
        text = str(exc)
        if "disk is full" in text or "readonly" in text or "disk I/O error" in text:
            return f"the campaign database: {text}: stopped, its results incomplete"
    return None


class Terminated(KeyboardInterrupt):
    """SIGTERM (``timeout``, a CI job's end): unwound like Ctrl-C, so that
    TLC, the endpoints and the namespaces are cleaned up."""


def _on_sigterm(_signum: int, _frame: object) -> None:
    raise Terminated


def main(argv: list[str] | None = None) -> int:
    import threading

    if argv is None:
        # run as the program (not main([...]) in-process): every child dies
        # with it, SIGKILL included, and its temporary files go (guard.py)
        from conformance import guard

        guard.start()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
        # Ctrl-C unwinds (exit 130) even when the launcher ignored SIGINT: a
        # shell's background job, where Python installs no handler of its own
        signal.signal(signal.SIGINT, signal.default_int_handler)
    args: argparse.Namespace | None = None
    try:
        args = build_parser().parse_args(argv)
        if (new := RENAMED.get(args.command)) is not None:
            print(
                f"dtnconform: {args.command} is deprecated: it is now {new} (the same options); "
                f"the name {args.command} goes in the next release",
                file=sys.stderr,
            )
        code = int(args.func(args))
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except BrokenPipeError:
        return _stdout_gone()
    except DtncError as exc:
        try:
            sys.stdout.flush()  # what was shown before the error (dissect's table)
        except BrokenPipeError:
            _stdout_gone()
        print(f"dtnconform: {exc}", file=sys.stderr)  # plain: one unwrapped line
        return exc.exit_code
    except (OSError, sqlite3.Error) as exc:
        folder = getattr(args, "out", None) or getattr(args, "resume", None)
        why = _storage_failure(exc, folder)
        if why is None:
            raise
        with contextlib.suppress(OSError):
            sys.stdout.flush()
        print(f"dtnconform: {why}", file=sys.stderr)
        return 2
    except Terminated:
        err_console.print("dtnconform: terminated")
        return 143
    except KeyboardInterrupt:
        err_console.print("dtnconform: interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
