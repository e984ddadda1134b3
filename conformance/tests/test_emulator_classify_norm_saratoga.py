"""The Rust channel emulator's NORM and Saratoga classifiers against
independent decoders.

NORM: ``dtnc-emu classify norm`` is compared with tshark 4.0's ``norm``
dissector on every message of ``data/norm-nrl-1.5.9.pcap`` (real NRL NORM
1.5.9 traffic, see below) and on the sample table of
``emulator/core/src/classify/norm.rs`` written into a pcap with scapy. tshark 4.0
cannot decode the FEC Payload ID of fec_id 5 and misreads that of fec_id 2
(as a 32-bit block number and a 32-bit symbol ID, the pre-RFC 5510 layout),
so for those two the block and symbol numbers are checked against the
payload content instead: the captured data object is the bytes
``'a' + i % 26``, so the first byte of a source symbol gives its position.

The capture: NRL NORM (libnorm1 1.5.9+dfsg-2) between two network
namespaces joined by a veth pair, multicast 224.1.2.3; node 1 sends a
2600-octet data object (object 0, NORM_INFO attached) and a 1400-octet file
(object 1) with a watermark for node 2, 256-octet segments; node 2 receives
with 20% simulated receive loss, so it NACKs and the sender repairs with
parity. One run per UDP port: 6003 fec_id 5 (4 data + 2 parity per block)
with NORM-CC, 6004 fec_id 2 m=16 (250 + 10), 6005 fec_id 129 (4 + 2), 6006
fec_id 2 m=8 (4 + 2), 6007 fec_id 5 with the data object cancelled after its
first pass (provokes NORM_CMD(SQUELCH)).

Saratoga: there is no Saratoga dissector in tshark 4.0, so the hand-built
frames of ``saratoga.rs`` are checked against a few fixed-position fields
decoded here directly from draft-wood-tsvwg-saratoga-22 §4.

Build the binary first: ``cd conformance/channel/emulator && cargo build --release``.
"""

from __future__ import annotations

import ipaddress
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conformance.channel import control as emulator
from conformance.core import wire

ROOT = Path(__file__).resolve().parents[2]
EMU = ROOT / "conformance" / "channel" / "emulator" / "target" / "release" / "dtnc-emu"
CLASSIFY = ROOT / "conformance" / "channel" / "emulator" / "core" / "src" / "classify"
NORM_PCAP = Path(__file__).resolve().parent / "data" / "norm-nrl-1.5.9.pcap"
NORM_PORTS = "6003-6007"

pytestmark = pytest.mark.skipif(
    not EMU.exists(),
    reason=f"{EMU} is missing; build it with `cargo build --release` in conformance/channel/emulator",
)
needs_tshark = pytest.mark.skipif(
    shutil.which("tshark") is None, reason="tshark (Wireshark 4.0, norm dissector) is not installed"
)

# Code tables of specs/norm/wire.json, by name.
NORM_TYPES = {name: code for code, name in wire.names("norm", "message_types").items()}
NORM_FLAVORS = {name: code for code, name in wire.names("norm", "cmd_flavors").items()}
NORM_FLAGS = {
    "repair": 0x01,
    "explicit": 0x02,
    "info": 0x04,
    "unreliable": 0x08,
    "file": 0x10,
    "stream": 0x20,
}
NACK_FORMS = {name: code for code, name in wire.names("norm", "nack_forms").items()}

# tshark fields read for every NORM message (first occurrence of each).
TSHARK_FIELDS = [
    "udp.payload",
    "norm.version",
    "norm.type",
    "norm.sequence",
    "norm.source_id",
    "norm.instance_id",
    "norm.flags",
    "norm.fec_encoding_id",
    "norm.object_transport_id",
    "norm.flavor",
    "norm.ccsequence",
    "norm.ack.source",
    "norm.nack.server",
    "norm.ack.type",
    "norm.ack.id",
    "norm.nack.form",
    "rmt-fec.sbn",
    "rmt-fec.sbl",
    "rmt-fec.esi",
]


def rust_table(path: Path, const: str) -> dict[str, bytes]:
    """The ``("name", "hex"),`` rows of ``const NAME: &[(&str, &str)] = &[...]``."""
    text = path.read_text()
    start = text.index(f"const {const}: &[(&str, &str)] = &[")
    body = text[start : text.index("];", start)]
    rows = re.findall(r'^\s*\("(\w+)", "([0-9a-f]+)"\),\s*$', body, re.MULTILINE)
    assert rows, f"no rows in {const}"
    return {name: bytes.fromhex(h) for name, h in rows}


def tshark_norm(pcap: Path, ports: str) -> list[dict[str, str]]:
    cmd = ["tshark", "-r", str(pcap), "-d", f"udp.port=={ports},norm", "-T", "fields"]
    cmd += ["-E", "separator=/t", "-E", "occurrence=f"]
    for name in TSHARK_FIELDS:
        cmd += ["-e", name]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=60).stdout
    return [dict(zip(TSHARK_FIELDS, line.split("\t"), strict=True)) for line in out.splitlines()]


def write_pcap(path: Path, payloads: list[bytes], port: int) -> None:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw
    from scapy.utils import wrpcap

    wrpcap(
        str(path),
        [
            Ether() / IP(src="10.77.0.1", dst="224.1.2.3") / UDP(sport=40000, dport=port) / Raw(p)
            for p in payloads
        ],
    )


def compare_with_tshark(label: str, ours: dict[str, Any], shark: dict[str, str]) -> int:
    """Assert every field both decoders give agrees; return how many were
    compared."""
    n = 0

    def same(key: str, expected: Any, theirs: Any) -> None:
        nonlocal n
        assert expected == theirs, f"{label}: {key}={expected!r}, tshark says {theirs!r}"
        n += 1

    same("type", NORM_TYPES[ours["type"]], int(shark["norm.type"]))
    same("version", ours["version"], int(shark["norm.version"]))
    same("sequence", ours["sequence"], int(shark["norm.sequence"]))
    same("source_id", ours["source_id"], int(ipaddress.IPv4Address(shark["norm.source_id"])))
    if "instance_id" in ours:
        same("instance_id", ours["instance_id"], int(shark["norm.instance_id"]))
    if "server_id" in ours:
        server = shark["norm.ack.source"] or shark["norm.nack.server"]
        same("server_id", ours["server_id"], int(ipaddress.IPv4Address(server)))
    if "repair" in ours:  # INFO/DATA object flags
        bits = int(shark["norm.flags"], 16)
        for name, bit in NORM_FLAGS.items():
            same(name, ours[name], bool(bits & bit))
    if "flavor" in ours:
        same("flavor", NORM_FLAVORS[ours["flavor"]], int(shark["norm.flavor"]))
    if "cc_sequence" in ours:
        same("cc_sequence", ours["cc_sequence"], int(shark["norm.ccsequence"]))
    if "ack_type" in ours:
        code = int(shark["norm.ack.type"])
        name = {1: "cc", 2: "flush"}.get(code, "application" if code >= 16 else "reserved")
        same("ack_type", ours["ack_type"], name)
        same("ack_id", ours["ack_id"], int(shark["norm.ack.id"]))
    if "nack_form" in ours:
        same("nack_form", NACK_FORMS[ours["nack_form"]], int(shark["norm.nack.form"]))
    # tshark shows the NORM_ACK(FLUSH) payload as raw bytes: no fec_id/object.
    if ours["type"] != "ack":
        if "fec_id" in ours:
            same("fec_id", ours["fec_id"], int(shark["norm.fec_encoding_id"]))
        if "object" in ours:
            same("object", ours["object"], int(shark["norm.object_transport_id"], 16))
        # RFC 5445 payload IDs (fec_id 129) are the only ones tshark 4.0 decodes right.
        if ours.get("fec_id") == 129 and "block" in ours:
            same("block", ours["block"], int(shark["rmt-fec.sbn"]))
            same("symbol", ours["symbol"], int(shark["rmt-fec.esi"], 16))
            if "block_len" in ours:
                same("block_len", ours["block_len"], int(shark["rmt-fec.sbl"]))
    return n


# ---------------------------------------------------------------------------
# NORM


@needs_tshark
def test_norm_capture_agrees_with_tshark() -> None:
    shark = tshark_norm(NORM_PCAP, NORM_PORTS)
    assert len(shark) == 260
    payloads = [bytes.fromhex(row["udp.payload"]) for row in shark]
    ours = emulator.classify("norm", payloads)
    compared = 0
    for number, (fields, row) in enumerate(zip(ours, shark, strict=True), start=1):
        assert fields is not None, f"frame {number} does not classify"
        compared += compare_with_tshark(f"frame {number}", fields, row)
    assert compared > 2500
    kinds = {(f["type"], f.get("flavor")) for f in ours if f}
    assert kinds >= {
        ("info", None),
        ("data", None),
        ("nack", None),
        ("ack", None),
        ("cmd", "flush"),
        ("cmd", "squelch"),
        ("cmd", "cc"),
        ("cmd", "application"),
    }
    assert {f["fec_id"] for f in ours if f and f["type"] == "data"} == {2, 5, 129}


@needs_tshark
def test_norm_rust_samples_agree_with_tshark(tmp_path: Path) -> None:
    """The sample table of norm.rs (real NRL messages plus the hand-built
    CMD(EOT), CMD(ACK_REQ), CMD(REPAIR_ADV) and REPORT) through scapy, tshark
    and the emulator."""
    nrl = rust_table(CLASSIFY / "norm.rs", "NRL_SAMPLES")
    handmade = rust_table(CLASSIFY / "norm.rs", "HANDMADE")
    captured = {bytes.fromhex(r["udp.payload"]) for r in tshark_norm(NORM_PCAP, NORM_PORTS)}
    assert set(nrl.values()) <= captured, "every NRL sample is a captured message"
    samples = {**nrl, **handmade}
    pcap = tmp_path / "norm-samples.pcap"
    write_pcap(pcap, list(samples.values()), 6003)
    shark = tshark_norm(pcap, "6003")
    ours = emulator.classify("norm", list(samples.values()))
    compared = 0
    for name, fields, row in zip(samples, ours, shark, strict=True):
        assert fields is not None, f"{name} does not classify"
        compared += compare_with_tshark(name, fields, row)
    assert compared > 250


def pattern_at(index: int, n: int = 26) -> bytes:
    return bytes(ord("a") + (index + i) % 26 for i in range(n))


def test_norm_block_and_symbol_match_the_data_object_content() -> None:
    """Independent of tshark: every DATA message of the data object (object
    0, bytes 'a' + i % 26, 2600 octets, 256-octet segments) that the
    emulator calls a source symbol carries the bytes at segment
    block * B + symbol (B = 4 data symbols per block, 250 on port 6004;
    RFC 5052 §9.1 puts the longer blocks first, only the last one is short),
    every block's source symbols are exactly 0 .. block_len - 1, and what it
    calls parity is not source data."""
    from scapy.layers.inet import UDP
    from scapy.utils import PcapReader

    with PcapReader(str(NORM_PCAP)) as reader:
        packets = [(p[UDP].dport, bytes(p[UDP].payload)) for p in reader if UDP in p]
    fields = emulator.classify("norm", [p for _, p in packets])
    seen: dict[tuple[int, int], set[int]] = {}
    block_lens: dict[tuple[int, int], int] = {}
    checked = parity = 0
    for (port, payload), f in zip(packets, fields, strict=True):
        if not f or f["type"] != "data" or f["object"] != 0:
            continue
        body = payload[payload[1] * 4 :][:26]
        if f["parity"]:
            assert f["symbol"] >= f["block_len"]
            assert all(body != pattern_at(k, len(body)) for k in range(26)), f
            parity += 1
            continue
        per_block = 250 if port == 6004 else 4
        segment = f["block"] * per_block + f["symbol"]
        assert segment * 256 < 2600
        assert body == pattern_at(segment * 256, len(body)), (port, f)
        key = (f["instance_id"], f["block"])
        seen.setdefault(key, set()).add(f["symbol"])
        block_lens[key] = f["block_len"]
        checked += 1
    assert checked >= 50 and parity >= 4
    for key, symbols in seen.items():
        assert symbols == set(range(block_lens[key])), key


def test_norm_ack_flush_names_the_watermark_of_the_flush_before_it() -> None:
    """NORM_ACK(FLUSH) (RFC 5740 §4.3.2) echoes the watermark of the
    CMD(FLUSH) that asked for it (§4.2.3.1): same fec_id, object and, where
    decodable, block and symbol."""
    from scapy.layers.inet import UDP
    from scapy.utils import PcapReader

    with PcapReader(str(NORM_PCAP)) as reader:
        payloads = [bytes(p[UDP].payload) for p in reader if UDP in p]
    keys = ("fec_id", "object", "block", "symbol")
    last_flush: dict[int, dict[str, Any]] = {}
    acks = 0
    for f in emulator.classify("norm", payloads):
        assert f is not None
        if f["type"] == "cmd" and f["flavor"] == "flush":
            last_flush[f["instance_id"]] = {k: f.get(k) for k in keys}
        elif f["type"] == "ack" and f["ack_type"] == "flush":
            assert {k: f.get(k) for k in keys} == last_flush[f["instance_id"]]
            acks += 1
    assert acks >= 2


def test_norm_prefixes_shorter_than_the_header_do_not_classify() -> None:
    samples = rust_table(CLASSIFY / "norm.rs", "NRL_SAMPLES")
    prefixes = [(p[1] * 4, p[:n]) for p in samples.values() for n in range(1, len(p) + 1)]
    got = emulator.classify("norm", [p for _, p in prefixes])
    for (hdr_len, prefix), fields in zip(prefixes, got, strict=True):
        if len(prefix) < hdr_len:
            assert fields is None, prefix.hex()
    assert sum(f is not None for f in got) > len(samples)


# ---------------------------------------------------------------------------
# Saratoga

SARATOGA_TYPES = [name for _, name in sorted(wire.names("saratoga", "packet_types").items())]


def saratoga_reference(frame: bytes) -> dict[str, Any]:
    """Fixed-position fields, straight from draft-wood-tsvwg-saratoga-22 §4:
    version (bits 0-2), type (3-7), descriptor width (8-9), session Id
    (octets 4-7, all but BEACON), DATA offset after the optional 16-octet
    timestamp (flag bit 12)."""
    word = int.from_bytes(frame[:4], "big")
    ref: dict[str, Any] = {
        "version": word >> 29,
        "type": SARATOGA_TYPES[(word >> 24) & 0x1F],
        "descriptor": 16 << ((word >> 22) & 3),
    }
    if ref["type"] != "beacon":
        ref["session"] = int.from_bytes(frame[4:8], "big")
    if ref["type"] == "data":
        width = ref["descriptor"] // 8
        pos = 8 + (16 if word & (1 << 19) else 0)
        ref["offset"] = int.from_bytes(frame[pos : pos + width], "big")
        ref["length"] = len(frame) - pos - width
        ref["eod"] = bool(word & (1 << 15))
    return ref


def test_saratoga_frames_agree_with_the_draft_layout() -> None:
    frames = rust_table(CLASSIFY / "saratoga.rs", "FRAMES")
    got = emulator.classify("saratoga", list(frames.values()))
    for (name, frame), fields in zip(frames.items(), got, strict=True):
        assert fields is not None, f"{name} does not classify"
        ref = saratoga_reference(frame)
        assert {k: fields.get(k) for k in ref} == ref, name
    assert {f["type"] for f in got if f} == set(SARATOGA_TYPES)
    data_offsets = {f["descriptor"]: f["offset"] for f in got if f and f["type"] == "data"}
    assert data_offsets == {16: 1024, 32: 65536, 64: 2**32, 128: 512}


def test_saratoga_other_versions_and_types_do_not_classify() -> None:
    frames = list(rust_table(CLASSIFY / "saratoga.rs", "FRAMES").values())
    bad = []
    for frame in frames:
        for first in (frame[0] & 0x1F, 0x40 | (frame[0] & 0x1F), 0x25, 0x3F):
            bad.append(bytes([first]) + frame[1:])
    assert emulator.classify("saratoga", bad) == [None] * len(bad)
