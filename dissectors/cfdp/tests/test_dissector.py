"""cfdp.lua through the real tshark: round trips of every file directive and
of File Data (with and without segment metadata, large file, every
entity-ID and sequence-number width 1-8, CRC on and off) built with the
Scapy layer (dissectors/cfdp/layer.py), the CRC check, expert infos on
malformed and non-conforming PDUs, the transaction analysis on small crafted
captures, and a field-by-field comparison with Wireshark's built-in ``cfdp``
dissector (which follows CCSDS 727.0-B-4), every difference named.

tshark is run here with this file's own field types (``FIELDS``): the
registry entry (conformance/protocols/cfdp.py) declares none yet.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, TypedDict

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw
from scapy.utils import wrpcap

from conformance.core.contract import FieldTypes
from conformance.protocols.cfdp import SPEC
from dissectors import luagen
from dissectors.cfdp.layer import (
    CFDP,
    CFDPEOF,
    CFDPTLV,
    CONDITION_CODES,
    DELIVERY_CODES,
    DIRECTIONS,
    DIRECTIVES,
    FILE_STATUSES,
    MODES,
    PDU_TYPES,
    RECORD_CONTINUATIONS,
    RESPONSES_REQUIRED,
    TLV_TYPES,
    TRANSACTION_STATUSES,
    CFDPAck,
    CfdpDecodeError,
    CFDPDirective,
    CFDPEntityIdTLV,
    CfdpFault,
    CFDPFileData,
    CFDPFinished,
    CFDPKeepAlive,
    CFDPMetadata,
    CFDPNak,
    CFDPPrompt,
    classify,
    crc16,
    parse,
)
from dissectors.tshark import DecodedFrame, FieldValue, frames_of

REPO = Path(__file__).resolve().parents[3]
LUA = SPEC.dissector.lua
PROTO = SPEC.dissector.proto
LABEL = SPEC.dissector.label
PORT = 5111  # the dissector's default (dtncfdp.udp_ports)
SPORT = 40000

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed"),
]

# How to read dtncfdp.* from PDML: the registry entry's field types.
FIELDS = SPEC.dissector.fields


# ---------------------------------------------------------------------------
# Running tshark
# ---------------------------------------------------------------------------


def tshark_pdml(args: list[str]) -> ET.Element:
    """tshark's PDML for ``args``; fails on any Lua error (in the tree or on
    stderr) and on any stderr line but the root warning."""
    proc = subprocess.run(
        ["tshark", "-n", "-T", "pdml", *args], capture_output=True, check=False, timeout=120
    )
    stderr = [
        ln
        for ln in proc.stderr.decode(errors="replace").splitlines()
        if ln.strip() and not ln.startswith("Running as user")
    ]
    assert proc.returncode == 0 and not stderr, stderr
    root = ET.fromstring(proc.stdout)
    lua_errors = [
        el.get("showname") for el in root.iter("field") if el.get("name") == "_ws.lua.error"
    ]
    assert not lua_errors, lua_errors
    return root


def decode(
    pcap: Path,
    *,
    analysis: bool = False,
    two_pass: bool | None = None,
    prefs: dict[str, str] | None = None,
) -> list[DecodedFrame]:
    """Every dtncfdp frame of ``pcap`` (analysis off unless asked; with it,
    tshark's second pass unless ``two_pass`` is False)."""
    args = ["-X", f"lua_script:{LUA}", "-r", str(pcap)]
    args += ["-o", f"{PROTO}.analysis:{'TRUE' if analysis else 'FALSE'}"]
    if analysis if two_pass is None else two_pass:
        args.append("-2")
    for name, value in (prefs or {}).items():
        args += ["-o", f"{PROTO}.{name}:{value}"]
    return frames_of(tshark_pdml(args), PROTO, FIELDS, label=LABEL, protocol="cfdp")


def write_pcap(path: Path, payloads: list[bytes], *, dport: int = PORT) -> Path:
    pkts = [
        Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=SPORT, dport=dport) / Raw(p)
        for p in payloads
    ]
    wrpcap(str(path), pkts)
    return path


def listed(value: FieldValue) -> list[int | str | bool]:
    """A repeated field's values (dissectors/tshark.py makes each a list)."""
    assert isinstance(value, list), value
    return value


def experts_of(frame: DecodedFrame) -> set[str]:
    prefix = f"{PROTO}.expert."
    return {e["name"][len(prefix) :] for e in frame.experts if e["name"].startswith(prefix)}


# ---------------------------------------------------------------------------
# What the dissector must show for a PDU: read off the Scapy layer
# ---------------------------------------------------------------------------


def vocabulary_fields(pdu: Packet) -> dict[str, Any]:
    """The PDU's fields in the classifier's vocabulary (wire.json "fields"),
    with the classifier's values, from the layer's own dissection."""
    return dict(classify(CFDP(bytes(pdu))))


def _add(want: dict[str, Any], key: str, value: Any) -> None:
    """Repeated fields as lists; a second value of another field makes one."""
    if key in FIELDS.repeated:
        want.setdefault(key, []).append(value)
    elif key in want:
        prior = want[key]
        want[key] = (prior if isinstance(prior, list) else [prior]) + [value]
    else:
        want[key] = value


def tlv_fields(want: dict[str, Any], tlv: Packet) -> None:
    kind, value = tlv.getfieldval("type"), bytes(tlv)[2:]
    _add(want, "tlv.type", kind)
    _add(want, "tlv.length", len(value))
    _add(want, "tlv.value", value.hex())
    name = TLV_TYPES.get(kind)
    if name == "entity_id" and 1 <= len(value) <= 8:
        _add(want, "tlv.entity_id", int.from_bytes(value, "big"))
    elif name in ("filestore_request", "filestore_response"):
        action = value[0] >> 4
        _add(want, "fs.action", action)
        _add(want, "fs.spare" if name == "filestore_request" else "fs.status", value[0] & 0x0F)
        pos = 1
        parts = ["first_file_name"] + (["second_file_name"] if action in (2, 3, 4) else [])
        parts += ["message"] if name == "filestore_response" else []
        for part in parts:
            n = value[pos]
            _add(want, f"fs.{part}_len", n)
            _add(want, f"fs.{part}", value[pos + 1 : pos + 1 + n].decode())
            pos += 1 + n
    elif name == "message_to_user":
        _add(want, "message_to_user", value.hex())
    elif name == "fault_handler_override":
        _add(want, "fho.condition", value[0] >> 4)
        _add(want, "fho.handler", value[0] & 0x0F)
    elif name == "flow_label":
        _add(want, "flow_label", value.hex())


def expected_fields(pdu: Packet) -> dict[str, Any]:
    """Every dtncfdp.* field (leaf names) the dissector must show for a
    well-formed ``pdu`` with analysis off."""
    want = vocabulary_fields(pdu)
    p = CFDP(bytes(pdu))
    g = p.getfieldval
    want["entity_id_length"] = (bytes(pdu)[3] >> 4 & 7) + 1
    want["sequence_number_length"] = (bytes(pdu)[3] & 7) + 1
    if want["crc"]:
        want["crc_value"] = g("crc_value")
    if isinstance(p, CFDPFileData):
        if g("segment_metadata"):
            want["metadata"] = g("metadata").hex()
        want["data"] = g("data").hex()
        return want
    octet3 = bytes(pdu)[3]
    want["header.segmentation_control"] = bool(octet3 & 0x80)
    want["header.segment_metadata"] = bool(octet3 & 0x08)
    if "condition" in p.fieldtype:
        want["condition_code"] = g("condition")
    if isinstance(p, CFDPEOF):
        _add(want, "spare", g("spare"))
        for tlv in g("fault_location"):
            tlv_fields(want, tlv)
    if isinstance(p, CFDPFinished):
        _add(want, "spare", g("spare"))
        for tlv in g("filestore_responses"):
            tlv_fields(want, tlv)
        for tlv in g("fault_location"):
            tlv_fields(want, tlv)
    if isinstance(p, CFDPAck):
        want["ack_of_code"] = g("ack_of")
        _add(want, "spare", g("spare"))
    if isinstance(p, CFDPMetadata):
        _add(want, "spare", g("reserved1"))
        _add(want, "spare", g("reserved2"))
        want["source_file_name_len"] = len(g("source_file_name"))
        want["source_file_name"] = g("source_file_name").decode()
        want["dest_file_name_len"] = len(g("dest_file_name"))
        want["dest_file_name"] = g("dest_file_name").decode()
        for tlv in g("options"):
            tlv_fields(want, tlv)
    if isinstance(p, CFDPNak):
        for start, end in g("segment_requests"):
            _add(want, "segment.start", start)
            _add(want, "segment.end", end)
    if isinstance(p, CFDPPrompt):
        _add(want, "spare", g("spare"))
    return want


# ---------------------------------------------------------------------------
# The PDUs of the round trip
# ---------------------------------------------------------------------------


class HeaderIds(TypedDict):
    """The header's entity IDs and transaction sequence number, as keyword
    arguments of the layer's PDUs."""

    source_entity: int
    transaction: int
    dest_entity: int


IDS: HeaderIds = {"source_entity": 1, "transaction": 3, "dest_entity": 2}
FS_REQUESTS = [
    CFDPTLV(type="filestore_request", value=bytes([0x20, 5]) + b"/a.tx" + bytes([5]) + b"/b.tx"),
    CFDPTLV(type="filestore_request", value=bytes([0x10, 4]) + b"/old"),
]
OPTIONS = [
    *FS_REQUESTS,
    CFDPTLV(type="message_to_user", value=b"hello, world"),
    CFDPTLV(type="fault_handler_override", value=bytes([0x74])),
    CFDPTLV(type="flow_label", value=b"\x02\x01"),
]
FS_RESPONSES = [
    CFDPTLV(
        type="filestore_response",
        value=bytes([0x20, 10])
        + b"/tmp/a.txt"
        + bytes([10])
        + b"/tmp/b.txt"
        + bytes([4])
        + b"busy",
    ),
    CFDPTLV(type="filestore_response", value=bytes([0x11, 10]) + b"/tmp/a.txt" + bytes([0])),
]


def directive_pdus(**common: Any) -> list[tuple[str, Packet]]:
    """One PDU of every directive (and its variants) with ``common`` header
    fields (crc, large_file, mode, ...)."""
    big = 2**40 + 7 if common.get("large_file") else 4096
    return [
        ("eof", CFDPEOF(checksum=0x1234ABCD, file_size=big, **common)),
        ("eof_cancel", CFDPEOF(condition="cancel_request_received", checksum=0xDEADBEEF,
                               file_size=1000, fault_location=2, **common)),
        ("finished", CFDPFinished(**common)),
        ("finished_responses", CFDPFinished(condition="filestore_rejection",
                                            delivery_code="data_incomplete", file_status=1,
                                            filestore_responses=FS_RESPONSES, fault_location=1,
                                            **common)),
        ("ack_eof", CFDPAck(ack_of="eof", transaction_status="active", **common)),
        ("ack_finished", CFDPAck(ack_of="finished", condition="nak_limit_reached",
                                 transaction_status="terminated", **common)),
        ("metadata", CFDPMetadata(closure_requested=1, checksum_type=3, file_size=big,
                                  source_file_name=b"/src/file.bin",
                                  dest_file_name=b"/dst/file.bin", **common)),
        ("metadata_options", CFDPMetadata(checksum_type=15, file_size=0, source_file_name=b"",
                                          dest_file_name=b"", options=OPTIONS, **common)),
        ("nak", CFDPNak(start_of_scope=0, end_of_scope=big,
                        segment_requests=[(0, 0), (100, 200), (big - 5, big)], **common)),
        ("nak_empty", CFDPNak(start_of_scope=100, end_of_scope=200, **common)),
        ("prompt_nak", CFDPPrompt(response_required="nak", **common)),
        ("prompt_keep_alive", CFDPPrompt(response_required="keep_alive", **common)),
        ("keep_alive", CFDPKeepAlive(progress=big - 1, **common)),
    ]  # fmt: skip


def file_data_pdus(**common: Any) -> list[tuple[str, Packet]]:
    off = 2**33 + 5 if common.get("large_file") else 64
    return [
        ("file_data", CFDPFileData(offset=off, data=b"0123456789abcdef", **common)),
        ("file_data_empty", CFDPFileData(offset=off, data=b"", **common)),
        ("file_data_segmeta", CFDPFileData(offset=off, data=b"record", segmentation_control=1,
                                           record_continuation="start_and_end",
                                           metadata=b"\x01\x02\x03", **common)),
        ("file_data_segmeta_empty", CFDPFileData(offset=off, data=b"r", record_continuation="end",
                                                 metadata=b"", **common)),
    ]  # fmt: skip


def round_trip_pdus() -> list[tuple[str, Packet]]:
    pdus: list[tuple[str, Packet]] = []
    for crc in (0, 1):
        for large in (0, 1):
            tag = f"crc{crc}-large{large}"
            for name, pdu in directive_pdus(crc=crc, large_file=large, **IDS):
                pdus.append((f"{name}-{tag}", pdu))
            for name, pdu in file_data_pdus(crc=crc, large_file=large, mode=1, **IDS):
                pdus.append((f"{name}-{tag}", pdu))
    # every entity-ID and sequence-number width, with its largest value
    for width in range(1, 9):
        top = 2 ** (8 * width) - 1
        other = 9 - width
        pdus.append(
            (f"widths-{width}-{other}",
             CFDPEOF(source_entity=top, dest_entity=top - 1, transaction=2 ** (8 * other) - 1,
                     entity_id_length=width, sequence_number_length=other, file_size=1,
                     condition="inactivity_detected", fault_location=top)),
        )  # fmt: skip
        pdus.append(
            (f"widths-{width}-{width}",
             CFDPFileData(source_entity=top // 3, dest_entity=1, transaction=top // 5,
                          entity_id_length=width, sequence_number_length=width, offset=width,
                          data=bytes([width]) * width, crc=1)),
        )  # fmt: skip
    # version 0 (727.0-B-4): the same layout
    pdus.append(("version0-eof", CFDPEOF(version=0, checksum=1, file_size=2, **IDS)))
    pdus.append(("version0-file_data", CFDPFileData(version=0, offset=3, data=b"x", **IDS)))
    return pdus


ROUND_TRIP = round_trip_pdus()


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory: pytest.TempPathFactory) -> list[DecodedFrame]:
    pcap = tmp_path_factory.mktemp("cfdp") / "round_trip.pcap"
    write_pcap(pcap, [bytes(p) for _, p in ROUND_TRIP])
    frames = decode(pcap)
    assert [f.number for f in frames] == list(range(1, len(ROUND_TRIP) + 1))
    return frames


def test_round_trip_covers_the_matrix() -> None:
    names = {n.split("-")[0] for n, _ in ROUND_TRIP}
    kinds = {CFDP(bytes(p)).directive_name for _, p in ROUND_TRIP}
    assert kinds >= set(DIRECTIVES.values())
    assert {"file_data", "file_data_segmeta", "file_data_empty"} <= names
    widths = {(bytes(p)[3] >> 4 & 7) + 1 for _, p in ROUND_TRIP}
    seq_widths = {(bytes(p)[3] & 7) + 1 for _, p in ROUND_TRIP}
    assert widths == seq_widths == set(range(1, 9))
    flags = {(bytes(p)[0] & 2, bytes(p)[0] & 1) for _, p in ROUND_TRIP}
    assert flags == {(0, 0), (0, 1), (2, 0), (2, 1)}


@pytest.mark.parametrize("index", range(len(ROUND_TRIP)), ids=[n for n, _ in ROUND_TRIP])
def test_round_trip(round_trip: list[DecodedFrame], index: int) -> None:
    """Every field built with the Scapy layer is decoded to the layer's value,
    in the classifier's vocabulary and beyond; no expert on a well-formed PDU."""
    frame, (name, pdu) = round_trip[index], ROUND_TRIP[index]
    assert frame.match_fields() == vocabulary_fields(pdu), name
    assert frame.fields == expected_fields(pdu), name
    assert frame.udp_payload_length == len(bytes(pdu))
    assert frame.experts == [], (name, frame.experts)


EMU = REPO / "conformance" / "channel" / "emulator" / "target" / "release" / "dtnc-emu"


@pytest.mark.skipif(not EMU.exists(), reason="the channel emulator is not built")
def test_fields_equal_the_emulator_classifier(tmp_path: Path) -> None:
    """In the shared vocabulary, the dissector says what the Rust classifier
    (conformance/channel/emulator/core/src/classify/cfdp.rs) says, on every
    round-trip PDU and on the classifier's own spacepackets-built vectors."""
    from conformance.channel import control as emulator
    from conformance.tests.test_emulator_classify import CFDP_PDUS

    payloads = [bytes.fromhex(h) for h in CFDP_PDUS.values()] + [bytes(p) for _, p in ROUND_TRIP]
    frames = decode(write_pcap(tmp_path / "vectors.pcap", payloads))
    classified = emulator.classify("cfdp", payloads)
    assert len(frames) == len(classified) == len(payloads)
    for raw, frame, fields in zip(payloads, frames, classified, strict=True):
        assert fields is not None and frame.match_fields() == fields, raw.hex()
        assert frame.experts == [], (raw.hex(), frame.experts)


def test_summary_lines(round_trip: list[DecodedFrame]) -> None:
    by_name = {n: f.summary for (n, _), f in zip(ROUND_TRIP, round_trip, strict=True)}
    assert by_name["eof-crc0-large0"] == "EOF 1->2 tx 3 no_error size 4096 checksum 0x1234abcd"
    assert by_name["ack_finished-crc0-large0"] == (
        "ACK of finished 1->2 tx 3 nak_limit_reached terminated"
    )
    assert by_name["nak-crc0-large1"] == f"NAK 1->2 tx 3 scope [0, {2**40 + 7}) 3 requests"
    assert by_name["file_data-crc1-large0"] == "File Data 1->2 tx 3 [64, 80)"
    assert by_name["metadata-crc0-large0"] == (
        "Metadata 1->2 tx 3 size 4096 /src/file.bin -> /dst/file.bin"
    )


def test_value_strings_are_the_wire_facts() -> None:
    """The code fields' value_strings are wire.json's tables (generated)."""
    out = subprocess.run(
        ["tshark", "-G", "values", "-X", f"lua_script:{LUA}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    tables: dict[str, dict[int, str]] = {}
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) == 4 and parts[0] == "V" and parts[1].startswith(f"{PROTO}."):
            tables.setdefault(parts[1], {})[int(parts[2], 0)] = parts[3]
    assert tables[f"{PROTO}.directive_code"] == DIRECTIVES
    assert tables[f"{PROTO}.condition_code"] == CONDITION_CODES
    assert tables[f"{PROTO}.ack_of_code"] == DIRECTIVES
    assert tables[f"{PROTO}.tlv.type"] == TLV_TYPES
    assert tables[f"{PROTO}.fho.condition"] == CONDITION_CODES


def test_hand_copied_code_names_are_the_layers() -> None:
    """The names of the 1- and 2-bit codes are written in cfdp.lua (luagen
    leaves wire.json's "values" out): they must be the layer's (= wire.json's)."""
    text = LUA.read_text()
    for lua_name, names in [
        ("PDU_TYPES", PDU_TYPES), ("DIRECTIONS", DIRECTIONS), ("MODES", MODES),
        ("DELIVERY_CODES", DELIVERY_CODES), ("RESPONSES_REQUIRED", RESPONSES_REQUIRED),
        ("RECORD_CONTINUATIONS", RECORD_CONTINUATIONS),
    ]:  # fmt: skip
        m = re.search(rf"^local {lua_name} = \{{(.*)\}}$", text, re.M)
        assert m, lua_name
        got = {int(k): v for k, v in re.findall(r'\[(\d+)\] = "([a-z_]+)"', m.group(1))}
        assert got == names, lua_name


def test_generated_block_is_current() -> None:
    """``python -m dissectors.luagen --check cfdp`` passes (dissectors/tests/
    test_luagen.py covers every protocol with a dissector too)."""
    assert "cfdp" in luagen.protocols_with_dissector()
    assert luagen.check("cfdp") == ""
    proc = subprocess.run(
        [sys.executable, "-m", "dissectors.luagen", "--check", "cfdp"],
        cwd=REPO, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def test_port_preference_and_default(tmp_path: Path) -> None:
    pdu = bytes(CFDPPrompt(**IDS))
    assert [f.fields["directive"] for f in decode(write_pcap(tmp_path / "a.pcap", [pdu]))] == [
        "prompt"
    ]
    other = write_pcap(tmp_path / "b.pcap", [pdu], dport=5222)
    assert decode(other) == []
    assert len(decode(other, prefs={"udp_ports": "5222"})) == 1


def test_heuristic_off_by_default_and_strict(tmp_path: Path) -> None:
    good = bytes(CFDPEOF(file_size=10, crc=1, **IDS))
    bad_crc = good[:-1] + bytes([good[-1] ^ 1])
    undefined = bytes(CFDPDirective(directive_code=0x33, **IDS))
    pcap = write_pcap(tmp_path / "h.pcap", [good, good + b"\x00", bad_crc, undefined], dport=6000)
    assert decode(pcap) == []
    frames = decode(pcap, prefs={"heuristic": "TRUE"})
    assert [(f.number, f.fields["directive"]) for f in frames] == [(1, "eof")]


# ---------------------------------------------------------------------------
# CRC
# ---------------------------------------------------------------------------


def test_crc_mismatch(tmp_path: Path) -> None:
    good = bytes(CFDPNak(start_of_scope=0, end_of_scope=10, segment_requests=[(2, 3)], crc=1,
                         **IDS))  # fmt: skip
    bad = good[:-2] + bytes([good[-2] ^ 0x80, good[-1]])
    frames = decode(write_pcap(tmp_path / "crc.pcap", [good, bad]))
    assert frames[0].fields["crc_ok"] is True and frames[0].experts == []
    f = frames[1]
    assert f.fields["crc_ok"] is False
    assert f.fields["crc_value"] == int.from_bytes(bad[-2:], "big")
    assert f.summary.endswith("[bad CRC]")
    (e,) = f.experts
    assert e["name"] == f"{PROTO}.expert.crc_bad"
    assert (e["group"], e["severity"]) == ("checksum", "error")
    assert f"0x{crc16(bad[:-2]):04x} computed" in e["message"]
    assert "727.0-B-5 §5.1" in e["message"]


# ---------------------------------------------------------------------------
# Expert infos
# ---------------------------------------------------------------------------


def _with(raw: bytes, at: int, value: int) -> bytes:
    return raw[:at] + bytes([value]) + raw[at + 1 :]


EOF_BYTES = bytes(CFDPEOF(checksum=1, file_size=10, **IDS))
ACK_BYTES = bytes(CFDPAck(**IDS))
MALFORMED_CASES: list[tuple[str, bytes, str]] = [
    ("one octet", b"\x20", "truncated_header"),
    ("three octets", b"\x20\x00\x01", "truncated_header"),
    ("cut inside the entity IDs", b"\x20\x00\x01\x77\x01\x02\x03", "truncated_header"),
    ("version 2", _with(EOF_BYTES, 0, 0x40), "bad_version"),
    ("data field length too long", _with(EOF_BYTES, 2, EOF_BYTES[2] + 3), "data_field_overrun"),
    ("trailing octets", EOF_BYTES + b"zz", "trailing_bytes"),
    ("CRC flag, 1-octet data field", b"\x22\x00\x01\x00\x01\x03\x02\x09", "crc_missing"),
    ("EOF cut in the checksum", _with(EOF_BYTES[:10], 2, 3), "field_truncated"),
    ("directive without its code", b"\x20\x00\x00\x00\x01\x03\x02", "field_truncated"),
    ("ACK without its second octet", _with(ACK_BYTES[:-1], 2, 2), "field_truncated"),
    ("Metadata file name overruns", bytes(CFDPMetadata(source_file_name=b"abc",
     source_file_name_len=200, **IDS)), "lv_overrun"),
    ("filestore request name overruns its TLV", bytes(CFDPMetadata(
     options=[CFDPTLV(type=0, value=b"\x10\x09ab")], **IDS)), "lv_overrun"),
    # issue 27: a Finished whose filestore response (delete, status 4) has a first
    # file name LV of length 42 in its 13-octet value
    ("filestore response name overruns its TLV (issue 27)",
     bytes.fromhex("280011000107020502010d142a6f746d702f612e54f87400"), "lv_overrun"),
    ("filestore response without its message LV", bytes(CFDPFinished(filestore_responses=[
     CFDPTLV(type=1, value=b"\x20\x01a\x01b")], **IDS)), "lv_overrun"),
    ("EOF fault location TLV overruns", bytes(CFDPEOF(condition=15,
     fault_location=[CFDPTLV(type=6, length=9, value=b"\x02")], **IDS)), "tlv_overrun"),
    ("TLV without its length octet", bytes(CFDPFinished(data_field_length=3, **IDS)) + b"\x06",
     "tlv_overrun"),
    ("segment metadata overruns", bytes(CFDPFileData(metadata=b"ab",
     segment_metadata_length=10, **IDS)), "segment_metadata_overrun"),
    ("NAK with half a segment request", bytes(CFDPNak(segment_requests=[(1, 2)],
     excess=b"\x00\x00\x00\x05", **IDS)), "nak_partial_request"),
    ("ACK with an excess octet", bytes(CFDPAck(excess=b"\x00", **IDS)), "excess_octets"),
    ("Keep Alive with excess octets", bytes(CFDPKeepAlive(excess=b"xy", **IDS)),
     "excess_octets"),
]  # fmt: skip
# the field at fault of each malformed case (dtncfdp.malformed.field,
# CfdpDecodeError.field)
MALFORMED_FIELDS: dict[str, str] = {
    "one octet": "header",
    "three octets": "header",
    "cut inside the entity IDs": "header",
    "version 2": "version",
    "data field length too long": "data_field_length",
    "trailing octets": "data_field_length",
    "CRC flag, 1-octet data field": "crc_value",
    "EOF cut in the checksum": "checksum",
    "directive without its code": "directive_code",
    "ACK without its second octet": "condition",
    "Metadata file name overruns": "source_file_name",
    "filestore request name overruns its TLV": "first_file_name",
    "filestore response name overruns its TLV (issue 27)": "first_file_name",
    "filestore response without its message LV": "filestore_message_len",
    "EOF fault location TLV overruns": "fault_location",
    "TLV without its length octet": "fault_location",
    "segment metadata overruns": "metadata",
    "NAK with half a segment request": "segment_requests",
    "ACK with an excess octet": "excess",
    "Keep Alive with excess octets": "excess",
}
PROTOCOL_CASES: list[tuple[str, Packet | bytes, str]] = [
    ("undefined directive 0x33", CFDPDirective(directive_code=0x33, parameters=b"abc", **IDS),
     "directive_undefined"),
    ("reserved condition 12", CFDPEOF(condition=12, fault_location=1, **IDS),
     "condition_reserved"),
    ("EOF spare bits", CFDPEOF(spare=5, **IDS), "reserved_bits"),
    ("Finished spare bit", CFDPFinished(spare=1, **IDS), "reserved_bits"),
    ("ACK spare bits", CFDPAck(spare=2, **IDS), "reserved_bits"),
    ("Metadata reserved bit", CFDPMetadata(reserved1=1, **IDS), "reserved_bits"),
    ("Metadata reserved bits", CFDPMetadata(reserved2=3, **IDS), "reserved_bits"),
    ("Prompt spare bits", CFDPPrompt(spare=1, **IDS), "reserved_bits"),
    ("filestore request spare bits", CFDPMetadata(
     options=[CFDPTLV(type=0, value=b"\x13\x01a")], **IDS), "reserved_bits"),
    ("version 0 with the large file bit", CFDPKeepAlive(version=0, large_file=1, **IDS),
     "reserved_bits"),
    ("version 0 with the segment metadata bit", CFDPFileData(version=0, metadata=b"", **IDS),
     "reserved_bits"),
    ("version 0 Metadata with closure requested", CFDPMetadata(version=0, closure_requested=1,
     **IDS), "reserved_bits"),
    ("EOF toward the sender", CFDPEOF(direction=1, **IDS), "direction_unexpected"),
    ("ACK(EOF) toward the receiver", CFDPAck(direction=0, **IDS), "direction_unexpected"),
    ("NAK toward the receiver", CFDPNak(direction=0, **IDS), "direction_unexpected"),
    ("ACK of a Metadata", CFDPAck(ack_of="metadata", **IDS), "ack_of_invalid"),
    ("ACK of directive 0", CFDPAck(ack_of=0, **IDS), "ack_of_undefined"),
    ("ACK(Finished) with subtype 0", CFDPAck(ack_of="finished", ack_subtype=0, **IDS),
     "ack_subtype"),
    ("EOF(no error) with a fault location", CFDPEOF(fault_location=2, **IDS),
     "fault_location_unexpected"),
    ("Finished(no error) with a fault location", CFDPFinished(fault_location=2, **IDS),
     "fault_location_unexpected"),
    ("Metadata option of type 3", CFDPMetadata(options=[CFDPTLV(type=3, value=b"x")], **IDS),
     "tlv_type_undefined"),
    ("Metadata option of type 9", CFDPMetadata(options=[CFDPTLV(type=9, value=b"")], **IDS),
     "tlv_type_undefined"),
    ("Metadata option entity ID", CFDPMetadata(options=[CFDPEntityIdTLV(entity_id=1)], **IDS),
     "tlv_type_unexpected"),
    ("EOF message to user", CFDPEOF(condition=15, fault_location=[CFDPTLV(type=2,
     value=b"hi")], **IDS), "tlv_type_unexpected"),
    ("EOF TLV after the fault location", CFDPEOF(condition=15, fault_location=[
     CFDPEntityIdTLV(entity_id=1), CFDPTLV(type=5, value=b"")], **IDS), "tlv_type_unexpected"),
    ("Finished flow label", CFDPFinished(condition=8, fault_location=[CFDPTLV(type=5,
     value=b"\x01")], **IDS), "tlv_type_unexpected"),
    ("entity ID TLV of 0 octets", CFDPFinished(condition=1, fault_location=CFDPTLV(type=6,
     value=b""), **IDS), "entity_id_length"),
    ("entity ID TLV of 9 octets", CFDPEOF(condition=1, fault_location=CFDPTLV(type=6,
     value=bytes(9)), **IDS), "entity_id_length"),
    ("fault handler override of 2 octets", CFDPMetadata(options=[CFDPTLV(type=4,
     value=b"\x74\x00")], **IDS), "tlv_value_length"),
    ("checksum type 7", CFDPMetadata(checksum_type=7, **IDS), "checksum_type_unassigned"),
    ("NAK scope inverted", CFDPNak(start_of_scope=10, end_of_scope=5, **IDS),
     "nak_scope_inverted"),
    ("NAK request inverted", CFDPNak(start_of_scope=0, end_of_scope=10,
     segment_requests=[(9, 3)], **IDS), "nak_request_inverted"),
    ("NAK request outside the scope", CFDPNak(start_of_scope=0, end_of_scope=10,
     segment_requests=[(20, 30)], **IDS), "nak_request_outside_scope"),
]  # fmt: skip


@pytest.fixture(scope="module")
def expert_frames(tmp_path_factory: pytest.TempPathFactory) -> list[DecodedFrame]:
    payloads = [c[1] for c in MALFORMED_CASES] + [bytes(c[1]) for c in PROTOCOL_CASES]
    pcap = write_pcap(tmp_path_factory.mktemp("cfdp") / "experts.pcap", payloads)
    frames = decode(pcap)
    assert len(frames) == len(payloads)
    return frames


@pytest.mark.parametrize("index", range(len(MALFORMED_CASES)), ids=[c[0] for c in MALFORMED_CASES])
def test_malformed_expert(expert_frames: list[DecodedFrame], index: int) -> None:
    frame = expert_frames[index]
    case, raw, slug = MALFORMED_CASES[index]
    hits = [e for e in frame.experts if e["name"] == f"{PROTO}.expert.{slug}"]
    assert hits, frame.experts
    assert all(e["group"] == "malformed" and e["severity"] == "error" for e in hits)
    assert all("727.0-B-5" in e["message"] for e in hits)
    # the field at fault: the one the Scapy layer's strict parse blames
    assert frame.fields["malformed.field"] == MALFORMED_FIELDS[case]
    with pytest.raises(CfdpDecodeError) as caught:
        parse(raw)
    assert (caught.value.kind, caught.value.field) == (CfdpFault.MALFORMED, MALFORMED_FIELDS[case])


@pytest.mark.parametrize("index", range(len(PROTOCOL_CASES)), ids=[c[0] for c in PROTOCOL_CASES])
def test_protocol_expert(expert_frames: list[DecodedFrame], index: int) -> None:
    frame = expert_frames[len(MALFORMED_CASES) + index]
    slug = PROTOCOL_CASES[index][2]
    hits = [e for e in frame.experts if e["name"] == f"{PROTO}.expert.{slug}"]
    assert hits, frame.experts
    assert all(e["group"] == "protocol" for e in hits)
    assert all("727.0-B-5" in e["message"] for e in hits)
    # a well-formed PDU never gets a MALFORMED expert
    assert not [e for e in frame.experts if e["group"] == "malformed"]


def test_malformed_pdus_still_show_what_parses(expert_frames: list[DecodedFrame]) -> None:
    by_case = {c[0]: f for c, f in zip(MALFORMED_CASES, expert_frames, strict=False)}
    f = by_case["Metadata file name overruns"].fields
    assert f["source_file_name_len"] == 200 and f["directive"] == "metadata"
    f = by_case["EOF fault location TLV overruns"].fields
    assert (
        f["tlv.type"] == [6]
        and f["tlv.length"] == [9]
        and f["condition"] == ("cancel_request_received")
    )
    f = by_case["data field length too long"].fields
    assert f["file_size"] == 10  # decoded from what is there
    f = by_case["cut inside the entity IDs"].fields
    assert f["entity_id_length"] == 8 and "source_entity" not in f


# ---------------------------------------------------------------------------
# Transaction analysis
# ---------------------------------------------------------------------------

FILE = b"The quick brown fox jumps over the lazy dog."  # 44 octets: 11 words


def modular(data: bytes) -> int:
    padded = data + bytes(-len(data) % 4)
    return sum(int.from_bytes(padded[i : i + 4], "big") for i in range(0, len(padded), 4)) % 2**32


def _ids(tx: int, **kw: Any) -> dict[str, Any]:
    return dict(source_entity=1, dest_entity=2, transaction=tx, **kw)


def _fd(tx: int, start: int, end: int, data: bytes = FILE, **kw: Any) -> bytes:
    return bytes(CFDPFileData(offset=start, data=data[start:end], **_ids(tx, **kw)))


def _md(tx: int, size: int = len(FILE), checksum_type: int = 0, **kw: Any) -> bytes:
    return bytes(CFDPMetadata(file_size=size, checksum_type=checksum_type,
                              source_file_name=b"a", dest_file_name=b"b", **_ids(tx, **kw)))  # fmt: skip


def _eof(tx: int, size: int = len(FILE), checksum: int | None = None, **kw: Any) -> bytes:
    ck = modular(FILE[:size]) if checksum is None else checksum
    return bytes(CFDPEOF(file_size=size, checksum=ck, **_ids(tx, **kw)))


def _ack(tx: int, of: str, **kw: Any) -> bytes:
    return bytes(CFDPAck(ack_of=of, **_ids(tx, **kw)))


def _fin(tx: int, **kw: Any) -> bytes:
    return bytes(CFDPFinished(**_ids(tx, **kw)))


def _nak(tx: int, start: int, end: int, requests: list[tuple[int, int]], **kw: Any) -> bytes:
    return bytes(CFDPNak(start_of_scope=start, end_of_scope=end, segment_requests=requests,
                         **_ids(tx, **kw)))  # fmt: skip


U: dict[str, Any] = {"mode": "unacknowledged"}
# (frame payload, the analysis experts it must carry), in capture order
CAPTURE: list[tuple[bytes, set[str]]] = [
    # tx 1: a correct Class 2 transfer: no expert at all
    (_md(1), set()),  # 1
    (_fd(1, 0, 20), set()),  # 2
    (_fd(1, 20, 44), set()),  # 3
    (_eof(1), set()),  # 4
    (_ack(1, "eof"), set()),  # 5
    (_fin(1), set()),  # 6
    (_ack(1, "finished"), set()),  # 7
    # tx 2: the EOF's file size is below the data sent (and not the Metadata's)
    (_md(2, **U), set()),  # 8
    (_fd(2, 0, 44, **U), set()),  # 9
    (_eof(2, size=40, **U), {"file_size_error", "size_mismatch"}),  # 10
    # ... and file data beyond the EOF's size after it
    (_fd(2, 40, 44, **U), {"file_size_error", "retransmission"}),  # 11
    # tx 3: a wrong modular checksum
    (_md(3, **U), set()),  # 12
    (_fd(3, 0, 44, **U), set()),  # 13
    (_eof(3, checksum=modular(FILE) ^ 1, **U), {"checksum_mismatch"}),  # 14
    # tx 4: a NAK for data never sent (beyond the EOF's size), one for data never
    # seen before the EOF (beyond the data and the Metadata's size)
    (_md(4, size=0), set()),  # 15
    (_fd(4, 0, 10), set()),  # 16
    (_nak(4, 0, 100, [(10, 100)]), {"nak_never_sent"}),  # 17
    (_eof(4), set()),  # 18
    (_ack(4, "eof"), set()),  # 19
    (_nak(4, 0, 44, [(10, 44)]), set()),  # 20
    (_nak(4, 0, 60, [(44, 60)]), {"nak_never_sent"}),  # 21
    (_fd(4, 10, 44), set()),  # 22
    (_fin(4), set()),  # 23
    (_ack(4, "finished"), set()),  # 24
    # tx 5: ACKs of nothing seen; an ACK whose condition is not its EOF's
    (_ack(5, "eof"), {"ack_unmatched"}),  # 25
    (_ack(5, "finished"), {"ack_unmatched"}),  # 26
    (_eof(5, size=0), set()),  # 27
    (_ack(5, "eof", condition="cancel_request_received"), {"ack_condition_mismatch"}),  # 28
    # tx 6 (Class 1 with closure): Finished(complete) with a gap, then a NAK
    (_md(6, **U), set()),  # 29
    (_fd(6, 0, 20, **U), set()),  # 30
    (_eof(6, **U), set()),  # 31
    (_fin(6, **U), {"finished_with_gaps"}),  # 32
    (_nak(6, 0, 44, [(20, 44)], **U), {"nak_after_complete"}),  # 33
    # tx 7 (Class 2): EOF and Finished never acknowledged; a retransmission
    (_md(7), set()),  # 34
    (_fd(7, 0, 44), set()),  # 35
    (_fd(7, 0, 20), {"retransmission"}),  # 36
    (_eof(7), {"eof_no_ack"}),  # 37
    (_fin(7), {"finished_no_ack"}),  # 38
    # tx 8: the last data after the EOF: the checksum is checked on the
    # second pass, and is wrong
    (_md(8, **U), set()),  # 39
    (_fd(8, 0, 20, **U), set()),  # 40
    (_eof(8, checksum=modular(FILE) + 1, **U), {"checksum_mismatch"}),  # 41
    (_fd(8, 20, 44, **U), set()),  # 42
]
ANALYSIS_EXPERTS = {
    "file_size_error", "size_mismatch", "checksum_mismatch", "finished_with_gaps",
    "nak_never_sent", "nak_after_complete", "ack_condition_mismatch", "ack_unmatched",
    "retransmission", "eof_no_ack", "finished_no_ack",
}  # fmt: skip


@pytest.fixture(scope="module")
def analysis_pcap(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_pcap(tmp_path_factory.mktemp("cfdp") / "analysis.pcap", [p for p, _ in CAPTURE])


@pytest.fixture(scope="module")
def analysis_frames(analysis_pcap: Path) -> list[DecodedFrame]:
    frames = decode(analysis_pcap, analysis=True)
    assert len(frames) == len(CAPTURE)
    return frames


@pytest.mark.parametrize(
    "index", range(len(CAPTURE)), ids=[f"frame{i + 1}" for i in range(len(CAPTURE))]
)
def test_each_frame_carries_exactly_its_analysis_experts(
    analysis_frames: list[DecodedFrame], index: int
) -> None:
    frame = analysis_frames[index]
    assert experts_of(frame) == CAPTURE[index][1], frame.experts


def test_correct_transfer_is_linked_and_silent(analysis_frames: list[DecodedFrame]) -> None:
    f = {fr.number: fr.fields for fr in analysis_frames}
    assert all(analysis_frames[n - 1].experts == [] for n in range(1, 8))
    # sizes and the data seen
    assert f[4]["analysis.file_size"] == 44 and f[4]["analysis.seen"] == 44
    assert f[4]["analysis.gaps"] == 0 and f[2]["analysis.gaps"] == 1
    assert f[4]["analysis.checksum"] == modular(FILE) == f[4]["checksum"]
    assert f[2]["analysis.metadata_frame"] == 1
    assert f[2]["analysis.retransmission"] is False
    # EOF -> ACK(EOF), EOF -> Finished -> ACK(Finished)
    assert f[4]["analysis.ack_frame"] == [5] and f[4]["analysis.finished_frame"] == [6]
    assert f[5]["analysis.acks_frame"] == 4
    assert f[6]["analysis.eof_frame"] == 4 and f[6]["analysis.ack_frame"] == [7]
    assert f[7]["analysis.acks_frame"] == 6
    for n in (5, 6, 7):
        response_time = f[n]["analysis.response_time"]
        assert isinstance(response_time, str) and re.fullmatch(r"0\.[0-9]{9}", response_time)
    # the NAKs of tx 4: what they asked for that the capture had seen
    assert f[17]["analysis.requested_seen"] == 0
    assert f[20]["analysis.requested_seen"] == 0
    # the checksum of tx 8 known only at the end of the capture
    assert f[41]["analysis.checksum"] == modular(FILE)


def test_analysis_expert_groups(analysis_frames: list[DecodedFrame]) -> None:
    groups = {e["name"][len(PROTO) + 8 :]: (e["group"], e["severity"])
              for fr in analysis_frames for e in fr.experts}  # fmt: skip
    assert groups == {
        "file_size_error": ("protocol", "error"),
        "size_mismatch": ("protocol", "warning"),
        "checksum_mismatch": ("protocol", "error"),
        "finished_with_gaps": ("protocol", "warning"),
        "nak_never_sent": ("protocol", "warning"),
        "nak_after_complete": ("protocol", "warning"),
        "ack_condition_mismatch": ("protocol", "warning"),
        "ack_unmatched": ("sequence", "warning"),
        "retransmission": ("sequence", "chat"),
        "eof_no_ack": ("sequence", "warning"),
        "finished_no_ack": ("sequence", "warning"),
    }


def test_one_pass_gives_no_look_ahead(analysis_pcap: Path) -> None:
    """Without the second pass what needs later frames is absent, what looks
    back is there."""
    one = decode(analysis_pcap, analysis=True, two_pass=False)
    names = set().union(*(experts_of(fr) for fr in one))
    assert "eof_no_ack" not in names and "finished_no_ack" not in names
    assert "file_size_error" in names and "checksum_mismatch" in names
    assert experts_of(one[40]) == set()  # tx 8's checksum: only with the whole capture
    assert "analysis.ack_frame" not in one[3].fields


def test_analysis_off(analysis_pcap: Path) -> None:
    plain = decode(analysis_pcap)
    assert not any(k.startswith("analysis.") for fr in plain for k in fr.fields)
    assert not set().union(*(experts_of(fr) for fr in plain)) & ANALYSIS_EXPERTS


def test_every_registered_expert_is_triggered_by_a_test_capture() -> None:
    registered = set(re.findall(r'new_expert\("([a-z_0-9]+)"', LUA.read_text()))
    triggered = {c[2] for c in MALFORMED_CASES} | {c[2] for c in PROTOCOL_CASES}
    triggered |= set().union(*(want for _, want in CAPTURE)) | {"crc_bad"}
    assert registered == triggered, (registered - triggered, triggered - registered)


def test_every_expert_cites_the_standard_or_says_none() -> None:
    """Each expert's text cites 727.0-B-5, says "no § cited", or is an
    observation of the capture (SEQUENCE)."""
    text = LUA.read_text()
    for m in re.finditer(
        r'new_expert\("([a-z_]+)",\s*(.*?),\s*(MAL|PROTO|SEQ|CHECKSUM), ', text, re.S
    ):
        slug, body, group = m.groups()
        if group != "SEQ" or slug in ("eof_no_ack", "finished_no_ack"):
            assert re.search(r"C\.|SPEC|no § cited", body), slug


# ---------------------------------------------------------------------------
# Comparison with Wireshark's built-in cfdp dissector (4.0, 727.0-B-4)
# ---------------------------------------------------------------------------

BUILTIN_FIELDS = FieldTypes(
    bytes_fields=frozenset(
        {"segment_requests", "user_data", "entity", "message_to_user", "flow_label",
         "filestore_message"}
    ),
    str_fields=frozenset(
        {"src_file_name", "dst_file_name", "first_file_name", "second_file_name"}
    ),
    repeated=frozenset(
        {"condition_code", "entity", "action_code", "first_file_name", "second_file_name",
         "message_to_user", "flow_label", "handler_code", "filestore_message"}
    ),
)  # fmt: skip


def decode_builtin(pcap: Path) -> list[DecodedFrame]:
    root = tshark_pdml(["-r", str(pcap), "-d", f"udp.port=={PORT},cfdp"])
    return frames_of(root, "cfdp", BUILTIN_FIELDS, protocol="cfdp")


def _code(names: dict[int, str]) -> Any:
    codes = {v: k for k, v in names.items()}
    return lambda v: codes[v]


def _same(v: Any) -> Any:
    return v


# our leaf -> (built-in leaf, our value as the built-in shows it); a list
# field of ours is compared with the built-in's whole list, a scalar with the
# built-in's first value
MAPPING: dict[str, tuple[str, Any]] = {
    "version": ("version", _same),
    "pdu_type": ("pdu_type", _code(PDU_TYPES)),
    "direction": ("direction", _code(DIRECTIONS)),
    "mode": ("trans_mode", _code(MODES)),
    "crc": ("crc_flag", int),
    "large_file": ("res1", int),  # B-4's "Bit reserved 1"
    "data_field_length": ("data_length", _same),
    "entity_id_length": ("entid_length", lambda v: v - 1),  # the wire's width less one
    "sequence_number_length": ("transeqnum_length", lambda v: v - 1),
    "source_entity": ("srcid", _same),
    "transaction": ("transeqnum", _same),
    "dest_entity": ("dstid", _same),
    "directive_code": ("fdtype", _same),
    "condition_code": ("condition_code", _same),
    "checksum": ("checksum", _same),
    "file_size": ("file_size", _same),
    "offset": ("offset", _same),
    "progress": ("progress", _same),
    "start_of_scope": ("nak_st_scope", _same),
    "end_of_scope": ("nak_sp_scope", _same),
    "ack_of_code": ("dir_code_ack", _same),
    "ack_subtype": ("dir_subtype_ack", _same),
    "transaction_status": ("trans_stat_ack", _code(TRANSACTION_STATUSES)),
    "delivery_code": ("delivery_code", _code(DELIVERY_CODES)),
    "file_status": ("file_status", _code(FILE_STATUSES)),
    "response_required": ("response_req", _code(RESPONSES_REQUIRED)),
    "crc_value": ("crc", _same),
    "source_file_name": ("src_file_name", _same),
    "dest_file_name": ("dst_file_name", _same),
    "data": ("user_data", _same),
    "fault_location": ("entity", _same),  # compared as the TLV's value octets, below
    "fs.action": ("action_code", _same),
    "fs.first_file_name": ("first_file_name", _same),
    "fs.second_file_name": ("second_file_name", _same),
    "fs.message": ("filestore_message", lambda v: v.encode().hex()),
    "message_to_user": ("message_to_user", _same),
    "flow_label": ("flow_label", _same),
    "fho.handler": ("handler_code", _same),
}


def compare(ours: DecodedFrame, theirs: DecodedFrame) -> dict[str, tuple[Any, Any]]:
    """Every mapped field where the two differ: ours (as the built-in would
    show it) and theirs (None: the built-in does not show it)."""
    out = {}
    for key, (their_key, render) in MAPPING.items():
        if key not in ours.fields:
            continue
        value = ours.fields[key]
        other = theirs.fields.get(their_key)
        if key == "fault_location":  # the built-in shows the entity ID TLV's octets
            tlv_values = listed(ours.fields["tlv.value"])  # hex strings
            same: list[int | str | bool] = [
                v for v in tlv_values if isinstance(v, str) and int(v, 16) == value
            ]
            value = same[-1:]
        if isinstance(value, list):
            mine: Any = [render(v) for v in value]
            if other is not None and not isinstance(other, list):
                other = [other]
        else:
            mine = render(value)
            if isinstance(other, list):
                other = other[0]
        if mine != other:
            out[key] = (mine, other)
    return out


# The PDUs both dissectors decode: every round-trip PDU of version 1 with
# small-file FSS fields and no segment metadata, plus the cases where the
# built-in differs.
COMPARED = [(n, p) for n, p in ROUND_TRIP if "large1" not in n]
BIG_IDS: HeaderIds = {"source_entity": 2**40 + 1, "transaction": 2**60 + 3, "dest_entity": 2}


def builtin_cases() -> list[tuple[str, Packet]]:
    return COMPARED + [
        ("large-eof", CFDPEOF(large_file=1, checksum=7, file_size=2**33 + 5, **IDS)),
        ("large-file_data", CFDPFileData(large_file=1, offset=2**32 + 7, data=b"xyz", **IDS)),
        ("large-nak", CFDPNak(large_file=1, start_of_scope=2**32, end_of_scope=2**32 + 9,
                              segment_requests=[(2**32 + 1, 2**32 + 2)], **IDS)),
        ("large-keep_alive", CFDPKeepAlive(large_file=1, progress=2**32 + 1, **IDS)),
        ("condition-10", CFDPEOF(condition="check_limit_reached", fault_location=2, **IDS)),
        ("wide-ids-eof", CFDPEOF(file_size=10, **BIG_IDS)),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def builtin_comparison(
    tmp_path_factory: pytest.TempPathFactory,
) -> list[tuple[str, DecodedFrame, DecodedFrame, dict[str, tuple[Any, Any]]]]:
    cases = builtin_cases()
    pcap = write_pcap(tmp_path_factory.mktemp("cfdp") / "builtin.pcap",
                      [bytes(p) for _, p in cases])  # fmt: skip
    ours, theirs = decode(pcap), decode_builtin(pcap)
    assert len(ours) == len(cases)
    by_number = {f.number: f for f in theirs}
    return [
        (name, o, by_number[o.number], compare(o, by_number[o.number]))
        for (name, _), o in zip(cases, ours, strict=True)
        if o.number in by_number
    ]


FINDINGS = "reports/findings/cfdp/"
# The built-in's differences, by cause (each a named property of the B-4
# layout or a bug, most already a finding):
LARGE_FILE = (
    "B-4 layout: no large-file flag, FSS fields read as 32 bits ("
    + FINDINGS
    + "wireshark-4.0.17-cfdp-large-file-segment-metadata.md)"
)
SEGMENT_METADATA = (
    "B-4 layout: no segment metadata, its octets read as the offset ("
    + FINDINGS
    + "wireshark-4.0.17-cfdp-large-file-segment-metadata.md)"
)
TRAILING_TLVS = (
    "bug: the TLVs in an EOF's or Metadata's last header-length octets are "
    "skipped, and the CRC is read from the start of the options ("
    + FINDINGS
    + "wireshark-4.0.17-cfdp-eof-metadata-options-skipped.md)"
)
FS_RESPONSE = (
    "bug: a filestore response is over-read, what follows it is lost ("
    + FINDINGS
    + "wireshark-4.0.17-cfdp-filestore-response-overread.md)"
)
FS_REQUEST = (
    "bug (new): a second file name is read past the end of every filestore "
    "request TLV, even Create/Delete, swallowing the next option"
)
EMPTY_LV = "display: an empty file name LV gets no item"


def expected_builtin_differences(name: str, f: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """What the built-in shows differently for the case ``name`` whose fields
    (ours) are ``f``, with the cause of each difference (see above)."""
    base, crc = name.split("-")[0], f.get("crc")
    d: dict[str, tuple[Any, Any]] = {}
    if base.startswith("file_data_segmeta"):  # SEGMENT_METADATA
        cont = {"neither": 0, "start": 1, "end": 2, "start_and_end": 3}[f["record_continuation"]]
        octets = bytes([cont << 6 | f["segment_metadata_length"]]) + bytes.fromhex(f["metadata"])
        octets += f["offset"].to_bytes(4, "big") + bytes.fromhex(f["data"])
        d["offset"] = (f["offset"], int.from_bytes(octets[:4], "big"))
        d["data"] = (f["data"], octets[4:].hex())
    if f.get("directive") == "eof" and "fault_location" in f:  # TRAILING_TLVS
        d["fault_location"] = (f["tlv.value"], None)
        if crc:
            d["crc_value"] = (f["crc_value"], 0x0600 | f["tlv.length"][0])  # type 6, length
    if base == "metadata_options":
        d["source_file_name"] = d["dest_file_name"] = ("", None)  # EMPTY_LV
        # FS_REQUEST: the Delete request's "second name" is the next TLV's
        # type octet (2) as its length, then "\x0ch"; that message is lost
        d["fs.second_file_name"] = (["/b.tx"], ["/b.tx", "\\xch"])
        d["message_to_user"] = (f["message_to_user"], None)
        # TRAILING_TLVS: the fault handler override and the flow label
        d["fho.handler"] = ([4], None)
        d["flow_label"] = (["0201"], None)
        if crc:
            d["crc_value"] = (f["crc_value"], 0x0401)  # the override's type and length
    if base == "finished_responses":  # FS_RESPONSE
        d["fs.action"] = ([2, 1], [2])
        d["fs.first_file_name"] = (["/tmp/a.txt", "/tmp/a.txt"], ["/tmp/a.txt"])
        d["fs.message"] = ([b"busy".hex(), ""], None)
        d["fault_location"] = (["01"], None)
        if crc:
            d["crc_value"] = (f["crc_value"], None)
    if base == "large":  # LARGE_FILE: the first 4 octets of each 8-octet field
        for key in ("file_size", "offset", "progress", "start_of_scope"):
            if key in f:
                d[key] = (f[key], f[key] >> 32)
        if "end_of_scope" in f:  # the low half of the start of scope
            d["end_of_scope"] = (f["end_of_scope"], f["start_of_scope"] & 0xFFFFFFFF)
        if "data" in f:
            d["data"] = (f["data"], (f["offset"] & 0xFFFFFFFF).to_bytes(4, "big").hex() + f["data"])
    return d


def test_compare_with_builtin(
    builtin_comparison: list[tuple[str, DecodedFrame, DecodedFrame, dict[str, tuple[Any, Any]]]],
) -> None:
    """Both dissectors agree on every mapped field except the named
    differences; and they decode every PDU."""
    assert len(builtin_comparison) == len(builtin_cases())
    compared = 0
    for name, ours, _, diff in builtin_comparison:
        assert diff == expected_builtin_differences(name, ours.fields), name
        compared += sum(1 for k in MAPPING if k in ours.fields)
    assert compared > 600


def test_builtin_agrees_on_every_entity_id_width(
    builtin_comparison: list[tuple[str, DecodedFrame, DecodedFrame, dict[str, tuple[Any, Any]]]],
) -> None:
    widths = set()
    for name, ours, theirs, _ in builtin_comparison:
        if name.startswith("widths-"):
            widths.add(ours.fields["entity_id_length"])
            for key in ("source_entity", "transaction", "dest_entity"):
                assert ours.fields[key] == theirs.fields[MAPPING[key][0]], (name, key)
    assert widths == set(range(1, 9))


def test_builtin_reads_b5_metadata_as_b4(tmp_path: Path) -> None:
    """B-4 layout: the built-in shows closure requested and the checksum type
    (727.0-B-5 §5.2.5, Table 5-9) as 7 spare bits after a "segmentation
    control" bit, and the Finished's B-5 spare bit as B-4's end system status."""
    md = CFDPMetadata(closure_requested=1, checksum_type=3, file_size=9,
                      source_file_name=b"/src/file.bin", dest_file_name=b"/dst/file.bin", **IDS)  # fmt: skip
    fin = CFDPFinished(**IDS)
    pcap = write_pcap(tmp_path / "b4.pcap", [bytes(md), bytes(fin)])
    (ours_md, ours_fin), (theirs_md, theirs_fin) = decode(pcap), decode_builtin(pcap)
    assert (ours_md.fields["closure_requested"], ours_md.fields["checksum_type"]) == (True, 3)
    assert theirs_md.fields["segment_control"] == 0
    assert theirs_md.fields["spare_seven"] == 0x43  # closure requested 0x40 | checksum type 3
    assert not {"closure_requested", "checksum_type"} & set(theirs_md.fields)
    assert ours_fin.fields["spare"] == 0 and "end_system_status" not in ours_fin.fields
    assert theirs_fin.fields["end_system_stat"] == 0


def test_builtin_leaves_nak_segment_requests_raw(tmp_path: Path) -> None:
    """The built-in shows a NAK's segment requests (727.0-B-5 §5.2.6, Table
    5-11) as one octet string; ours decodes each (start, end)."""
    requests = [(0, 0), (100, 200), (4091, 4096)]
    nak = CFDPNak(start_of_scope=0, end_of_scope=4096, segment_requests=requests, **IDS)
    pcap = write_pcap(tmp_path / "nak.pcap", [bytes(nak)])
    (ours,), (theirs,) = decode(pcap), decode_builtin(pcap)
    starts, ends = listed(ours.fields["segment.start"]), listed(ours.fields["segment.end"])
    assert list(zip(starts, ends, strict=True)) == requests
    assert theirs.fields["segment_requests"] == bytes(nak)[-24:].hex()
    assert not any(k.startswith("segment") and k != "segment_requests" for k in theirs.fields)


def test_builtin_reads_a_second_name_in_every_filestore_request(tmp_path: Path) -> None:
    """Built-in bug (new): a Create or Delete filestore request (one file
    name; the layer and spacepackets write a second only for rename, append
    and replace) is read with a second file name LV past the end of its TLV:
    the next option's type octet is taken as that LV's length, and the option
    is lost. Ours keeps to the TLV's length."""
    messages = [b"hello, world", b"second message, long enough"]
    tail = [CFDPTLV(type="message_to_user", value=m) for m in messages]
    names: dict[str, Any] = dict(
        file_size=256, source_file_name=b"/src/file.bin", dest_file_name=b"/dst/file.bin"
    )
    pdus = [
        CFDPMetadata(options=tail, **names, **IDS),
        CFDPMetadata(options=[CFDPTLV(type=0, value=b"\x10\x04/old"), *tail], **names, **IDS),
        CFDPMetadata(options=[CFDPTLV(type=0, value=b"\x00\x04/new"), *tail], **names, **IDS),
    ]
    pcap = write_pcap(tmp_path / "fsreq.pcap", [bytes(p) for p in pdus])
    ours, theirs = decode(pcap), decode_builtin(pcap)
    for frame in ours:
        assert frame.fields["message_to_user"] == [m.hex() for m in messages]
        assert "fs.second_file_name" not in frame.fields and frame.experts == []
    assert theirs[0].fields["message_to_user"] == [m.hex() for m in messages]
    for frame in theirs[1:]:
        assert frame.fields["second_file_name"] == ["\\xch"]  # 0x02 as a length, then 0c 68
        assert frame.fields["message_to_user"] == [messages[1].hex()]


# ---------------------------------------------------------------------------
# Damaged PDUs: no Lua error, and the experts agree with the layer's strict
# decoder (dissectors/cfdp/layer.py parse)
# ---------------------------------------------------------------------------


def damaged_pdus(seed: int = 727, per_pdu: int = 6) -> list[bytes]:
    import random

    rng = random.Random(seed)
    out: list[bytes] = []
    for _, pdu in ROUND_TRIP:
        raw = bytes(pdu)
        for i in range(per_pdu):
            buf = bytearray(raw)
            how = i % 3
            if how == 0:  # bit flips, half of them in the header
                for _ in range(rng.randint(1, 3)):
                    at = (
                        rng.randrange(min(len(buf), 12))
                        if rng.random() < 0.5
                        else rng.randrange(len(buf))
                    )
                    buf[at] ^= 1 << rng.randrange(8)
            elif how == 1:  # cut short, or random octets appended
                buf = (
                    buf[: rng.randrange(1, len(buf))]
                    if rng.random() < 0.5
                    else buf + bytes(rng.randrange(256) for _ in range(rng.randint(1, 9)))
                )
            else:  # random octets after the header
                for at in range(min(len(buf), 8), len(buf)):
                    if rng.random() < 0.3:
                        buf[at] = rng.randrange(256)
            out.append(bytes(buf))
    return out


@pytest.mark.parametrize("analysis", [False, True], ids=["plain", "analysis"])
def test_damaged_pdus(tmp_path: Path, analysis: bool) -> None:
    from dissectors.cfdp.layer import CfdpDecodeError, parse

    payloads = damaged_pdus()
    frames = decode(write_pcap(tmp_path / "damaged.pcap", payloads), analysis=analysis)
    assert len(frames) == len(payloads)
    for raw, frame in zip(payloads, frames, strict=True):
        groups = {e["group"] for e in frame.experts if e["name"].startswith(PROTO)}
        try:
            parse(raw)
            strict_ok = True
        except CfdpDecodeError:
            strict_ok = False
        if strict_ok:  # what the strict decoder accepts is not malformed here
            assert not groups & {"malformed", "checksum"}, (raw.hex(), frame.experts)
        else:  # what it rejects gets an expert here
            assert groups & {"malformed", "checksum", "protocol"}, (raw.hex(), frame.experts)
