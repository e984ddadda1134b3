"""Python control of the Rust channel emulator (``conformance/channel/emulator``).

    Scenario.channel --(profile merged in)--> emulator config (JSON)
    --> dtnc-emu run in namespace M, between veths am and bm
    --> channel.jsonl (one decision per frame, read as ChannelRecord) + channel-stats.json

The emulator validates its config again (exit 2 naming the field); this side
validates first, with the scenario's pydantic types, so a user sees the error
before any namespace exists.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from conformance import netns
from conformance.channel import profiles
from conformance.core import classifiers
from conformance.core.errors import DtncError, InputError, ToolMissing
from conformance.core.types import Channel, ChannelRecord, DirectionChannel, Impairment, Protocol

CRATE = Path(__file__).with_name("emulator")
CONFIG_SCHEMA = "dtnconform/emulator/1"


def binary(name: str = "dtnc-emu") -> Path:
    """The release binary, built on first use (``cargo build --release``)."""
    env = os.environ.get("DTNC_EMU")
    if env and name == "dtnc-emu":
        return Path(env)
    path = CRATE / "target" / "release" / name
    if not path.exists():
        ensure_built()
    return path


def ensure_built() -> None:
    cargo = netns.require_tool("cargo", "install Rust (https://rustup.rs) or run `make setup`")
    proc = subprocess.run(
        [cargo, "build", "--release", "--locked", "--quiet"],
        cwd=CRATE,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise ToolMissing(f"building the channel emulator failed:\n{proc.stderr[-2000:]}")


def merge(base: DirectionChannel, over: DirectionChannel | None) -> DirectionChannel:
    """A profile's direction with a scenario's on top: link fields the
    scenario names replace the profile's; timelines and outages add up."""
    if over is None:
        return base.model_copy(deep=True)
    link = base.link.model_copy(
        update={k: getattr(over.link, k) for k in over.link.model_fields_set}
    )
    timeline = sorted([*base.timeline, *over.timeline], key=lambda e: e.t)
    return DirectionChannel(link=link, timeline=timeline, outages=[*base.outages, *over.outages])


def resolve(ch: Channel) -> tuple[DirectionChannel, DirectionChannel, float]:
    """(forward, return, time_scale) with the profile, if any, merged in."""
    fwd, ret, k = DirectionChannel(), DirectionChannel(), ch.time_scale
    if ch.profile is not None:
        prof = profiles.load(ch.profile)
        fwd, ret = prof.forward, prof.ret
        if "time_scale" not in ch.model_fields_set:
            k = prof.time_scale
    return merge(fwd, ch.forward), merge(ret, ch.ret), k


def config(
    ch: Channel,
    *,
    if_a: str,
    if_b: str,
    protocol: Protocol | None,
    port: int | None,
    impairments: Sequence[Impairment] = (),
) -> dict[str, Any]:
    """The emulator's config for one run."""
    fwd, ret, k = resolve(ch)
    rules = []
    for imp in impairments:
        rule: dict[str, Any] = {
            "direction": imp.direction,
            "protocol": protocol,
            "match": imp.match,
            "occurrence": imp.occurrence,
            "count": imp.count,
            "action": imp.action,
            "bits": imp.bits,
            "delay_ms": imp.delay_ms,
        }
        if imp.checksum is not None:
            rule["checksum"] = imp.checksum
        if imp.tail_octets is not None:
            rule["tail_octets"] = imp.tail_octets
        rules.append(rule)
    protos = []
    if protocol is not None and port is not None and classifiers.vocabulary(protocol):
        protos.append({"protocol": protocol, "udp_port": port})
    return {
        "schema": CONFIG_SCHEMA,
        "interfaces": {"a": if_a, "b": if_b},
        "seed": ch.seed,
        "time_scale": k,
        "protocols": protos,
        "forward": fwd.model_dump(mode="json"),
        "return": ret.model_dump(mode="json"),
        "rules": rules,
    }


def check(cfg_path: Path) -> None:
    """Validate a config file with the emulator itself; InputError naming the field."""
    proc = subprocess.run(
        [str(binary()), "check", "--config", str(cfg_path)], capture_output=True, text=True
    )
    if proc.returncode == 2:
        raise InputError(proc.stderr.strip().removeprefix("dtnc-emu: "))
    if proc.returncode != 0:
        raise DtncError(f"dtnc-emu check failed: {proc.stderr.strip()}")


@dataclass
class Running:
    """One emulator process inside namespace M."""

    proc: subprocess.Popen[bytes]
    run_dir: Path
    log: Path | None
    stats_path: Path
    stderr_path: Path
    stopped: bool = False
    stats: dict[str, Any] = field(default_factory=dict)
    started_ns: int = 0
    """The scenario clock's zero (timeline, outages), ns since the epoch."""

    @property
    def crashed(self) -> bool:
        """It exited (or was killed) without being asked to stop."""
        return not self.stopped and self.proc.poll() is not None

    def stderr_tail(self, n: int = 20) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.stderr_path.read_text(errors="replace").splitlines()[-n:])
        return ""

    def stop(self, timeout: float = 5.0) -> dict[str, Any]:
        """SIGTERM (the log is flushed, stats written), SIGKILL if need be."""
        if self.proc.poll() is None:
            # SIGTERM to the whole process group while the process is not
            # reaped (so the group id is still ours): nothing it started, a
            # wrapper's child, is left running.
            self.stopped = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        with contextlib.suppress(OSError, ValueError):
            self.stats = json.loads(self.stats_path.read_text())
        return self.stats


def start(
    topo: netns.Topology,
    cfg: dict[str, Any],
    run_dir: Path,
    *,
    log: bool = True,
    replay: Path | None = None,
    name: str = "channel",
    ready_timeout: float = 10.0,
) -> Running:
    """Write the config, start dtnc-emu in M and wait until it is bridging."""
    exe = binary()
    cfg_path = run_dir / f"{name}-config.json"
    cfg_path.write_text(json.dumps(cfg, indent=2) + "\n")
    ready = run_dir / f".{name}-ready"
    ready.unlink(missing_ok=True)
    log_path = run_dir / f"{name}.jsonl" if log else None
    stats = run_dir / f"{name}-stats.json"
    stats.unlink(missing_ok=True)
    argv = [
        str(exe),
        "run",
        "--config",
        str(cfg_path),
        "--ready",
        str(ready),
        "--stats",
        str(stats),
    ]
    argv += ["--log", str(log_path)] if log_path else ["--no-log"]
    if replay is not None:
        argv += ["--replay", str(replay)]
    stderr_path = run_dir / f"{name}.stderr"
    with stderr_path.open("wb") as errf:
        proc = topo.spawn(topo.ns_m, argv, stdout=subprocess.DEVNULL, stderr=errf)
    run = Running(proc, run_dir, log_path, stats, stderr_path)
    if not netns.wait_for(lambda: ready.exists() or proc.poll() is not None, ready_timeout):
        run.stop()
        raise DtncError(f"the channel emulator did not start in {ready_timeout:g} s: {stderr_path}")
    if proc.poll() is not None:
        msg = run.stderr_tail()
        if proc.returncode == 2:
            raise InputError(msg.removeprefix("dtnc-emu: "))
        raise DtncError(f"the channel emulator exited at start ({proc.returncode}): {msg}")
    with contextlib.suppress(ValueError, IndexError):
        run.started_ns = int(ready.read_text().split()[1])
        # the scenario clock's zero, for what plots outages against captures
        (run_dir / f"{name}-clock.json").write_text(
            json.dumps({"started_ns": run.started_ns}) + "\n"
        )
    ready.unlink()
    return run


def traffic(
    topo: netns.Topology,
    *,
    count: int,
    pps: float | None = None,
    eth_bps: float | None = None,
    size: int = 1024,
    port: int = 9000,
    group: str | None = None,
    idle: float = 1.5,
    extra_wait_s: float = 0.0,
    stop_at_count: bool = False,
    per_packet: Path | None = None,
    spin: bool = True,
    place: Callable[[int], None] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Send ``count`` datagrams of ``size`` bytes from A to B with
    dtnc-traffic, paced at ``pps`` or ``eth_bps`` (Ethernet frame bits/s);
    return the (sender, receiver) JSON summaries.

    ``group``: multicast to that group, B joins it. ``stop_at_count``: the
    receiver stops after ``count`` datagrams (else ``idle`` seconds after the
    last). ``per_packet``: the receiver's per-datagram CSV. ``spin``: the
    sender busy-waits before each due time (else it only sleeps). ``place``
    is called with each endpoint's pid (e.g. to pin it to a CPU)."""
    exe = str(binary("dtnc-traffic"))
    rate = pps if pps is not None else (eth_bps or 0) / ((size + 42) * 8)
    cap = (count / rate if rate > 0 else 0.0) * 1.5 + extra_wait_s + idle + 5.0
    rargs = [exe, "recv", "--bind", f"{group or topo.ip_b}:{port}", "--expect", str(count),
             "--size", str(size), "--idle", str(idle), "--duration", f"{cap:.3f}"]  # fmt: skip
    if stop_at_count:
        rargs += ["--count", str(count)]
    if group:
        rargs += ["--group", group, "--mcast-if", topo.ip_b]
    if per_packet is not None:
        rargs += ["--per-packet", str(per_packet)]
    rx = topo.spawn(topo.ns_b, rargs)
    if place:
        place(rx.pid)
    assert rx.stderr is not None
    ready = rx.stderr.readline()
    if b"listening" not in ready:
        rx.kill()
        raise DtncError(f"dtnc-traffic recv did not start: {ready.decode(errors='replace')}")
    sargs = [exe, "send", "--dst", f"{group or topo.ip_b}:{port}", "--count", str(count),
             "--size", str(size)]  # fmt: skip
    if pps is not None:
        sargs += ["--pps", f"{pps:.3f}"]
    elif eth_bps is not None:
        sargs += ["--eth-bps", f"{eth_bps:.0f}"]
    if group:
        sargs += ["--mcast-if", topo.ip_a, "--ttl", "4"]
    if not spin:
        sargs += ["--spin-us", "0"]
    tx = topo.spawn(topo.ns_a, sargs)
    if place:
        place(tx.pid)
    try:
        tx_out, tx_err = tx.communicate(timeout=cap + 10)
        rx_out, rx_err = rx.communicate(timeout=cap + 10)
    except subprocess.TimeoutExpired as exc:
        tx.kill()
        rx.kill()
        raise DtncError("dtnc-traffic did not finish in time") from exc
    if tx.returncode != 0 or rx.returncode != 0:
        raise DtncError(
            f"dtnc-traffic failed: send {tx.returncode} {tx_err.decode(errors='replace')[-300:]}"
            f" recv {rx.returncode} {rx_err.decode(errors='replace')[-300:]}"
        )
    return json.loads(tx_out), json.loads(rx_out)


def classify(protocol: str, payloads: list[bytes]) -> list[dict[str, Any] | None]:
    """The emulator's own classification of each UDP payload (``dtnc-emu
    classify``): its fields, or None when it is not a unit of the protocol.
    Payloads must not be empty (the command skips blank lines)."""
    if not all(payloads):
        raise ValueError("an empty payload has no line of its own")
    proc = subprocess.run(
        [str(binary()), "classify", protocol],
        input="".join(p.hex() + "\n" for p in payloads),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0:
        raise DtncError(f"dtnc-emu classify {protocol}: {proc.stderr.strip()}")
    lines = proc.stdout.splitlines()
    if len(lines) != len(payloads):
        raise DtncError(f"dtnc-emu classify {protocol}: {len(lines)} answers to {len(payloads)}")
    return [json.loads(line) for line in lines]


def read_log(log: Path) -> list[ChannelRecord]:
    """A decision log's records, in file order ([] if there is no log). The
    only reader of ``channel.jsonl``: every line is validated as a
    ChannelRecord. A last line cut short (the emulator was killed while
    writing it) is left out."""
    if not log.exists():
        return []
    lines = log.read_text().split("\n")
    # A whole log ends with a newline; what follows the last one is "" or a
    # line cut short by a kill.
    tail = lines.pop()
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(ChannelRecord.model_validate_json(line))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "(line)"
            raise DtncError(f"{log}:{n}: {where}: {err['msg']}") from None
    with contextlib.suppress(ValidationError):
        if tail.strip():
            out.append(ChannelRecord.model_validate_json(tail))
    return out


def decisions(log: Path) -> list[ChannelRecord]:
    """A decision log's records without their clock readings (``t_ns`` 0,
    no ``release_ns``), in (direction, index) order: what two runs with one
    seed and the same traffic must agree on."""
    out = [r.model_copy(update={"t_ns": 0, "release_ns": None}) for r in read_log(log)]
    return sorted(out, key=lambda r: (r.dir, r.index))
