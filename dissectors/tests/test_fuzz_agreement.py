"""Our three decoders of each wire format agree on fuzzed datagrams.

For LTP (RFC 5326) and CFDP (CCSDS 727.0-B-5), well-formed datagrams (the
UDP payloads of the captures under ``reports/findings/<proto>/captures/`` and
PDUs built with the Scapy layers, covering every segment type, directive and
TLV) are mutated with a fixed seed: their octets (bits flipped, octets set,
cut, inserted, deleted, appended, repeated; for CFDP the data field length and
the CRC are often fixed up afterwards, so that the mutation reaches the
parameters behind the header), or one of their fields as the Scapy layer
dissects them (a boundary value, a TLV list reordered, cut or with an item
repeated; the lengths recomputed or left to lie). Every datagram, mutated or
not, goes through

- our Lua dissector, in ONE tshark run per protocol over a pcap of all of
  them (``dissectors/<proto>/<proto>.lua``);
- the Scapy layer's strict decoder (``parse``, with ``classify`` for the
  match fields);
- the channel emulator's classifier, in ONE ``dtnc-emu classify`` run per
  protocol;

and each decoder's answer is projected onto one :class:`Verdict`:

- ``ok``: exactly one well-formed PDU; its match fields (the classifier's
  field set, the ``fields`` of ``specs/<proto>/wire.json``) must be equal,
  type for type, in all three;
- ``bad_crc`` (CFDP): well-formed and valid but for its CRC-16; the fields
  must be equal in all three (the classifier reports ``crc_ok`` false);
- ``malformed``: the octets cannot be laid out as the spec lays them out. The
  Lua dissector shows a MALFORMED expert and names the field at fault
  (``<proto>.malformed.field``), the Scapy layer raises its decode error with
  ``kind`` malformed and ``field``; the two fields must be equal. The
  classifier gives no fields;
- ``invalid`` (CFDP): laid out, but against a rule the strict decoders
  enforce (see :data:`REFUSED`); the Scapy layer raises with ``kind``
  invalid, the classifier gives no fields.

The default suite fuzzes :data:`DEFAULT_COUNT` datagrams per protocol;
``DTNC_DEEP=1`` fuzzes :data:`DEEP_COUNT`. The runs are deterministic
(:data:`SEED`), so a disagreement found once is found again.
"""

from __future__ import annotations

import os
import random
import shutil
import struct
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest
from scapy.packet import Packet

from conformance.channel import control as emulator
from conformance.protocols import get as protocol_spec
from dissectors.cfdp import layer as cfdp
from dissectors.ltp import layer as ltp
from dissectors.tshark import DecodedFrame, frames_of, run_pdml

REPO = Path(__file__).resolve().parents[2]
EMU = REPO / "conformance" / "channel" / "emulator" / "target" / "release" / "dtnc-emu"
FINDINGS = REPO / "reports" / "findings"

SEED = 27  # issue 27
DEFAULT_COUNT = 400
DEEP_COUNT = 6000
DEEP = os.environ.get("DTNC_DEEP") == "1"
PORTS = {"ltp": ltp.UDP_PORT, "cfdp": 5111}  # CFDP: the dissector's default port

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed"),
    pytest.mark.skipif(
        not EMU.exists(),
        reason=f"{EMU} is missing; build it with `cargo build --release` in conformance/channel/emulator",
    ),
]

# The PROTOCOL experts of our CFDP dissector that name a rule the strict
# decoders enforce. What each decoder is FOR differs here: the dissector
# shows every PDU it can lay out and flags a broken rule as PROTOCOL (the
# octets are well delimited), while the Scapy layer's parse() and the
# classifier accept only PDUs they can act on and name: an undefined
# directive code (no layout, no directive name), a fault location that is
# no entity ID TLV of 1-8 octets, comes with no_error or is not last, a TLV
# a PDU does not carry there (a Metadata option of another type), an ACK of
# an undefined directive code (no ack_of name). The other PROTOCOL experts
# (spare bits, reserved condition codes, direction, NAK scope, checksum type,
# a filestore TLV's octets after its LVs, ...) are accepted by all three.
# LTP has none: an undefined segment type is shown, parsed and classified.
REFUSED: dict[str, frozenset[str]] = {
    "ltp": frozenset(),
    "cfdp": frozenset(
        {
            "directive_undefined",
            "tlv_type_unexpected",
            "tlv_type_undefined",
            "entity_id_length",
            "fault_location_unexpected",
            "ack_of_undefined",
        }
    ),
}
CRC_EXPERT = "crc_bad"

FieldMap = dict[str, Any]
Status = Literal["ok", "bad_crc", "invalid", "malformed"]


@dataclass(frozen=True)
class Verdict:
    """One decoder's answer on one datagram, in the common projection."""

    status: Status
    fault: str | None = None  # malformed: the field at fault (None: not told)
    fields: FieldMap | None = None  # ok, bad_crc: the match fields

    def typed_fields(self) -> list[tuple[str, str, Any]] | None:
        """The fields with their types (True == 1 in Python)."""
        if self.fields is None:
            return None
        return sorted((k, type(v).__name__, v) for k, v in self.fields.items())


# ---------------------------------------------------------------------------
# The decoders
# ---------------------------------------------------------------------------


def lua_verdicts(protocol: str, payloads: list[bytes], tmp: Path) -> list[Verdict]:
    """Our Lua dissector's verdict on every payload: one tshark run over a
    pcap of them all (analysis off: each datagram on its own)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw
    from scapy.utils import wrpcap

    port = PORTS[protocol]
    pcap = tmp / f"{protocol}-fuzz.pcap"
    wrpcap(
        str(pcap),
        [Ether() / IP() / UDP(sport=port, dport=port) / Raw(p) for p in payloads],
        linktype=1,
    )
    d = protocol_spec(protocol).dissector
    args = ["-X", f"lua_script:{d.lua}", "-r", str(pcap)]
    args += ["-o", f"{d.proto}.udp_ports:{port}"]
    if d.analysis_pref:
        args += ["-o", f"{d.proto}.{d.analysis_pref}:FALSE"]
    root = run_pdml(args)
    # a Lua runtime error or an exception Wireshark caught in our dissector
    broken = [
        f.get("showname") or f.get("name")
        for f in root.iter("field")
        if f.get("name") in ("_ws.lua.error", "_ws.malformed")
    ]
    assert broken == [], broken[:5]
    frames = frames_of(root, d.proto, d.fields, label=d.label, protocol=protocol)
    assert [f.number for f in frames] == list(range(1, len(payloads) + 1))
    return [lua_verdict(protocol, f) for f in frames]


def lua_verdict(protocol: str, frame: DecodedFrame) -> Verdict:
    names = {e["name"].rsplit(".", 1)[-1] for e in frame.experts}
    if any(e["group"] == "malformed" for e in frame.experts):
        fault = frame.fields.get("malformed.field")
        return Verdict("malformed", fault=fault if isinstance(fault, str) else None)
    if names & REFUSED[protocol]:
        return Verdict("invalid")
    status: Status = "bad_crc" if CRC_EXPERT in names else "ok"
    return Verdict(status, fields=frame.match_fields())


def scapy_verdict(protocol: str, payload: bytes) -> Verdict:
    if protocol == "ltp":
        try:
            return Verdict("ok", fields=ltp.classify(ltp.parse(payload)))
        except ltp.LtpDecodeError as exc:
            return Verdict("malformed", fault=exc.field)
    try:
        return Verdict("ok", fields=cfdp.classify(cfdp.parse(payload)))
    except cfdp.CfdpDecodeError as exc:
        if exc.kind is cfdp.CfdpFault.MALFORMED:
            return Verdict("malformed", fault=exc.field)
        if exc.kind is cfdp.CfdpFault.INVALID:
            return Verdict("invalid")
        # a bad CRC only: the PDU dissects, its fields are there
        pdu = cfdp.CFDP(payload)
        assert isinstance(pdu, cfdp.CFDP)
        return Verdict("bad_crc", fields=cfdp.classify(pdu))


def classifier_verdicts(protocol: str, payloads: list[bytes]) -> list[Verdict | None]:
    """The classifier's verdicts (one ``dtnc-emu classify`` run): None where it
    gives no fields (it does not say why: malformed and invalid alike)."""
    out: list[Verdict | None] = []
    for fields in emulator.classify(protocol, payloads):
        if fields is None:
            out.append(None)
        elif fields.get("crc_ok") is False:
            out.append(Verdict("bad_crc", fields=fields))
        else:
            out.append(Verdict("ok", fields=fields))
    return out


def disagreement(lua: Verdict, scapy: Verdict, rust: Verdict | None) -> str | None:
    """What the three decoders disagree on (None: nothing)."""
    if lua.status != scapy.status:
        return f"Lua says {lua.status}, Scapy says {scapy.status}"
    if (rust is None) != (lua.status in ("malformed", "invalid")):
        return f"Lua and Scapy say {lua.status}, the classifier says {rust and rust.status}"
    if lua.status == "malformed":
        if lua.fault is None or lua.fault != scapy.fault:
            return f"malformed, but Lua blames {lua.fault}, Scapy {scapy.fault}"
        return None
    if rust is not None and rust.status != lua.status:
        return f"Lua and Scapy say {lua.status}, the classifier says {rust.status}"
    if rust is not None and not lua.typed_fields() == scapy.typed_fields() == rust.typed_fields():
        keys = set(lua.fields or {}) | set(scapy.fields or {}) | set(rust.fields or {})
        diff = {
            k: tuple((v.fields or {}).get(k, "-") for v in (lua, scapy, rust))
            for k in sorted(keys)
            if len({repr((v.fields or {}).get(k, "-")) for v in (lua, scapy, rust)}) > 1
        }
        return f"fields differ (Lua, Scapy, classifier): {diff}"
    return None


# ---------------------------------------------------------------------------
# The datagrams
# ---------------------------------------------------------------------------


def captured(protocol: str) -> list[bytes]:
    """The distinct non-empty UDP payloads of the protocol's finding captures."""
    from scapy.layers.inet import UDP
    from scapy.utils import PcapReader

    seen: dict[bytes, None] = {}
    for pcap in sorted(FINDINGS.glob(f"{protocol}/captures/*.pcap")):
        with PcapReader(str(pcap)) as reader:
            for pkt in reader:
                if UDP in pkt:
                    payload = bytes(pkt[UDP].payload)
                    if payload:
                        seen.setdefault(payload, None)
    return list(seen)


def built_ltp() -> list[bytes]:
    """Every segment type, with and without extensions, built with the layer."""
    out = []
    extensions: list[dict[str, Any]] = [
        {},
        dict(header_extensions=[(1, b"\x05")], trailer_extensions=[(0, b"ab")]),
    ]
    for code in sorted(ltp.SEGMENT_TYPES):
        kind = ltp.SEGMENT_TYPES[code]["kind"]
        extra: dict[str, Any] = {}
        if kind in ("red_data", "green_data"):
            extra = dict(client_service_id=1, offset=300, data=b"hello, ltp")
            if code in ltp.CHECKPOINT_TYPES:
                extra.update(checkpoint_serial=70000, report_serial=2)
        elif kind == "report":
            extra = dict(
                report_serial=3,
                checkpoint_serial=2,
                upper_bound=6000,
                lower_bound=1000,
                claims=[(0, 2000), (3000, 500)],
            )
        elif kind == "report_ack":
            extra = dict(report_serial=9)
        elif kind == "cancel":
            extra = dict(reason=2)
        for exts in extensions:
            seg = ltp.LTP(
                type=code, session_originator=16384, session_number=2**33, **extra, **exts
            )
            out.append(bytes(seg))
    return out


def built_cfdp() -> list[bytes]:
    """Every directive and file data variant, with every TLV type, built with
    the layer; entity-ID widths of 1, 2, 4 and 8 octets, with and without CRC
    and the large file flag."""
    tlv = cfdp.CFDPTLV
    fs_responses = [
        tlv(type="filestore_response", value=b"\x10\x0a/tmp/a.txt\x00"),
        tlv(type="filestore_response", value=b"\x21\x02/a\x02/b\x03msg"),
    ]
    options = [
        tlv(type="filestore_request", value=b"\x00\x02/x"),
        tlv(type="filestore_request", value=b"\x40\x02/a\x02/b"),
        tlv(type="message_to_user", value=b"cfdp\x00hello"),
        tlv(type="fault_handler_override", value=b"\x74"),
        tlv(type="flow_label", value=b"\x01\x02"),
    ]
    pdus: list[cfdp.CFDP] = [
        cfdp.CFDPEOF(checksum=0xDEADBEEF, file_size=1000),
        cfdp.CFDPEOF(condition="cancel_request_received", file_size=7, fault_location=2),
        cfdp.CFDPFinished(),
        cfdp.CFDPFinished(
            condition="filestore_rejection",
            delivery_code=1,
            filestore_responses=fs_responses,
            fault_location=1,
        ),
        cfdp.CFDPAck(ack_of="eof"),
        cfdp.CFDPAck(ack_of="finished", condition="cancel_request_received"),
        cfdp.CFDPMetadata(
            closure_requested=1, file_size=4096, source_file_name=b"/src/f", dest_file_name=b"/d"
        ),
        cfdp.CFDPMetadata(source_file_name=b"a", dest_file_name=b"b", options=options),
        cfdp.CFDPNak(start_of_scope=0, end_of_scope=5000, segment_requests=[(0, 10), (20, 30)]),
        cfdp.CFDPPrompt(response_required=1),
        cfdp.CFDPKeepAlive(progress=123456),
        cfdp.CFDPFileData(offset=64, data=b"file data octets"),
        cfdp.CFDPFileData(
            offset=8, data=b"rec", record_continuation="start_and_end", metadata=b"\x01\x02"
        ),
    ]
    out = []
    for i, pdu in enumerate(pdus):
        for j, (width, crc, large) in enumerate([(1, 0, 0), (2, 1, 0), (4, 0, 1), (8, 1, 1)]):
            if (i + j) % 2:  # half of the variants, each width and flag still met
                continue
            built = pdu.copy()
            built.setfieldval("crc", crc)
            built.setfieldval("large_file", large)
            built.setfieldval("source_entity", 1 << (8 * width - 1))
            built.setfieldval("dest_entity", 3)
            built.setfieldval("transaction", 77)
            built.setfieldval("entity_id_length", width)
            out.append(bytes(built))
    return out


def _fix_cfdp(buf: bytearray, rng: random.Random) -> bytearray:
    """Often make the mutated CFDP datagram's data field length and CRC agree
    with it again, so that the mutation reaches past the header checks."""
    if len(buf) >= 4 and rng.random() < 0.6:
        hl = cfdp.header_len(buf[3])
        if hl <= len(buf) and len(buf) - hl <= 0xFFFF:
            buf[1:3] = (len(buf) - hl).to_bytes(2, "big")
            if buf[0] & 0x02 and len(buf) - hl >= 2 and rng.random() < 0.8:
                buf[-2:] = cfdp.crc16(bytes(buf[:-2])).to_bytes(2, "big")
    return buf


# The length and count fields the layers compute when they are None.
_COMPUTED = {
    "ltp": ("length", "claim_count", "hdr_ext_count", "trl_ext_count"),
    "cfdp": (
        "data_field_length",
        "crc_value",
        "length",
        "source_file_name_len",
        "dest_file_name_len",
        "segment_metadata_length",
    ),
}


def _twist(value: Any, rng: random.Random) -> Any:
    """Another value of a field's kind: a boundary or nearby number, other
    octets, a list reordered, cut or with an item repeated."""
    if isinstance(value, list):
        if not value:
            return value
        op = rng.randrange(4)
        if op == 0:
            return value[::-1]
        if op == 1:
            i = rng.randrange(len(value))
            return value[:i] + value[i + 1 :]
        if op == 2:
            item = rng.choice(value)
            copy = item.copy() if isinstance(item, Packet) else item
            return value + [copy]
        return value[1:] + value[:1]
    if isinstance(value, bytes):
        return rng.choice(
            [b"", value[:-1], value + rng.randbytes(rng.randint(1, 4)), rng.randbytes(len(value))]
        )
    if isinstance(value, int):
        return rng.choice(
            [0, 1, value + 1, max(value - 1, 0), value ^ (1 << rng.randrange(8)), rng.randrange(16)]
            + [rng.randrange(256), 2**32 - 1]
        )
    return value


def mutate_field(protocol: str, base: bytes, rng: random.Random) -> bytes | None:
    """``base`` dissected by the Scapy layer, one field of it (or of one of
    its TLVs, extensions or claims) given another value, built again; the
    lengths and counts computed again seven times in ten (else they lie).
    None when the layer cannot dissect ``base`` or refuses to build the
    result (a value that does not fit its field)."""
    layer = ltp.LTP if protocol == "ltp" else cfdp.CFDP
    try:
        pkt = layer(base)
    except ValueError:
        return None
    parts: list[Packet] = [pkt]
    for value in pkt.fields.values():
        if isinstance(value, list):
            parts += [item for item in value if isinstance(item, Packet)]
    target = rng.choice(parts)
    name = rng.choice(sorted(target.fields))
    target.setfieldval(name, _twist(target.getfieldval(name), rng))
    if rng.random() < 0.7:
        for part in parts:
            for computed in _COMPUTED[protocol]:
                if computed in part.fields and (part, computed) != (target, name):
                    part.setfieldval(computed, None)
    try:
        return bytes(pkt) or None
    except (ValueError, TypeError, OverflowError, struct.error):
        return None


def mutate(protocol: str, base: bytes, rng: random.Random) -> bytes:
    """One mutation of ``base`` (or ``base`` itself, one time in ten): of one
    of its fields three times in ten, else of its octets."""
    if rng.random() < 0.3:
        changed = mutate_field(protocol, base, rng)
        if changed is not None:
            return changed
    buf = bytearray(base)
    how = rng.randrange(10)
    if how == 0:
        return base
    if how == 1:  # flip 1-3 bits anywhere
        for _ in range(rng.randint(1, 3)):
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
    elif how == 2:  # flip a bit in the first 16 octets (header, lengths, codes)
        buf[rng.randrange(min(len(buf), 16))] ^= 1 << rng.randrange(8)
    elif how == 3:  # set an octet to a telling value
        buf[rng.randrange(len(buf))] = rng.choice(
            [0x00, 0x01, 0x7F, 0x80, 0xFF, rng.randrange(256)]
        )
    elif how == 4:  # cut short
        del buf[rng.randint(1, max(1, len(buf) - 1)) :]
    elif how == 5:  # append octets
        buf += rng.randbytes(rng.randint(1, 8))
    elif how == 6:  # insert octets
        at = rng.randrange(len(buf) + 1)
        buf[at:at] = rng.randbytes(rng.randint(1, 6))
    elif how == 7:  # delete a run
        at = rng.randrange(len(buf))
        del buf[at : at + rng.randint(1, 6)]
    elif how == 8:  # repeat a run
        at = rng.randrange(len(buf))
        run = buf[at : at + rng.randint(1, 12)]
        buf[at:at] = run
    else:  # several changes to one octet in the second half (parameters, TLVs)
        for _ in range(rng.randint(1, 4)):
            buf[rng.randrange(len(buf) // 2, len(buf))] = rng.randrange(256)
    if protocol == "cfdp":
        buf = _fix_cfdp(buf, rng)
    return bytes(buf) or base[:1]


def fuzzed(protocol: str, count: int) -> list[bytes]:
    """``count`` datagrams: every base datagram once, then mutations of
    them, drawn half from the findings' captures and half from the built
    ones, so that a capture added to the findings does not thin out what
    only the built ones have (CFDP's PDU CRCs)."""
    seen = captured(protocol)
    built = built_ltp() if protocol == "ltp" else built_cfdp()
    bases = seen + built
    rng = random.Random(f"{SEED}/{protocol}")
    out = list(bases[:count])
    while len(out) < count:
        pool = seen if seen and rng.random() < 0.5 else built
        out.append(mutate(protocol, rng.choice(pool), rng))
    return out


# ---------------------------------------------------------------------------
# The tests
# ---------------------------------------------------------------------------


@dataclass
class Outcome:
    payloads: list[bytes]
    verdicts: list[tuple[Verdict, Verdict, Verdict | None]]
    problems: list[str] = field(default_factory=list)

    def statuses(self) -> Counter[str]:
        return Counter(lua.status for lua, _, _ in self.verdicts)


def run_all(protocol: str, payloads: list[bytes]) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="dtnc-fuzz-") as tmp:
        luas = lua_verdicts(protocol, payloads, Path(tmp))
    scapys = [scapy_verdict(protocol, p) for p in payloads]
    rusts = classifier_verdicts(protocol, payloads)
    outcome = Outcome(payloads, list(zip(luas, scapys, rusts, strict=True)))
    for payload, (lua, scapy, rust) in zip(payloads, outcome.verdicts, strict=True):
        why = disagreement(lua, scapy, rust)
        if why is not None:
            outcome.problems.append(f"{payload.hex()}: {why}")
    return outcome


def _report(problems: Iterable[str]) -> str:
    items = list(problems)
    return f"{len(items)} disagreements:\n" + "\n".join(items[:25])


@pytest.mark.parametrize("protocol", ["ltp", "cfdp"])
def test_decoders_agree_on_fuzzed_datagrams(protocol: str) -> None:
    count = DEEP_COUNT if DEEP else DEFAULT_COUNT
    payloads = fuzzed(protocol, count)
    assert len(payloads) == count
    outcome = run_all(protocol, payloads)
    assert outcome.problems == [], _report(outcome.problems)
    # the fuzzing reaches every verdict, not only the easy ones
    seen = outcome.statuses()
    wanted: dict[str, float] = {"ok": 0.1, "malformed": 0.2}
    if protocol == "cfdp":
        wanted |= {"invalid": 0.01, "bad_crc": 0.01}
    for status, share in wanted.items():
        assert seen[status] >= share * count, (status, seen)
    if protocol == "cfdp":  # faults behind the header, not only at it
        faults = Counter(lua.fault for lua, _, _ in outcome.verdicts if lua.status == "malformed")
        assert len(faults) >= 12, faults


# The datagram of issue 27: a Finished (no error, data complete, retained)
# whose one TLV is a filestore response of 13 octets, 0x14 (action 1, delete
# file; status 4) then a first file name LV of length 0x2a (42) where 11
# octets are left. The filestore response's value holds its LVs (see the
# sources named above dissectors.cfdp.layer.filestore_content: spacepackets-py
# and -rs, Yamcs, dariol83/ccsds; §5.4, "Table 5-17"), so the first file name
# runs past the TLV: the Lua dissector was right to flag it, the Scapy layer
# (and the classifier) were wrong to accept it.
ISSUE_27 = bytes.fromhex("280011000107020502010d142a6f746d702f612e54f87400")


def test_issue_27_filestore_response_lv_overrun_is_malformed_for_all_three() -> None:
    with pytest.raises(cfdp.CfdpDecodeError) as caught:
        cfdp.parse(ISSUE_27)
    assert (caught.value.kind, caught.value.field) == (cfdp.CfdpFault.MALFORMED, "first_file_name")
    assert "the first file name LV (length 42) at octet 12 runs past the end of the " in str(
        caught.value
    )
    outcome = run_all("cfdp", [ISSUE_27])
    ((lua, scapy, rust),) = outcome.verdicts
    assert lua == scapy == Verdict("malformed", fault="first_file_name")
    assert rust is None
    assert outcome.problems == []


def test_a_well_formed_filestore_response_is_ok_for_all_three() -> None:
    """The same Finished with the LV lengths put right (first file name of 10
    octets, an empty filestore message) is well-formed for all three."""
    fixed = bytes(
        cfdp.CFDPFinished(
            direction=1,
            source_entity=1,
            transaction=7,
            dest_entity=2,
            filestore_responses=[
                cfdp.CFDPTLV(type="filestore_response", value=b"\x14\x0a/tmp/a.txt\x00")
            ],
        )
    )
    assert fixed[:10] == ISSUE_27[:10] and len(fixed) == len(ISSUE_27)
    content = cfdp.parse(fixed).filestore_responses[0].filestore
    assert content == cfdp.FilestoreContent(
        response=True,
        action_code=1,
        status_code=4,
        spare=None,
        first_file_name=b"/tmp/a.txt",
        second_file_name=None,
        filestore_message=b"",
        extra=b"",
    )
    outcome = run_all("cfdp", [fixed])
    assert outcome.problems == []
    assert outcome.verdicts[0][0].status == "ok"


# What a run's records keep beside the match fields: an LTP report's claims,
# a CFDP NAK's segment requests (ProtocolSpec.extras, our dissector's names).
EXTRAS = {"ltp": ("claim.offset", "claim.length"), "cfdp": ("segment.start", "segment.end")}


@pytest.mark.parametrize("protocol", ["ltp", "cfdp"])
def test_run_records_read_what_the_lua_dissector_shows(protocol: str, tmp_path: Path) -> None:
    """A run's segments are decoded without tshark (the classifier, and the
    Scapy layer for the extras): for every well-formed datagram of the
    corpus, sent forward and back, the record's fields are the Lua
    dissector's match fields and extras, value for value, and its expert
    checks still come from the dissector's own pass."""
    from conformance import pcapkit
    from conformance.segments import dissector_findings, records_from_captures
    from dissectors.tshark import decode

    spec = protocol_spec(protocol)
    port = PORTS[protocol]
    corpus = captured(protocol) + (built_ltp() if protocol == "ltp" else built_cfdp())
    wire = pcapkit.Wire(port=port)
    for k, payload in enumerate(corpus):
        wire.send(k * 0.001, "forward" if k % 2 == 0 else "return", payload)
    # one that is not a unit at all (our dissector flags it)
    wire.send(len(corpus) * 0.001, "forward", b"\xff\x00")
    a, b = wire.write(tmp_path)
    records = records_from_captures(spec, a, b, port=port, ip_a=pcapkit.IP_A)
    assert len(records) == len(corpus) + 1
    shown: dict[tuple[str, int], DecodedFrame] = {}
    for side, pcap in (("forward", a), ("return", b)):
        for frame in decode(pcap, protocol=protocol, port=port):
            shown[(side, frame.number)] = frame
    findings = dissector_findings(spec, a, b, port=port, ip_a=pcapkit.IP_A)
    errors = {
        ("forward" if f.side == "a" else "return", f.frame)
        for f in findings
        if f.severity == "error"
    }
    extras_seen = unread = 0
    for rec in records:
        if not rec.fields:
            # not one well-formed unit (the finding captures hold some made
            # for Wireshark's bugs): the record reads nothing of it, and our
            # dissector's pass flags it as an error, which fails the run
            assert rec.summary == f"not one {spec.unit}"
            assert (rec.direction, rec.frame) in errors, rec.frame
            unread += 1
            continue
        lua = shown[(rec.direction, rec.frame)]
        want: dict[str, Any] = dict(lua.match_fields())
        want |= {k: lua.fields[k] for k in EXTRAS[protocol] if k in lua.fields}
        if protocol == "ltp" and want.get("type") == "RS" and "claim.offset" not in want:
            want |= {"claim.offset": [], "claim.length": []}  # an RS of no claims
        if protocol == "cfdp" and want.get("directive") == "nak" and "segment.start" not in want:
            want |= {"segment.start": [], "segment.end": []}
        assert rec.fields == want, (rec.frame, rec.fields, want)
        assert rec.summary == spec.label(rec.fields)
        extras_seen += any(k in rec.fields for k in EXTRAS[protocol])
    assert extras_seen >= 2  # the corpus has reports / NAKs with extras
    assert 1 <= unread <= len(corpus) // 10 + 1
    assert records[-1].fields == {}  # the two octets
