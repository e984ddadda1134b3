"""LTP's side of the benchmarks (the ``bench`` capability,
conformance/bench.py): segments built with the Scapy layer beside it
(:mod:`dissectors.ltp.layer`), which the codec benchmark times, and
Wireshark's own LTP dissector (:mod:`dissectors.ltp.builtin`), which ours is
timed against. It lives with the dissector because that is what most of the
benchmarks measure, and what builds their traffic.
"""

from __future__ import annotations

from typing import Any

from conformance.core.capabilities import CraftedTransfer, Datagram
from conformance.core.types import Expectation, ExpectedOutcome, Scenario, Timers
from conformance.protocols.ltp import LtpBlock, LtpDelivery
from dissectors.ltp.builtin import BUILTIN_PROTO as BUILTIN_PROTO
from dissectors.ltp.layer import LTP
from dissectors.ltp.layer import classify as classify
from dissectors.ltp.layer import parse as parse


def mixed_units() -> list[LTP]:
    """Eight data segments, a report and its acknowledgment of one session."""
    return [
        LTP(type=0, session_originator=1, session_number=99, client_service_id=1,
            offset=i * 1000, data=bytes(1000))
        for i in range(8)
    ] + [
        LTP(type=8, session_originator=1, session_number=99, report_serial=7,
            checkpoint_serial=3, upper_bound=8000, lower_bound=0,
            claims=[(0, 3000), (4000, 4000)]),
        LTP(type=9, session_originator=1, session_number=99, report_serial=7),
    ]  # fmt: skip


def crafted_transfer(size: int, unit_size: int, block_len: int | None = None) -> CraftedTransfer:
    """``size`` bytes at 100 Mb/s in all-red blocks of ``block_len`` bytes
    (default: one block), one session each, one after the other: each
    block's last segment its checkpoint (RFC 5326 §6.2), one report
    claiming it all (§6.11) and its acknowledgment (§6.13), 10 ms each way.
    ``size`` must be a whole number of blocks."""
    block = block_len or size
    if size % block:
        raise ValueError(f"{size} bytes is not a whole number of {block}-byte blocks")
    n = -(-block // unit_size)
    scn = Scenario(
        name="bench-validate",
        protocol="ltp",
        params=LtpBlock(block_len=block, red_len=block, segment_size=unit_size,
                        retransmission_limit=1),
        timers=Timers(retransmission_ms=1000.0),
        expect=Expectation(outcomes=[ExpectedOutcome(
            sender_outcome="completed", receiver_outcome="completed",
            delivered=LtpDelivery(red_bytes_delivered=block, green_bytes_delivered=0))]),
    )  # fmt: skip
    datagrams: list[Datagram] = []
    t, gap = 0.0, unit_size * 8 / 100e6  # 100 Mb/s
    for session in range(9, 9 + size // block):
        for i in range(n):
            off = i * unit_size
            last = i == n - 1
            body = bytes(min(unit_size, block - off))
            kind = "RD-CP-EORP-EOB" if last else "RD"
            # (scapy's Packet takes its fields as **Any)
            extra: dict[str, Any] = {"checkpoint_serial": 5, "report_serial": 0} if last else {}
            s = LTP(type=kind, session_originator=1, session_number=session,
                    client_service_id=1, offset=off, data=body, **extra)  # fmt: skip
            datagrams.append((t, "forward", bytes(s)))
            t += gap
        rs = LTP(type="RS", session_originator=1, session_number=session, report_serial=8,
                 checkpoint_serial=5, upper_bound=block, lower_bound=0, claims=[(0, block)])  # fmt: skip
        datagrams.append((t + 0.011, "return", bytes(rs)))
        ra = LTP(type="RA", session_originator=1, session_number=session, report_serial=8)
        datagrams.append((t + 0.022, "forward", bytes(ra)))
        t += 0.022
    return CraftedTransfer(scn, datagrams, end=t + 0.05)


def capture_units(sessions: int, per: int) -> list[bytes]:
    """``sessions`` blocks of ``per`` red 1024-byte segments each, the last
    segment of each its checkpoint."""
    out = []
    for n in range(sessions):
        for i in range(per):
            last = i == per - 1
            extra: dict[str, Any] = {"checkpoint_serial": 7 + n, "report_serial": 0} if last else {}
            seg = LTP(type="RD-CP-EORP-EOB" if last else "RD", session_originator=1,
                      session_number=1000 + n, client_service_id=1, offset=i * 1024,
                      data=bytes(1024), **extra)  # fmt: skip
            out.append(bytes(seg))
    return out
