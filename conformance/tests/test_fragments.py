"""Datagrams that cross as IPv4 fragments (conformance/segments.py
``datagrams``): LibreCube resends a NAK's contiguous range as one File Data
PDU of two segments, larger than the link's MTU. Before they were put back
together, such PDUs were missing from the trace, and a NAK that no longer
asked for them read as a deviation."""

from __future__ import annotations

from pathlib import Path

from scapy.layers.inet import IP, UDP, fragment
from scapy.layers.l2 import ARP, Ether
from scapy.utils import wrpcap

from conformance.segments import datagrams

PORT = 5111


def _fragments(payload: bytes, ident: int) -> list[Ether]:
    pkt = IP(src="10.0.0.1", dst="10.0.0.2", id=ident) / UDP(sport=PORT, dport=PORT) / payload
    # build once so that the UDP checksum is the whole datagram's
    return [Ether() / f for f in fragment(IP(bytes(pkt)), fragsize=1480)]


def test_fragments_are_put_back_together_and_a_damaged_datagram_is_no_arrival(
    tmp_path: Path,
) -> None:
    whole = bytes(range(256)) * 12  # 3072 octets: three fragments
    damaged = bytes(reversed(whole))
    first = _fragments(whole, 7)
    second = _fragments(damaged, 8)
    raw = bytearray(bytes(second[1]))
    raw[-1] ^= 0x01  # one flipped bit: its UDP checksum no longer holds
    second[1] = Ether(bytes(raw))
    unsent = _fragments(whole[:2000], 9)[:-1]  # its last fragment never captured
    small = Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=PORT, dport=PORT) / b"x"
    frames = [first[2], Ether() / ARP(), first[0], small, *second, *unsent, first[1]]
    for n, f in enumerate(frames):
        f.time = 1000.0 + n / 1000
    wrpcap(str(tmp_path / "f.pcap"), frames)
    got = datagrams(tmp_path / "f.pcap", PORT)
    last = len(frames)
    assert [(d.number, d.payload, d.fragmented) for d in got] == [
        (4, b"x", False),
        (last, whole, True),  # completed by its middle fragment, captured last
    ]
    assert got[1].t == 1000.0 + (last - 1) / 1000 and got[1].src == "10.0.0.1"
