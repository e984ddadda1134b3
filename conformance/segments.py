"""Captures -> SegmentRecords.

Each side of a run is captured on its own veth: A's capture holds the forward
segments as sent and the return segments as received, B's the other way round.
A segment is recorded once, from the capture of the side that sent it. Whether
the channel dropped it comes from the channel's decision log: the k-th segment
a side sent is the k-th the channel saw in that direction (one veth, one
queue). Should the counts disagree (a capture lost packets), the fallback is
the other side's capture: a segment whose bytes never arrived was dropped
(matched as a multiset, which cannot tell identical retransmissions apart).
Fields come from the channel emulator's classifier, which reads
specs/<proto>/wire.json as our Lua dissector does and agrees with it field for
field (dissectors/tests/test_fuzz_agreement.py); the dissector's expert checks
run as a pass of their own (:func:`dissector_findings`).
"""

from __future__ import annotations

import logging
import struct
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance.core.errors import InputError
from conformance.core.types import Direction, FieldValue, SegmentRecord

if TYPE_CHECKING:
    from conformance.core.contract import ProtocolSpec


def _ipv4_udp(frame: bytes) -> tuple[bytes, int] | None:
    """(IPv4 header and payload, header length) of an Ethernet frame that
    carries IPv4 with UDP inside (whole or a fragment), else None."""
    if len(frame) < 14 + 20 or frame[12:14] != b"\x08\x00":
        return None
    ip = frame[14:]
    ihl = (ip[0] & 0x0F) * 4
    if ip[0] >> 4 != 4 or ip[9] != 17 or ihl < 20:
        return None
    return ip, ihl


def udp_payload(frame: bytes) -> tuple[int, int, bytes] | None:
    """(src port, dst port, payload) of an unfragmented IPv4/UDP frame, else None."""
    got = _ipv4_udp(frame)
    if got is None:
        return None
    ip, ihl = got
    if struct.unpack("!H", ip[6:8])[0] & 0x3FFF:  # more-fragments flag or an offset
        return None
    total = struct.unpack("!H", ip[2:4])[0]
    return _udp(ip[ihl:total])


def _udp(udp: bytes) -> tuple[int, int, bytes] | None:
    if len(udp) < 8:
        return None
    sport, dport, ulen = struct.unpack("!HHH", udp[:6])
    return sport, dport, bytes(udp[8:ulen])


class _Reassembly:
    """IPv4 fragments of UDP datagrams put back together (RFC 791 §3.2),
    keyed by source, destination and identification. A datagram that is
    larger than the link's MTU crosses as fragments: LibreCube resends a NAK's
    contiguous range as one File Data PDU of two segments, 2,059 octets of
    UDP. Its capture time and frame are those of the fragment that completes
    it, as Wireshark shows it; one whose fragments are not all in the
    capture (one was lost) never completes, nor does one whose checksum
    fails (:func:`_checksum_holds`)."""

    # Linux gives up a reassembly after 30 s (net.ipv4.ipfrag_time): an
    # identification seen again later starts a new datagram
    TIMEOUT_S = 30.0

    def __init__(self) -> None:
        self._parts: dict[tuple[bytes, bytes, bytes], dict[int, bytes]] = {}
        self._ends: dict[tuple[bytes, bytes, bytes], int] = {}
        self._first: dict[tuple[bytes, bytes, bytes], float] = {}

    def add(self, frame: bytes, t: float = 0.0) -> tuple[int, int, bytes] | None:
        """The datagram this frame (captured at ``t``) completes, if it is a
        UDP fragment that does; None for any other frame."""
        got = _ipv4_udp(frame)
        if got is None:
            return None
        ip, ihl = got
        flags = struct.unpack("!H", ip[6:8])[0]
        more, offset = bool(flags & 0x2000), (flags & 0x1FFF) * 8
        if not more and not offset:
            return None  # not a fragment
        total = struct.unpack("!H", ip[2:4])[0]
        key = (bytes(ip[12:16]), bytes(ip[16:20]), bytes(ip[4:6]))
        if key in self._parts and (
            t - self._first[key] > self.TIMEOUT_S or offset in self._parts[key]
        ):
            self._drop(key)  # a reassembly given up, or its identification reused
        self._first.setdefault(key, t)
        parts = self._parts.setdefault(key, {})
        parts[offset] = bytes(ip[ihl:total])
        if not more:
            self._ends[key] = offset + total - ihl
        end = self._ends.get(key)
        if end is None:
            return None
        whole, at = bytearray(), 0
        for off in sorted(parts):
            if off > at:
                return None  # a hole: a fragment not captured yet
            whole += parts[off][at - off :]
            at = max(at, off + len(parts[off]))
        if at < end:
            return None
        self._drop(key)
        udp = bytes(whole[:end])
        if not _checksum_holds(key[0], key[1], udp):
            return None  # the receiving stack discards it: a loss, not an arrival
        return _udp(udp)

    def _drop(self, key: tuple[bytes, bytes, bytes]) -> None:
        for table in (self._parts, self._ends, self._first):
            table.pop(key, None)


def _checksum_holds(src: bytes, dst: bytes, udp: bytes) -> bool:
    """Whether a reassembled UDP datagram's checksum verifies (RFC 768, over
    the IPv4 pseudo-header; 0 means none was sent). The channel flips a bit
    of a fragment as of any frame, and the receiving stack then discards the
    whole datagram. The sender's own capture holds the true checksum: a
    datagram that is fragmented has its checksum computed in software."""
    if len(udp) < 8 or udp[6:8] == b"\x00\x00":
        return True
    data = src + dst + bytes([0, 17]) + struct.pack("!H", len(udp)) + udp
    if len(data) % 2:
        data += b"\x00"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total == 0xFFFF


def _frame_time(meta: Any, nano: bool) -> float:
    """A frame's capture time, in seconds since the epoch, from a pcap or a
    pcapng reader's metadata (scapy types every reader's metadata as pcap's;
    pcapng's, RawPcapNgReader.PacketMetadata, has other fields)."""
    sec = getattr(meta, "sec", None)
    if sec is None:  # pcapng
        return float((meta.tshigh << 32 | meta.tslow) / meta.tsresol)
    return float(sec + meta.usec / (1e9 if nano else 1e6))


def port_unreachable(pcap: Path, port: int) -> list[tuple[float, int, str, bytes]]:
    """(capture time, frame, sender's IPv4 address, the start of the refused
    datagram's UDP payload as quoted) of each ICMP port unreachable (RFC
    792: type 3, code 3) in ``pcap`` that quotes a UDP datagram sent to
    ``port``: a host telling that nothing listened there. A frame too short
    to hold what it claims is passed over."""
    from scapy.utils import RawPcapReader

    out: list[tuple[float, int, str, bytes]] = []
    if not pcap.exists() or pcap.stat().st_size == 0:
        return out
    reader = RawPcapReader(str(pcap))
    nano = getattr(reader, "nano", False)
    try:
        for number, (frame, meta) in enumerate(reader, start=1):
            if len(frame) < 14 + 20 or frame[12:14] != b"\x08\x00":
                continue
            ip = frame[14:]
            ihl = (ip[0] & 0x0F) * 4
            if ip[0] >> 4 != 4 or ip[9] != 1 or ip[ihl : ihl + 2] != b"\x03\x03":
                continue
            quoted = ip[ihl + 8 :]
            if len(quoted) < 20 or quoted[9] != 17:
                continue
            qihl = (quoted[0] & 0x0F) * 4
            if len(quoted) < qihl + 8:
                continue
            if struct.unpack("!H", quoted[qihl + 2 : qihl + 4])[0] != port:
                continue
            ts = _frame_time(meta, nano)
            src = ".".join(str(b) for b in ip[12:16])
            out.append((ts, number, src, bytes(quoted[qihl + 8 :])))
    finally:
        reader.close()
    return out


@dataclass
class Finding:
    """One expert info our dissector raised on a sent segment."""

    side: str
    frame: int
    name: str
    severity: str
    group: str
    message: str


@dataclass
class Datagram:
    """One UDP datagram of a capture: frame number, capture time (seconds
    since the epoch), source IPv4 address and payload; ``cut`` is (bytes
    kept, bytes on the wire) for a frame the capture file cuts short."""

    number: int
    t: float
    src: str
    payload: bytes
    cut: tuple[int, int] | None = None
    fragmented: bool = False  # it crossed as IPv4 fragments (reassembled here)


def datagrams(pcap: Path, port: int) -> list[Datagram]:
    """Every IPv4/UDP datagram on ``port`` in ``pcap`` (one that crossed as
    fragments as the frame that completes it: :class:`_Reassembly`), and
    every frame the file cuts short (its payload empty if too little is
    left)."""
    from scapy.error import Scapy_Exception
    from scapy.utils import RawPcapReader

    out: list[Datagram] = []
    if not pcap.exists() or pcap.stat().st_size == 0:
        return out
    # scapy logs a warning for a frame cut short; Datagram.cut says it instead
    logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
    try:
        reader = RawPcapReader(str(pcap))
    except Scapy_Exception as exc:
        raise InputError(f"{pcap}: not a capture file (pcap or pcapng): {exc}") from None
    nano = getattr(reader, "nano", False)
    fragments = _Reassembly()
    try:
        for number, (frame, meta) in enumerate(reader, start=1):
            caplen = getattr(meta, "caplen", len(frame))
            cut = (len(frame), caplen) if len(frame) < caplen else None
            ts = _frame_time(meta, nano)
            udp = udp_payload(frame)
            fragmented = udp is None and (udp := fragments.add(frame, ts)) is not None
            if udp is not None and port not in (udp[0], udp[1]):
                continue
            if udp is None and cut is None:
                continue
            # a cut frame is kept even when too little of it is left to read
            src = ".".join(str(b) for b in frame[26:30])
            out.append(Datagram(number, ts, src, udp[2] if udp else b"", cut, fragmented))
    finally:
        reader.close()
    return out


def sender_address(
    records: Sequence[SegmentRecord], sent_at_a: Mapping[int, Datagram]
) -> str | None:
    """A stored run's sender address, which it does not record: the source
    of its first forward segment in the sender side's capture (None: the
    run shows no segment the sender sent)."""
    first = next((r for r in records if r.direction == "forward"), None)
    sent = sent_at_a.get(first.frame) if first is not None else None
    return sent.src if sent is not None else None


def _payloads(pcap: Path, port: int) -> dict[int, tuple[str, bytes]]:
    """frame number -> (source IPv4, UDP payload) for datagrams on ``port``."""
    return {d.number: (d.src, d.payload) for d in datagrams(pcap, port) if d.payload or not d.cut}


def _channel_verdicts(channel_log: Path | None) -> dict[str, list[tuple[bool, int, bool]]]:
    """Per direction, in the order the channel saw the protocol's segments:
    did the segment fail to reach the other side? (Dropped, or corrupted
    with its UDP checksum left wrong, so the receiving kernel discards it.)
    How many copies of it did the channel deliver (2: duplicated)? Did it
    arrive corrupted (bits flipped, the UDP checksum made good)? Frames
    that are not segments (ARP, other traffic) carry no ``seg``."""
    from conformance.channel.control import read_log

    out: dict[str, list[tuple[bool, int, bool]]] = {"forward": [], "return": []}
    for rec in read_log(channel_log) if channel_log is not None else []:
        if rec.seg is None:
            continue
        changed = rec.decision == "corrupt" and not rec.lost
        out[rec.dir].append((rec.lost, 1 if rec.lost else rec.copies, changed))
    return out


def _sent_frames(
    raw: Mapping[str, Mapping[int, tuple[str, bytes]]], side: str, ip_a: str
) -> list[tuple[int, bytes]]:
    """(frame number, payload) of each datagram the side's own endpoint sent,
    in capture order (the rest of its capture arrived from the other side)."""
    sender_ip_is_a = side == "a"
    return [(n, p) for n, (src, p) in raw[side].items() if (src == ip_a) == sender_ip_is_a]


def records_from_captures(
    spec: ProtocolSpec,
    a_pcap: Path,
    b_pcap: Path,
    *,
    port: int,
    ip_a: str,
    channel_log: Path | None = None,
    skip: frozenset[bytes] = frozenset(),
) -> list[SegmentRecord]:
    """The segments each side sent, with whether the channel dropped each.
    Datagrams whose payload is in ``skip`` (the tester's robustness probes
    and their answers) are left out: they are judged by the probe, not as the
    run. ``spec``: the captures' protocol, as the caller resolved it.

    Fields come from the channel emulator's classifier (``dtnc-emu
    classify``, one process for both captures), the vocabulary of
    specs/<proto>/wire.json that our Lua dissector and Scapy layer give too
    (``dissectors/tests/test_fuzz_agreement.py`` holds the three to it);
    the protocol's extras (``spec.extras``: LTP's claims, CFDP's NAK
    requests) from its Scapy layer; a unit that is not one well-formed unit
    has no fields. The dissector's expert checks are
    :func:`dissector_findings`, a pass of their own."""
    from conformance.channel import control as emulator

    protocol = spec.name
    records: list[SegmentRecord] = []
    sides = {"a": a_pcap, "b": b_pcap}
    stamps: dict[str, dict[int, float]] = {}
    raw: dict[str, dict[int, tuple[str, bytes]]] = {}
    # the channel classifies no fragment, so its log decides for whole
    # datagrams only: a reassembled one is matched by its payload
    whole: set[tuple[str, int]] = set()
    for side, pcap in sides.items():
        grams = [d for d in datagrams(pcap, port) if d.payload or not d.cut]
        raw[side] = {d.number: (d.src, d.payload) for d in grams}
        stamps[side] = {d.number: d.t for d in grams}
        whole |= {(side, d.number) for d in grams if d.fragmented}
    sent = {side: _sent_frames(raw, side, ip_a) for side in sides}
    todo = sorted({p for frames in sent.values() for _, p in frames if p and p not in skip})
    fields_of = dict(zip(todo, emulator.classify(protocol, todo) if todo else [], strict=True))
    decisions = _channel_verdicts(channel_log)
    for side, frames in sent.items():
        other = raw["b" if side == "a" else "a"]
        direction: Direction = "forward" if side == "a" else "return"
        sender_ip_is_a = side == "a"
        arrived = Counter(p for src, p in other.values() if (src == ip_a) == sender_ip_is_a)
        plain = [n for n, _ in frames if (side, n) not in whole]
        logged = (
            dict(zip(plain, decisions[direction], strict=True))
            if len(decisions[direction]) == len(plain)
            else None
        )
        for number, payload in frames:
            if payload in skip:
                continue
            copies, corrupted = 1, False
            if logged is not None and number in logged:
                dropped, copies, corrupted = logged[number]
            else:
                dropped = arrived[payload] == 0
                if not dropped:
                    arrived[payload] -= 1
            fields: dict[str, FieldValue | list[FieldValue]] = dict(fields_of.get(payload) or {})
            if fields:
                for key, values in spec.extras(payload, fields).items():
                    fields[key] = list[FieldValue](values)
            records.append(
                SegmentRecord(
                    protocol=protocol,
                    direction=direction,
                    time=stamps[side][number],
                    frame=number,
                    length=len(payload),
                    summary=spec.label(fields) if fields else f"not one {spec.unit}",
                    fields=fields,
                    dropped=dropped,
                    copies=copies,
                    corrupted=corrupted,
                )
            )
    records.sort(key=lambda r: r.time)
    return records


def dissector_findings(
    spec: ProtocolSpec,
    a_pcap: Path,
    b_pcap: Path,
    *,
    port: int,
    ip_a: str,
    skip: frozenset[bytes] = frozenset(),
) -> list[Finding]:
    """Our Lua dissector's expert infos on the units each side sent (one
    tshark run per capture), the probes' (``skip``) left out."""
    from dissectors.tshark import decode

    findings: list[Finding] = []
    sides = {"a": a_pcap, "b": b_pcap}
    raw = {side: _payloads(p, port) for side, p in sides.items()}
    for side, pcap in sides.items():
        if not pcap.exists() or pcap.stat().st_size == 0:
            continue
        mine = dict(_sent_frames(raw, side, ip_a))
        for frame in decode(pcap, protocol=spec.name, port=port):
            payload = mine.get(frame.number)
            if payload is None or payload in skip:
                continue  # received here, or a probe
            findings += [
                Finding(
                    side=side,
                    frame=frame.number,
                    name=str(exp.get("name", "")),
                    severity=str(exp.get("severity", "")),
                    group=str(exp.get("group", "")),
                    message=str(exp.get("message", "")),
                )
                for exp in frame.experts
            ]
    return findings
