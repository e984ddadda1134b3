"""Replay one scenario against a live implementation, end to end.

    scenario -> namespaces A|M|B -> captures on A and B (before and after the
    channel, each way) -> channel emulator in M with the scenario's link model
    and field-keyed rules -> receiver in B, sender in A -> results -> decode captures with our
    dissector -> SegmentRecords -> RunResult -> Verdict

Everything a run produces lands in its run directory as it happens:

    scenario.json  channel-config.json  channel.jsonl  channel-stats.json
    channel.stderr  a.pcap  b.pcap
    sender.out  sender.log  receiver.out  receiver.log
    segments.jsonl  result.json  trace.ndjson  trace/  verdict.json
    warnings.txt (only when the scenario's explicit timers do not fit its channel)
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from conformance import judge, loadprobe, netns, protocols, provenance, timers, tracecheck
from conformance.channel import control as emulator
from conformance.core import classifiers
from conformance.core.errors import DtncError, InputError, NotSupported
from conformance.core.types import (
    ALIVE_PROBE,
    EndpointResult,
    ProbeResult,
    Reason,
    RunOutcome,
    RunResult,
    Scenario,
    SegmentCounts,
    SegmentRecord,
    TraceCheck,
    Verdict,
    dump_model,
)
from conformance.segments import (
    Datagram,
    Finding,
    datagrams,
    dissector_findings,
    port_unreachable,
    records_from_captures,
)
from suts.base import NOT_SUPPORTED, Endpoint, SutAdapter

PORTS = {p: port for p in classifiers.protocols() if (port := classifiers.default_port(p))}
Step = Callable[[str], None]
_log = logging.getLogger("dtnconform.runner")


def _udp_port_bound(topo: netns.Topology, ns: str, port: int) -> bool:
    out = subprocess.run(
        ["ip", "netns", "exec", ns, "cat", "/proc/net/udp"], capture_output=True, text=True
    )
    return f":{port:04X} " in out.stdout


def _start_capture(
    topo: netns.Topology, ns: str, ifname: str, path: Path
) -> subprocess.Popen[bytes]:
    netns.require_tool("tcpdump", "apt-get install tcpdump")
    log = path.with_suffix(".tcpdump.log")
    with log.open("wb") as errf:
        proc = topo.spawn(
            ns,
            # --immediate-mode: without it libpcap hands packets over a block
            # at a time (or on a ~1 s timeout), and a run shorter than that
            # ends with an empty capture. -U writes each packet out at once.
            [
                "tcpdump",
                "-i",
                ifname,
                "-w",
                str(path),
                "-U",
                "--immediate-mode",
                "-s",
                "0",
                "-n",
                "-Z",
                "root",
            ],
            stdout=subprocess.DEVNULL,
            stderr=errf,
        )
    if not netns.wait_for(lambda: b"listening on" in log.read_bytes(), 5.0):
        raise DtncError(f"tcpdump did not start in {ns}: {_capture_trouble(proc, log)}")
    return proc


def _capture_trouble(proc: subprocess.Popen[bytes], log: Path) -> str:
    """What went wrong with a capture: tcpdump's last words, else its exit
    status, and a full disk (where tcpdump cannot even write its log)."""
    said = ""
    with contextlib.suppress(OSError):
        said = " ".join(log.read_text(errors="replace").split())
    status = proc.poll()
    why = said or (
        "it wrote no message" if status is None else f"it exited with status {status}, silently"
    )
    with contextlib.suppress(OSError):
        if shutil.disk_usage(log.parent).free < 64 * 1024:
            why += f"; the disk of {log.parent} is full"
    return why[-500:]


def _stop(proc: subprocess.Popen[bytes], timeout: float = 3.0) -> None:
    if proc.poll() is None:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=timeout)
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def tester_role(scn: Scenario) -> str | None:
    """The role a scenario's parameters leave to the model-driven tester
    alone (the protocol's params ``tester_role``; None: any)."""
    role = getattr(scn.params, "tester_role", None)
    return role() if callable(role) else None


@dataclass
class _Run:
    """One run as its stages pass it on: what was asked, and what the
    preparation settled (the port, the timers, the clock's start)."""

    scn: Scenario
    spec: protocols.ProtocolSpec  # the scenario's protocol, resolved once for the whole run
    sut: SutAdapter  # the sender's side (and the receiver's, but in interop)
    rx_sut: SutAdapter  # the receiver's side: ``receiver_sut`` or ``sut``
    receiver_sut: SutAdapter | None
    tester: str | None
    run_dir: Path
    say: Step
    port: int
    tm: timers.DerivedTimers
    started: dt.datetime
    t0: float


@dataclass
class _Ended:
    """What the live part of a run left, once its namespaces are gone."""

    procs: dict[str, subprocess.Popen[bytes]]  # role -> its process (ended)
    exited: dict[str, float]  # role -> when its process ended (epoch s)
    hung: list[str]  # roles killed at the deadline
    channel: emulator.Running
    crashed: bool  # the channel emulator died during the run
    channel_stats: dict[str, Any]
    capture_failed: dict[str, str]  # side -> why its capture ended early
    ip_a: str
    duration: float
    # role -> datagrams its namespace dropped at a full socket receive buffer
    socket_drops: dict[str, int] = field(default_factory=dict)
    slowdown: float = 1.0  # the load the roles ran under (conformance.loadprobe)


def run_scenario(
    scn: Scenario,
    sut: SutAdapter,
    run_dir: Path,
    *,
    step: Step | None = None,
    tester: str | None = None,
    receiver_sut: SutAdapter | None = None,
) -> RunOutcome:
    """Run one scenario; never raises for a misbehaving SUT (that is a verdict),
    only for a broken set-up (missing tool, not root) or Ctrl-C. ``tester``:
    the role dtnconform's model-driven tester plays (conformance.tester);
    the SUT plays the other. ``receiver_sut``: another implementation plays
    the receiver (an interoperability run; ``sut`` sends)."""
    run = _prepare(scn, sut, run_dir, step or (lambda _msg: None), tester, receiver_sut)
    ended = _run_live(run)
    ends = _collect(run, ended)
    run.say("decoding captures")
    segments = _decode(run, ended, ends)
    result = _result(run, ended, ends, segments)
    dump_model(result, run_dir / "result.json")
    # exit 127 says "not supported" only from a role that sent nothing: one
    # that took part and then exited 127 (a wrapper's last command missing)
    # is judged on what it did
    sent = {"sender" if s.direction == "forward" else "receiver" for s in segments}
    refused = [
        f"{(run.rx_sut if role == 'receiver' else run.sut).name}'s {role}: "
        + (ends[role].detail.splitlines() or ["(no detail)"])[-1]
        for role, proc in ended.procs.items()
        if role != run.tester and proc.returncode == NOT_SUPPORTED and role not in sent
    ]
    if refused:
        # exit 127: the implementation does not take this scenario, a cell
        # "not supported" (docs/implementers.md), never judged
        (run_dir / "unsupported.txt").write_text("; ".join(refused) + "\n")
        raise NotSupported(f"{scn.name}: not supported (exit 127): {'; '.join(refused)}")
    run.say("validating the trace")
    # our dissector's expert checks (tshark) beside TLC, on the other core
    with ThreadPoolExecutor(1) as pool:
        experts = pool.submit(
            dissector_findings, run.spec, run.run_dir / "a.pcap", run.run_dir / "b.pcap",
            port=run.port, ip_a=ended.ip_a, skip=probe_payloads(ends.values()),
        )  # fmt: skip
        trace = validate_trace(
            run.spec, scn, segments, run_dir, port=run.port, ip_a=ended.ip_a, result=result
        )
        verdict = _judge(run, ended, result, trace, experts.result())
    dump_model(verdict, run_dir / "verdict.json")
    return RunOutcome(result, verdict, segments, run_dir)


def _prepare(
    scn: Scenario,
    sut: SutAdapter,
    run_dir: Path,
    say: Step,
    tester: str | None,
    receiver_sut: SutAdapter | None,
) -> _Run:
    """Everything before the namespaces: who plays which role, the run
    directory with its scenario, root, the binaries, the port, the channel's
    profile and the timers (their warnings said and kept)."""
    from conformance.tester import launch

    if receiver_sut is not None and tester is not None:
        raise InputError("an interoperability run has no tester: two implementations play it")
    rx_sut = receiver_sut or sut
    spec = protocols.get(scn.protocol)  # the one lookup of a run: every stage is handed it
    if tester is not None:
        launch.check(spec, scn, tester)
    elif scn.probes:
        raise InputError(
            f"{scn.name}: probes: robustness probes are sent by the model-driven tester; run "
            "with --tester sender or --tester receiver"
        )
    elif (need := tester_role(scn)) is not None:
        raise InputError(
            f"{scn.name}: params: only the model-driven tester plays this scenario's {need} "
            f"(e.g. params.miscolored_sender); run with --tester {need}"
        )
    run_dir.mkdir(parents=True, exist_ok=True)
    for stale in ("verdict.json", "result.json", "unsupported.txt"):  # a reused folder's
        (run_dir / stale).unlink(missing_ok=True)
    dump_model(scn, run_dir / "scenario.json")
    netns.require_root()
    for adapter in dict.fromkeys((sut, rx_sut)):
        adapter.ensure_built()
        # (duck-typed: an adapter older than SutAdapter.check_contract has none)
        if (check := getattr(adapter, "check_contract", None)) is not None:
            check(scn)
    port = PORTS.get(scn.protocol)
    if port is None:
        raise InputError(f"{scn.name}: protocol {scn.protocol} has no default UDP port")
    started = dt.datetime.now(dt.UTC)
    t0 = time.monotonic()
    emulator.resolve(scn.channel)  # an unknown profile fails before any namespace exists
    tm = timers.derive(scn)
    notes = timers.warnings(scn, tm)
    if notes:
        # Said before any namespace exists, and kept with the run.
        (run_dir / "warnings.txt").write_text("".join(f"warning: {w}\n" for w in notes))
        for w in notes:
            _log.warning("%s: warning: %s", scn.name, w)
            say(f"warning: {w}")
    return _Run(scn, spec, sut, rx_sut, receiver_sut, tester, run_dir, say, port, tm, started, t0)


def _run_live(run: _Run) -> _Ended:
    """The namespaces, the captures on A and B, the channel in M, the roles
    run to their end (or the deadline); then all of it stopped and gone."""
    scn, run_dir = run.scn, run.run_dir
    # Static neighbour entries: no ARP crosses the channel. Resolving B's
    # address through a delayed link would hold the first segments in A's
    # kernel for one extra round trip after licklider started their timers
    # (the derived timers count the link, not address resolution), so the
    # first checkpoint would be retransmitted needlessly on every long link.
    with netns.topology(mtu=scn.channel.mtu, static_arp=True) as topo:
        run.say("namespaces up")
        captures = {
            "a": _start_capture(topo, topo.ns_a, topo.if_a, run_dir / "a.pcap"),
            "b": _start_capture(topo, topo.ns_b, topo.if_b, run_dir / "b.pcap"),
        }
        cfg = emulator.config(
            scn.channel,
            if_a=topo.if_ma,
            if_b=topo.if_mb,
            protocol=scn.protocol,
            port=run.port,
            impairments=scn.impairments,
        )
        channel = emulator.start(topo, cfg, run_dir)
        run.say("channel up")
        sides = {"sender": topo.ns_a, "receiver": topo.ns_b}
        udp_before = {role: netns.udp_counters(ns) for role, ns in sides.items()}
        probe = loadprobe.LoadProbe().start()
        procs, files = _start_roles(run, topo)
        run.say("endpoints started")
        exited, hung = _await_roles(run, procs)
        slowdown = probe.stop()
        for out, err in files.values():
            out.close()
            err.close()
        run.say("endpoints finished")
        socket_drops = _socket_drops(udp_before, sides)
        crashed = channel.crashed
        channel_stats = channel.stop()
        time.sleep(0.05)  # let tcpdump's last buffered packet reach its file
        capture_failed = {
            side: _capture_trouble(proc, run_dir / f"{side}.tcpdump.log")
            for side, proc in captures.items()
            if proc.poll() is not None
        }
        for proc in captures.values():
            _stop(proc)
    duration = time.monotonic() - run.t0
    return _Ended(
        procs,
        exited,
        hung,
        channel,
        crashed,
        channel_stats,
        capture_failed,
        topo.ip_a,
        duration,
        socket_drops,
        slowdown,
    )


def _socket_drops(
    before: Mapping[str, Mapping[str, int]], sides: Mapping[str, str]
) -> dict[str, int]:
    """Role -> the datagrams its namespace's kernel dropped at a full socket
    receive buffer since ``before`` (UDP RcvbufErrors), where any were."""
    out: dict[str, int] = {}
    for role, ns in sides.items():
        now = netns.udp_counters(ns).get("RcvbufErrors")
        was = before.get(role, {}).get("RcvbufErrors")
        if now is not None and was is not None and now > was:
            out[role] = now - was
    return out


def socket_overflowed(drops: Mapping[str, int], tester: str | None) -> list[Reason]:
    """Datagrams an endpoint's kernel dropped at a full socket receive
    buffer. The capture, taken at the interface, shows them arriving, and
    the channel's log shows no loss, so the trace says the endpoint had
    them: judged on it, the endpoint would answer for data it never saw (a
    false fail), and which datagrams they were cannot be told. The socket is
    the harness's, or the tester's, with a receive buffer too small for the
    burst (docs/implementers.md), so the run is ours to answer for: an
    error."""
    return [
        Reason(
            code="socket-overflow",
            message=f"the {role}'s socket dropped {n} datagram(s) that reached it, its receive "
            "buffer full (UDP RcvbufErrors in its namespace); the captures show them arriving, "
            f"so the trace cannot be judged; {'the tester' if role == tester else 'its harness'}"
            " needs a larger receive buffer (SO_RCVBUF)",
        )
        for role, n in sorted(drops.items())
    ]


def _start_roles(
    run: _Run, topo: netns.Topology
) -> tuple[dict[str, subprocess.Popen[bytes]], dict[str, tuple[IO[bytes], IO[bytes]]]]:
    """The receiver in B (waited for until it binds its port), then the
    sender in A: each the tester's role or its implementation's harness,
    with its command line, output and log in the run directory."""
    from conformance.tester import launch

    scn, run_dir, port, tester = run.scn, run.run_dir, run.port, run.tester
    rx_ep = Endpoint(ip=topo.ip_b, peer_ip=topo.ip_a, port=port)
    tx_ep = Endpoint(ip=topo.ip_a, peer_ip=topo.ip_b, port=port)
    procs: dict[str, subprocess.Popen[bytes]] = {}
    files: dict[str, tuple[IO[bytes], IO[bytes]]] = {}
    for role, ns, argv in (
        (
            "receiver",
            topo.ns_b,
            launch.argv(scn, rx_ep, "receiver", run_dir)
            if tester == "receiver"
            else run.rx_sut.receiver_argv(scn, rx_ep),
        ),
        (
            "sender",
            topo.ns_a,
            launch.argv(scn, tx_ep, "sender", run_dir)
            if tester == "sender"
            else run.sut.sender_argv(scn, tx_ep),
        ),
    ):
        out, err = (run_dir / f"{role}.out").open("wb"), (run_dir / f"{role}.log").open("wb")
        files[role] = (out, err)
        (run_dir / f"{role}.cmd").write_text(shlex.join(argv) + "\n")
        procs[role] = topo.spawn(ns, argv, stdout=out, stderr=err)
        if role == "receiver":
            _await_ready(run, topo, procs[role])
    return procs, files


def _await_ready(run: _Run, topo: netns.Topology, proc: subprocess.Popen[bytes]) -> None:
    """Until the receiver can take data (its port bound, or the file its
    endpoint file names: an engine that binds before it takes data, ION)
    or has ended, at most 10 s past its startup time."""
    bind_s = 10.0 + float(getattr(run.rx_sut, "startup_s", 0.0))
    flag = None
    if run.tester != "receiver":
        flag = getattr(run.rx_sut, "ready_file", lambda: None)()
    if not netns.wait_for(
        lambda: (
            (flag.exists() if flag else _udp_port_bound(topo, topo.ns_b, run.port))
            or proc.poll() is not None
        ),
        bind_s,
    ):
        run.say(f"receiver was not ready ({flag or 'its port bound'}) in {bind_s:g} s")


def _await_roles(
    run: _Run, procs: Mapping[str, subprocess.Popen[bytes]]
) -> tuple[dict[str, float], list[str]]:
    """When each role's process ended, and the roles still running at the
    deadline (killed)."""
    # The endpoints enforce the run's time limit (the scenario's, or
    # derived from the channel by conformance.timers) themselves; this
    # deadline only catches a hung process.
    # (an adapter older than SutAdapter.startup_s has none)
    startup = max(float(getattr(a, "startup_s", 0.0)) for a in (run.sut, run.rx_sut))
    deadline = time.monotonic() + run.tm.time_limit_s * 1.1 + 3.0 + startup
    hung: list[str] = []
    exited: dict[str, float] = {}
    # Polled, not waited on in turn: trace validation needs to know when
    # each process ended (it takes no step after that).
    while len(exited) < len(procs) and time.monotonic() < deadline:
        for role, proc in procs.items():
            if role not in exited and proc.poll() is not None:
                exited[role] = time.time()
                if role != run.tester and proc.returncode == NOT_SUPPORTED:
                    # it refused the scenario, or exited 127 after taking
                    # part (_judge tells which from the captures): the other
                    # role gets its linger to end by itself, not the run's
                    # time limit, and is not cut short before that
                    grace = time.monotonic() + run.tm.linger_ms / 1000 * 2 + 2.0
                    deadline = min(deadline, grace)
        time.sleep(0.005)
    for role, proc in procs.items():
        if role not in exited:
            hung.append(role)
            _stop(proc)
    return exited, hung


def _collect(run: _Run, ended: _Ended) -> dict[str, EndpointResult]:
    """Each role's result, as its harness (or the tester) printed it, with
    a hang and the moment it stopped taking steps; then the adapters'
    cleanup."""
    ends: dict[str, EndpointResult] = {}
    for role, proc in ended.procs.items():
        stdout = (run.run_dir / f"{role}.out").read_text(errors="replace")
        stderr = (run.run_dir / f"{role}.log").read_text(errors="replace")
        res = (run.rx_sut if role == "receiver" else run.sut).parse_result(
            role, stdout, stderr, proc.returncode
        )
        if role == run.tester:
            res.detail = f"tester: {res.detail}".strip()
        if role in ended.hung:
            res.outcome = "error"
            res.detail = f"hung past the run's deadline and was killed. {res.detail}".strip()
        res.log = f"{role}.log"
        # the process's end, or the earlier moment the role said it stopped
        # taking steps (its result's stopped_at, which parse_result read)
        t_end = ended.exited.get(role)
        if t_end is None or res.exited_at is None:
            res.exited_at = t_end
        else:
            res.exited_at = min(res.exited_at, t_end)
        ends[role] = res
    for adapter in dict.fromkeys((run.sut, run.rx_sut)):
        # (duck-typed: an adapter older than SutAdapter.cleanup has none)
        if (clean := getattr(adapter, "cleanup", None)) is not None:
            clean()
    return ends


def _decode(run: _Run, ended: _Ended, ends: Mapping[str, EndpointResult]) -> list[SegmentRecord]:
    """The captures decoded into the run's segments (the probes' own left
    out); segments.jsonl written."""
    segments = records_from_captures(
        run.spec, run.run_dir / "a.pcap", run.run_dir / "b.pcap", port=run.port,
        ip_a=ended.ip_a, channel_log=run.run_dir / "channel.jsonl",
        skip=probe_payloads(ends.values()),
    )  # fmt: skip
    segments = settle_probes(run.spec, ends, segments, run.run_dir)
    with (run.run_dir / "segments.jsonl").open("w") as fh:
        for rec in segments:
            fh.write(rec.model_dump_json() + "\n")
    return segments


def _result(
    run: _Run, ended: _Ended, ends: Mapping[str, EndpointResult], segments: list[SegmentRecord]
) -> RunResult:
    """The run's RunResult: both ends, the counts of segments each way,
    goodput and provenance (less the flags of a side the tester played)."""
    scn, tester = run.scn, run.tester
    rx = ends["receiver"]
    delivered = rx.delivered.total() if rx.delivered is not None else 0
    result = RunResult(
        scenario=scn.name,
        protocol=scn.protocol,
        sut=sut_label(run.sut, tester, run.receiver_sut),
        started_at=run.started.isoformat(timespec="seconds"),
        duration_s=round(ended.duration, 3),
        sender=ends["sender"],
        receiver=rx,
        delivered_bytes=delivered,
        goodput_bps=round(delivered * 8 / rx.duration_s, 1) if rx.duration_s > 0 else None,
        segments=SegmentCounts(
            forward=sum(s.direction == "forward" for s in segments),
            ret=sum(s.direction == "return" for s in segments),
        ),
        dropped=SegmentCounts(
            forward=sum(s.direction == "forward" and s.dropped for s in segments),
            ret=sum(s.direction == "return" and s.dropped for s in segments),
        ),
        captures={"sender side": "a.pcap", "receiver side": "b.pcap"},
        channel_log="channel.jsonl",
        processing_ms={
            role: float(p)
            for role, a in (("sender", run.sut), ("receiver", run.rx_sut))
            if role != tester and (p := getattr(a, "processing_ms", None)) is not None
        },
        slowdown=ended.slowdown,
        provenance=provenance.collect(
            scn, run.sut, emulator.resolve(scn.channel), receiver_sut=run.receiver_sut
        ),
        tester=tester,  # type: ignore[arg-type]
    )
    if tester is not None and result.provenance is not None:
        # The tester played one side: that side's SUT flags did not run.
        knobs = result.provenance.knobs
        result.provenance.knobs = {
            "tester": tester,
            **{k: v for k, v in knobs.items() if not k.startswith(f"{tester}.")},
        }
    return result


def _judge(
    run: _Run, ended: _Ended, result: RunResult, trace: TraceCheck, experts: list[Finding]
) -> Verdict:
    """The judge's verdict; an error instead when our side failed (the
    channel died, a capture ended early), whatever the run showed."""
    scn = run.scn
    verdict = judge.judge(
        run.spec,
        scn,
        result,
        run.run_dir / "channel.jsonl",
        experts,
        trace=trace,
        tester=run.tester,
    )
    ours: list[Reason] = []  # our side failed: the run is an error, whatever it showed
    if ended.crashed:
        # Nothing the endpoints did can be judged over a channel that died.
        ours.append(
            Reason(
                code="channel-crash",
                message=f"the channel emulator exited during the run "
                f"(status {ended.channel.proc.returncode}); see channel.stderr: "
                f"{ended.channel.stderr_tail(5)}",
            )
        )
    elif not ended.channel_stats:
        run.say("the channel emulator left no statistics")
    ours += channel_missed(ended.channel_stats)
    ours += socket_overflowed(ended.socket_drops, run.tester)
    # a capture that ended by itself (a full disk, say) is a hole in the evidence
    ours += [
        Reason(code="capture-failed", message=f"capture {side}.pcap ended early: {why}")
        for side, why in ended.capture_failed.items()
    ]
    return ours_first(verdict, ours)


def ours_first(verdict: Verdict, ours: list[Reason]) -> Verdict:
    """``verdict`` made an error, ``ours`` first, where our side failed
    (whatever the run showed); as it is where ``ours`` is empty."""
    if not ours:
        return verdict
    return Verdict(
        scenario=verdict.scenario,
        sut=verdict.sut,
        status="error",
        reasons=[*ours, *verdict.reasons],
        trace=verdict.trace,
    )


def channel_missed(stats: dict[str, Any]) -> list[Reason]:
    """Frames our channel lost without deciding on them: read too late (its
    receive ring was full, so the kernel dropped them) or not sent on. The
    model's channel never lost them, so nothing the endpoints did after can
    be judged: the run is ours to answer for (status ``error``)."""
    reasons = []
    for way in ("forward", "return"):
        st = stats.get(way)
        if not isinstance(st, dict):
            continue
        missed = {
            k: v if isinstance(v := st.get(k), int) else 0 for k in ("ring_drops", "send_failed")
        }
        if any(missed.values()):
            reasons.append(
                Reason(
                    code="channel-missed",
                    message=f"the channel emulator lost {way} frames it did not decide on: "
                    f"{missed['ring_drops']} dropped unread (receive ring full: the machine "
                    f"was too loaded), {missed['send_failed']} not sent on",
                )
            )
    return reasons


def validate_trace(
    spec: protocols.ProtocolSpec,
    scn: Scenario,
    segments: list[SegmentRecord],
    run_dir: Path,
    *,
    port: int,
    ip_a: str | None,
    result: RunResult | None,
) -> TraceCheck:
    """Trace validation of a run's captures (conformance.tracecheck); TLC's
    files go to ``run_dir/trace``, the NDJSON trace to ``trace.ndjson``. A
    TLC failure is the status ``error``, with the reason."""
    failed = (
        [e.role for e in (result.sender, result.receiver) if e.outcome == "error"] if result else []
    )
    if failed:
        # The verdict is error whatever the trace holds (conformance.judge):
        # minutes of TLC would only reject what a hung or dead harness left.
        return TraceCheck(
            status="unchecked",
            message=f"not validated: the {' and '.join(failed)} harness failed, so the run's "
            "verdict is error whatever the trace",
        )
    exits = {
        "sender": result.sender.exited_at if result else None,
        "receiver": result.receiver.exited_at if result else None,
    }
    # Readings that allow the observed outcome are tried first, so that one
    # reading explains both the trace and the outcome where one can (where
    # the trace's end judges the outcome, tracecheck tries the default first).
    every = spec.reading_ids()
    first = scn.expect.readings_allowing(result.outcome()) if result else []
    order = [*first, *(r for r in every if r not in first)]
    try:
        return tracecheck.check(
            spec,
            scn,
            segments,
            run_dir / "a.pcap",
            run_dir / "b.pcap",
            port=port,
            ip_a=ip_a,
            exits=exits,
            workdir=run_dir / "trace",
            out=run_dir / "trace.ndjson",
            skip=probe_payloads([result.sender, result.receiver]) if result else frozenset(),
            readings=order,
            tester=result.tester if result else None,
            observed=result.outcome() if result else None,
            processing_ms=result.processing_ms if result else None,
            slowdown=result.slowdown if result else 1.0,
        )
    except DtncError as exc:
        return TraceCheck(status="error", message=f"trace validation could not run: {exc}")


def probe_payloads(ends: Iterable[EndpointResult]) -> frozenset[bytes]:
    """The datagrams of the tester's robustness probes and of their answers:
    judged by each probe, left out of the run's segments and trace."""
    return frozenset(
        bytes.fromhex(h)
        for e in ends
        for pr in e.probes
        for h in (*pr.payloads, *pr.answer_payloads)
    )


def settle_probes(
    spec: protocols.ProtocolSpec,
    ends: Mapping[str, EndpointResult],
    segments: list[SegmentRecord],
    run_dir: Path,
) -> list[SegmentRecord]:
    """After a run with robustness probes: a probe the channel did not
    deliver whole is 'undelivered' (nothing can be said of its answer), and
    the segments of the probes' own sessions leave the run's segments (an
    answer the channel lost never reached the tester to be attributed)."""
    probes = [pr for e in ends.values() for pr in e.probes]
    if not probes:
        return segments
    port = PORTS[spec.name]
    grams = {side: datagrams(run_dir / f"{side}.pcap", port) for side in "ab"}
    arrived = {side: {d.payload for d in grams[side]} for side in "ab"}
    for role, end in ends.items():
        other = "b" if role == "sender" else "a"
        _engine_stopped(end, ends, grams[other], run_dir / f"{other}.pcap", port)
        for pr in end.probes:
            if pr.status in ("pass", "fail") and not all(
                bytes.fromhex(h) in arrived[other] for h in pr.payloads
            ):
                pr.status = "undelivered"
                pr.message += "; the channel did not deliver the probe whole"
    sessions = {tuple(s) for pr in probes for s in pr.sessions}
    if not sessions:
        return segments
    gen = spec.need("trace", spec.capabilities.trace)
    # (a protocol's session is a tuple of its fields, as the probes list it)
    return [
        r
        for r in segments
        if tuple(cast("Iterable[Any]", gen.session_of(r.fields))) not in sessions
    ]


# How long after the engine-alive probe reached the implementation its
# host's refusal may come and still count as the answer to it.
ALIVE_SLACK_S = 0.05
# The rule a stopped engine breaks: what it should have discarded, it
# processed so far as to stop (RFC 5326 §6's preamble; §9.1 warns of such
# denial of service).
_STOPPED_RULE = (
    "RFC 5326 §6 (a segment that does not conform MUST be discarded immediately and "
    "processed no further), §9.1"
)


def _engine_stopped(
    end: EndpointResult,
    ends: Mapping[str, EndpointResult],
    grams: Sequence[Datagram],
    pcap: Path,
    port: int,
) -> None:
    """The tester's probes (``end``'s) went to an engine that stopped
    listening: its host answered ICMP port unreachable by the time the
    tester's ``engine-alive`` probe, sent after the segments to discard,
    reached it, while the implementation's process still ran (an engine
    shut down at the run's end, as ION's harness does, comes later). The
    probes refused from then on are 'undelivered' (no engine saw them), and
    a probe result of its own, ``engine-stopped``, fails the run, naming
    the probes that reached the engine since it last sent anything: one of
    them stopped it."""
    alive = next((pr for pr in end.probes if pr.kind == ALIVE_PROBE), None)
    if alive is None or not alive.payloads:
        return
    sut = next((e for r, e in ends.items() if r != end.role), None)
    mine = {bytes.fromhex(h) for pr in end.probes for h in pr.payloads}
    tester_ips = {d.src for d in grams if d.payload in mine}
    ping = bytes.fromhex(alive.payloads[0])
    t_alive = max((d.t for d in grams if d.payload == ping), default=None)
    if not tester_ips or t_alive is None:
        return
    refused = [
        (t, n, quote)
        for t, n, src, quote in port_unreachable(pcap, port)
        if src not in tester_ips
        and t <= t_alive + ALIVE_SLACK_S
        and (sut is None or sut.exited_at is None or t < sut.exited_at)
    ]
    if not refused:
        return
    t_icmp, frame, quote = min(refused)
    # the refused datagram itself: the last one before the ICMP that the
    # ICMP quotes (its payload's start)
    t0 = max(
        (d.t for d in grams if d.t <= t_icmp and quote and d.payload.startswith(quote)),
        default=t_icmp,
    )
    first = grams[0].t if grams else t0
    when = {d.payload: d.t for d in grams}
    last_own = max((d.t for d in grams if d.src not in tester_ips and d.t < t0), default=first)
    suspects: list[str] = []
    for pr in end.probes:
        times = [when.get(bytes.fromhex(h)) for h in pr.payloads]
        if any(t is not None and t >= t0 for t in times):
            pr.status = "undelivered"
            pr.message += (
                f"; the implementation's port was closed when it came (ICMP port unreachable "
                f"from {(t_icmp - first) * 1e3:.1f} ms on, while it still ran)"
            )
        elif pr.kind != ALIVE_PROBE and any(t is not None and last_own <= t < t0 for t in times):
            suspects.append(pr.kind)
    end.probes.append(
        ProbeResult(
            kind="engine-stopped",
            sent=0,
            expect="discard",
            status="fail",
            rule=_STOPPED_RULE,
            message=(
                f"the implementation stopped listening while it still ran: from "
                f"{(t_icmp - first) * 1e3:.1f} ms (frame {frame} of {pcap.name}) its host "
                "answered ICMP port unreachable"
                + (
                    f"; what reached it since it last sent: the probes {', '.join(suspects)}"
                    if suspects
                    else ""
                )
            ),
        )
    )


def sut_label(
    sut: SutAdapter, tester: str | None = None, receiver_sut: SutAdapter | None = None
) -> str:
    """ "licklider 0.1.1", with the tester "licklider 0.1.1 (receiver)", and
    an interoperability run's "cfdp-py 0.7.0 -> cfdp-rs 0.3.0"."""
    label = f"{sut.name} {sut.version}"
    options = getattr(sut, "options", {})  # an adapter before SutAdapter.options has none
    if options:
        label += " [" + ", ".join(f"{k}={v}" for k, v in options.items()) + "]"
    if receiver_sut is not None:
        return f"{label} -> {sut_label(receiver_sut)}"
    if tester is not None:
        label += " (receiver)" if tester == "sender" else " (sender)"
    return label


def error_outcome(
    scn: Scenario,
    sut: SutAdapter,
    run_dir: Path,
    exc: BaseException,
    tester: str | None = None,
    receiver_sut: SutAdapter | None = None,
) -> RunOutcome:
    """A run that could not complete (set-up failure, Ctrl-C) still leaves a verdict."""
    run_dir.mkdir(parents=True, exist_ok=True)
    why = "interrupted" if isinstance(exc, KeyboardInterrupt) else str(exc) or type(exc).__name__
    verdict = Verdict(
        scenario=scn.name,
        sut=sut_label(sut, tester, receiver_sut),
        status="error",
        reasons=[Reason(code="run-error", message=why)],
    )
    dump_model(verdict, run_dir / "verdict.json")
    return RunOutcome(None, verdict, [], run_dir)
