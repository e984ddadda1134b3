"""Both captures of a crafted exchange, written as a run's would be: A's
capture (the sender's side) and B's (the receiver's), each frame timed.
Tests and benchmarks use it to put known traces through the same decoding
and trace validation as live runs (conformance.segments, .tracecheck)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

IP_A, IP_B = "10.9.0.1", "10.9.0.2"


@dataclass
class Wire:
    """``send`` puts a datagram on the wire at time t (seconds after
    ``t0``); it reaches the other side ``delay`` seconds later unless lost."""

    port: int
    t0: float = 1_800_000_000.0
    delay: float = 0.002
    a: list[Any] = field(default_factory=list)
    b: list[Any] = field(default_factory=list)

    def send(self, t: float, direction: str, payload: bytes, *, lost: bool = False) -> None:
        from scapy.layers.inet import IP, UDP
        from scapy.layers.l2 import Ether

        src, dst = (IP_A, IP_B) if direction == "forward" else (IP_B, IP_A)
        frame = Ether() / IP(src=src, dst=dst) / UDP(sport=self.port, dport=self.port) / payload
        here, there = (self.a, self.b) if direction == "forward" else (self.b, self.a)
        out = frame.copy()
        out.time = self.t0 + t
        here.append(out)
        if not lost:
            got = frame.copy()
            got.time = self.t0 + t + self.delay
            there.append(got)

    def write(self, folder: Path) -> tuple[Path, Path]:
        """a.pcap and b.pcap in ``folder``, frames in time order."""
        from scapy.utils import wrpcap

        paths = folder / "a.pcap", folder / "b.pcap"
        for path, frames in zip(paths, (self.a, self.b), strict=True):
            wrpcap(str(path), sorted(frames, key=lambda f: f.time), linktype=1)
        return paths
