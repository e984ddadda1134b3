"""No child outlives a SIGKILLed dtnconform (conformance/guard.py).

The real command line runs in a subprocess and is SIGKILLed at several
instants: before and as its TLC JVM starts, once TLC has reported states,
mid-generation, and (root) as a live run's harness, tcpdump and channel
run between its namespaces. Within 5 s no process may carry its token
(``DTNC_OWNERS`` in ``/proc/<pid>/environ``), no namespace may be named after
its pid, and its temporary folder must be gone. The checks read /proc and
``ip netns`` here, not through the module under test.

Each command gets a system temporary folder of its own (``TMPDIR``), so that
what it leaves there is seen apart from the other work on the machine.

``dtnconform cleanup`` ends a process whose marker names an owner that is
gone and removes such an owner's temporary folder, and leaves alone those of
a live owner and its own ancestors.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".venv" / "bin" / "dtnconform"
CLI = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "conformance.cli"]
FINDINGS = ROOT / "reports" / "findings" / "ltp" / "scenarios"
IS_ROOT = os.geteuid() == 0
LIMIT_S = 5.0

integration = pytest.mark.integration


# ---------------------------------------------------------------------------
# Looking from outside
# ---------------------------------------------------------------------------


def token_of(pid: int) -> str:
    """``<pid>.<starttime>`` read from /proc (field 22 of stat)."""
    data = Path(f"/proc/{pid}/stat").read_bytes()
    return f"{pid}.{int(data[data.rfind(b')') + 2 :].split()[19])}"


def carrying(token: str) -> list[str]:
    """The command lines of the running processes whose DTNC_OWNERS holds
    ``token`` (a zombie has no environment left, and no longer runs)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            env = Path(f"/proc/{name}/environ").read_bytes()
            cmd = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        for entry in env.split(b"\0"):
            if entry.startswith(b"DTNC_OWNERS=") and token in entry[12:].decode().split(":"):
                found.append(f"{name}: " + cmd.replace(b"\0", b" ").decode(errors="replace"))
    return found


def namespaces_of(pid: int) -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [n for n in re.findall(r"^(\S+)", out, re.M) if re.fullmatch(rf"dtnc{pid}x\d+[amb]", n)]


def leftovers(pid: int, token: str, tmp: Path) -> list[str]:
    left = carrying(token)
    if IS_ROOT:
        left += [f"namespace {n}" for n in namespaces_of(pid)]
    left += [f"temporary {p}" for p in tmp.iterdir()]
    return left


def wait_for(what: Callable[[], bool], timeout: float, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        if proc.poll() is not None:
            out = (proc.stdout.read() or b"").decode() if proc.stdout else ""
            pytest.fail(f"dtnconform ended ({proc.returncode}) before the instant: {out}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the instant did not come in {timeout:g} s")
        time.sleep(0.05)


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    """The commands' system temporary folder."""
    path = tmp_path / "systmp"
    path.mkdir()
    return path


Cli = Callable[..., subprocess.Popen[bytes]]


@pytest.fixture
def cli(tmp: Path) -> Iterator[Cli]:
    """Start the real command line (its output on a pipe, TMPDIR ``tmp``)."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(*args: str, **env: str) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [*CLI, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "TMPDIR": str(tmp), **env},
            cwd=ROOT,
        )
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def sigkill(proc: subprocess.Popen[bytes], token: str, tmp: Path) -> float:
    """SIGKILL the command; the seconds until nothing of it is left (fails
    past LIMIT_S, naming what is left)."""
    assert proc.poll() is None, "the command ended before the instant"
    t0 = time.monotonic()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    while left := leftovers(proc.pid, token, tmp):
        if time.monotonic() - t0 > LIMIT_S:
            pytest.fail(f"{LIMIT_S:g} s after SIGKILL, still there: {left}")
        time.sleep(0.02)
    took = time.monotonic() - t0
    print(f"SIGKILL of {proc.args!r}: all gone after {took:.3f} s")
    return took


# ---------------------------------------------------------------------------
# SIGKILL at several instants
# ---------------------------------------------------------------------------


@integration
def test_check_killed_as_tlc_starts(cli: Cli, tmp: Path, tmp_path: Path) -> None:
    proc = cli("check", "ltp", "--bound", "deep", "--out", str(tmp_path / "check"))
    token = token_of(proc.pid)  # (the same after exec: the start time is the fork's)
    time.sleep(1.0)
    sigkill(proc, token, tmp)


@integration
def test_check_killed_once_tlc_reports_states(cli: Cli, tmp: Path, tmp_path: Path) -> None:
    # rich's progress line on stderr as on a terminal: "N distinct states"
    tty = {"TTY_INTERACTIVE": "1", "TTY_COMPATIBLE": "1"}
    proc = cli("check", "ltp", "--bound", "deep", "--out", str(tmp_path / "check"), **tty)
    token = token_of(proc.pid)
    assert proc.stdout is not None
    stdout = proc.stdout
    os.set_blocking(stdout.fileno(), False)
    seen = bytearray()

    def states() -> bool:
        seen.extend(stdout.read() or b"")
        return any(n.strip(b"0,") for n in re.findall(rb"([\d,]+) distinct states", seen))

    wait_for(states, 120, proc)
    assert any("tlc2.TLC" in c for c in carrying(token)), "TLC's JVM does not carry the marker"
    sigkill(proc, token, tmp)


@integration
def test_generate_killed_mid_generation(cli: Cli, tmp: Path, tmp_path: Path) -> None:
    out = tmp_path / "gen"
    proc = cli("generate", "ltp", "--out", str(out), "--no-catalogue")
    token = token_of(proc.pid)

    def mid_way() -> bool:
        # a purpose's TLC run going on, after others' logs were written
        logs = list((out / "tlc").glob("**/*.tlc.log"))
        return len(logs) >= 2 and any("tlc2.TLC" in c for c in carrying(token))

    wait_for(mid_way, 120, proc)
    sigkill(proc, token, tmp)


@integration
@pytest.mark.netns
def test_run_killed_with_its_endpoints_going(cli: Cli, tmp: Path, tmp_path: Path) -> None:
    scenario = FINDINGS / "ltp-two-reports-lost.json"
    proc = cli("run", str(scenario), "--sut", "licklider", "--out", str(tmp_path / "run"))
    token = token_of(proc.pid)
    wanted = ("dtnc-licklider", "tcpdump", "dtnc-emu")
    wait_for(lambda: all(any(w in c for c in carrying(token)) for w in wanted), 60, proc)
    assert namespaces_of(proc.pid)
    sigkill(proc, token, tmp)


@integration
def test_expect_leaves_nothing_in_the_temporary_folder(cli: Cli, tmp: Path) -> None:
    proc = cli("expect", str(FINDINGS / "ltp-crossing-cancels.json"))
    out = proc.communicate(timeout=300)[0].decode()
    assert proc.returncode == 0, out
    assert "outcomes the model allows" in out
    assert list(tmp.iterdir()) == []


# ---------------------------------------------------------------------------
# dtnconform cleanup
# ---------------------------------------------------------------------------


def dead_token() -> str:
    p = subprocess.Popen(["sleep", "30"])
    token = token_of(p.pid)
    p.kill()
    p.wait()
    return token


def marked_sleep(owners: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        ["sleep", "60"], env={**os.environ, "DTNC_OWNERS": owners}, start_new_session=True
    )


def test_cleanup_ends_orphans_and_spares_live_owners(tmp: Path) -> None:
    dead, live = dead_token(), token_of(os.getpid())
    orphan = marked_sleep(dead)
    nested = marked_sleep(f"{live}:{dead}")  # a nested run whose outer owner died
    kept = marked_sleep(live)
    stale_root = tmp / f"dtnconform-{dead}-abcd1234"
    (stale_root / "deep").mkdir(parents=True)
    live_root = tmp / f"dtnconform-{live}-abcd1234"
    live_root.mkdir()
    other = tmp / "dtnconform-expect-abcd1234"  # not a root: no owner in its name
    other.mkdir()
    try:
        # run from a shell that carries the dead owner's marker: an ancestor
        # of the cleanup, which it must not end
        t0 = time.monotonic()
        res = subprocess.run(
            ["sh", "-c", '"$@"; echo "shell survived $?"', "sh", *CLI, "cleanup"],
            capture_output=True, text=True, timeout=60, cwd=ROOT,
            env={**os.environ, "TMPDIR": str(tmp), "DTNC_OWNERS": dead},
        )  # fmt: skip
        took = time.monotonic() - t0
        assert "shell survived 0" in res.stdout, res.stdout + res.stderr
        assert orphan.wait(timeout=5) == -signal.SIGTERM
        assert nested.wait(timeout=5) == -signal.SIGTERM
        assert kept.poll() is None
        assert f"{orphan.pid}: sleep 60" in res.stdout
        assert f"{nested.pid}: sleep 60" in res.stdout
        assert f"{kept.pid}: " not in res.stdout
        assert not stale_root.exists() and str(stale_root) in res.stdout
        assert live_root.is_dir() and other.is_dir()
        print(f"cleanup took {took:.2f} s")
    finally:
        for p in (orphan, nested, kept):
            if p.poll() is None:
                p.kill()
                p.wait()


def test_the_guard_ends_what_a_python_owner_started(tmp: Path) -> None:
    """guard.start() in a plain Python process: its grandchildren (in a
    session of their own, out of any process-group kill's reach) go with it.
    SIGKILLed, with children that ignore SIGTERM: they get SIGKILL after the
    grace period. A normal exit writes 'clean', and the children still go."""
    code = (
        "import subprocess, sys\n"
        "from conformance import guard\n"
        "guard.start()\n"
        "subprocess.Popen(['sh', '-c', sys.argv[1]], start_new_session=True)\n"
        "print('started', flush=True)\n"
        "sys.stdin.readline()\n"
    )
    for mode, script in (
        ("kill", "trap '' TERM; sleep 60 & sleep 60"),  # (ignored: inherited through exec)
        ("exit", "sleep 60 & sleep 60"),
    ):
        proc = subprocess.Popen(
            [sys.executable, "-c", code, script],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=ROOT,
            env={**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT)},
        )
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"started\n"
        token = token_of(proc.pid)
        t0 = time.monotonic()
        while len(carrying(token)) < 3:  # sh, and its two sleeps once it has forked them
            assert time.monotonic() - t0 < 10, carrying(token)
            time.sleep(0.02)
        if mode == "kill":
            took = sigkill(proc, token, tmp)
            assert took > 1.0  # they outlived the SIGTERM, and went on SIGKILL
        else:
            proc.communicate(b"\n", timeout=30)
            assert proc.returncode == 0
            t0 = time.monotonic()
            while carrying(token) or any(tmp.iterdir()):
                assert time.monotonic() - t0 < LIMIT_S, carrying(token)
                time.sleep(0.02)
