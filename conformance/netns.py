"""Three network namespaces, A - M - B, for one run.

    [ns A] a0 ==veth== am [ns M] bm ==veth== b0 [ns B]
    10.213.x.1/24        channel          10.213.x.2/24

A and B share one IPv4 subnet; M holds no address and bridges its two
interfaces in userspace (the channel), so ARP and multicast cross it and the
endpoints keep their real addresses. Every veth end lives inside one of the
namespaces, so removing the namespaces removes everything.

Names carry the creating process id; :func:`sweep_stale` removes namespaces
left by a process that no longer exists (a crash, a SIGKILL).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from conformance.core.errors import NeedRoot, ToolMissing

PREFIX = "dtnc"
_NAME = re.compile(rf"^{PREFIX}(\d+)x(\d+)[amb]$")
_counter = 0


def require_root() -> None:
    if os.geteuid() != 0:
        raise NeedRoot(
            "dtnconform run needs root: it builds network namespaces and veth pairs "
            "(CAP_NET_ADMIN). Run it with sudo, or as root in a VM or container."
        )


def require_tool(name: str, hint: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise ToolMissing(f"{name} not found: {hint}")
    return path


@dataclass
class Topology:
    """Names and addresses of one A-M-B set-up."""

    tag: str
    subnet: int
    mtu: int = 1500
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def ns_a(self) -> str:
        return f"{self.tag}a"

    @property
    def ns_m(self) -> str:
        return f"{self.tag}m"

    @property
    def ns_b(self) -> str:
        return f"{self.tag}b"

    @property
    def ip_a(self) -> str:
        return f"10.213.{self.subnet}.1"

    @property
    def ip_b(self) -> str:
        return f"10.213.{self.subnet}.2"

    if_a = "a0"
    if_b = "b0"
    if_ma = "am"
    if_mb = "bm"

    def spawn(
        self,
        ns: str,
        argv: list[str],
        *,
        stdout: int | IO[Any] | None = subprocess.PIPE,
        stderr: int | IO[Any] | None = subprocess.PIPE,
        env: dict[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start argv inside namespace ns, in its own process group; the
        topology kills it at teardown if it is still running."""
        proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, *argv],
            stdout=stdout,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
        self.procs.append(proc)
        return proc


def udp_counters(ns: str) -> dict[str, int]:
    """The UDP counters of namespace ``ns`` (its /proc/net/snmp: each
    network namespace keeps its own), by name: RcvbufErrors counts the
    datagrams the kernel dropped at a socket whose receive buffer was full.
    Empty where they cannot be read."""
    out = subprocess.run(
        ["ip", "netns", "exec", ns, "cat", "/proc/net/snmp"], capture_output=True, text=True
    )
    rows = [line.split()[1:] for line in out.stdout.splitlines() if line.startswith("Udp:")]
    if out.returncode != 0 or len(rows) < 2:
        return {}
    names, values = rows[0], rows[1]
    return {k: int(v) for k, v in zip(names, values, strict=False) if v.isdigit()}


def _ethtool_off(ns: str, ifname: str, features: list[str]) -> None:
    # A userspace bridge forwards frames as they were handed to it: with tx
    # checksum offload on, the UDP checksum of a veth frame is left for the
    # "hardware" to fill in, which never happens on the far side, and the
    # receiving kernel drops every datagram. So offload goes off, and with it
    # segmentation offloads (a 64 KB super-frame cannot cross the channel)
    # and GRO on the channel's side (it must see the frames as sent).
    args = [x for f in features for x in (f, "off")]
    subprocess.run(
        ["ip", "netns", "exec", ns, "ethtool", "-K", ifname, *args],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


@contextlib.contextmanager
def _default_sigterm() -> Iterator[None]:
    """pyroute2 forks helper processes for namespace work and stops them with
    SIGTERM. A child that inherited a Python-level SIGTERM handler (ours, or
    Robot Framework's) would survive that and run on as a second copy of the
    caller. So while pyroute2 works, SIGTERM has a handler of its own: in a
    forked child it exits at once; in this process it is held, and given to
    the caller's handler when the namespace work is done (at SIG_DFL, as
    before, a SIGTERM then killed this process midway and left namespaces
    it had made: a campaign killed as its run was starting)."""
    owner = os.getpid()
    held: list[int] = []

    def _hold(signum: int, frame: object) -> None:
        if os.getpid() != owner:
            os._exit(128 + signum)
        held.append(signum)

    try:
        old = signal.signal(signal.SIGTERM, _hold)
    except ValueError:  # not the main thread: handlers cannot be set, nor were ours
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
        if held:
            os.kill(owner, signal.SIGTERM)  # to the caller's handler, or the default


def create(mtu: int = 1500, static_arp: bool = False) -> Topology:
    """Build the three namespaces and both veth pairs; return the Topology.

    ``static_arp``: A and B know each other's MAC address from the start
    (permanent neighbour entries), so no ARP crosses the channel: frame
    indices then depend on the measured traffic alone."""
    topo: Topology | None = None
    try:
        with _default_sigterm():
            topo = _create(mtu, static_arp)
    except BaseException:
        # a SIGTERM handled as soon as our handler is back (leaving the
        # with): the namespaces are made, and nobody else knows them
        if topo is not None:
            destroy(topo)
        raise
    return topo


def _create(mtu: int, static_arp: bool = False) -> Topology:
    require_root()
    require_tool("ip", "apt-get install iproute2")
    require_tool("ethtool", "apt-get install ethtool")
    from pyroute2 import IPRoute, NetNS, netns

    global _counter
    _counter += 1
    topo = Topology(tag=f"{PREFIX}{os.getpid()}x{_counter}", subnet=(os.getpid() + _counter) % 250)
    # Interface names are limited to 15 bytes; these only live in the root
    # namespace for a moment before moving and taking their final names.
    tmp = {s: f"dv{os.getpid()}{_counter % 100}{s}" for s in ("a", "b", "ma", "mb")}
    for ns in (topo.ns_a, topo.ns_m, topo.ns_b):
        netns.create(ns)
    try:
        with IPRoute() as ipr:
            for left, right, ns_left in (
                (tmp["a"], tmp["ma"], topo.ns_a),
                (tmp["b"], tmp["mb"], topo.ns_b),
            ):
                ipr.link("add", ifname=left, kind="veth", peer=right)
                ipr.link("set", index=ipr.link_lookup(ifname=left)[0], net_ns_fd=ns_left)
                ipr.link("set", index=ipr.link_lookup(ifname=right)[0], net_ns_fd=topo.ns_m)
        for ns, old, new, addr in (
            (topo.ns_a, tmp["a"], topo.if_a, topo.ip_a),
            (topo.ns_b, tmp["b"], topo.if_b, topo.ip_b),
            (topo.ns_m, tmp["ma"], topo.if_ma, None),
            (topo.ns_m, tmp["mb"], topo.if_mb, None),
        ):
            # IPv4 only: no IPv6 neighbour discovery or router solicitations
            # wander through the channel at random moments
            subprocess.run(
                ["ip", "netns", "exec", ns, "sysctl", "-qw",
                 f"net.ipv6.conf.{old}.disable_ipv6=1"],
                check=False, capture_output=True,
            )  # fmt: skip
            with NetNS(ns) as nsr:
                idx = nsr.link_lookup(ifname=old)[0]
                nsr.link("set", index=idx, ifname=new, mtu=mtu)
                if addr is not None:
                    nsr.addr("add", index=idx, address=addr, prefixlen=24)
                nsr.link("set", index=idx, state="up")
                lo = nsr.link_lookup(ifname="lo")[0]
                nsr.link("set", index=lo, state="up")
        for ns, ifname in ((topo.ns_a, topo.if_a), (topo.ns_b, topo.if_b)):
            _ethtool_off(ns, ifname, ["tx", "tso", "gso"])
        for ifname in (topo.if_ma, topo.if_mb):
            _ethtool_off(topo.ns_m, ifname, ["gro"])
        if static_arp:
            _static_neighbours(topo)
    except BaseException:
        destroy(topo)
        raise
    topo.mtu = mtu
    return topo


def _mac(ns: str, ifname: str) -> str:
    out = subprocess.run(
        ["ip", "netns", "exec", ns, "cat", f"/sys/class/net/{ifname}/address"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return out.stdout.strip()


def _static_neighbours(topo: Topology) -> None:
    mac_a, mac_b = _mac(topo.ns_a, topo.if_a), _mac(topo.ns_b, topo.if_b)
    for ns, ifname, ip, mac in (
        (topo.ns_a, topo.if_a, topo.ip_b, mac_b),
        (topo.ns_b, topo.if_b, topo.ip_a, mac_a),
    ):
        subprocess.run(
            ["ip", "-n", ns, "neigh", "replace", ip, "lladdr", mac, "dev", ifname,
             "nud", "permanent"],
            check=True, capture_output=True,
        )  # fmt: skip


def destroy(topo: Topology) -> None:
    """Kill every process started in the topology, then remove the namespaces."""
    for proc in topo.procs:
        _kill_group(proc)
    with _default_sigterm():
        _remove(topo)


def _remove(topo: Topology) -> None:
    from pyroute2 import netns

    present = set(netns.listnetns())
    for ns in (topo.ns_a, topo.ns_m, topo.ns_b):
        if ns in present:
            with contextlib.suppress(OSError):
                netns.remove(ns)


def _kill_group(proc: subprocess.Popen[bytes], grace: float = 2.0) -> None:
    """Stop a spawned process and everything in its process group (a child
    the leader started in the background, a wrapper script's, is in it too,
    and outlives the leader). Only while the leader is not yet reaped: until
    then its pid, which is the group's id, cannot have been given to another
    process (pids wrap around quickly here)."""
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=grace)


def sweep_stale() -> list[str]:
    """Remove dtnconform namespaces whose creating process is gone; return their names."""
    if os.geteuid() != 0:
        return []
    with _default_sigterm():
        return _sweep()


def _sweep() -> list[str]:
    from pyroute2 import netns

    removed = []
    for ns in netns.listnetns():
        m = _NAME.match(ns)
        if m is None:
            continue
        pid = int(m.group(1))
        if pid != os.getpid() and not Path(f"/proc/{pid}").exists():
            _kill_in_namespace(ns)
            with contextlib.suppress(OSError):
                netns.remove(ns)
            removed.append(ns)
    return removed


def _kill_in_namespace(ns: str) -> None:
    out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
    for pid in out.stdout.split():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)


def remove_own() -> list[str]:
    """Remove the namespaces this process made that are still there (a
    teardown an interrupt cut short); return their names."""
    from pyroute2 import netns

    with _default_sigterm():
        left = [
            ns
            for ns in netns.listnetns()
            if (m := _NAME.match(ns)) is not None and int(m.group(1)) == os.getpid()
        ]
        for ns in left:
            with contextlib.suppress(OSError):
                netns.remove(ns)
    return left


def ours() -> list[str]:
    """Namespaces of ours that exist now (for tests and `dtnconform cleanup`)."""
    from pyroute2 import netns

    with _default_sigterm():
        return [ns for ns in netns.listnetns() if _NAME.match(ns)]


@contextlib.contextmanager
def topology(mtu: int = 1500, static_arp: bool = False) -> Iterator[Topology]:
    """Context manager: create, yield, always destroy (also on Ctrl-C)."""
    sweep_stale()
    old = signal.getsignal(signal.SIGTERM)

    def _on_term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    topo: Topology | None = None
    try:
        # (inside the try: an interrupt between the namespaces' making and
        # the yield still takes them down)
        topo = create(mtu, static_arp)
        with contextlib.suppress(ValueError):  # not in the main thread
            signal.signal(signal.SIGTERM, _on_term)
        yield topo
    finally:
        if topo is not None:
            destroy(topo)
        with contextlib.suppress(ValueError, TypeError):
            signal.signal(signal.SIGTERM, old)


def wait_for(predicate: Callable[[], object], timeout: float, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False
