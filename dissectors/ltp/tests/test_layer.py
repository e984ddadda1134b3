"""The Scapy LTP layer (dissectors/ltp/layer.py) against RFC 5326 §3 and RFC 6256.

Fixed cases name the rule they check. A Hypothesis property round-trips
segments drawn field by field along each class's ``fields_desc``, so a field
added to a layout is drawn (or the strategy fails loudly). Real segments come
from the captures in reports/findings/ltp/captures/ and from the test vectors of
the channel emulator's classifier (conformance/channel/emulator/core/src/classify/ltp.rs,
read at test time), whose expected fields :func:`classify` must equal.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scapy.fields import ConditionalField, PacketListField
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import PcapReader

from conformance.core import wire
from conformance.core.classifiers import vocabulary
from dissectors.ltp.layer import (
    CANCEL_REASONS,
    CHECKPOINT_TYPES,
    EXTENSION_TAGS,
    LTP,
    SDNV_MAX_BYTES,
    SDNV_MAX_VALUE,
    SEGMENT_TYPES,
    TYPE_NAMES,
    UDP_PORT,
    CancelReason,
    LTPCancelAckSegment,
    LTPCancelSegment,
    LTPDataSegment,
    LtpDecodeError,
    LTPExtension,
    LTPReceptionClaim,
    LTPReportAckSegment,
    LTPReportSegment,
    LTPUndefinedControlSegment,
    RawSDNV,
    SDNVField,
    SDNVLenField,
    SegmentType,
    classify,
    max_data_header_len,
    parse,
    sdnv_decode,
    sdnv_encode,
)

ROOT = Path(__file__).resolve().parents[3]
CAPTURES = ROOT / "reports" / "findings" / "ltp" / "captures"
EMULATOR = ROOT / "conformance" / "channel" / "emulator"


def seg(code: int, originator: Any = 1, number: Any = 77, **fields: Any) -> LTP:
    return LTP(type=code, session_originator=originator, session_number=number, **fields)


def tuple_fields(item_cls: object) -> tuple[str, ...]:
    """The ``tuple_fields`` of the item class of a segment's list field
    (extensions, reception claims)."""
    assert isinstance(item_cls, type), item_cls
    assert issubclass(item_cls, (LTPExtension, LTPReceptionClaim)), item_cls
    return item_cls.tuple_fields


# ---------------------------------------------------------------------------
# SDNV (RFC 6256, as RFC 5326 §2 uses it)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "octets"),
    [
        (1, "01"),  # RFC 6256 §2
        (128, "8100"),  # RFC 6256 §2
        (0xABC, "953c"),  # RFC 6256 Appendix A test vectors
        (0x1234, "a434"),
        (0x4234, "818434"),
        (0x7F, "7f"),
        (0, "00"),
        (2**64 - 1, "81ffffffffffffffff7f"),  # the widest value read: 10 octets
    ],
)
def test_sdnv_known_encodings(value: int, octets: str) -> None:
    assert sdnv_encode(value).hex() == octets
    assert sdnv_decode(bytes.fromhex(octets)) == (value, len(octets) // 2)


@given(st.integers(min_value=0, max_value=SDNV_MAX_VALUE), st.binary(max_size=4))
def test_sdnv_round_trip_leaves_the_rest(value: int, rest: bytes) -> None:
    enc = sdnv_encode(value)
    assert sdnv_decode(b"\xff" + enc + rest, 1) == (value, 1 + len(enc))


def test_sdnv_zero_padding_is_read_up_to_ten_octets() -> None:
    """RFC 6256 §2: leading zero bits may be added; a padded SDNV has the same
    value. This tool reads SDNVs of at most 10 octets (wire.json sdnv.max_bytes)."""
    assert SDNV_MAX_BYTES == wire.load("ltp")["sdnv"]["max_bytes"] == 10
    assert sdnv_encode(5, width=3).hex() == "808005"
    assert sdnv_decode(sdnv_encode(5, width=10)) == (5, 10)
    assert RawSDNV.of(5, width=10).value == 5
    with pytest.raises(LtpDecodeError, match="SDNV at byte 0 longer than 10 bytes"):
        sdnv_decode(sdnv_encode(5, width=11))
    with pytest.raises(ValueError, match="more than width 1"):
        sdnv_encode(128, width=1)
    with pytest.raises(ValueError, match="non-negative"):
        sdnv_encode(-1)


@pytest.mark.parametrize(
    ("octets", "pos", "why"),
    [
        ("8182", 0, "SDNV at byte 0 runs past the end"),
        ("00ff", 1, "SDNV at byte 1 runs past the end"),
        ("81" * 11 + "00", 0, "SDNV at byte 0 longer than 10 bytes"),
        ("82" + "80" * 8 + "00", 0, "SDNV at byte 0 exceeds 64 bits"),  # 2**64
    ],
)
def test_sdnv_decode_rejects(octets: str, pos: int, why: str) -> None:
    with pytest.raises(LtpDecodeError, match=why):
        sdnv_decode(bytes.fromhex(octets), pos)


# ---------------------------------------------------------------------------
# The facts come from specs/ltp/wire.json
# ---------------------------------------------------------------------------


def test_tables_are_the_wire_facts() -> None:
    assert wire.names("ltp", "segment_types") == TYPE_NAMES
    assert wire.names("ltp", "cancel_reasons") == CANCEL_REASONS
    assert wire.names("ltp", "extension_tags") == EXTENSION_TAGS
    assert UDP_PORT == wire.load("ltp")["udp_port"] == 1113
    # the enums' members come from wire.json: by name, for the type checker
    assert SegmentType["RD_CP_EORP"] == 2 and SegmentType["CAR"] == 15
    assert CancelReason["RXMTCYCEXC"] == 5
    assert {1, 2, 3} == CHECKPOINT_TYPES


@pytest.mark.parametrize("code", range(16))
def test_each_type_code_has_its_layout(code: int) -> None:
    """RFC 5326 §3.1.2: all 16 codes, the undefined ones (5, 6, 10, 11) too;
    the layout follows the code's kind in wire.json."""
    layout = {
        "red_data": LTPDataSegment,
        "green_data": LTPDataSegment,
        "report": LTPReportSegment,
        "report_ack": LTPReportAckSegment,
        "cancel": LTPCancelSegment,
        "cancel_ack": LTPCancelAckSegment,
        "undefined": LTPUndefinedControlSegment,
    }[SEGMENT_TYPES[code]["kind"]]
    assert type(LTP(type=code)) is layout
    assert type(LTP(type=TYPE_NAMES[code])) is layout
    assert type(LTP(bytes(LTP(type=code)))) is layout
    assert LTP(type=code).type_name == TYPE_NAMES[code]


# ---------------------------------------------------------------------------
# Building and parsing every segment type
# ---------------------------------------------------------------------------


def one_of_each() -> list[LTP]:
    """One segment of each of the 16 type codes, extensions on some."""
    out: list[LTP] = []
    for code in range(8):  # §3.2.1
        fields: dict[str, Any] = {"client_service_id": 1, "offset": 100 * code, "data": b"x" * code}
        if code in CHECKPOINT_TYPES:
            fields.update(checkpoint_serial=5000 + code, report_serial=300)
        out.append(seg(code, **fields))
    out.append(
        seg(8, report_serial=3, checkpoint_serial=2, upper_bound=3000, lower_bound=1000,
            claims=[(0, 500), (700, 300)], header_extensions=[(0xC1, b"\x01")])
    )  # fmt: skip
    out.append(seg(9, report_serial=3, trailer_extensions=[(0x01, b"cookie")]))
    out += [seg(10), seg(11), seg(12, reason=2), seg(13), seg(14, 2**40, 2**33, reason=5)]
    out.append(seg(15, header_extensions=[(0, b"ab"), (0xC0, b"")], trailer_extensions=[(1, b"")]))
    return out


@pytest.mark.parametrize("segment", one_of_each(), ids=lambda s: s.type_name)
def test_every_type_round_trips(segment: LTP) -> None:
    octets = bytes(segment)
    parsed = parse(octets)
    assert type(parsed) is type(segment)
    assert bytes(parsed) == octets
    assert bytes(type(parsed)(**parsed.fields)) == octets  # rebuilt from the decoded fields
    assert classify(parsed) == classify(segment)
    assert list(classify(parsed)) == list(classify(segment))


def test_classify_keys_are_the_wire_vocabulary() -> None:
    """classify() emits only the ``fields`` of wire.json, each of them on
    some segment (but ``holds``, a rule's), and no optional key where the
    content has no such field."""
    seen: set[str] = set()
    for segment in one_of_each():
        fields = classify(parse(bytes(segment)))
        assert set(fields) <= set(vocabulary("ltp")), segment.type_name
        seen |= set(fields)
        assert ("length" in fields) == segment.is_data
        assert ("claim_count" in fields) == (segment.type_name == "RS")
        assert ("reason" in fields) == (segment.kind == "cancel")
    # holds is a rule's name for a byte (offset <= holds < offset + length),
    # declared for rules, never a field a segment carries
    from conformance.core.classifiers import HOLDS

    assert seen == set(vocabulary("ltp")) - {HOLDS}


def test_data_segment_bytes() -> None:
    """RFC 5326 §3.2.1: client service ID, offset, length, then for a
    checkpoint the checkpoint and report serial numbers, then the data."""
    cp = seg(1, client_service_id=1, offset=0, checkpoint_serial=9, report_serial=0,
             data=b"abcdefgh", header_extensions=[(0x00, b"\xaa\xbb\xcc"), (0xC0, b"")])  # fmt: skip
    # the hand-built segment of reports/findings/wireshark-4.0.17-ltp-second-header-extension
    assert bytes(cp).hex() == "01014d200003aabbccc00001000809006162636465666768"
    green = seg(7, client_service_id=1, offset=1000, data=b"xy", checkpoint_serial=9)
    assert bytes(green).hex() == "07014d0001876802" + "7879"  # no serial numbers
    assert classify(green)["eob"] and not classify(green)["red"]


def test_report_segment_rfc_examples() -> None:
    """RFC 5326 §3.2.2: lower bound 1000, upper bound 6000, claims (0, 2000)
    and (3000, 500) report bytes 1000-2999 and 4000-4499 of the block; lower
    0, upper 6000, one claim (0, 6000) reports the first 6000 bytes."""
    rs = seg(8, report_serial=3, checkpoint_serial=2, upper_bound=6000, lower_bound=1000,
             claims=[(0, 2000), (3000, 500)])  # fmt: skip
    header = "08014d00"  # type 8, originator 1, session 77, no extensions
    body = "0302ae70876802"  # serials 3 and 2, bounds 6000 and 1000, 2 claims
    claims = "008f5097388374"  # (0, 2000), (3000, 500)
    assert bytes(rs).hex() == header + body + claims
    parsed = parse(bytes(rs))
    assert isinstance(parsed, LTPReportSegment)
    assert parsed.received() == [(1000, 3000), (4000, 4500)]
    assert [(c.offset, c.length) for c in parsed.claims] == [(0, 2000), (3000, 500)]
    whole = parse(bytes(seg(8, upper_bound=6000, lower_bound=0, claims=[(0, 6000)])))
    assert isinstance(whole, LTPReportSegment)
    assert whole.received() == [(0, 6000)]
    fields = classify(parsed)
    assert (fields["upper_bound"], fields["lower_bound"], fields["claim_count"]) == (6000, 1000, 2)


def test_session_management_segments() -> None:
    """RFC 5326 §3.2.4: a cancel segment is one reason octet, a cancel
    acknowledgment has no content; §3.1.4: with no content, header extensions
    are followed directly by trailer extensions."""
    assert bytes(seg(14, reason=CancelReason["RXMTCYCEXC"])).hex() == "0e014d0005"
    assert bytes(seg(12, reason="RLEXC")).hex() == "0c014d0002"
    for code in (13, 15, 10, 11):
        assert bytes(seg(code, 5, 6)) == bytes([code, 5, 6, 0])
    cax = seg(13, header_extensions=[(0xC0, b"h")], trailer_extensions=[(0xC1, b"t")])
    assert bytes(cax).hex() == "0d014d11" + "c00168" + "c10174"
    assert [e.value for e in parse(bytes(cax)).trailer_extensions] == [b"t"]


def test_lengths_and_counts_are_computed_unless_given() -> None:
    s = seg(4, client_service_id=1, offset=0, data=b"abcde", trailer_extensions=[(1, b"xyz")])
    assert bytes(s).hex() == "04014d01" + "010005" + "6162636465" + "010378797a"
    lying = seg(4, client_service_id=1, offset=0, data=b"abcde", length=2047, trl_ext_count=0,
                trailer_extensions=[LTPExtension(tag=1, length=9, value=b"xyz")])  # fmt: skip
    assert bytes(lying).hex() == "04014d00" + "01008f7f" + "6162636465" + "010978797a"


def test_udp_port_binding() -> None:
    """RFC 5326 §10.1: UDP port 1113, either direction."""
    built = IP() / UDP(sport=40000) / seg(9, report_serial=3)
    assert built[UDP].dport == UDP_PORT
    for sport, dport in ((40000, UDP_PORT), (UDP_PORT, 40000)):
        frame = IP(
            bytes(IP() / UDP(sport=sport, dport=dport) / Raw(bytes(seg(9, report_serial=3))))
        )
        assert isinstance(frame[UDP].payload, LTPReportAckSegment)
    other = IP(bytes(IP() / UDP(sport=40000, dport=4556) / Raw(bytes(seg(13)))))
    assert isinstance(other[UDP].payload, Raw)
    # a payload that cannot be delimited is shown as Raw under UDP
    broken = IP(bytes(IP() / UDP(dport=UDP_PORT) / Raw(b"\x00\x81")))
    assert isinstance(broken[UDP].payload, Raw)


# ---------------------------------------------------------------------------
# Hypothesis: round trips along fields_desc
# ---------------------------------------------------------------------------

SDNVS = st.integers(min_value=0, max_value=2**40) | st.sampled_from([0, 127, 128, SDNV_MAX_VALUE])
ITEM_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "tag": st.integers(0, 255),
    "value": st.binary(max_size=6),
    "offset": SDNVS,
    "length": SDNVS,
}


@st.composite
def segments(draw: st.DrawFn) -> tuple[LTP, dict[str, Any]]:
    """A segment of any type and the values drawn for it, field by field."""
    code = draw(st.sampled_from(sorted(SEGMENT_TYPES)))
    layout = type(LTP(type=code))
    drawn: dict[str, Any] = {"type": code}
    for field in layout.fields_desc:
        name = field.name
        if name in ("type", "version") or isinstance(field, SDNVLenField) or "count" in name:
            continue  # the code, version 0, computed lengths and counts
        if isinstance(field, ConditionalField):
            if code in CHECKPOINT_TYPES:
                drawn[name] = draw(SDNVS)
        elif isinstance(field, PacketListField):
            names = tuple_fields(field.cls)
            item = st.tuples(*(ITEM_VALUES[n] for n in names))
            drawn[name] = draw(st.lists(item, max_size=15 if "ext" in name else 4))
        elif isinstance(field, SDNVField):
            drawn[name] = draw(SDNVS)
        elif name == "data":
            drawn[name] = draw(st.binary(max_size=40))
        elif name == "reason":
            drawn[name] = draw(st.integers(0, 255))
        else:
            raise AssertionError(f"no strategy for {layout.__name__}.{name}")
    return layout(**drawn), drawn


@given(segments())
def test_round_trip(case: tuple[LTP, dict[str, Any]]) -> None:
    segment, drawn = case
    octets = bytes(segment)
    parsed = parse(octets)
    assert type(parsed) is type(segment)
    for name, value in drawn.items():
        got = parsed.getfieldval(name)
        if isinstance(value, list):
            field = parsed.get_field(name)
            assert isinstance(field, PacketListField), name
            names = tuple_fields(field.cls)
            got = [tuple(item.getfieldval(n) for n in names) for item in got]
        assert got == value, name
    assert bytes(type(parsed)(**parsed.fields)) == octets
    assert classify(parsed) == classify(segment)


# ---------------------------------------------------------------------------
# Malformed on purpose: built, then rejected by parse with the right message
# ---------------------------------------------------------------------------

# field values for the Scapy layer (Packet(**fields: Any))
RS: dict[str, Any] = {
    "report_serial": 3,
    "checkpoint_serial": 2,
    "upper_bound": 6000,
    "lower_bound": 1000,
}
GD: dict[str, Any] = {"client_service_id": 1, "offset": 0}
MALFORMED: list[tuple[str, bytes, str]] = [
    ("empty", b"", "empty datagram"),
    ("version 1", bytes(seg(9, report_serial=5, version=1)), "version 1 is not 0"),
    ("version 15", bytes(seg(13, version=15)), "version 15 is not 0"),
    ("cut before the counts", seg(13).truncate(3), "header ends before the extension counts"),
    ("cut inside an SDNV", seg(9, 1, 300).truncate(3), "SDNV at byte 2 runs past the end"),
    ("unterminated SDNV", bytes(seg(9, report_serial=RawSDNV(b"\x81"))),
     "SDNV at byte 4 runs past the end"),
    ("SDNV of 11 octets", bytes(seg(9, 1, RawSDNV.of(77, width=11))),
     "SDNV at byte 2 longer than 10 bytes"),
    ("SDNV over 64 bits", bytes(seg(9, 1, 2**64)), "SDNV at byte 2 exceeds 64 bits"),
    ("claim SDNV of 11 octets", bytes(seg(8, claims=[(2**70, 1)], **RS)),
     "SDNV at byte 11 longer than 10 bytes"),
    ("claim SDNV over 64 bits", bytes(seg(8, claims=[(1, 2**64)], **RS)),
     "SDNV at byte 12 exceeds 64 bits"),
    ("data length past the end", bytes(seg(4, data=b"abcde", length=2047, **GD)),
     "data length 2047 runs past the datagram"),
    ("data length short", bytes(seg(4, data=b"abcde", length=2, **GD)),
     "3 trailing bytes after the segment"),
    ("claim count larger than the datagram", bytes(seg(8, claim_count=100, **RS)),
     "claim count 100 impossibly large"),
    # each claim takes two octets at least: a count the octets left cannot hold
    # is refused as the dissector refuses it (dtnltp.expert.claim_count_too_large)
    ("claim count above the claims", bytes(seg(8, claims=[(0, 10)], claim_count=2, **RS)),
     r"claim count 2 impossibly large \(room for at most 1\)"),
    ("claim SDNV that never ends", bytes(seg(8, claims=[(0, 10), (0, RawSDNV(b"\x81\x80"))],
     **RS)), "SDNV at byte 14 runs past the end"),
    ("header extension count above the extensions", bytes(seg(13, hdr_ext_count=1)),
     "extension runs past the datagram"),
    ("trailer extension count above the extensions", bytes(seg(9, report_serial=1, trl_ext_count=2,
     trailer_extensions=[(1, b"")])), "extension runs past the datagram"),
    ("extension length past the end",
     bytes(seg(13, header_extensions=[LTPExtension(tag=1, length=9, value=b"ab")])),
     "extension value runs past the datagram"),
    ("cancel without reason", seg(12, reason=1).truncate(-1), "cancel segment without a reason code"),
    ("trailing bytes", bytes(seg(9, report_serial=5) / Raw(b"zz")),
     "2 trailing bytes after the segment"),
    ("report content under a data type code", bytes(LTPReportSegment(type=0, **RS)),
     "data length 6000 runs past the datagram"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("octets", "why"), [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED]
)
def test_parse_rejects(octets: bytes, why: str) -> None:
    with pytest.raises(LtpDecodeError, match=why):
        parse(octets)


@pytest.mark.parametrize("segment", one_of_each(), ids=lambda s: s.type_name)
def test_every_truncation_and_extra_octet_is_rejected(segment: LTP) -> None:
    octets = bytes(segment)
    for n in range(len(octets)):
        with pytest.raises(LtpDecodeError):
            parse(segment.truncate(n))
    with pytest.raises(LtpDecodeError, match="1 trailing bytes"):
        parse(octets + b"\x00")


def test_well_delimited_but_wrong_segments_parse() -> None:
    """parse() checks that a segment can be delimited, not the protocol rules:
    bounds inverted, claims outside [lower, upper) (§3.2.2), undefined types
    (§3.1.2), reserved reason codes (§3.2.4), reserved extension tags
    (§3.1.4) and non-minimal SDNVs are all read; the Lua dissector's expert
    infos flag them."""
    odd = [
        seg(8, report_serial=3, checkpoint_serial=2, upper_bound=50, lower_bound=100),
        seg(8, report_serial=3, checkpoint_serial=2, upper_bound=100, lower_bound=50,
            claims=[(40, 20), (200, 1)]),
        seg(5, data=b"x", **GD), seg(6, **GD), seg(10), seg(11),
        seg(14, reason=0xFF), seg(13, header_extensions=[(0xB5, b"r")]),
        seg(9, report_serial=RawSDNV.of(3, width=10)),
    ]  # fmt: skip
    for segment in odd:
        parsed = parse(bytes(segment))
        assert classify(parsed) == classify(segment)
    assert classify(odd[-1])["report_serial"] == 3


def test_building_refuses_what_no_field_can_hold() -> None:
    for fields in (
        {"type": 16},
        {"type": 9, "version": 16},
        {"type": 12, "reason": 256},
        {"type": 9, "report_serial": -1},
        {"type": 13, "header_extensions": [(1, b"")] * 16},
    ):
        with pytest.raises(ValueError):
            bytes(LTP(**fields))
    with pytest.raises(ValueError, match="removes nothing"):
        seg(13).truncate(4)


def test_max_data_header_len_bounds_real_headers() -> None:
    """The bound conformance/protocols uses for the MTU check: version/type,
    originator, 32-bit session number and serials, counts, service, offset,
    length (RFC 5326 §3.1, §3.2.1)."""
    assert max_data_header_len(5000, 1) == 1 + 1 + 5 + 1 + 1 + 2 + 2 + 10
    worst = seg(3, 2, 2**32 - 1, client_service_id=1, offset=4999, checkpoint_serial=2**32 - 1,
                report_serial=2**32 - 1, data=b"x" * 5000)  # fmt: skip
    assert len(bytes(worst)) - 5000 == max_data_header_len(5000, 1)


# ---------------------------------------------------------------------------
# Real segments: captures, and the emulator classifier's test vectors
# ---------------------------------------------------------------------------


def captured_segments() -> list[tuple[str, bytes, Any]]:
    """(label, UDP payload, dissected frame) of every datagram on port 1113
    in the LTP captures of reports/findings/ltp/captures/."""
    out = []
    for pcap in sorted(CAPTURES.glob("*.pcap")):
        if "ltp" not in pcap.name and not pcap.name.startswith("licklider"):
            continue
        with PcapReader(str(pcap)) as reader:
            for number, frame in enumerate(reader, start=1):
                if UDP in frame and UDP_PORT in (frame[UDP].sport, frame[UDP].dport):
                    payload = bytes(frame[UDP].payload)
                    out.append((f"{pcap.name} frame {number}", payload, frame))
    return out


def test_captured_segments_round_trip() -> None:
    """Every segment licklider 0.1.1 sent, and the hand-built segments of the
    wireshark-4.0.17-ltp-* findings: Scapy's UDP dissection finds LTP, the
    strict parse accepts, and the decoded fields rebuild the same octets."""
    captured = captured_segments()
    assert len(captured) >= 34
    types = set()
    for label, payload, frame in captured:
        assert isinstance(frame[UDP].payload, LTP), label
        parsed = parse(payload)
        assert bytes(type(parsed)(**parsed.fields)) == payload, label
        assert classify(frame[UDP].payload) == classify(parsed), label
        types.add(parsed.type_name)
    assert types >= {
        "RD",
        "RD-CP",
        "RD-CP-EORP",
        "RD-CP-EORP-EOB",
        "GD-EOB",
        "RS",
        "RA",
        "CS",
        "CAS",
    }


def ltp_rs() -> str:
    """The emulator's LTP classifier source (in its core crate, or in the
    single crate of older trees)."""
    for path in [*sorted(EMULATOR.glob("*/src/classify/ltp.rs")), EMULATOR / "src/classify/ltp.rs"]:
        if path.is_file():
            return path.read_text()
    raise FileNotFoundError(f"no src/classify/ltp.rs under {EMULATOR}")


def rust_vectors() -> dict[str, str]:
    """``pub const NAME: &str = "hex";`` of ltp.rs (one copy of the bytes)."""
    text = ltp_rs()
    return dict(re.findall(r'pub const (\w+): &str = "([0-9a-f]*)";', text))


def rust_expected() -> dict[str, list[tuple[str, str, Any]]]:
    """The fields ltp.rs's ``expected()`` asserts for each vector, in order,
    with their JSON types (str, int, bool)."""
    text = ltp_rs()
    body = text[text.index("fn expected()") :]
    body = body[: body.index("#[test]")]
    convert: dict[str, Callable[[str], Any]] = {
        "S": lambda x: x.strip('"'),
        "I": int,
        "B": lambda x: x == "true",
    }
    out = {}
    for name, entries in re.findall(r"\(\s*(\w+),\s*vec!\[(.*?)\],\s*\)", body, re.S):
        fields = []
        for key, kind, value in re.findall(r'\("(\w+)", ([SIB])\(([^)]*)\)\)', entries):
            v: Any = convert[kind](value)
            fields.append((key, type(v).__name__, v))
        out[name] = fields
    return out


def test_classify_equals_the_emulator_classifier_expectations() -> None:
    """classify(parse(b)) gives, key for key, in order and with the same value
    types, the fields the Rust classifier's tests expect for its vectors (real
    captured segments and synthetic ones of the types no capture holds)."""
    vectors, expected = rust_vectors(), rust_expected()
    assert len(expected) >= 16 and set(expected) <= set(vectors)
    for name, want in expected.items():
        fields = classify(parse(bytes.fromhex(vectors[name])))
        assert [(k, type(v).__name__, v) for k, v in fields.items()] == want, name


def test_emulator_vectors_round_trip_and_reject_damage() -> None:
    """As ltp.rs's own tests: every proper prefix and one extra octet are
    rejected; the whole vector round-trips."""
    for name, hexa in rust_vectors().items():
        octets = bytes.fromhex(hexa)
        parsed = parse(octets)
        assert bytes(type(parsed)(**parsed.fields)) == octets, name
        for n in range(len(octets)):
            with pytest.raises(LtpDecodeError):
                parse(octets[:n])
        with pytest.raises(LtpDecodeError):
            parse(octets + b"\x00")


def test_capture_frames_are_ethernet() -> None:
    """The captures are read with their link layer (guards captured_segments)."""
    assert all(isinstance(frame, Ether) for _, _, frame in captured_segments())
