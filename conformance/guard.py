"""Every process a dtnconform starts dies with it, even when it is SIGKILLed.

A dtnconform run starts many processes: TLC JVMs, tcpdump, the channel
``dtnc-emu``, the implementations' harnesses, Robot Framework and pabot, a
campaign's ``dtnconform run`` children, and their children. Ctrl-C and SIGTERM
unwind the program, which stops them (``generators.tlc.terminate_all``, the
namespaces' process groups, the campaign's lanes). SIGKILL unwinds nothing:
this module covers it.

:func:`start`, called once by the command line when it runs as a program
(never by tests calling ``cli.main([...])`` in-process):

- **marks** every process it will start: ``DTNC_OWNERS`` in the environment
  holds the owners' tokens, colon-separated: an inherited value (a nested
  dtnconform, e.g. a campaign's ``dtnconform run``) plus this process's own
  ``<pid>.<starttime>`` (field 22 of ``/proc/<pid>/stat``, so that a pid
  used again is not taken for the owner). Children inherit it through
  ``ip netns exec``, pabot, java, ...; ``/proc/<pid>/environ`` shows it.
- **roots temporary files**: a folder of this process's own,
  ``dtnconform-<token>-XXXXXXXX`` in the system temporary folder, becomes
  ``tempfile.tempdir`` and ``TMPDIR``, so this process's temporary files and
  its children's land there. It is removed at exit.
- **starts a guard**: this file run as a program (``python -I -S``: the
  standard library only, quick to start), in a session of its own and without
  the marker, holding the read end of a pipe whose write end only the owner
  holds (close-on-exec, and closed in a child forked without exec). At a
  normal exit the owner writes ``clean`` first. When the guard reads end of
  file, the owner is gone: it sends SIGTERM to every process whose marker
  holds the owner's token (a nested ``dtnconform run`` then unwinds and
  removes its namespaces), waits up to :data:`GRACE_S`, sends SIGKILL to the
  survivors and to any started meanwhile, removes the owner's temporary
  folder and, as root, the namespaces named after the processes it ended
  (``conformance.netns``; a Robot Framework process under pabot makes its
  own) and, after an exit that was not clean, those named after the owner.
  It takes well under a second when every process ends on SIGTERM, and
  about :data:`GRACE_S` more for one that does not.

``dtnconform cleanup`` uses :func:`end_orphans` and :func:`remove_stale_roots`:
processes whose marker names an owner that is gone, and temporary folders of
owners that are gone, whoever left them (a guard killed too, a machine that
lost power mid-run).

A process forked without exec (pyroute2's namespace helpers) keeps the
environment its parent was started with, so it shows the owner's marker only
if the owner was itself started with one; such helpers live for a moment.

This module imports only the standard library: the guard runs it with
``-I -S``, outside the venv.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

ENV = "DTNC_OWNERS"
"""The environment variable that marks a process as started by dtnconform."""

ROOT_PREFIX = "dtnconform-"
"""The prefix of a process's temporary folder (``dtnconform-<token>-XXXXXXXX``)."""

GRACE_S = 2.0
"""How long a process has to end after SIGTERM before it gets SIGKILL."""

CLEAN = b"clean\n"
"""What the owner writes to its guard at a normal exit."""

_ROOT = re.compile(r"^dtnconform-(\d+\.\d+)-[A-Za-z0-9_]+$")
_TOKEN = re.compile(r"^\d+\.\d+$")
# conformance.netns names its namespaces dtnc<pid>x<n>[amb]
_NETNS_DIR = Path("/run/netns")


def _netns_name(pid: int) -> re.Pattern[str]:
    return re.compile(rf"^dtnc{pid}x\d+[amb]$")


# ---------------------------------------------------------------------------
# Processes, tokens, markers
# ---------------------------------------------------------------------------


def start_time(pid: int) -> int | None:
    """The start time of a running process (clock ticks after boot: field 22
    of /proc/<pid>/stat); None if there is no such process or it has exited
    (a zombie not yet reaped)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces or ')'
    fields = data[data.rfind(b")") + 2 :].split()
    if len(fields) < 20 or fields[0] in (b"Z", b"X"):
        return None
    return int(fields[19])


def token_of(pid: int) -> str | None:
    """``<pid>.<starttime>`` of a running process, None if it is not running."""
    st = start_time(pid)
    return None if st is None else f"{pid}.{st}"


def alive(token: str) -> bool:
    """Whether the process a token names is still running (the same pid,
    started at the same time)."""
    if not _TOKEN.match(token):
        return False
    pid, _, st = token.partition(".")
    return start_time(int(pid)) == int(st)


def owners_of(pid: int) -> tuple[str, ...] | None:
    """The owners' tokens in a process's marker (its environment as it was
    started); None if it has no marker, has exited, or cannot be read (another
    user's process, without root)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            env = fh.read()
    except OSError:
        return None
    key = ENV.encode() + b"="
    for entry in env.split(b"\0"):
        if entry.startswith(key):
            value = entry[len(key) :].decode(errors="replace")
            return tuple(t for t in value.split(":") if t)
    return None


def _pids() -> list[int]:
    return [int(n) for n in os.listdir("/proc") if n.isdigit()]


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = fh.read().split(b"\0")
    except OSError:
        return "?"
    return " ".join(a.decode(errors="replace") for a in argv if a)[:200] or "?"


@dataclass(frozen=True)
class Proc:
    """A process as found: pid, start time (so that a pid used again is not
    signalled), its marker's owners and its command line."""

    pid: int
    start: int
    owners: tuple[str, ...]
    command: str

    def running(self) -> bool:
        return start_time(self.pid) == self.start

    def signal(self, signum: int) -> None:
        """Send signum, only to this very process (a pidfd, opened and then
        checked against the start time, cannot reach a pid used again)."""
        try:
            fd = os.pidfd_open(self.pid)
        except (OSError, AttributeError):
            if self.running():
                with contextlib.suppress(OSError):
                    os.kill(self.pid, signum)
            return
        try:
            if self.running():
                with contextlib.suppress(OSError):
                    signal.pidfd_send_signal(fd, signum)
        finally:
            os.close(fd)


def marked(select: Callable[[tuple[str, ...]], bool], spare: Iterable[int] = ()) -> list[Proc]:
    """The running processes with a marker whose owners ``select`` picks,
    but for the pids in ``spare`` (and this process)."""
    skip = {os.getpid(), *spare}
    found = []
    for pid in _pids():
        if pid in skip:
            continue
        owners = owners_of(pid)
        if owners is None or not select(owners):
            continue
        st = start_time(pid)
        if st is not None:
            found.append(Proc(pid, st, owners, _comm(pid)))
    return found


def end(
    select: Callable[[tuple[str, ...]], bool],
    *,
    spare: Iterable[int] = (),
    grace: float = GRACE_S,
) -> list[Proc]:
    """End every marked process ``select`` picks: SIGTERM, up to ``grace``
    seconds to go, then SIGKILL for the survivors and for any that started
    meanwhile, until none is left (a few rounds at most). Returns those
    signalled."""
    spare = set(spare)
    ended: dict[tuple[int, int], Proc] = {}
    first = marked(select, spare)
    for p in first:
        ended[(p.pid, p.start)] = p
        p.signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while first and time.monotonic() < deadline:
        if not any(p.running() for p in first):
            break
        time.sleep(0.05)
    quiet = False
    for _ in range(10):
        left = [p for p in ended.values() if p.running()]
        new = [p for p in marked(select, spare) if (p.pid, p.start) not in ended]
        if not left and not new:
            if quiet:
                break
            # once more after a moment: a child forked before the owner
            # ended shows the marker only once it has exec'd
            quiet = True
            time.sleep(0.2)
            continue
        quiet = False
        for p in [*left, *new]:
            ended[(p.pid, p.start)] = p
            p.signal(signal.SIGKILL)
        until = time.monotonic() + 0.5
        while time.monotonic() < until and any(p.running() for p in [*left, *new]):
            time.sleep(0.02)
    return list(ended.values())


def _ancestors(pid: int) -> set[int]:
    out = set()
    while pid > 1 and pid not in out:
        out.add(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                data = fh.read()
            pid = int(data[data.rfind(b")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return out


def end_orphans(grace: float = GRACE_S) -> list[Proc]:
    """End every process whose marker names an owner that is gone (its pid
    is not running, or runs another process): the processes of a dtnconform
    killed while its guard could not act. A process whose owners all run is
    left alone (another run going on), and so are this process and its
    ancestors. Returns those ended."""
    seen: dict[str, bool] = {}

    def orphaned(owners: tuple[str, ...]) -> bool:
        for t in owners:
            if t not in seen:
                seen[t] = alive(t)
        return not all(seen[t] for t in owners)

    return end(orphaned, spare=_ancestors(os.getpid()), grace=grace)


# ---------------------------------------------------------------------------
# Temporary folders, namespaces
# ---------------------------------------------------------------------------

_SYSTEM_TMP: str | None = None


def system_tempdir() -> Path:
    """The system temporary folder (``TMPDIR`` as this process found it, else
    /tmp), never a dtnconform's own temporary folder: a nested dtnconform
    looks past its owners'."""
    import tempfile

    path = Path(_SYSTEM_TMP or tempfile.gettempdir())
    while _ROOT.match(path.name):
        path = path.parent
    return path


def owned_roots(where: Path | None = None) -> list[tuple[Path, str]]:
    """dtnconform temporary folders in ``where`` (the system temporary folder)
    with their owners' tokens."""
    where = where or system_tempdir()
    try:
        names = os.listdir(where)
    except OSError:
        return []
    out = []
    for name in sorted(names):
        m = _ROOT.match(name)
        if m is not None and (where / name).is_dir():
            out.append((where / name, m.group(1)))
    return out


def remove_stale_roots(where: Path | None = None) -> list[Path]:
    """Remove the temporary folders of owners that are gone; return them."""
    removed = []
    for path, owner in owned_roots(where):
        if not alive(owner):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def owned_namespaces(pid: int) -> list[str]:
    """The network namespaces named after a process (conformance.netns)."""
    pattern = _netns_name(pid)
    try:
        return sorted(n for n in os.listdir(_NETNS_DIR) if pattern.match(n))
    except OSError:
        return []


def _remove_namespaces(names: Iterable[str]) -> None:
    """Kill what still runs in each namespace, then remove it (``ip netns``)."""
    for ns in names:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(
                ["ip", "netns", "pids", ns], capture_output=True, text=True, timeout=5
            )
            for pid in out.stdout.split():
                with contextlib.suppress(OSError, ValueError):
                    os.kill(int(pid), signal.SIGKILL)
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True, timeout=5)


# ---------------------------------------------------------------------------
# The owner's side
# ---------------------------------------------------------------------------


@dataclass
class _Owner:
    pid: int
    token: str
    root: Path | None
    write_fd: int | None
    guard: subprocess.Popen[bytes] | None


_OWNER: _Owner | None = None


def owner_token() -> str | None:
    """This process's token if :func:`start` ran here, else None."""
    return _OWNER.token if _OWNER is not None and _OWNER.pid == os.getpid() else None


def start() -> None:
    """Mark this process's children, root its temporary files and start its
    guard (module docstring). Once per process. It never stops the program:
    where the system does not allow more, it does less (no temporary folder
    of its own on a full or read-only disk, no guard if it cannot start, and
    nothing at all without /proc, where no child could be found anyway)."""
    global _OWNER, _SYSTEM_TMP
    if _OWNER is not None and _OWNER.pid == os.getpid():
        return
    import atexit
    import tempfile

    pid = os.getpid()
    token = token_of(pid)
    if token is None:
        return
    inherited = [t for t in os.environ.get(ENV, "").split(":") if t]
    guard_env = {k: v for k, v in os.environ.items() if k != ENV}
    os.environ[ENV] = ":".join([*inherited, token])

    _SYSTEM_TMP = tempfile.gettempdir()
    root: Path | None = None
    with contextlib.suppress(OSError):
        root = Path(tempfile.mkdtemp(prefix=f"{ROOT_PREFIX}{token}-", dir=_SYSTEM_TMP))
        tempfile.tempdir = str(root)
        os.environ["TMPDIR"] = str(root)

    read_fd, write_fd = os.pipe()  # both close-on-exec: no child inherits them
    proc: subprocess.Popen[bytes] | None = None
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", __file__, str(read_fd), token, str(root or "")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(read_fd,),
            start_new_session=True,
            cwd="/",
            env=guard_env,
        )
    except (OSError, subprocess.SubprocessError):
        os.close(write_fd)
    finally:
        os.close(read_fd)
    _OWNER = _Owner(pid, token, root, write_fd if proc is not None else None, proc)
    os.register_at_fork(after_in_child=_forked)
    atexit.register(_at_exit)


def _forked() -> None:
    """In a child forked without exec: the pipe's write end is the owner's
    alone (the guard's end of file must come when the owner ends)."""
    if _OWNER is not None and _OWNER.write_fd is not None:
        with contextlib.suppress(OSError):
            os.close(_OWNER.write_fd)
        _OWNER.write_fd = None


def _at_exit() -> None:
    """A normal exit: remove the temporary folder, tell the guard."""
    owner = _OWNER
    if owner is None or owner.pid != os.getpid():
        return
    if owner.root is not None:
        shutil.rmtree(owner.root, ignore_errors=True)
    if owner.write_fd is not None:
        with contextlib.suppress(OSError):
            os.write(owner.write_fd, CLEAN)
        with contextlib.suppress(OSError):
            os.close(owner.write_fd)
        owner.write_fd = None


# ---------------------------------------------------------------------------
# The guard's side
# ---------------------------------------------------------------------------


def guard(read_fd: int, token: str, root: Path | None) -> bool:
    """Wait for the owner's end (end of file on ``read_fd``), then end its
    processes, remove its temporary folder and, as root, the namespaces
    named after the processes it ended (a Robot Framework process under
    pabot makes its runs' namespaces itself) and, after an exit that was
    not clean, the owner's. Returns whether the exit was clean."""
    said = b""
    while True:
        chunk = os.read(read_fd, 64)
        if not chunk:
            break
        said += chunk
    os.close(read_fd)
    clean = said.endswith(CLEAN)
    pid = int(token.partition(".")[0])
    root_user = os.geteuid() == 0
    # (namespaces the owner made before it ended; one made later by another
    # process given the same pid is not ours)
    namespaces = owned_namespaces(pid) if not clean and root_user else []
    ended = end(lambda owners: token in owners)
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)
    if root_user:
        # a pid that runs again belongs to another process now, and so do
        # namespaces named after it
        namespaces += [
            ns for p in ended if start_time(p.pid) is None for ns in owned_namespaces(p.pid)
        ]
    if namespaces:
        _remove_namespaces(namespaces)
    return clean


def _main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    read_fd, token, root = int(argv[1]), argv[2], Path(argv[3]) if argv[3] else None
    guard(read_fd, token, root)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv))
