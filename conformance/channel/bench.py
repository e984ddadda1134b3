"""`dtnconform bench emulator`: the channel emulator (dtnc-emu) measured with
real UDP traffic (dtnc-traffic) in the A-M-B namespaces, against its targets.

Four parts, all in one run (the machine's noise is shared by what is compared):

1. Lossless throughput of 1 KB datagrams (1024-byte UDP payload, 1066-byte
   Ethernet frames), RFC 2544 style: a search on the offered packet rate for
   the highest rate at which a trial is lossless, for (a) the Linux kernel
   bridge in M, (b) dtnc-emu with an unimpaired channel and its decision log
   on, (c) the same with ``--no-log``. A trial of N datagrams at R packets/s
   is lossless when

   - the sender offered the rate: all N sent, none failed, and its achieved
     rate (N-1)/(last send - first send) is at least 99 % of R (else the
     verdict is ``sender``: the rate was never offered, so says nothing
     about the channel);
   - every datagram arrived once and intact (else ``loss``, with where it
     was lost when the emulator's counters can tell);
   - the receiving socket dropped nothing (its SO_RXQ_OVFL / /proc counter;
     else ``receiver``: the receiving endpoint was overloaded, not the
     channel, but the trial is not lossless either);
   - the channel kept pace: the received rate, over the first to the last
     kernel receive timestamp, is at least 99 % of the sent rate (else
     ``backlog``: the channel fell behind and only its buffers hid a loss
     that a longer trial would show).

   Drops in the kernel's per-CPU input backlog (/proc/net/softnet_stat, all
   of the machine) are shown per trial. The sender paces with its default
   busy-wait (at these rates packets are microseconds apart). A failed rate
   is tried once more before it counts as failed (one retry, the same for
   every set-up). The search doubles from a start rate until a failure,
   then bisects to a resolution of a few per cent. The three searches take
   turns trial by trial, so a machine that gets faster or slower during the
   run (other work on it) weighs on each set-up alike.

   CPU placement: on a machine with at least two CPUs the endpoints (sender
   and receiver) run on CPU 0 and the channel (every thread of dtnc-emu) on
   CPU 1, for every set-up alike, as a testbed gives its channel emulator a machine of its own. The
   kernel bridge forwards inside the sender's system calls, so it runs on
   CPU 0 with the endpoints; dtnc-emu gets CPU 1. ``DTNC_BENCH_NOPIN=1``
   turns placement off (everything competes for every CPU).

2. Delay accuracy at 250 ms and 1250 ms one way, 10 000 packets/s: per packet,
   error = (kernel receive time at B - send time stamped by the sender) -
   configured delay, from every received datagram (nothing discarded, no
   warm-up skipped). The error includes the path outside the emulator (two
   veths, the sender's and receiver's stacks); a 0 ms trial shows that share.
   The sender sleeps between packets instead of spinning (``--spin-us 0``):
   it stamps each datagram as it sends it, so its pacing does not enter the
   error, and a spinning sender would only take a core from the emulator.
   Beside it, the channel's own schedule from its decision log: the largest
   difference between a frame's release and its arrival plus the delay
   (``delay_*_scheduled_err_max_ns``, 0 when the link model holds each frame
   exactly its delay). That figure is arithmetic, not timing: it holds on a
   loaded machine, where the measured error shows how late the machine let
   the emulator keep to its schedule.

3. Rate accuracy at 1, 10, 100 and 1000 Mb/s: offered at 110 % of the rate
   into a ~20 ms queue, so the queue tail-drops the excess. The received
   Ethernet-frame bit rate is (N-1) frames' bytes over the interval between
   the first and the last of N arrivals (N arrivals span N-1 serialization
   times), counted from the first tail drop on (the first missing sequence
   number): before it the queue was still filling and a stall of the sender
   could idle the link, which would measure the sender. The figure over the
   whole receive interval is reported beside it. A rate counts as measured
   only when the sender offered more than the rate, the queue dropped and
   nothing else did; otherwise its target is null (not measured), never
   passed. Beside it, the rate the channel scheduled, from its decision log:
   over each frame that found the transmitter busy (it arrived before the
   frame ahead of it left), its bits over the time between the two releases
   (``rate_*_scheduled_bps``, ``_scheduled_rel_err``, over
   ``_scheduled_frames`` frames). Like the delay's, it is the link model's
   arithmetic, the same on a loaded machine; the measured figure is how
   closely the machine kept to it (a transmitter kept off the CPU sends late
   and the measured rate falls short: -28 % at 1 Mb/s, load average 5-12).

4. Loss (1 %, 5 %) and BER (1e-5 with the UDP checksum recomputed, bits
   counted by the receiver) against the setting: z = (measured - p) / sd,
   sd the binomial standard deviation; a target holds when abs(z) <= 4 and
   nothing but the emulator's draws lost a datagram. Seeds are fixed, so
   the draws repeat from run to run.

Parts 2-4 run with the decision log on, as ``dtnconform run`` does.

Quick mode (``DTNC_BENCH_QUICK=1``, or ``quick=True``) shortens every trial
for a smoke test; its figures are not fit to judge the targets by.
"""

from __future__ import annotations

import contextlib
import math
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from conformance import netns
from conformance.channel import control as emulator
from conformance.core.errors import DtncError
from conformance.core.types import Channel

QUICK_ENV = "DTNC_BENCH_QUICK"
NOPIN_ENV = "DTNC_BENCH_NOPIN"


def _cpus() -> tuple[int, int] | None:
    """(endpoints CPU, channel CPU), or None when placement is off."""
    if os.environ.get(NOPIN_ENV, "").strip() not in ("", "0"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    return (allowed[0], allowed[1]) if len(allowed) >= 2 else None


def _pin(pid: int, which: int) -> None:
    """Every thread of process ``pid`` (dtnc-emu's decision log writer is a
    thread of its own) to its CPU, when placement is on."""
    cpus = _cpus()
    if cpus is None:
        return
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        tids = [pid]
    for tid in tids:
        with contextlib.suppress(OSError):  # the thread may be gone already
            os.sched_setaffinity(tid, {cpus[which]})


PAYLOAD = 1024
FRAME = PAYLOAD + 42  # Ethernet frame without FCS: 14 MAC + 20 IPv4 + 8 UDP
PORT = 9000
Z_MAX = 4.0


@dataclass(frozen=True)
class Plan:
    """Trial lengths and search settings."""

    trial_s: float  # one throughput trial
    start_pps: float  # the search's first rate
    max_pps: float  # the search never offers more
    resolution: float  # bisect until (hi - lo) <= resolution * hi
    delay_s: float  # packets' worth per delay trial
    delay_pps: float
    rate_s: float  # one rate trial
    loss_packets: int
    loss_pps: float
    ber_packets: int


FULL = Plan(
    trial_s=1.0, start_pps=150_000, max_pps=2_000_000, resolution=0.02,
    delay_s=3.0, delay_pps=10_000, rate_s=2.0,
    loss_packets=100_000, loss_pps=40_000, ber_packets=100_000,
)  # fmt: skip
QUICK = Plan(
    trial_s=0.25, start_pps=100_000, max_pps=2_000_000, resolution=0.15,
    delay_s=0.5, delay_pps=10_000, rate_s=0.5,
    loss_packets=20_000, loss_pps=40_000, ber_packets=20_000,
)  # fmt: skip


def _quick_default() -> bool:
    return os.environ.get(QUICK_ENV, "").strip() not in ("", "0")


# ---------------------------------------------------------------------------
# Traffic, counters
# ---------------------------------------------------------------------------


def _traffic(topo: netns.Topology, **kw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """emulator.traffic with the bench's payload, stopping at the count, and
    the endpoints on their CPU."""
    return emulator.traffic(
        topo, size=PAYLOAD, port=PORT, stop_at_count=True, place=lambda pid: _pin(pid, 0), **kw
    )


def _softnet_drops() -> int:
    """Frames the kernel dropped for a full per-CPU input backlog (all CPUs;
    veth delivers through it)."""
    total = 0
    with contextlib.suppress(OSError):
        for line in Path("/proc/net/softnet_stat").read_text().splitlines():
            cols = line.split()
            if len(cols) > 1:
                total += int(cols[1], 16)
    return total


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a running process (0 if gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    cols = stat.rsplit(")", 1)[1].split()
    return (int(cols[11]) + int(cols[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Scheduled:
    """One forward frame as the channel scheduled it (its decision log)."""

    t_ns: int  # arrival at the channel
    length: int  # frame bytes, Ethernet header included
    release_ns: int | None  # when it was to leave the channel (None: dropped)


def forward_schedule(log: Path) -> list[Scheduled]:
    """The forward frames of a decision log, in frame order."""
    rows = [r for r in emulator.read_log(log) if r.dir == "forward"]
    rows.sort(key=lambda r: r.index)
    return [Scheduled(r.t_ns, r.len, r.release_ns) for r in rows]


def scheduled_delay_err_ns(frames: list[Scheduled], delay_ms: float) -> int | None:
    """The largest difference between a frame's scheduled release and its
    arrival plus the delay, over the frames the channel passed (None if it
    passed none): the link model's hold, whatever the machine's load."""
    want = round(delay_ms * 1e6)
    errs = [abs(f.release_ns - f.t_ns - want) for f in frames if f.release_ns is not None]
    return max(errs) if errs else None


def scheduled_bps(frames: list[Scheduled]) -> tuple[float | None, int]:
    """The rate the channel's transmitter scheduled: over each passed frame
    that arrived before the passed frame ahead of it was released (it waited
    for the link), its bits over the time between the two releases; and how
    many such frames. Exact for a link with no delay, on any machine."""
    bits = span = n = 0
    prev: int | None = None
    for f in frames:
        if f.release_ns is None:
            continue  # a tail drop never occupies the link
        if prev is not None and f.t_ns <= prev:
            bits += f.length * 8
            span += f.release_ns - prev
            n += 1
        prev = f.release_ns
    return (bits * 1e9 / span if span > 0 else None), n


@contextlib.contextmanager
def _emulated(
    topo: netns.Topology,
    run_dir: Path,
    channel: dict[str, Any],
    *,
    log: bool,
    schedule: bool = False,
) -> Iterator[dict[str, Any]]:
    """dtnc-emu in M for one trial; the dict gets its stats and CPU time at
    exit, and with ``schedule`` (the log on) its forward frames as scheduled."""
    cfg = emulator.config(
        Channel.model_validate(channel), if_a=topo.if_ma, if_b=topo.if_mb, protocol=None, port=None
    )
    run = emulator.start(topo, cfg, run_dir, log=log)
    _pin(run.proc.pid, 1)
    info: dict[str, Any] = {}
    try:
        yield info
    finally:
        info["cpu_s"] = _cpu_s(run.proc.pid)
        info["stats"] = run.stop()
        crashed = run.proc.returncode not in (0, None) and not run.stopped
        if run.log is not None:
            if schedule and not crashed:
                info["schedule"] = forward_schedule(run.log)
            run.log.unlink(missing_ok=True)
        if crashed or not info["stats"]:
            raise DtncError(f"dtnc-emu ended badly: {run.stderr_tail()}")


def _bridge(topo: netns.Topology) -> None:
    """The kernel bridge br0 in M, enslaving am and bm (no emulator)."""
    m = topo.ns_m
    cmds = [
        ["ip", "-n", m, "link", "add", "br0", "type", "bridge"],
        ["ip", "netns", "exec", m, "sysctl", "-qw", "net.ipv6.conf.br0.disable_ipv6=1"],
        ["ip", "-n", m, "link", "set", topo.if_ma, "master", "br0"],
        ["ip", "-n", m, "link", "set", topo.if_mb, "master", "br0"],
        ["ip", "-n", m, "link", "set", "br0", "up"],
    ]
    for cmd in cmds:
        subprocess.run(cmd, check=True, capture_output=True)


# ---------------------------------------------------------------------------
# 1. Lossless throughput
# ---------------------------------------------------------------------------


@dataclass
class Trial:
    offered_pps: float
    verdict: str  # pass, sender, loss, receiver, backlog
    sent: int = 0
    tx_pps: float = 0.0
    rx_pps: float = 0.0
    lost: int = 0
    receiver_drops: int = 0
    softnet_drops: int = 0
    where: str = ""
    emu_cpu_s: float | None = None
    tx_cpu_s: float = 0.0
    rx_cpu_s: float = 0.0
    max_delay_us: float = 0.0

    @property
    def ok(self) -> bool:
        return self.verdict == "pass"

    def line(self) -> str:
        cpu = f"cpu tx {self.tx_cpu_s:.2f} rx {self.rx_cpu_s:.2f}"
        if self.emu_cpu_s is not None:
            cpu += f" emu {self.emu_cpu_s:.2f}"
        extra = f" ({self.where})" if self.where else ""
        return (
            f"{self.offered_pps:>9,.0f}/s: tx {self.tx_pps:>9,.0f}/s rx {self.rx_pps:>9,.0f}/s "
            f"lost {self.lost} rx-drops {self.receiver_drops} softnet-drops {self.softnet_drops} "
            f"max-delay {self.max_delay_us / 1e3:.1f}ms {cpu} -> {self.verdict}{extra}"
        )


def _judge(
    offered: float, count: int, sent: dict[str, Any], got: dict[str, Any], emu: dict[str, Any]
) -> Trial:
    n = int(sent["sent"])
    unique = int(got["unique"])
    t = Trial(
        offered_pps=offered,
        verdict="pass",
        sent=n,
        tx_pps=float(sent.get("pps") or 0.0),
        rx_pps=float(got.get("pps") or 0.0),
        lost=n - unique,
        receiver_drops=int(got.get("kernel_drops") or 0),
        tx_cpu_s=float(sent.get("cpu_s") or 0.0),
        rx_cpu_s=float(got.get("cpu_s") or 0.0),
        max_delay_us=float((got.get("delay_us") or {}).get("max") or 0.0),
        emu_cpu_s=emu.get("cpu_s"),
    )
    if "stats" in emu:
        fwd = emu["stats"].get("forward", {})
        seen, passed = int(fwd.get("frames", 0)), int(fwd.get("passed", 0))
        dropped = sum(int(v) for v in (fwd.get("dropped") or {}).values())
        parts = []
        if n - seen > 0:
            parts.append(f"{n - seen} never reached dtnc-emu")
        if dropped:
            parts.append(f"{dropped} dropped by dtnc-emu {fwd.get('dropped')}")
        if passed - unique - t.receiver_drops > 0:
            parts.append(f"{passed - unique - t.receiver_drops} lost after dtnc-emu")
        t.where = ", ".join(parts)
    if n < count or int(sent.get("send_errors") or 0) > 0 or t.tx_pps < 0.99 * offered:
        t.verdict = "sender"
    elif t.lost > 0 or int(got.get("duplicates") or 0) or int(got.get("corrupted") or 0):
        t.verdict = "receiver" if t.receiver_drops >= t.lost else "loss"
    elif t.receiver_drops > 0:
        t.verdict = "receiver"
    elif t.rx_pps < 0.99 * t.tx_pps:
        t.verdict = "backlog"
    return t


class Search:
    """RFC 2544-style search for one set-up: double from the start rate until
    a rate fails, then bisect between the highest pass and the lowest fail.
    A failed rate is tried once more before it counts as failed."""

    def __init__(self, name: str, plan: Plan) -> None:
        self.name, self.plan = name, plan
        self.lo: float = 0.0  # the highest rate that passed
        self.hi: float | None = None  # the lowest rate that failed
        self.rate = plan.start_pps
        self.retrying = False
        self.limit = "not reached"
        self.trials: list[Trial] = []
        self.done = False

    def record(self, t: Trial) -> str:
        """Take a trial at ``self.rate``; returns a note for the progress line."""
        self.trials.append(t)
        note = " (retry)" if self.retrying else ""
        if not t.ok and not self.retrying:
            self.retrying = True  # the same rate once more
            return note
        self.retrying = False
        if t.ok:
            self.lo = self.rate
            if self.hi is None:
                if self.lo >= self.plan.max_pps:
                    self.limit, self.done = "search ceiling", True
                self.rate = min(2 * self.lo, self.plan.max_pps)
        else:
            self.hi, self.limit = self.rate, t.verdict
        if self.hi is not None:
            gap = self.hi - self.lo
            if gap <= self.plan.resolution * self.hi or gap <= 200:
                self.done = True
            self.rate = round((self.lo + self.hi) / 2 / 100) * 100
        return note

    def figures(self) -> dict[str, Any]:
        return {
            "pps": self.lo,
            "limit": self.limit,
            "first_failed_pps": self.hi,
            "trials": len(self.trials),
            "sender_max_pps": max((t.tx_pps for t in self.trials), default=0.0),
        }


def _throughput(plan: Plan, say: Callable[[str], None], work: Path) -> dict[str, Any]:
    """The three searches, interleaved trial by trial, so that a machine that
    gets faster or slower during the run affects each set-up alike."""

    def trial(topo: netns.Topology, rate: float, log: bool | None) -> Trial:
        count = max(1000, int(rate * plan.trial_s))
        before = _softnet_drops()
        if log is None:
            sent, got = _traffic(topo, count=count, pps=rate, idle=0.3)
            t = _judge(rate, count, sent, got, {})
        else:
            with _emulated(topo, work, {}, log=log) as emu:
                sent, got = _traffic(topo, count=count, pps=rate, idle=0.3)
            t = _judge(rate, count, sent, got, emu)
        t.softnet_drops = _softnet_drops() - before
        return t

    say("1. lossless throughput, 1024-byte UDP payloads (1066-byte frames)")
    with netns.topology(static_arp=True) as tb, netns.topology(static_arp=True) as te:
        _bridge(tb)
        runs: list[tuple[str, Search, netns.Topology, bool | None]] = [
            ("bridge", Search("kernel bridge", plan), tb, None),
            ("emulator_nolog", Search("dtnc-emu nolog", plan), te, False),
            ("emulator_log", Search("dtnc-emu log", plan), te, True),
        ]
        while not all(s.done for _, s, _, _ in runs):
            for _, s, topo, log in runs:
                if not s.done:
                    t = trial(topo, s.rate, log)
                    note = s.record(t)
                    say(f"  {s.name:14} {t.line()}{note}")
                    if s.done:
                        say(f"  {s.name:14} lossless up to {s.lo:,.0f} pkt/s; "
                            f"above it the limit was: {s.limit}")  # fmt: skip
    res = {key: s.figures() for key, s, _, _ in runs}

    b, on, off = (res[k]["pps"] for k in ("bridge", "emulator_log", "emulator_nolog"))
    out: dict[str, Any] = {}
    for key, r in res.items():
        out[f"lossless_pps_{key}"] = r["pps"]
        out[f"lossless_limit_{key}"] = r["limit"]
        out[f"lossless_trials_{key}"] = r["trials"]
        out[f"lossless_sender_max_pps_{key}"] = round(r["sender_max_pps"])
    out["lossless_ratio_log_over_bridge"] = round(on / b, 4) if b else None
    out["lossless_ratio_nolog_over_bridge"] = round(off / b, 4) if b else None
    out["logging_cost"] = round(1 - on / off, 4) if off else None
    out["target_lossless_log_ge_bridge"] = bool(b and on >= b)
    out["target_lossless_nolog_ge_bridge"] = bool(b and off >= b)
    out["target_logging_cost_le_10pct"] = bool(off and 1 - on / off <= 0.10)
    say(
        f"  bridge {b:,.0f}, dtnc-emu log {on:,.0f}, nolog {off:,.0f} pkt/s: "
        f"emulator/bridge {out['lossless_ratio_log_over_bridge']} (log), "
        f"{out['lossless_ratio_nolog_over_bridge']} (nolog); logging cost {out['logging_cost']}"
    )
    return out


# ---------------------------------------------------------------------------
# 2-4. Delay, rate, loss and BER accuracy
# ---------------------------------------------------------------------------


def _errors_us(csv: Path, delay_ms: float) -> tuple[list[float], int]:
    """Per-packet delay error (us) from the receiver's CSV; and how many
    datagrams carried no trustworthy send time (counted, not used)."""
    errs: list[float] = []
    untimed = 0
    with csv.open() as f:
        next(f, None)
        for line in f:
            seq, tx, rx, _len, _bits = line.rstrip("\n").split(",")
            if not seq or not tx:
                untimed += 1
                continue
            errs.append((int(rx) - int(tx)) / 1e3 - delay_ms * 1e3)
    return errs, untimed


def _pct(sorted_vals: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    k = max(1, math.ceil(p / 100 * len(sorted_vals)))
    return sorted_vals[k - 1]


def _delay(
    topo: netns.Topology, plan: Plan, say: Callable[[str], None], work: Path
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    say(f"2. delay accuracy, {plan.delay_pps:,.0f} pkt/s, decision log on")
    for delay_ms in (0.0, 250.0, 1250.0):
        count = int(plan.delay_pps * (plan.delay_s if delay_ms else min(plan.delay_s, 1.0)))
        csv = work / f"delay-{delay_ms:g}.csv"
        ch = {"forward": {"link": {"delay_ms": delay_ms}}}
        with _emulated(topo, work, ch, log=True, schedule=True) as emu:
            sent, got = _traffic(
                topo, count=count, pps=plan.delay_pps, extra_wait_s=delay_ms / 1e3,
                per_packet=csv, spin=False,
            )  # fmt: skip
        errs, untimed = _errors_us(csv, delay_ms)
        csv.unlink(missing_ok=True)
        errs.sort()
        key = f"delay_{delay_ms:g}ms"
        lost = int(sent["sent"]) - int(got["unique"])
        if not errs:
            raise DtncError(f"{key}: no datagram arrived")
        mean = sum(errs) / len(errs)
        fig = {
            "count": len(errs),
            "lost": lost,
            "untimed": untimed,
            "err_mean_us": round(mean, 1),
            "err_p50_us": round(_pct(errs, 50), 1),
            "err_p99_us": round(_pct(errs, 99), 1),
            "err_min_us": round(errs[0], 1),
            "err_max_us": round(errs[-1], 1),
            "over_1ms": sum(1 for e in errs if e > 1000),
            "emu_cpu_s": round(emu["cpu_s"], 2),
            "scheduled_err_max_ns": scheduled_delay_err_ns(emu["schedule"], delay_ms),
        }
        out.update({f"{key}_{k}": v for k, v in fig.items()})
        if delay_ms:
            out[f"target_{key}_mean_le_150us"] = mean <= 150
            out[f"target_{key}_p99_le_250us"] = fig["err_p99_us"] <= 250
            out[f"target_{key}_never_early"] = errs[0] >= 0
        note = "" if delay_ms else " (reference: the path without delay, no target)"
        say(
            f"  {delay_ms:6g} ms: {len(errs)} packets, lost {lost}, error mean "
            f"{fig['err_mean_us']} us, p50 {fig['err_p50_us']}, p99 {fig['err_p99_us']}, "
            f"min {fig['err_min_us']}, max {fig['err_max_us']}, {fig['over_1ms']} over 1 ms; "
            f"scheduled hold off by at most {fig['scheduled_err_max_ns']} ns; dtnc-emu cpu "
            f"{fig['emu_cpu_s']} s{note}"
        )
    return out


def _saturated_bps(csv: Path) -> tuple[float | None, int]:
    """The received Ethernet-frame rate from the first tail drop on, and the
    frames it spans. The only drops on this link are the queue's, so the
    first missing sequence number marks the moment the queue was full;
    the frames received after it crossed a link that never idled. Each
    arrival ends a frame's serialization, so N frames between the first and
    the last arrival carry N-1 frames' bits (the first one's went before)."""
    rows: list[tuple[int, int, int]] = []
    with csv.open() as f:
        next(f, None)
        for line in f:
            seq, _tx, rx, length, _bits = line.rstrip("\n").split(",")
            if seq:
                rows.append((int(seq), int(rx), int(length)))
    seen = {r[0] for r in rows}
    gap = next((i for i in range(len(seen) + 1) if i not in seen), None)
    window = [r for r in rows if gap is not None and r[0] > gap]
    if len(window) < 10:
        return None, len(window)
    span = window[-1][1] - window[0][1]
    bits = sum(r[2] + FRAME - PAYLOAD for r in window[1:]) * 8
    return (bits * 1e9 / span if span > 0 else None), len(window)


def _rate(
    topo: netns.Topology, plan: Plan, say: Callable[[str], None], work: Path
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    say("3. rate accuracy, offered at 110 % of the rate, decision log on")
    for mbps in (1, 10, 100, 1000):
        rate = mbps * 1e6
        offer = 1.1 * rate
        count = max(50, int(offer / (FRAME * 8) * plan.rate_s))
        # ~20 ms of queue (at least 3 frames): full within ~0.2 s at 110 %
        queue = int(max(3 * FRAME, rate * 0.02 / 8))
        ch = {"forward": {"link": {"rate_bps": rate, "queue_bytes": queue}}}
        csv = work / f"rate-{mbps}.csv"
        with _emulated(topo, work, ch, log=True, schedule=True) as emu:
            sent, got = _traffic(topo, count=count, eth_bps=offer, idle=0.5, per_packet=csv)
        measured, frames = _saturated_bps(csv)
        scheduled, busy = scheduled_bps(emu["schedule"])
        csv.unlink(missing_ok=True)
        fwd = emu["stats"]["forward"]
        queue_drops = int((fwd.get("dropped") or {}).get("queue", 0))
        other_drops = sum(int(v) for v in (fwd.get("dropped") or {}).values()) - queue_drops
        offered = float(sent.get("eth_bps") or 0.0)
        whole = float(got.get("eth_bps") or 0.0)
        rel = (measured - rate) / rate if measured else None
        problems = []
        if offered < 1.02 * rate:
            problems.append(f"sender offered only {offered / 1e6:.1f} Mb/s")
        if queue_drops == 0:
            problems.append("the queue never dropped (link not saturated)")
        if other_drops or int(got.get("kernel_drops") or 0):
            problems.append(f"other drops: dtnc-emu {other_drops}, receiver {got['kernel_drops']}")
        if measured is None:
            problems.append(f"only {frames} frames after the first tail drop")
        ok = None if problems else bool(rel is not None and abs(rel) <= 0.01)
        key = f"rate_{mbps}mbps"
        out.update({
            f"{key}_offered_bps": round(offered),
            f"{key}_sender_pps": round(float(sent.get("pps") or 0.0)),
            f"{key}_measured_bps": round(measured) if measured else None,
            f"{key}_rel_err": round(rel, 6) if rel is not None else None,
            f"{key}_frames": frames,
            f"{key}_whole_interval_bps": round(whole),
            f"{key}_whole_interval_rel_err": round((whole - rate) / rate, 6),
            f"{key}_queue_drops": queue_drops,
            f"{key}_scheduled_bps": round(scheduled, 3) if scheduled else None,
            f"{key}_scheduled_rel_err": (
                round((scheduled - rate) / rate, 9) if scheduled else None
            ),
            f"{key}_scheduled_frames": busy,
            f"{key}_measured": not problems,
            f"target_{key}_within_1pct": ok,
        })  # fmt: skip
        verdict = "; ".join(problems) if problems else ("ok" if ok else "outside 1 %")
        say(
            f"  {mbps:>5} Mb/s: offered {offered / 1e6:9.3f} Mb/s "
            f"({out[f'{key}_sender_pps']:,} pkt/s); from the first tail drop "
            f"{(measured or 0) / 1e6:9.4f} Mb/s over {frames} frames, error "
            f"{100 * (rel or 0):+.4f} %; whole interval {whole / 1e6:9.4f} Mb/s "
            f"({100 * (whole - rate) / rate:+.4f} %); queue drops {queue_drops}; "
            f"scheduled {(scheduled or 0) / 1e6:.4f} Mb/s over {busy} frames; "
            f"dtnc-emu cpu {emu['cpu_s']:.2f} s -> {verdict}"
        )
    return out


def _z(measured: float, p: float, n: int) -> float:
    sd = math.sqrt(p * (1 - p) / n)
    return (measured - p) / sd


def _loss_ber(
    topo: netns.Topology, plan: Plan, say: Callable[[str], None], work: Path
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    say(f"4. loss and BER against the setting (|z| <= {Z_MAX:g}), decision log on")
    for p, seed in ((0.01, 11), (0.05, 12)):
        ch = {"forward": {"link": {"loss": p}}, "seed": seed}
        with _emulated(topo, work, ch, log=True) as emu:
            sent, got = _traffic(
                topo, count=plan.loss_packets, pps=plan.loss_pps, idle=0.5, spin=False
            )
        n = int(sent["sent"])
        lost = n - int(got["unique"])
        measured = lost / n
        z = _z(measured, p, n)
        by_emu = int((emu["stats"]["forward"].get("dropped") or {}).get("loss", 0))
        other = lost - by_emu
        clean = other == 0 and not int(got.get("kernel_drops") or 0)
        key = f"loss_{round(p * 100)}pct"
        out.update({
            f"{key}_n": n,
            f"{key}_lost": lost,
            f"{key}_measured": round(measured, 6),
            f"{key}_z": round(z, 3),
            f"{key}_other_losses": other,
            f"target_{key}_z_le_4": bool(clean and abs(z) <= Z_MAX),
        })  # fmt: skip
        say(
            f"  loss {p:g}: {lost} of {n} lost ({measured:.5f}), z {z:+.2f}; "
            f"dtnc-emu's loss drops {by_emu}, other losses {other}, "
            f"receiver drops {got.get('kernel_drops')}"
        )
    ber = 1e-5
    ch = {"forward": {"link": {"ber": ber, "checksum": "recompute"}}, "seed": 13}
    with _emulated(topo, work, ch, log=True) as emu:
        sent, got = _traffic(topo, count=plan.ber_packets, pps=plan.loss_pps, idle=0.5, spin=False)
    bits = int(got["bits_checked"])
    flips = int(got["flipped_bits"])
    measured = flips / bits if bits else 0.0
    z = _z(measured, ber, bits) if bits else math.inf
    n = int(sent["sent"])
    lost = n - int(got["unique"])
    clean = lost == 0 and not int(got.get("kernel_drops") or 0)
    out.update({
        "ber_1e-5_bits": bits,
        "ber_1e-5_flipped": flips,
        "ber_1e-5_measured": measured,
        "ber_1e-5_z": round(z, 3),
        "ber_1e-5_corrupted_datagrams": int(got.get("corrupted") or 0),
        "ber_1e-5_emulator_corrupted": int(emu["stats"]["forward"].get("corrupted", 0)),
        "ber_1e-5_lost": lost,
        "target_ber_1e-5_z_le_4": bool(clean and abs(z) <= Z_MAX),
    })  # fmt: skip
    say(
        f"  BER {ber:g}: {flips} of {bits:,} bits flipped ({measured:.3e}), z {z:+.2f}; "
        f"{out['ber_1e-5_corrupted_datagrams']} datagrams corrupted (dtnc-emu: "
        f"{out['ber_1e-5_emulator_corrupted']}), lost {lost}"
    )
    return out


# ---------------------------------------------------------------------------


def bench_emulator(out: Console, quick: bool | None = None) -> dict[str, Any]:
    """Channel emulator: lossless rate vs the kernel bridge, log cost, delay/rate/loss/BER accuracy."""
    netns.require_root()
    quick = _quick_default() if quick is None else quick
    plan = QUICK if quick else FULL
    emulator.binary()  # builds the crate if need be
    emulator.binary("dtnc-traffic")

    def say(msg: str) -> None:
        out.print(msg, markup=False, highlight=False, soft_wrap=True)

    t0 = time.monotonic()
    say(f"dtnc-emu bench{' (quick: short trials, figures not fit to judge targets)' if quick else ''}"
        f"; {os.cpu_count()} CPUs")  # fmt: skip
    cpus = _cpus()
    figures: dict[str, Any] = {
        "quick": quick,
        "cpus": os.cpu_count(),
        "payload_bytes": PAYLOAD,
        "cpu_endpoints": cpus[0] if cpus else None,
        "cpu_channel": cpus[1] if cpus else None,
    }
    with tempfile.TemporaryDirectory(prefix="dtnc-bench-") as tmp:
        work = Path(tmp)
        figures.update(_throughput(plan, say, work))
        with netns.topology(static_arp=True) as topo:
            figures.update(_delay(topo, plan, say, work))
            figures.update(_rate(topo, plan, say, work))
            figures.update(_loss_ber(topo, plan, say, work))
    targets = {k: v for k, v in figures.items() if k.startswith("target_")}
    figures["targets_met"] = all(v is True for v in targets.values())
    figures["targets_not_measured"] = sorted(k for k, v in targets.items() if v is None)
    figures["targets_failed"] = sorted(k for k, v in targets.items() if v is False)
    figures["seconds"] = round(time.monotonic() - t0, 1)
    say(
        f"targets met: {figures['targets_met']}; failed: {figures['targets_failed'] or 'none'}; "
        f"not measured: {figures['targets_not_measured'] or 'none'} ({figures['seconds']} s)"
    )
    return figures
