"""The Lua dissectors under Lua 5.4 (Wireshark 4.4 and later) as well as the
Lua 5.2 of the tshark installed here (Wireshark 4.0).

Wireshark 4.4 embeds Lua 5.4: no ``bit32`` library (the dissectors use
BitOp's ``bit``, which every Wireshark with Lua ships), integers apart from
floats (``"frame " .. 5.0`` reads ``"frame 5.0"``), integer arithmetic that
wraps at 2^63. No Wireshark 4.4 is installed here, so:

* ``luac5.4 -p`` parses every ``dissectors/*/*.lua``;
* ``dissectors/tests/wslua_stub.lua``, a small stand-in for the Wireshark Lua
  API (Proto, ProtoField, ProtoExpert, Pref, DissectorTable, UInt64, NSTime,
  ``bit`` with BitOp's signed 32-bit results, a strict global table), loads
  each dissector under ``lua5.4`` and runs its dissector function over a set
  of datagrams that reach the wide-number paths (SDNVs up to 2^64-1 and past
  it, 8-octet CFDP entity IDs and file offsets above 2^63, CRCs, bit fields,
  the session and transaction analyses);
* the real tshark (Lua 5.2) decodes the same datagrams from a pcap, and what
  the Lua computes (the summary, every expert message, every text item and
  every value the Lua passes to a field, with its position) must be the same
  under both;
* the stand-in's ``bit`` and ``UInt64`` are checked against tshark's, and
  the SDNV values against Python's decoding;
* the blocks ``dissectors/luagen.py`` generates parse under Lua 5.4, and it
  refuses numbers that Lua 5.2 and 5.4 would read differently.

Skipped when ``lua5.4``/``luac5.4`` (Debian package lua5.4) or tshark is absent.
"""

from __future__ import annotations

import binascii
import json
import re
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import pytest

HERE = Path(__file__).resolve().parent
DISSECTORS = HERE.parent
STUB = HERE / "wslua_stub.lua"
# every dissectors/*/*.lua (the stand-in too) must parse as Lua 5.4; the
# dissectors are those outside tests/
SCRIPTS = sorted(DISSECTORS.glob("*/*.lua"))
DISSECTOR_SCRIPTS = [p for p in SCRIPTS if p.parent.name != "tests"]
LTP_LUA = DISSECTORS / "ltp" / "ltp.lua"
CFDP_LUA = DISSECTORS / "cfdp" / "cfdp.lua"
LTP_PORT, CFDP_PORT = 1113, 5111  # the dissectors' default ports
UDP_PAYLOAD_AT = 14 + 20 + 8  # Ethernet, IPv4, UDP headers in the pcap
TIMEOUT = 60

LUA54 = shutil.which("lua5.4")
LUAC54 = shutil.which("luac5.4")
TSHARK = shutil.which("tshark")

needs_lua54 = pytest.mark.skipif(
    LUA54 is None or LUAC54 is None,
    reason="lua5.4/luac5.4 not installed (apt-get install lua5.4)",
)
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")
pytestmark = pytest.mark.integration  # real tools: lua5.4, luac5.4, tshark


def test_there_are_dissectors() -> None:
    assert DISSECTOR_SCRIPTS == [CFDP_LUA, LTP_LUA]


def test_no_bit32_anywhere() -> None:
    """Lua 5.4 has no bit32; BitOp's ``bit`` is the library every Wireshark ships."""
    for script in DISSECTOR_SCRIPTS:
        text = script.read_text(encoding="utf-8")
        code = re.sub(r"--\[(=*)\[.*?\]\1\]", "", text, flags=re.DOTALL)  # block comments
        code = re.sub(r"--[^\n]*", "", code)
        assert "bit32" not in code, f"{script.name} uses bit32"
        assert re.search(r"\bbit\.band\b", code), script.name


# ---------------------------------------------------------------------------
# Syntax and loading under Lua 5.4
# ---------------------------------------------------------------------------


@needs_lua54
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_luac54_parses(script: Path) -> None:
    assert LUAC54 is not None
    proc = subprocess.run(
        [LUAC54, "-p", str(script)], capture_output=True, text=True, timeout=TIMEOUT
    )
    assert proc.returncode == 0, proc.stderr


def run_stub(*args: str | Path) -> list[dict[str, Any]]:
    assert LUA54 is not None
    proc = subprocess.run(
        [LUA54, str(STUB), *map(str, args)],
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    stderr = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, f"lua5.4 failed:\n{stderr}"
    return [
        json.loads(line)
        for line in proc.stdout.decode("utf-8", "surrogateescape").splitlines()
        if line.startswith("{")
    ]


@needs_lua54
@pytest.mark.parametrize(
    ("script", "proto", "port"),
    [(LTP_LUA, "dtnltp", LTP_PORT), (CFDP_LUA, "dtncfdp", CFDP_PORT)],
    ids=["ltp.lua", "cfdp.lua"],
)
def test_loads_under_lua54(script: Path, proto: str, port: int) -> None:
    """Load time under Lua 5.4: every global it reads exists, every field,
    expert and preference is accepted, the dissector registers on its port."""
    (loaded,) = run_stub("-", script)
    info = loaded["protos"][proto]
    assert info["udp_ports"] == [port]
    assert info["dissector"] and info["init"] and info["prefs_changed"] and info["heuristic"]
    assert info["fields"] > 30 and info["experts"] > 30


@needs_lua54
def test_stub_rejects_bit32(tmp_path: Path) -> None:
    """The stand-in's globals are strict: a script reading bit32 fails to load."""
    script = tmp_path / "uses_bit32.lua"
    script.write_text("local band = bit32.band\n", encoding="utf-8")
    assert LUA54 is not None
    proc = subprocess.run(
        [LUA54, str(STUB), "-", str(script)], capture_output=True, text=True, timeout=TIMEOUT
    )
    assert proc.returncode != 0
    assert "undefined global 'bit32'" in proc.stderr


# ---------------------------------------------------------------------------
# luagen's generated blocks
# ---------------------------------------------------------------------------


@needs_lua54
def test_luagen_blocks_parse_under_lua54(tmp_path: Path) -> None:
    """The block ``python -m dissectors.luagen`` writes, for every protocol
    with a wire.json (with a dissector or not yet), is Lua 5.4."""
    from dissectors import luagen

    assert LUAC54 is not None
    for protocol in luagen.wire.protocols():
        block = tmp_path / f"{protocol}.lua"
        block.write_text(luagen.generate(luagen.load_facts(protocol)), encoding="utf-8")
        proc = subprocess.run(
            [LUAC54, "-p", str(block)], capture_output=True, text=True, timeout=TIMEOUT
        )
        assert proc.returncode == 0, f"{protocol}: {proc.stderr}"


@pytest.mark.parametrize("value", [2**63, -(2**53) - 1, float("inf"), float("nan")])
def test_luagen_refuses_numbers_lua_cannot_hold(value: float) -> None:
    from dissectors import luagen

    with pytest.raises(luagen.LuagenError):
        luagen.generate({"protocol": "x", "spec": "RFC 0", "limit": value})


# ---------------------------------------------------------------------------
# The stand-in against the real API (tshark's Lua 5.2): BitOp and UInt64
# ---------------------------------------------------------------------------

API_SCRIPT = """
local function f(x) return string.format("%.17g", x) end
local vals = {0, 1, 5.5, 6.5, -1, 255, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
    0x100000005, -0x80000001, 2^40 + 3, 0x1021}
for _, a in ipairs(vals) do
    print(table.concat({bit.tobit(a), bit.bnot(a), bit.band(a, 0xFF),
        bit.bor(a, 0x80000000), bit.bxor(a, 0xFFFF), bit.lshift(a, 8), bit.rshift(a, 4),
        bit.arshift(a, 4), bit.rol(a, 9), bit.ror(a, 9), bit.bswap(a), bit.tohex(a),
        bit.tohex(a, -4), bit.band(a, 0xFFFFFFFF), bit.lshift(a, 33), bit.rshift(a, 32),
        bit.band(a, 0x7F, 0x3C)}, " "))
end
for _, x in ipairs({0, 2^31, 2^32 + 5, 2^52 + 1, 2^53 + 2, 2^63 - 1024, 2^63,
        2^64 - 2048, 2^64, 2^65, -1, 5.7}) do
    local u = UInt64(x)
    print(f(x), tostring(u), f(u:tonumber()), tostring(u:rshift(57)), tostring(u:lshift(7)),
        tostring(u:bor(UInt64(0x7F))), tostring(u + UInt64(1)), tostring(u - UInt64(1)),
        tostring(u < UInt64(2^53)), tostring(u <= UInt64.max()), tostring(u == UInt64(0)))
end
print(tostring(UInt64(4294967295, 4294967295)), tostring(UInt64(5, 2^31)),
    tostring(UInt64.max()), tostring(UInt64.max() - UInt64(1)), tostring(NSTime(3, 5)))
"""


def empty_pcap(path: Path) -> Path:
    path.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    return path


@needs_lua54
@needs_tshark
def test_stub_api_is_wiresharks(tmp_path: Path) -> None:
    """The stand-in's ``bit`` (BitOp: signed 32-bit results, floats rounded)
    and UInt64 (casts, shifts, comparisons, printing) give what tshark's do."""
    script = tmp_path / "api.lua"
    script.write_text(API_SCRIPT, encoding="utf-8")
    assert TSHARK is not None and LUA54 is not None
    real = subprocess.run(
        [TSHARK, "-X", f"lua_script:{script}", "-r", str(empty_pcap(tmp_path / "e.pcap"))],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    stub = subprocess.run(
        [LUA54, str(STUB), "--exec", str(script)], capture_output=True, text=True, timeout=TIMEOUT
    )
    assert stub.returncode == 0, stub.stderr
    lines = real.stdout.splitlines()
    assert len(lines) == 26, real.stderr
    assert stub.stdout.splitlines() == lines


# ---------------------------------------------------------------------------
# Datagrams: LTP (RFC 5326) and CFDP (CCSDS 727.0-B-5), built by hand here
# ---------------------------------------------------------------------------


def sdnv(n: int) -> bytes:
    out = [n & 0x7F]
    n >>= 7
    while n:
        out.append(0x80 | (n & 0x7F))
        n >>= 7
    return bytes(reversed(out))


def ltp(
    type_: int,
    orig: int | bytes,
    num: int | bytes,
    body: bytes = b"",
    hdr: tuple[tuple[int, bytes], ...] = (),
    trl: tuple[tuple[int, bytes], ...] = (),
    version: int = 0,
) -> bytes:
    def ext(tag: int, value: bytes) -> bytes:
        return bytes([tag]) + sdnv(len(value)) + value

    o = orig if isinstance(orig, bytes) else sdnv(orig)
    n = num if isinstance(num, bytes) else sdnv(num)
    out = bytes([version << 4 | type_]) + o + n + bytes([len(hdr) << 4 | len(trl)])
    out += b"".join(ext(*e) for e in hdr) + body
    return out + b"".join(ext(*e) for e in trl)


def data(csid: int, offset: int, payload: bytes, cp: int | None = None, rs: int = 0) -> bytes:
    out = sdnv(csid) + sdnv(offset) + sdnv(len(payload))
    if cp is not None:
        out += sdnv(cp) + sdnv(rs)
    return out + payload


def report(rs: int, cp: int, ub: int, lb: int, claims: list[tuple[int, int]]) -> bytes:
    out = sdnv(rs) + sdnv(cp) + sdnv(ub) + sdnv(lb) + sdnv(len(claims))
    return out + b"".join(sdnv(o) + sdnv(n) for o, n in claims)


U64_MAX = 2**64 - 1
BIG = 2**63 + 5  # above 2^63: a Lua 5.3+ integer would wrap
SDNV_OVERFLOW = bytes([0x82] + [0xFF] * 8 + [0x7F])  # 65 bits
SDNV_TOO_LONG = bytes([0x80] * 10 + [0x01])  # 11 octets
AUTH = (0, b"\x00\x07")  # RFC 5327 authentication: HMAC-SHA1-80, key ID 7
AUTHVAL = (0, b"0123456789")
COOKIE = (1, b"\xaa\xbb\xcc")

# (session originator, session number) of the datagrams whose SDNVs the test
# checks against Python's integers
SDNV_SESSIONS = [(0, 127), (128, 2**32), (2**53 + 1, 2**63), (U64_MAX, 16383)]


def ltp_datagrams() -> list[bytes]:
    s = [
        # a session: checkpoints, report, report ack, retransmission, analysis
        ltp(1, 7, 1000, data(1, 0, b"A" * 10, cp=5001), hdr=(AUTH, COOKIE), trl=(AUTHVAL,)),
        ltp(8, 7, 1000, report(300, 5001, 10, 0, [(0, 4), (4, 2), (3, 3)])),
        ltp(9, 7, 1000, sdnv(300)),
        ltp(1, 7, 1000, data(1, 0, b"A" * 10, cp=5001), hdr=(AUTH, COOKIE), trl=(AUTHVAL,)),
        ltp(3, 7, 1000, data(1, 10, b"B" * 5, cp=5002, rs=300)),
        ltp(4, 7, 1000, data(1, 5, b"C" * 3)),  # green below red: miscolored
        ltp(7, 7, 1000, data(1, 20, b"D" * 4)),  # a second end of block
        ltp(0, 7, 1000, data(1, 40, b"E")),  # beyond the end of block
        # wide SDNVs: 2^53 + 1, 2^63 and 2^64 - 1 (exact only as UInt64)
        *(ltp(9, o, n, sdnv(n)) for o, n in SDNV_SESSIONS),
        ltp(7, 9, 2, data(2, BIG, b"x")),  # offset above 2^63, end of block
        ltp(7, 9, 2, data(2, U64_MAX - 4, b"y")),  # another end: size changed
        ltp(12, 9, 2, b"\x03"),  # cancel from sender, MISCOLORED
        ltp(13, 9, 2),
        ltp(15, 9, 3),  # CAR with no CR
        ltp(14, 9, 4, b"\x09"),  # reason code reserved
        ltp(10, 9, 5),  # undefined control type
        # malformations
        ltp(9, SDNV_OVERFLOW, 1),
        ltp(9, SDNV_TOO_LONG, 1),
        ltp(9, 3, b"\x81\x82"),  # SDNV runs past the end
        ltp(0, 3, 1, data(1, 0, b"z" * 3)[:-1]),  # data length past the end
        ltp(9, 3, 1, sdnv(1)) + b"\x00\x01",  # trailing bytes
        ltp(9, 3, 1, sdnv(1), version=2),
        ltp(9, 3, 1, sdnv(1), hdr=((1, b"abc"),))[:-2],  # extension value overrun
        ltp(8, 3, 1, sdnv(1) + sdnv(1) + sdnv(9) + sdnv(0) + sdnv(200)),  # claim count
        ltp(8, 3, 1, report(1, 0, 5, 9, [(0, 0), (8, 1)])),  # bounds inverted, zero claim
        ltp(8, 3, 1, report(0, 0, 5, 0, [])),  # no claims, serial 0
        ltp(0, 3, 1, data(1, 0, b"")),  # zero-length data
        ltp(0, 3, 1, data(1, 0, b"q"), hdr=((0, b""), (1, b""))),  # empty auth, cookie
        ltp(9, 3, 1, sdnv(1), hdr=((0, b"\x00"),), trl=((0, b"123"), (1, b"c"))),  # AuthVal
        ltp(9, 3, 1, sdnv(1), hdr=((0, b"\x80\x01"),)),  # reserved suite, no AuthVal
        ltp(8, 7, 1000, report(301, 9999, 10, 0, [(0, 10)])),  # checkpoint never seen
        bytes([0x00]),  # header ends after the control byte
    ]
    return s


def cfdp(
    body: bytes,
    *,
    file_data: bool = False,
    direction: int = 0,
    mode: int = 0,
    crc: bool = False,
    large: bool = False,
    version: int = 1,
    eid: int = 1,
    seq: int = 1,
    src: int = 1,
    tx: int = 1,
    dst: int = 2,
    seg_meta: bool = False,
    dfl: int | None = None,
) -> bytes:
    b0 = (
        version << 5 | int(file_data) << 4 | direction << 3 | mode << 2 | int(crc) << 1 | int(large)
    )
    length = len(body) + (2 if crc else 0) if dfl is None else dfl
    b3 = (eid - 1) << 4 | int(seg_meta) << 3 | (seq - 1)
    head = bytes([b0]) + length.to_bytes(2, "big") + bytes([b3])
    head += src.to_bytes(eid, "big") + tx.to_bytes(seq, "big") + dst.to_bytes(eid, "big")
    pdu = head + body
    if crc:
        pdu += binascii.crc_hqx(pdu, 0xFFFF).to_bytes(2, "big")
    return pdu


class LargeHeader(TypedDict):
    """cfdp()'s header arguments for a large file with 8-octet IDs."""

    large: bool
    eid: int
    seq: int
    src: int
    tx: int
    dst: int


def lv(value: bytes) -> bytes:
    return bytes([len(value)]) + value


def tlv(type_: int, value: bytes) -> bytes:
    return bytes([type_, len(value)]) + value


def modular(octets: bytes) -> int:
    padded = octets + b"\x00" * (-len(octets) % 4)
    words = struct.unpack(f">{len(padded) // 4}I", padded)
    return sum(words) % 2**32


FILE = bytes(range(25))


def cfdp_datagrams() -> list[bytes]:
    def u32(n: int) -> bytes:
        return n.to_bytes(4, "big")

    def u64(n: int) -> bytes:  # a large file's FSS fields
        return n.to_bytes(8, "big")

    big: LargeHeader = {
        "large": True,
        "eid": 8,
        "seq": 8,
        "src": 2**63 + 1,
        "tx": U64_MAX,
        "dst": 2**64 - 2,
    }
    options = tlv(0, bytes([0x20]) + lv(b"a") + lv(b"b")) + tlv(2, b"hi") + tlv(4, b"\x61")
    options += tlv(5, b"\x01") + tlv(3, b"?")
    return [
        # an acknowledged transaction: Metadata, file data with a gap and a
        # partial copy, NAK, the gap filled, EOF with a wrong checksum, data
        # beyond its size, Finished, ACKs
        cfdp(b"\x07\x40" + u32(25) + lv(b"src.bin") + lv(b"d\x01st") + options, crc=True),
        cfdp(u32(0) + FILE[:10], file_data=True),
        cfdp(u32(20) + FILE[20:], file_data=True),
        cfdp(u32(5) + FILE[5:12], file_data=True),
        cfdp(b"\x08" + u32(0) + u32(30) + u32(12) + u32(20) + u32(25) + u32(40), direction=1),
        cfdp(u32(12) + FILE[12:20], file_data=True),
        cfdp(b"\x04\x00" + u32(modular(FILE) ^ 1) + u32(25)),
        cfdp(u32(24) + b"\x00\x01", file_data=True),  # beyond the EOF's file size
        cfdp(b"\x05\x04", direction=1),  # Finished(data incomplete)
        cfdp(b"\x05\x00" + tlv(1, bytes([0x21]) + lv(b"a") + lv(b"b") + lv(b"m")), direction=1),
        cfdp(b"\x06\x40\x02", direction=1),  # ACK(EOF)
        cfdp(b"\x06\x51\x12"),  # ACK(Finished), another condition
        cfdp(b"\x08" + u32(0) + u32(25) + u32(1) + u32(2), direction=1),  # after complete
        cfdp(b"\x09\x80"),  # Prompt
        cfdp(b"\x0c" + u32(25), direction=1),  # Keep Alive
        cfdp(b"\x04\xf0" + u32(0) + u32(25) + tlv(6, b"\x05"), tx=9),  # fault location
        cfdp(b"\x04\x00" + u32(0) + u32(0) + tlv(6, bytes(9)) + tlv(2, b""), tx=10),
        cfdp(b"\x06\x41\xc0", direction=1, tx=77),  # ACK(EOF) of nothing, subtype 1
        # a large file: 8-octet entity IDs, sequence number and offsets past 2^63
        cfdp(b"\x07\x00" + u64(BIG) + lv(b"s") + lv(b"d"), **big),
        cfdp(u64(BIG) + b"xyz", file_data=True, **big),
        # segment metadata: record continuation "start", 3 octets of metadata
        cfdp(b"\x43abc" + u64(2**62) + b"0123", file_data=True, seg_meta=True, **big),
        cfdp(b"\x04\x00" + bytes(4) + u64(2**62 + 2), **big),  # below the data seen
        cfdp(b"\x05\x00", direction=1, **big),  # data complete, but gaps
        cfdp(b"\x08" + u64(2**63) + u64(U64_MAX) + u64(2**63 + 7) + u64(U64_MAX)
             + u64(9) + u64(3), direction=1, **big),
        cfdp(b"\x0c" + u64(U64_MAX), direction=1, **big),
        # malformations and protocol errors
        cfdp(b"\x09\x00", crc=True)[:-1] + b"\x00",  # CRC wrong
        cfdp(b"\x09\x00", version=2),
        cfdp(b"\x09\x00", version=0, large=True, seg_meta=True),
        cfdp(b"\x09\x00", dfl=9),  # data field length past the datagram
        cfdp(b"\x09\x00") + b"\xee",  # trailing octet
        cfdp(b"", crc=True, dfl=1),  # CRC flag, no room
        cfdp(b"\x07\x00" + bytes(4) + lv(b"abc")[:-1]),  # LV past the end
        cfdp(b"\x05\x00" + b"\x06\x09\x01"),  # TLV past the end
        cfdp(b"\x08" + bytes(8) + bytes(5), direction=1),  # partial segment request
        cfdp(b"\x08" + u32(9) + u32(3), direction=1),  # scope inverted
        cfdp(b"\x0d\x01\x02"),  # undefined directive
        cfdp(b"\x06\x70\x00"),  # ACK of Metadata
        cfdp(b"\x09\x00\x00"),  # excess octet
        cfdp(b"\x07\x2e" + bytes(4) + lv(b"") + lv(b"") + tlv(0, b"")),  # reserved, type 14
        cfdp(b"\x04\xc0\x00"),  # reserved condition; ends inside the checksum
        cfdp(b"\x3fabcd", file_data=True, seg_meta=True),  # segment metadata past the end
        cfdp(b"\x09"),  # Prompt without its octet
        b"\x20\x00",  # ends inside the fixed header
    ]  # fmt: skip


# ---------------------------------------------------------------------------
# Running both: the stand-in under Lua 5.4, tshark (Lua 5.2) over a pcap
# ---------------------------------------------------------------------------


@dataclass
class Datagram:
    frame: int
    port: int
    payload: bytes


def datagrams() -> list[Datagram]:
    out = [(LTP_PORT, d) for d in ltp_datagrams()] + [(CFDP_PORT, d) for d in cfdp_datagrams()]
    return [Datagram(i + 1, port, payload) for i, (port, payload) in enumerate(out)]


def ip_checksum(header: bytes) -> int:
    total = sum(struct.unpack(f">{len(header) // 2}H", header))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def write_pcap(path: Path, grams: list[Datagram]) -> Path:
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for g in grams:
        udp = struct.pack(">HHHH", 40000, g.port, 8 + len(g.payload), 0) + g.payload
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), g.frame, 0, 64, 17, 0,
                         bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))  # fmt: skip
        ip = ip[:10] + ip_checksum(ip).to_bytes(2, "big") + ip[12:]
        frame = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" + ip + udp
        # the stand-in's pinfo.abs_ts: 1700000000 + frame / 1000
        out.append(struct.pack("<IIII", 1700000000, g.frame * 1000, len(frame), len(frame)))
        out.append(frame)
    path.write_bytes(b"".join(out))
    return path


def entries_of_pdml(proto: ET.Element) -> list[dict[str, Any]]:
    """The items under our protocol's item, in document order, as the
    stand-in lists them (see flatten() in wslua_stub.lua)."""
    out: list[dict[str, Any]] = []

    def walk(node: ET.Element) -> None:
        for f in node.findall("field"):
            name = f.get("name", "")
            pos = int(f.get("pos", "0")) - UDP_PAYLOAD_AT
            size = int(f.get("size", "0"))
            if name == "_ws.expert":
                msg = next(
                    (
                        c.get("show")
                        for c in f.findall("field")
                        if c.get("name") == "_ws.expert.message"
                    ),
                    None,
                )
                expert = next(
                    c.get("name") for c in f.findall("field") if ".expert." in c.get("name", "")
                )
                out.append({"k": "expert", "name": expert, "msg": msg})
                continue
            if name == "_ws.lua.text":  # tree:add(range, label)
                out.append({"k": "text", "show": f.get("showname"), "pos": pos, "size": size})
            else:
                out.append(
                    {"k": "field", "name": name, "show": f.get("show"),
                     "showname": f.get("showname"), "pos": pos, "size": size}
                )  # fmt: skip
            walk(f)

    walk(proto)
    return out


def comparable(stub: dict[str, Any], real: dict[str, Any]) -> tuple[Any, Any]:
    """The parts of a stand-in entry and a PDML entry the Lua decides."""
    if stub["k"] == "expert":
        want: tuple[Any, ...] = ("expert", stub["name"], stub["msg"])
        return want, (real["k"], real.get("name"), real.get("msg"))
    if stub["k"] == "text":
        want = ("text", stub["show"], stub["pos"], stub["size"])
        return want, (real["k"], real.get("show"), real.get("pos"), real.get("size"))
    # a field: where it lies, the value the Lua gave (if it gave one) and the
    # text it set (if it set one); a field without a range is at 0, size 0
    want = (
        "field",
        stub["name"],
        stub["pos"] if stub["size"] else None,
        stub["size"],
        stub.get("show"),
        stub.get("text"),
    )
    have = (
        real["k"],
        real.get("name"),
        real.get("pos") if real.get("size") else None,
        real.get("size"),
        real.get("show") if stub.get("show") is not None else None,
        real.get("showname") if stub.get("text") is not None else None,
    )
    return want, have


@dataclass
class Decoded:
    grams: list[Datagram]
    stub: dict[int, dict[str, Any]]
    real: dict[int, tuple[str, list[dict[str, Any]]]]


@pytest.fixture(scope="module")
def decoded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Decoded]:
    if LUA54 is None or TSHARK is None:
        pytest.skip("needs lua5.4 (apt-get install lua5.4) and tshark")
    tmp = tmp_path_factory.mktemp("luaversions")
    grams = datagrams()
    lines = tmp / "datagrams.txt"
    lines.write_text(
        "".join(f"{g.frame} {g.port} {g.payload.hex()}\n" for g in grams), encoding="ascii"
    )
    loaded, *frames = run_stub(lines, LTP_LUA, CFDP_LUA)
    assert set(loaded["protos"]) == {"dtnltp", "dtncfdp"}
    pcap = write_pcap(tmp / "datagrams.pcap", grams)
    proc = subprocess.run(
        [TSHARK, "-n", "-r", str(pcap), "-T", "pdml",
         "-X", f"lua_script:{LTP_LUA}", "-X", f"lua_script:{CFDP_LUA}"],
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    real: dict[int, tuple[str, list[dict[str, Any]]]] = {}
    for packet in ET.fromstring(proc.stdout).findall("packet"):
        shown = next(f.get("show") for f in packet.iter("field") if f.get("name") == "frame.number")
        assert shown is not None
        number = int(shown)
        for proto in packet.findall("proto"):
            if proto.get("name") in ("dtnltp", "dtncfdp"):
                real[number] = (proto.get("showname", ""), entries_of_pdml(proto))
    yield Decoded(grams, {f["frame"]: f for f in frames}, real)


def test_every_datagram_decoded_by_both(decoded: Decoded) -> None:
    frames = [g.frame for g in decoded.grams]
    assert sorted(decoded.stub) == frames
    assert sorted(decoded.real) == frames
    errors = {n: f["error"] for n, f in decoded.stub.items() if "error" in f}
    assert errors == {}, "the dissectors fail under Lua 5.4"
    for n, f in decoded.stub.items():
        assert f["returned"] == len(decoded.grams[n - 1].payload)
        assert f["protocol"] in ("DTN-LTP", "DTN-CFDP")


@pytest.mark.parametrize("frame", [g.frame for g in datagrams()])
def test_lua54_decodes_as_tshark(decoded: Decoded, frame: int) -> None:
    """Frame by frame: the summary (Info column), the expert messages, text
    items, the positions of every item and the values the Lua computed are the
    same under the stand-in's Lua 5.4 as under tshark's Lua 5.2."""
    stub = decoded.stub[frame]
    showname, real = decoded.real[frame]
    assert "error" not in stub, stub.get("error")
    root, *items = stub["items"]
    assert root["k"] == "proto"
    assert showname == root["show"]
    assert showname.endswith(", " + stub["info"])
    # no Lua error inside tshark either
    lua_errors = [
        e for e in real if e.get("name", "").startswith(("_ws.lua.error", "_ws.malformed"))
    ]
    assert lua_errors == []
    pairs = [comparable(s, r) for s, r in zip(items, real, strict=False)]
    assert [w for w, _ in pairs] == [h for _, h in pairs]
    assert len(items) == len(real)


def test_lua54_text_has_no_float_noise(decoded: Decoded) -> None:
    """No "5.0"-style number in anything the Lua wrote (Lua 5.3+ prints an
    integral float with ".0")."""
    noise = re.compile(r"(?<![\d.])\d+\.0(?![\d-])")  # not "727.0-B-5"
    for frame in decoded.stub.values():
        texts = [frame["info"]] + [
            e.get("show") or e.get("msg") or e.get("text") or "" for e in frame["items"]
        ]
        bad = [t for t in texts if isinstance(t, str) and noise.search(t)]
        assert bad == [], f"frame {frame['frame']}"


def test_sdnv_values_are_pythons(decoded: Decoded) -> None:
    """The SDNV decoder under Lua 5.4 gives the integers Python encoded,
    up to 2^64 - 1."""
    seen = []
    for frame in decoded.stub.values():
        if frame["proto"] != "dtnltp":
            continue
        values = {e["name"]: e.get("show") for e in frame["items"] if e["k"] == "field"}
        if "dtnltp.session_originator" in values and "dtnltp.report_serial" in values:
            seen.append(
                (int(values["dtnltp.session_originator"]), int(values["dtnltp.session_number"]))
            )
    for pair in SDNV_SESSIONS:
        assert pair in seen


# what the datagrams must reach for the comparison to mean something: the
# wide-number paths (SDNVs past 2^53 and 2^64, offsets past 2^63), the CRC and
# the checksum, the analyses' messages with frame numbers and sizes
REACHED = {
    "dtnltp.expert.sdnv_overflow", "dtnltp.expert.sdnv_too_long", "dtnltp.expert.copy",
    "dtnltp.expert.miscolored", "dtnltp.expert.size_changed", "dtnltp.expert.beyond_eob",
    "dtnltp.expert.report_unknown_cp", "dtnltp.expert.authval_length",
    "dtncfdp.expert.crc_bad", "dtncfdp.expert.checksum_mismatch",
    "dtncfdp.expert.file_size_error", "dtncfdp.expert.size_mismatch",
    "dtncfdp.expert.finished_with_gaps", "dtncfdp.expert.nak_never_sent",
    "dtncfdp.expert.nak_after_complete", "dtncfdp.expert.retransmission",
    "dtncfdp.expert.ack_unmatched", "dtncfdp.expert.ack_condition_mismatch",
}  # fmt: skip


def test_datagrams_reach_the_wide_paths(decoded: Decoded) -> None:
    raised = {e["name"] for f in decoded.stub.values() for e in f["items"] if e["k"] == "expert"}
    assert REACHED - raised == set()
