"""The Scapy CFDP layer (dissectors/cfdp/layer.py) against spacepackets and the vectors.

The PDUs are the channel emulator classifier's vectors (``CFDP_PDUS`` of
conformance/tests/test_emulator_classify.py, built by spacepackets 0.32.0 and
by hand), PDUs built here field by field over every header width, the large
file flag, the CRC flag and segment metadata, and PDUs built by spacepackets
0.32.0 itself. spacepackets' own decoder is the reference for decoded field
values, except where a finding in reports/findings/cfdp/ says it is wrong
(:data:`SPACEPACKETS_BUGS`): there the value given to its builder is.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest
from scapy.layers.inet import IP, UDP
from scapy.packet import Packet, Raw
from spacepackets.cfdp import (
    ChecksumType,
    ConditionCode,
    CrcFlag,
    FaultHandlerCode,
    LargeFileFlag,
    PduConfig,
    SegmentationControl,
    TransmissionMode,
)
from spacepackets.cfdp.pdu import (
    AckPdu,
    DirectiveType,
    EofPdu,
    FileDataPdu,
    FinishedPdu,
    KeepAlivePdu,
    MetadataPdu,
    NakPdu,
    PduFactory,
    PromptPdu,
    TransactionStatus,
)
from spacepackets.cfdp.pdu.file_data import (
    FileDataParams,
    RecordContinuationState,
    SegmentMetadata,
)
from spacepackets.cfdp.pdu.finished import DeliveryCode, FileStatus, FinishedParams
from spacepackets.cfdp.pdu.metadata import MetadataParams
from spacepackets.cfdp.pdu.prompt import ResponseRequired
from spacepackets.cfdp.tlv import (
    EntityIdTlv,
    FaultHandlerOverrideTlv,
    FilestoreActionCode,
    FileStoreRequestTlv,
    FilestoreResponseStatusCode,
    FileStoreResponseTlv,
    FlowLabelTlv,
    MessageToUserTlv,
)
from spacepackets.cfdp.tlv import (
    TlvType as SpTlvType,
)
from spacepackets.util import ByteFieldGenerator

from conformance.core import wire
from conformance.tests.test_emulator_classify import CFDP_PDUS
from dissectors.cfdp import layer as cfdp
from dissectors.cfdp.layer import (
    CFDP,
    CFDPEOF,
    CFDPTLV,
    TLV_TYPES,
    CFDPAck,
    CfdpDecodeError,
    CFDPDirective,
    CFDPEntityIdTLV,
    CFDPFileData,
    CFDPFinished,
    CFDPKeepAlive,
    CFDPMetadata,
    CFDPNak,
    CFDPPrompt,
    DirectiveCode,
    TlvType,
    bind,
    crc16,
    header_len,
    parse,
    unbind,
)

ROOT = Path(__file__).resolve().parents[3]
FINDINGS = ROOT / "reports" / "findings" / "cfdp"
CFDP_RS = ROOT / "conformance" / "channel" / "emulator" / "core" / "src" / "classify" / "cfdp.rs"

VECTORS: dict[str, bytes] = {name: bytes.fromhex(h) for name, h in CFDP_PDUS.items()}

# Vector -> the spacepackets 0.32.0 finding that keeps its decoder from being
# the reference for it (whole vector, or the named fields).
SPACEPACKETS_BUGS: dict[str, tuple[str, tuple[str, ...]]] = {
    "file_data_empty": ("spacepackets-0.32.0-empty-file-data-rejected.md", ("*",)),
    "finished_invalid_file_structure": ("spacepackets-0.32.0-condition-code-9-missing.md", ("*",)),
    "file_data_segment_metadata": (
        "spacepackets-0.32.0-file-data-segment-metadata-length.md",
        ("data_field_length",),
    ),
    "file_data_segment_metadata_empty_crc": (
        "spacepackets-0.32.0-file-data-segment-metadata-length.md",
        ("data_field_length",),
    ),
    "file_data_large_segmeta_crc_u64": (
        "spacepackets-0.32.0-file-data-segment-metadata-length.md",
        ("data_field_length",),
    ),
}
EOF_CONDITION_BUG = "spacepackets-0.32.0-eof-condition-code-unshifted.md"

# Fields the layer computes when building: a PDU rebuilt without them must
# come out as the original octets.
COMPUTED = frozenset(
    {
        "data_field_length",
        "entity_id_length",
        "sequence_number_length",
        "segment_metadata",
        "direction",
        "ack_subtype",
        "crc_value",
        "length",
        "source_file_name_len",
        "dest_file_name_len",
        "segment_metadata_length",
    }
)


def fresh(pkt: Packet, drop: frozenset[str] = COMPUTED) -> Packet:
    """``pkt`` made anew from its fields, those in ``drop`` left to compute
    (so nothing comes from a dissection cache)."""
    kept: dict[str, Any] = {}
    for name, value in pkt.fields.items():
        if name in drop:
            continue
        if isinstance(value, list):
            value = [fresh(v, drop) if isinstance(v, Packet) else v for v in value]
        kept[name] = value
    return type(pkt)(**kept)


def fields_of(pkt: Packet, names: tuple[str, ...] | list[str]) -> dict[str, Any]:
    return {name: pkt.getfieldval(name) for name in names}


def with_dfl(raw: bytes) -> bytes:
    """``raw`` with its data field length set to what follows the header."""
    n = len(raw) - header_len(raw[3])
    return raw[:1] + n.to_bytes(2, "big") + raw[3:]


# ---------------------------------------------------------------------------
# spacepackets <-> field dictionaries
# ---------------------------------------------------------------------------


def sp_header(sp: Any) -> dict[str, Any]:
    h = sp.pdu_header
    return {
        "pdu_type": int(h.pdu_type),
        "direction": int(h.direction),
        "mode": int(h.transmission_mode),
        "crc": int(h.crc_flag),
        "large_file": int(h.file_flag),
        "data_field_length": h.pdu_data_field_len,
        "segmentation_control": int(h.seg_ctrl),
        "entity_id_length": h.source_entity_id.byte_len,
        "segment_metadata": int(h.segment_metadata_flag),
        "sequence_number_length": h.transaction_seq_num.byte_len,
        "source_entity": h.source_entity_id.value,
        "transaction": h.transaction_seq_num.value,
        "dest_entity": h.dest_entity_id.value,
    }


def sp_content(sp: Any) -> dict[str, Any]:
    """The content fields of a spacepackets PDU under the layer's names
    (the EOF condition code left out: EOF_CONDITION_BUG)."""

    def entity(tlv: Any) -> int | None:
        return None if tlv is None else int.from_bytes(tlv.value, "big")

    if isinstance(sp, EofPdu):
        return {
            "checksum": int.from_bytes(sp.file_checksum, "big"),
            "file_size": sp.file_size,
            "fault_location_id": entity(sp.fault_location),
        }
    if isinstance(sp, FinishedPdu):
        return {
            "condition": int(sp.condition_code),
            "delivery_code": int(sp.delivery_code),
            "file_status": int(sp.file_status),
            "filestore_responses": [bytes(r.pack()) for r in sp.file_store_responses],
            "fault_location_id": entity(sp.fault_location),
        }
    if isinstance(sp, AckPdu):
        return {
            "ack_of": int(sp.directive_code_of_acked_pdu),
            "ack_subtype": sp.directive_subtype_code,
            "condition": int(sp.condition_code_of_acked_pdu),
            "transaction_status": int(sp.transaction_status),
        }
    if isinstance(sp, MetadataPdu):
        return {
            "closure_requested": int(sp.closure_requested),
            "checksum_type": int(sp.checksum_type),
            "file_size": sp.file_size,
            "source_file_name": (sp.source_file_name or "").encode(),
            "dest_file_name": (sp.dest_file_name or "").encode(),
            "options": [(int(o.tlv_type), bytes(o.value)) for o in sp.options_as_tlv() or []],
        }
    if isinstance(sp, NakPdu):
        return {
            "start_of_scope": sp.start_of_scope,
            "end_of_scope": sp.end_of_scope,
            "segment_requests": [tuple(r) for r in sp.segment_requests],
        }
    if isinstance(sp, PromptPdu):
        return {"response_required": int(sp.response_required)}
    if isinstance(sp, KeepAlivePdu):
        return {"progress": sp.progress}
    assert isinstance(sp, FileDataPdu)
    out: dict[str, Any] = {"offset": sp.offset, "data": bytes(sp.file_data)}
    if sp.segment_metadata is not None:
        out["record_continuation"] = int(sp.segment_metadata.record_cont_state)
        out["metadata"] = bytes(sp.segment_metadata.metadata)
    return out


def ours(pdu: CFDP, names: Any) -> dict[str, Any]:
    """The layer's values of ``names`` (TLVs as octets or (type, value))."""
    out: dict[str, Any] = {}
    for name in names:
        if name == "fault_location_id":
            out[name] = pdu.fault_location_id
        elif name == "filestore_responses":
            out[name] = [bytes(t) for t in pdu.getfieldval(name)]
        elif name == "options":
            out[name] = [(t.getfieldval("type"), t.getfieldval("value")) for t in pdu.options]
        else:
            out[name] = pdu.getfieldval(name)
    return out


def assert_same_as_spacepackets(pdu: CFDP, sp: Any, skip: tuple[str, ...] = ()) -> None:
    theirs = {**sp_header(sp), **sp_content(sp)}
    theirs = {k: v for k, v in theirs.items() if k not in skip}
    assert ours(pdu, theirs) == theirs


def sp_conf(
    eid: int = 1,
    tsn: int = 1,
    large: bool = False,
    crc: bool = False,
    ids: tuple[int, int, int] = (1, 3, 2),
    unack: bool = False,
    seg_ctrl: bool = False,
) -> PduConfig:
    source, seq, dest = ids
    return PduConfig(
        source_entity_id=ByteFieldGenerator.from_int(eid, source),
        dest_entity_id=ByteFieldGenerator.from_int(eid, dest),
        transaction_seq_num=ByteFieldGenerator.from_int(tsn, seq),
        trans_mode=TransmissionMode.UNACKNOWLEDGED if unack else TransmissionMode.ACKNOWLEDGED,
        file_flag=LargeFileFlag.LARGE if large else LargeFileFlag.NORMAL,
        crc_flag=CrcFlag.WITH_CRC if crc else CrcFlag.NO_CRC,
        seg_ctrl=(
            SegmentationControl.RECORD_BOUNDARIES_PRESERVATION
            if seg_ctrl
            else SegmentationControl.NO_RECORD_BOUNDARIES_PRESERVATION
        ),
    )


# ---------------------------------------------------------------------------
# (1) CRC-16 and the wire facts
# ---------------------------------------------------------------------------


def test_crc16_known_vector() -> None:
    # CRC-16/CCITT-FALSE check value (poly 0x1021, init 0xFFFF, no reflection/xorout)
    assert crc16(b"123456789") == 0x29B1
    assert crc16(b"") == 0xFFFF
    assert crc16(b"\x00") == 0xE1F0


def test_crc16_agrees_with_fastcrc_ibm_3740() -> None:
    """spacepackets' CRC (fastcrc's crc16.ibm_3740) on random data."""
    import fastcrc

    rng = random.Random(727)
    for n in range(0, 300, 7):
        data = bytes(rng.randrange(256) for _ in range(n))
        assert crc16(data) == fastcrc.crc16.ibm_3740(data)


@pytest.mark.parametrize("name", [n for n, x in VECTORS.items() if x[0] & 0x02])
def test_vectors_with_crc_flag_leave_no_remainder(name: str) -> None:
    assert crc16(VECTORS[name]) == 0


def test_tlv_types_are_wire_json_s_and_agree_with_spacepackets() -> None:
    # the classifier reads them from wire.json too: no code of its own
    assert not re.findall(r"const TLV_\w+", CFDP_RS.read_text())
    assert '"tlv_types"' in CFDP_RS.read_text()
    assert len(TLV_TYPES) == 6
    assert {int(t): t.name for t in SpTlvType} == {
        c: n.upper().replace("FAULT_HANDLER_OVERRIDE", "FAULT_HANDLER")
        for c, n in TLV_TYPES.items()
    }
    assert wire.names("cfdp", "tlv_types") == TLV_TYPES
    # the enum's members come from wire.json: by name, for the type checker
    assert TlvType["entity_id"] == 6 and TlvType["fault_handler_override"] == 4


def test_directive_codes_come_from_wire_json_and_agree_with_spacepackets() -> None:
    known = {int(d) for d in DirectiveType if d.name != "NONE"}
    assert {int(d) for d in DirectiveCode} == known == set(wire.names("cfdp", "directives"))
    for code, cls in [(4, CFDPEOF), (5, CFDPFinished), (6, CFDPAck), (7, CFDPMetadata)]:
        assert type(CFDP(directive_code=code)) is cls
        assert cls().getfieldval("directive_code") == code
    for code, cls in [(8, CFDPNak), (9, CFDPPrompt), (12, CFDPKeepAlive)]:
        assert type(CFDP(directive_code=DirectiveCode(code).name)) is cls


def test_field_names_are_the_wire_vocabulary() -> None:
    """Every name of wire.json's ``fields`` names a field of the layer, but
    those the classifier derives (crc_ok, directive, length)."""
    classes = [CFDPEOF, CFDPFinished, CFDPAck, CFDPMetadata, CFDPNak, CFDPPrompt]
    names = {f.name for cls in [*classes, CFDPKeepAlive, CFDPFileData] for f in cls.fields_desc}
    vocabulary = set(wire.load("cfdp")["fields"])
    assert vocabulary - names == {"crc_ok", "directive", "length"}


# ---------------------------------------------------------------------------
# (2) The classifier's vectors
# ---------------------------------------------------------------------------

VECTOR_CLASSES = {
    "eof": CFDPEOF,
    "finished": CFDPFinished,
    "ack": CFDPAck,
    "metadata": CFDPMetadata,
    "nak": CFDPNak,
    "prompt": CFDPPrompt,
    "keep": CFDPKeepAlive,
    "file": CFDPFileData,
}


@pytest.mark.parametrize("name", list(VECTORS))
def test_vector_parses_and_round_trips(name: str) -> None:
    raw = VECTORS[name]
    pdu = parse(raw)
    assert type(pdu) is VECTOR_CLASSES[name.split("_")[0]]
    assert bytes(pdu) == raw
    # Built anew, every length, width, flag and the CRC computed: the same octets.
    assert bytes(fresh(pdu)) == raw
    assert pdu.getfieldval("data_field_length") == len(raw) - pdu.header_length


def test_the_findings_cited_exist() -> None:
    for finding, _ in SPACEPACKETS_BUGS.values():
        assert (FINDINGS / finding).is_file()
    assert (FINDINGS / EOF_CONDITION_BUG).is_file()


@pytest.mark.parametrize(
    "name", [n for n in VECTORS if SPACEPACKETS_BUGS.get(n, ("", ()))[1] != ("*",)]
)
def test_vector_fields_equal_spacepackets_decoder(name: str) -> None:
    """All but the two spacepackets cannot decode (checked against its
    builder's values below)."""
    raw = VECTORS[name]
    pdu = parse(raw)
    _, skipped = SPACEPACKETS_BUGS.get(name, ("", ()))
    sp = PduFactory.from_raw(raw)
    assert sp is not None
    assert_same_as_spacepackets(pdu, sp, skip=skipped)


def test_vectors_spacepackets_cannot_decode_hold_their_builder_values() -> None:
    """FILE_DATA_EMPTY was built as ``FileDataParams(file_data=b"", offset=4096)``
    (spacepackets-0.32.0-empty-file-data-rejected.md), the condition code 9
    Finished by hand (spacepackets-0.32.0-condition-code-9-missing.md)."""
    empty = parse(VECTORS["file_data_empty"])
    assert fields_of(empty, ["offset", "data", "source_entity", "transaction"]) == {
        "offset": 4096,
        "data": b"",
        "source_entity": 1,
        "transaction": 3,
    }
    built = FileDataPdu(sp_conf(), FileDataParams(file_data=b"", offset=4096)).pack()
    assert bytes(built) == VECTORS["file_data_empty"]
    for name, code in [
        ("finished_invalid_file_structure", 9),
        ("finished_check_limit_reached", 10),
        ("finished_unsupported_checksum_type", 11),
    ]:
        fin = parse(VECTORS[name])
        assert fin.getfieldval("condition") == code
        assert cfdp.CONDITION_CODES[code] == name.removeprefix("finished_")
        assert fields_of(fin, ["delivery_code", "file_status"]) == {
            "delivery_code": 0,
            "file_status": 2,
        }


def test_vector_eof_conditions() -> None:
    """The EOF condition code (spacepackets decodes it 16 times too large:
    spacepackets-0.32.0-eof-condition-code-unshifted.md)."""
    cancel = parse(VECTORS["eof_cancel_fault_location_crc"])
    cancel_request_received = cfdp.ConditionCode["cancel_request_received"]
    assert cancel.getfieldval("condition") == cancel_request_received == 15
    assert cancel.fault_location_id == 0x0304
    no_error = cfdp.ConditionCode["no_error"]
    assert parse(VECTORS["eof_no_error"]).getfieldval("condition") == no_error
    assert parse(VECTORS["eof_no_error"]).fault_location == []


def test_vector_field_values_by_hand() -> None:
    """A few values read off the octets, independent of any decoder."""
    wide = parse(VECTORS["file_data_large_segmeta_crc_u64"])
    assert fields_of(wide, ["entity_id_length", "sequence_number_length", "large_file"]) == {
        "entity_id_length": 8,
        "sequence_number_length": 8,
        "large_file": 1,
    }
    assert wide.getfieldval("source_entity") == 0x8000000000000001
    assert wide.getfieldval("transaction") == 2**64 - 1
    assert wide.getfieldval("offset") == 2**64 - 2
    seg = parse(VECTORS["file_data_segment_metadata"])
    assert cfdp.RECORD_CONTINUATIONS[seg.getfieldval("record_continuation")] == "start_and_end"
    assert fields_of(seg, ["segmentation_control", "metadata", "offset", "data"]) == {
        "segmentation_control": 1,
        "metadata": b"\x01\x02\x03",
        "offset": 64,
        "data": b"record",
    }
    nak = parse(VECTORS["nak_large_crc"])
    assert fields_of(nak, ["start_of_scope", "end_of_scope", "segment_requests"]) == {
        "start_of_scope": 2**32,
        "end_of_scope": 2**32 + 100,
        "segment_requests": [(2**32 + 10, 2**32 + 20)],
    }
    fin = parse(VECTORS["finished_incomplete_fs_response_fault"])
    assert [t.type_name for t in fin.filestore_responses] == ["filestore_response"]
    assert cfdp.DELIVERY_CODES[fin.getfieldval("delivery_code")] == "data_incomplete"
    assert fin.fault_location_id == 0x0304
    meta = parse(VECTORS["metadata_options_large_unack"])
    assert [t.type_name for t in meta.options] == [
        "message_to_user",
        "fault_handler_override",
        "flow_label",
    ]
    assert cfdp.MODES[meta.getfieldval("mode")] == "unacknowledged"


# ---------------------------------------------------------------------------
# (3) Building over widths, large file, CRC, segment metadata
# ---------------------------------------------------------------------------


def big(width: int) -> int:
    """A value that needs every octet of ``width``."""
    return (1 << (8 * width - 1)) | 0x5A


def build_each(large: bool, fields: dict[str, Any]) -> list[tuple[CFDP, dict[str, Any]]]:
    """One PDU of every kind with ``fields`` in the header, FSS values that
    need the whole FSS width; with each, the content fields given."""
    fss = big(8 if large else 4)
    contents: list[tuple[type[CFDP], dict[str, Any]]] = [
        (CFDPEOF, {"condition": 15, "checksum": 0xDEADBEEF, "file_size": fss, "spare": 0}),
        (CFDPEOF, {"condition": 0, "checksum": 1, "file_size": 0}),
        (
            CFDPFinished,
            {"condition": 7, "delivery_code": 1, "file_status": 1, "spare": 0},
        ),
        (CFDPAck, {"ack_of": 5, "condition": 14, "transaction_status": 3}),
        (
            CFDPMetadata,
            {
                "closure_requested": 1,
                "checksum_type": 15,
                "file_size": fss,
                "source_file_name": b"/src/a",
                "dest_file_name": b"",
            },
        ),
        (
            CFDPNak,
            {"start_of_scope": 0, "end_of_scope": fss, "segment_requests": [(0, 0), (7, fss)]},
        ),
        (CFDPPrompt, {"response_required": 1, "spare": 0}),
        (CFDPKeepAlive, {"progress": fss}),
        (CFDPFileData, {"offset": fss, "data": b"\x00payload"}),
    ]
    out = []
    for cls, content in contents:
        given = {**fields, "large_file": int(large), **content}
        out.append((cls(**given), given))
    return out


@pytest.mark.parametrize(("eid", "tsn"), [(1, 1), (2, 2), (4, 4), (8, 8), (3, 5), (6, 7), (8, 1)])
@pytest.mark.parametrize("large", [False, True])
@pytest.mark.parametrize("crc", [False, True])
def test_build_and_parse_back_every_width(eid: int, tsn: int, large: bool, crc: bool) -> None:
    header = {
        "crc": int(crc),
        "entity_id_length": eid,
        "sequence_number_length": tsn,
        "source_entity": big(eid),
        "transaction": big(tsn),
        "dest_entity": 1,
    }
    for pdu, given in build_each(large, header):
        raw = bytes(pdu)
        assert len(raw) == header_len(raw[3]) + pdu.__class__(raw).getfieldval("data_field_length")
        assert header_len(raw[3]) == 4 + 2 * eid + tsn
        back = parse(raw)
        assert type(back) is type(pdu)
        assert fields_of(back, list(given)) == given
        if crc:
            assert crc16(raw) == 0
            assert back.getfieldval("crc_value") == int.from_bytes(raw[-2:], "big")


@pytest.mark.parametrize("large", [False, True])
@pytest.mark.parametrize("crc", [False, True])
@pytest.mark.parametrize("metadata", [b"", b"\x01\x02\x03", bytes(range(63))])
def test_file_data_with_segment_metadata(large: bool, crc: bool, metadata: bytes) -> None:
    pdu = CFDPFileData(
        large_file=int(large),
        crc=int(crc),
        segmentation_control=1,
        record_continuation="end",
        metadata=metadata,
        offset=big(8 if large else 4),
        data=b"file data",
    )
    raw = bytes(pdu)
    back = parse(raw)
    assert back.getfieldval("segment_metadata") == 1
    assert fields_of(back, ["record_continuation", "segment_metadata_length", "metadata"]) == {
        "record_continuation": 2,
        "segment_metadata_length": len(metadata),
        "metadata": metadata,
    }
    assert fields_of(back, ["offset", "data"]) == {
        "offset": big(8 if large else 4),
        "data": b"file data",
    }
    hl = header_len(raw[3])
    assert raw[hl] == (2 << 6) | len(metadata)
    # Without segment metadata the octet is absent and the flag clear.
    plain = parse(bytes(CFDPFileData(large_file=int(large), crc=int(crc), offset=3, data=b"x")))
    assert plain.getfieldval("segment_metadata") == 0
    assert plain.getfieldval("data_field_length") == (8 if large else 4) + 1 + 2 * crc
    assert plain.getfieldval("offset") == 3 and plain.getfieldval("data") == b"x"


@pytest.mark.parametrize(
    ("value", "width"),
    [
        (0, 1),
        (255, 1),
        (256, 2),
        (65535, 2),
        (65536, 4),
        (2**32 - 1, 4),
        (2**32, 8),
        (2**64 - 1, 8),
    ],
)
def test_widths_computed_from_the_values(value: int, width: int) -> None:
    raw = bytes(CFDPPrompt(source_entity=1, dest_entity=value, transaction=value))
    back = parse(raw)
    assert back.getfieldval("entity_id_length") == width
    assert back.getfieldval("sequence_number_length") == width
    assert fields_of(back, ["dest_entity", "transaction"]) == {
        "dest_entity": value,
        "transaction": value,
    }


def test_large_file_flag_widens_every_fss_field() -> None:
    for large, fss in [(0, 4), (1, 8)]:
        assert len(bytes(CFDPKeepAlive(large_file=large))) == 7 + 1 + fss
        assert len(bytes(CFDPNak(large_file=large, segment_requests=[(1, 2)]))) == 7 + 1 + 4 * fss
        assert len(bytes(CFDPEOF(large_file=large))) == 7 + 1 + 1 + 4 + fss
        assert len(bytes(CFDPMetadata(large_file=large))) == 7 + 1 + 1 + fss + 2
        assert len(bytes(CFDPFileData(large_file=large))) == 7 + fss


def test_directions_and_ack_subtype_computed() -> None:
    assert CFDPEOF(bytes(CFDPEOF())).direction == 0
    assert CFDPFinished(bytes(CFDPFinished())).direction == 1
    assert CFDPNak(bytes(CFDPNak())).direction == 1
    assert CFDPKeepAlive(bytes(CFDPKeepAlive())).direction == 1
    eof_ack = CFDPAck(bytes(CFDPAck(ack_of="eof")))
    fin_ack = CFDPAck(bytes(CFDPAck(ack_of="finished")))
    assert (eof_ack.direction, eof_ack.ack_subtype) == (1, 0)
    assert (fin_ack.direction, fin_ack.ack_subtype) == (0, 1)
    # The field named like Scapy's own "direction" slot reads and writes.
    pdu = CFDPNak(direction="toward_receiver")
    assert pdu.direction == 0
    pdu.direction = 1
    assert bytes(pdu)[0] & 0x08
    assert pdu.copy().direction == 1


def test_fault_location_given_as_an_int() -> None:
    eof = parse(bytes(CFDPEOF(condition="cancel_request_received", fault_location=0x1234)))
    assert eof.fault_location_id == 0x1234
    (tlv,) = eof.fault_location
    assert isinstance(tlv, CFDPEntityIdTLV)
    assert fields_of(tlv, ["type", "length", "entity_id"]) == {
        "type": 6,
        "length": 2,
        "entity_id": 0x1234,
    }


# ---------------------------------------------------------------------------
# (4) spacepackets -> layer and layer -> spacepackets
# ---------------------------------------------------------------------------


def sp_pdus(conf: PduConfig, large: bool) -> list[Any]:
    """One spacepackets PDU of every kind (fault locations as wide as the
    header's entity IDs)."""
    fss = big(8 if large else 4)
    eid = conf.source_entity_id.byte_len
    fs_response = FileStoreResponseTlv(
        FilestoreActionCode.RENAME_FILE_SNP,
        FilestoreResponseStatusCode.RENAME_SUCCESS,
        "/tmp/a.txt",
        "/tmp/b.txt",
    )
    return [
        EofPdu(conf, file_checksum=0x1234ABCD, file_size=fss),
        EofPdu(
            conf,
            file_checksum=0,
            file_size=1000,
            condition_code=ConditionCode.FILE_CHECKSUM_FAILURE,
            fault_location=EntityIdTlv((7).to_bytes(eid, "big")),
        ),
        FinishedPdu(conf, FinishedParams.success_params()),
        FinishedPdu(
            conf,
            FinishedParams(
                condition_code=ConditionCode.FILESTORE_REJECTION,
                delivery_code=DeliveryCode.DATA_INCOMPLETE,
                file_status=FileStatus.DISCARDED_FILESTORE_REJECTION,
                file_store_responses=[fs_response],
                fault_location=EntityIdTlv((2).to_bytes(eid, "big")),
            ),
        ),
        AckPdu(conf, DirectiveType.EOF_PDU, ConditionCode.NO_ERROR, TransactionStatus.ACTIVE),
        AckPdu(
            conf,
            DirectiveType.FINISHED_PDU,
            ConditionCode.CANCEL_REQUEST_RECEIVED,
            TransactionStatus.TERMINATED,
        ),
        MetadataPdu(
            conf,
            MetadataParams(True, ChecksumType.CRC_32C, fss, "/src/file.bin", "/dst/file.bin"),
            options=[
                FileStoreRequestTlv(FilestoreActionCode.CREATE_FILE_SNM, "/x"),
                MessageToUserTlv(b"hello"),
                FaultHandlerOverrideTlv(
                    ConditionCode.NAK_LIMIT_REACHED, FaultHandlerCode.ABANDON_TRANSACTION
                ),
                FlowLabelTlv(b"\x02\x01"),
            ],
        ),
        MetadataPdu(conf, MetadataParams(False, ChecksumType.NULL_CHECKSUM, 0, None, None)),
        NakPdu(conf, 0, fss, segment_requests=[(0, 0), (100, 200), (fss - 5, fss)]),
        NakPdu(conf, 10, 20),
        PromptPdu(conf, ResponseRequired.NAK),
        PromptPdu(conf, ResponseRequired.KEEP_ALIVE),
        KeepAlivePdu(conf, fss),
        FileDataPdu(conf, FileDataParams(file_data=b"0123456789", offset=fss)),
        FileDataPdu(
            conf,
            FileDataParams(
                file_data=b"record",
                offset=64,
                segment_metadata=SegmentMetadata(
                    RecordContinuationState.START_WITHOUT_END, b"\x01\x02"
                ),
            ),
        ),
    ]


SP_CLASSES: dict[type, type[CFDP]] = {
    EofPdu: CFDPEOF,
    FinishedPdu: CFDPFinished,
    AckPdu: CFDPAck,
    MetadataPdu: CFDPMetadata,
    NakPdu: CFDPNak,
    PromptPdu: CFDPPrompt,
    KeepAlivePdu: CFDPKeepAlive,
    FileDataPdu: CFDPFileData,
}

CONFIGS = [
    (eid, tsn, large, crc)
    for eid, tsn in [(1, 1), (2, 4), (4, 2), (8, 8)]
    for large in (False, True)
    for crc in (False, True)
]


def _layer_twin(sp: Any) -> CFDP:
    """The layer's PDU built from spacepackets' decoded field values, nothing
    computed given."""
    values = {**sp_header(sp), **sp_content(sp)}
    for name in COMPUTED - {"direction"}:
        values.pop(name, None)
    fault = values.pop("fault_location_id", None)
    if fault is not None:
        values["fault_location"] = CFDPEntityIdTLV(
            entity_id=fault, length=len(sp.fault_location.value)
        )
    if "filestore_responses" in values:
        values["filestore_responses"] = [CFDPTLV(r) for r in values["filestore_responses"]]
    if "options" in values:
        values["options"] = [CFDPTLV(type=t, value=v) for t, v in values["options"]]
    if isinstance(sp, EofPdu):
        values["condition"] = sp.condition_code  # the builder's value, not a decoded one
    if values["pdu_type"] == 0:
        values["directive_code"] = int(sp.directive_type)
    header = sp_header(sp)
    return CFDP(  # the class is chosen by pdu_type and directive_code
        **values,
        entity_id_length=header["entity_id_length"],
        sequence_number_length=header["sequence_number_length"],
    )


@pytest.mark.parametrize(("eid", "tsn", "large", "crc"), CONFIGS)
def test_spacepackets_built_pdus_parse_with_the_layer(
    eid: int, tsn: int, large: bool, crc: bool
) -> None:
    conf = sp_conf(eid, tsn, large, crc, ids=(big(eid), big(tsn), 3), seg_ctrl=True)
    for sp in sp_pdus(conf, large):
        raw = bytes(sp.pack())
        pdu = parse(raw)
        assert type(pdu) is SP_CLASSES[type(sp)]
        assert bytes(fresh(pdu)) == raw, type(sp).__name__
        skip: tuple[str, ...] = ()
        if isinstance(sp, FileDataPdu) and sp.segment_metadata is not None:
            skip = ("data_field_length",)  # spacepackets' own value is right before unpack
        assert_same_as_spacepackets(pdu, sp, skip)
        if isinstance(sp, EofPdu):
            assert pdu.getfieldval("condition") == int(sp.condition_code)


@pytest.mark.parametrize(("eid", "tsn", "large", "crc"), CONFIGS)
def test_layer_built_pdus_equal_spacepackets_and_parse_there(
    eid: int, tsn: int, large: bool, crc: bool
) -> None:
    conf = sp_conf(eid, tsn, large, crc, ids=(big(eid), big(tsn), 3))
    for sp in sp_pdus(conf, large):
        ours_pdu = _layer_twin(sp)
        assert type(ours_pdu) is SP_CLASSES[type(sp)]
        raw = bytes(ours_pdu)
        assert raw == bytes(sp.pack()), type(sp).__name__
        back = PduFactory.from_raw(raw)
        assert type(back) is type(sp)
        skip: tuple[str, ...] = ()
        if isinstance(sp, FileDataPdu) and sp.segment_metadata is not None:
            skip = (
                "data_field_length",
            )  # spacepackets-0.32.0-file-data-segment-metadata-length.md
        assert_same_as_spacepackets(parse(raw), back, skip)


def test_layer_built_eof_condition_reads_back_in_spacepackets_shifted() -> None:
    """The layer puts the EOF condition in the high nibble, as spacepackets'
    packer does; its decoder returns that octet unshifted (finding)."""
    assert (FINDINGS / EOF_CONDITION_BUG).is_file()
    raw = bytes(CFDPEOF(condition="file_size_error", file_size=9, fault_location=1))
    assert raw == bytes(
        EofPdu(
            sp_conf(ids=(0, 0, 0)),
            file_checksum=0,
            file_size=9,
            condition_code=ConditionCode.FILE_SIZE_ERROR,
            fault_location=EntityIdTlv(b"\x01"),
        ).pack()
    )


# ---------------------------------------------------------------------------
# (5) Strict parse: rejections
# ---------------------------------------------------------------------------

EOF = VECTORS["eof_no_error"]  # 7-octet header
META = VECTORS["metadata"]


def flip_last(raw: bytes) -> bytes:
    return raw[:-1] + bytes([raw[-1] ^ 0x01])


REJECTED: list[tuple[str, bytes, str]] = [
    ("empty", b"", r"truncated header: 0 octets, fewer than the 4 fixed"),
    ("fixed header cut", EOF[:3], r"truncated header: 3 octets"),
    ("IDs cut", EOF[:6], r"truncated header: 6 octets of a 7-octet header"),
    (
        "wide IDs cut",
        VECTORS["file_data_large_segmeta_crc_u64"][:20],
        r"truncated header: 20 octets of a 28-octet header",
    ),
    (
        "data field cut",
        EOF[:-1],
        r"data field length 10 does not match the datagram: 9 octets follow the 7-octet header",
    ),
    ("trailing octet", EOF + b"\x00", r"data field length 10 does not match .* 11 octets"),
    (
        "EOF data field short",
        with_dfl(EOF[:-2]),
        r"the EOF data field ends inside the file size \(4 octets, 2 left\)",
    ),
    (
        "keep alive short",
        with_dfl(VECTORS["keep_alive_large"][:-1]),
        r"Keep Alive data field ends inside the progress \(8 octets, 7 left\)",
    ),
    (
        "ACK short",
        with_dfl(VECTORS["ack_eof"][:-1]),
        r"the ACK data field ends before the condition code",
    ),
    ("bad CRC", flip_last(VECTORS["prompt_keep_alive_crc"]), r"bad CRC: 0xccd3 on the wire"),
    (
        "bad CRC in the body",
        VECTORS["file_data_crc"][:12] + b"H" + VECTORS["file_data_crc"][13:],
        r"bad CRC: 0x0cd3 on the wire, 0x[0-9a-f]{4} computed",
    ),
    (
        "CRC flag, no room",
        with_dfl(b"\x22\x00\x00\x00\x01\x03\x02\x09"),
        r"CRC flag set but the data field of 1 octets cannot hold the CRC",
    ),
    (
        "unknown directive 3",
        bytes(CFDPDirective(directive_code=3, parameters=b"\x00")),
        r"unknown directive code 3 \(0x03\); Table 5-4 defines 4 eof, 5 finished",
    ),
    (
        "unknown directive 0x0a",
        bytes(CFDPDirective(directive_code=10)),
        r"unknown directive code 10 \(0x0a\)",
    ),
    ("no directive code", with_dfl(EOF[:7]), r"without a directive code"),
    ("version 2", bytes(CFDPPrompt(version=2)), r"version 2 is not one of \(0, 1\)"),
    (
        "source file name LV past the end",
        bytes(CFDPMetadata(source_file_name=b"/a", source_file_name_len=200)),
        r"the source file name LV \(length 200\) at octet 13 runs past the end of the "
        r"Metadata data field \(3 octets left\)",
    ),
    (
        "destination file name LV past the end",
        with_dfl(META[:-3]),
        r"the destination file name LV \(length 13\) at octet 27 runs past the end of the "
        r"Metadata data field \(10 octets left\)",
    ),
    (
        "LV length octet missing",
        with_dfl(META[:-14]),
        r"the Metadata data field ends before the destination file name LV at octet 27",
    ),
    (
        "fault location TLV past the end",
        bytes(CFDPEOF(condition=15, fault_location=[CFDPTLV(type=6, length=9, value=b"\x02")])),
        r"the fault location TLV \(type 6, entity_id, length 9\) at octet 17 runs past the end "
        r"of the EOF data field \(1 octets left for its value\)",
    ),
    (
        "option TLV without its length octet",
        bytes(CFDPMetadata(crc=1, excess=b"\x02")),
        r"the option TLV \(type 2, message_to_user\) at octet 15 runs past the end of the "
        r"Metadata data field: no length octet",
    ),
    (
        "EOF fault location not an entity ID",
        bytes(CFDPEOF(condition=15, fault_location=[CFDPTLV(type="message_to_user", value=b"hi")])),
        r"EOF fault location TLV has type 2 \(message_to_user\), not an entity ID TLV \(6\)",
    ),
    (
        "Finished fault location a flow label",
        bytes(CFDPFinished(condition=8, fault_location=[CFDPTLV(type=5, value=b"\x01")])),
        r"Finished fault location TLV has type 5 \(flow_label\), not an entity ID TLV",
    ),
    (
        "Finished fault location of unassigned type",
        bytes(CFDPFinished(condition=8, fault_location=[CFDPTLV(type=3)])),
        r"Finished fault location TLV has type 3 \(unassigned\)",
    ),
    (
        "filestore response after the fault location",
        bytes(
            CFDPFinished(
                condition=4, fault_location=[CFDPEntityIdTLV(entity_id=1), CFDPTLV(type=1)]
            )
        ),
        r"Finished: a TLV of type 1 \(filestore_response\) after the fault location TLV",
    ),
    (
        "fault location with no_error",
        bytes(CFDPEOF(condition="no_error", fault_location=2)),
        r"EOF with condition no_error carries a fault location TLV",
    ),
    (
        "fault location entity ID of 9 octets",
        bytes(CFDPEOF(condition=1, fault_location=CFDPEntityIdTLV(entity_id=1, length=9))),
        r"EOF fault location entity ID of 9 octets \(1-8\)",
    ),
    (
        "fault location entity ID of 0 octets",
        bytes(CFDPFinished(condition=1, fault_location=CFDPTLV(type=6, value=b""))),
        r"Finished fault location entity ID of 0 octets",
    ),
    (
        "Metadata option of type entity ID",
        bytes(CFDPMetadata(options=[CFDPTLV(type=2, value=b"m"), CFDPEntityIdTLV(entity_id=1)])),
        r"Metadata option 1 is a TLV of type 6 \(entity_id\), not one of filestore_request",
    ),
    (
        "ACK with an extra octet",
        bytes(CFDPAck(excess=b"\x00")),
        r"ACK: 1 octets after its parameters in the data field",
    ),
    (
        "Prompt with two octets",
        bytes(CFDPPrompt(crc=1, excess=b"\x80")),
        r"Prompt: 1 octets after its parameters",
    ),
    (
        "NAK with half a segment request",
        bytes(CFDPNak(segment_requests=[(1, 2)], excess=b"\x00\x00\x00\x05")),
        r"NAK: 4 octets after the segment requests, not a whole \(start, end\) pair of 8",
    ),
    ("ACK of code 3", bytes(CFDPAck(ack_of=3)), r"ACK of directive code 3, which Table 5-4"),
]


@pytest.mark.parametrize(("case", "raw", "message"), REJECTED, ids=[c for c, _, _ in REJECTED])
def test_parse_rejects(case: str, raw: bytes, message: str) -> None:
    with pytest.raises(CfdpDecodeError, match=message):
        parse(raw)


def test_decode_error_is_a_value_error() -> None:
    assert issubclass(CfdpDecodeError, ValueError)


# Issue 27: a Finished whose filestore response (0x14: delete file, status 4)
# has a first file name LV of length 42 in its 13-octet value. The layer took
# the TLV's value as opaque octets and accepted it; the LVs lie inside the
# value (dissectors.cfdp.layer, the comment above filestore_content, names
# the implementations' sources), so it is malformed, as our Lua dissector
# says.
ISSUE_27 = bytes.fromhex("280011000107020502010d142a6f746d702f612e54f87400")


def _fault(raw: bytes) -> tuple[cfdp.CfdpFault, str]:
    with pytest.raises(CfdpDecodeError) as caught:
        parse(raw)
    return caught.value.kind, caught.value.field


FS = "filestore_response"
FAULTS: list[tuple[str, bytes, cfdp.CfdpFault, str]] = [
    ("issue 27", ISSUE_27, cfdp.CfdpFault.MALFORMED, "first_file_name"),
    (
        "filestore request without its first file name's length octet",
        bytes(CFDPMetadata(options=[CFDPTLV(type="filestore_request", value=b"\x00")])),
        cfdp.CfdpFault.MALFORMED,
        "first_file_name_len",
    ),
    (
        "rename response whose second file name runs past",
        bytes(CFDPFinished(filestore_responses=[CFDPTLV(type=FS, value=b"\x20\x01a\x05b")])),
        cfdp.CfdpFault.MALFORMED,
        "second_file_name",
    ),
    (
        "delete response without its filestore message",
        bytes(CFDPFinished(filestore_responses=[CFDPTLV(type=FS, value=b"\x10\x01a")])),
        cfdp.CfdpFault.MALFORMED,
        "filestore_message_len",
    ),
    ("version 3 in a 2-octet datagram", b"\x60\x00", cfdp.CfdpFault.MALFORMED, "version"),
    ("3 octets", EOF[:3], cfdp.CfdpFault.MALFORMED, "header"),
    ("trailing octets", EOF + b"\x00", cfdp.CfdpFault.MALFORMED, "data_field_length"),
    (
        "unknown directive",
        bytes(CFDPDirective(directive_code=3)),
        cfdp.CfdpFault.INVALID,
        "directive_code",
    ),
    (
        "fault location with no_error",
        bytes(CFDPEOF(fault_location=2)),
        cfdp.CfdpFault.INVALID,
        "fault_location",
    ),
    ("ACK of code 3", bytes(CFDPAck(ack_of=3)), cfdp.CfdpFault.INVALID, "ack_of"),
    (
        "Metadata option of type entity ID",
        bytes(CFDPMetadata(options=[CFDPEntityIdTLV(entity_id=1)])),
        cfdp.CfdpFault.INVALID,
        "options",
    ),
    ("bad CRC", flip_last(VECTORS["prompt_keep_alive_crc"]), cfdp.CfdpFault.CRC, "crc_value"),
    # the order: malformed before invalid before a bad CRC
    (
        "excess octets and a bad CRC",
        flip_last(bytes(CFDPPrompt(crc=1, excess=b"\x00"))),
        cfdp.CfdpFault.MALFORMED,
        "excess",
    ),
    (
        "unknown directive and a bad CRC",
        flip_last(bytes(CFDPDirective(directive_code=3, crc=1))),
        cfdp.CfdpFault.INVALID,
        "directive_code",
    ),
    (
        "an LV past its filestore TLV and a fault location with no_error",
        bytes(
            CFDPFinished(
                filestore_responses=[CFDPTLV(type=FS, value=b"\x10\x09a\x00")], fault_location=1
            )
        ),
        cfdp.CfdpFault.MALFORMED,
        "first_file_name",
    ),
]


@pytest.mark.parametrize(
    ("raw", "kind", "field"), [c[1:] for c in FAULTS], ids=[c[0] for c in FAULTS]
)
def test_decode_error_names_the_kind_and_the_field_at_fault(
    raw: bytes, kind: cfdp.CfdpFault, field: str
) -> None:
    assert _fault(raw) == (kind, field)


def test_issue_27_datagram_is_rejected_where_its_first_file_name_overruns() -> None:
    with pytest.raises(
        CfdpDecodeError,
        match=r"the first file name LV \(length 42\) at octet 12 runs past the end of the "
        r"filestore response TLV's value \(11 octets left\)",
    ):
        parse(ISSUE_27)
    # plain dissection cannot lay it out either
    with pytest.raises(CfdpDecodeError):
        CFDP(ISSUE_27)


def test_filestore_content_of_requests_and_responses() -> None:
    rename = CFDPTLV(type="filestore_request", value=b"\x20\x02/a\x02/b")
    assert rename.filestore == cfdp.FilestoreContent(
        response=False,
        action_code=2,
        status_code=None,
        spare=0,
        first_file_name=b"/a",
        second_file_name=b"/b",
        filestore_message=None,
        extra=b"",
    )
    # dariol83/ccsds writes an empty second file name for every action: kept
    # as the octets after the LVs, accepted
    delete = CFDPTLV(type=FS, value=b"\x1f\x02/a\x00\x00")
    content = delete.filestore
    assert content is not None
    assert (content.action_code, content.status_code, content.extra) == (1, 15, b"\x00")
    assert parse(bytes(CFDPFinished(filestore_responses=[delete])))
    assert CFDPTLV(type=FS, value=b"").filestore is None  # no action code octet: shown
    assert CFDPTLV(type="message_to_user", value=b"x").filestore is None
    assert CFDPEntityIdTLV(entity_id=3).filestore is None


def test_classify_gives_the_classifier_fields_of_every_vector() -> None:
    """The flat match fields: those of the emulator's classifier (checked
    against ``dtnc-emu classify`` by dissectors/tests/test_fuzz_agreement.py)."""
    eof = cfdp.classify(parse(VECTORS["eof_cancel_fault_location_crc"]))
    assert eof["directive"] == "eof" and eof["fault_location"] == 0x0304
    assert eof["crc_ok"] is True and eof["condition"] == "cancel_request_received"
    data = cfdp.classify(parse(VECTORS["file_data_segment_metadata"]))
    assert data["record_continuation"] == "start_and_end" and data["length"] == 6
    for raw in VECTORS.values():
        fields = cfdp.classify(parse(raw))
        assert set(fields) <= set(wire.load("cfdp")["fields"])


def test_the_rejected_cases_are_otherwise_well_formed() -> None:
    """The malformations above are the only fault: the same PDUs built
    without them parse."""
    assert parse(bytes(CFDPMetadata(source_file_name=b"/a")))
    assert parse(bytes(CFDPEOF(condition=15, fault_location=2)))
    assert parse(bytes(CFDPFinished(condition=8, fault_location=CFDPEntityIdTLV(entity_id=1))))
    assert parse(bytes(CFDPAck()))
    assert parse(bytes(CFDPPrompt(crc=1)))
    assert parse(bytes(CFDPNak(segment_requests=[(1, 2)])))
    assert parse(bytes(CFDPMetadata(options=[CFDPTLV(type=2, value=b"m")])))
    assert parse(bytes(CFDPPrompt(version=0)))


@pytest.mark.parametrize("name", list(VECTORS))
def test_every_proper_prefix_is_rejected(name: str) -> None:
    raw = VECTORS[name]
    for n in range(len(raw)):
        with pytest.raises(CfdpDecodeError):
            parse(raw[:n])


# The computed fields parse checks against the octets (the entity-ID TLV
# length and the widths are free choices, kept).
CHECKED = frozenset(
    {
        "data_field_length",
        "crc_value",
        "source_file_name_len",
        "dest_file_name_len",
        "segment_metadata_length",
    }
)


def test_mutated_vectors_parse_and_round_trip_or_raise_decode_errors() -> None:
    """Bit flips anywhere: parse either raises CfdpDecodeError or returns a
    PDU whose octets are the mutated ones; plain dissection never raises
    anything else."""
    rng = random.Random(7270)
    parsed = rejected = 0
    for raw in VECTORS.values():
        for _ in range(60):
            buf = bytearray(raw)
            for _ in range(rng.randint(1, 3)):
                buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
            data = bytes(buf)
            try:
                pdu = parse(data)
            except CfdpDecodeError:
                rejected += 1
            else:
                parsed += 1
                assert bytes(pdu) == data
                # What parse checked is what building computes.
                assert bytes(fresh(pdu, CHECKED)) == data
            try:
                shown = CFDP(data)
            except CfdpDecodeError:
                shown = None
            assert shown is None or bytes(shown) == data
    assert parsed > 50 and rejected > 50


# ---------------------------------------------------------------------------
# Plain dissection, malformed building, refusals, UDP binding
# ---------------------------------------------------------------------------


def test_plain_dissection_shows_what_parse_rejects() -> None:
    tail = CFDP(EOF + b"zz")
    assert isinstance(tail, CFDPEOF) and bytes(tail.payload) == b"zz"
    bad_crc = CFDP(flip_last(VECTORS["prompt_keep_alive_crc"]))
    assert bad_crc.getfieldval("crc_value") == 0xCCD3
    unknown = CFDP(bytes(CFDPDirective(directive_code=3, parameters=b"\x01\x02")))
    assert type(unknown) is CFDPDirective
    assert unknown.getfieldval("parameters") == b"\x01\x02"
    excess = CFDP(bytes(CFDPAck(excess=b"\x09")))
    assert excess.getfieldval("excess") == b"\x09"
    with pytest.raises(CfdpDecodeError, match="runs past the datagram"):
        CFDP(EOF[:-1])
    # An explicit subclass is kept: NAK layout over an EOF's octets.
    assert type(CFDPNak(EOF)) is CFDPNak


def test_malformed_on_purpose() -> None:
    lie = bytes(CFDPKeepAlive(progress=5, data_field_length=3))
    assert lie[1:3] == b"\x00\x03" and len(lie) == 7 + 5
    with pytest.raises(CfdpDecodeError, match="data field length 3 does not match"):
        parse(lie)
    wrong = bytes(CFDPKeepAlive(crc=1, crc_value=0xBEEF))
    assert wrong.endswith(b"\xbe\xef")
    with pytest.raises(CfdpDecodeError, match="bad CRC: 0xbeef"):
        parse(wrong)
    # The CRC is computed over the lie, so only the lie is wrong.
    lie_crc = bytes(CFDPKeepAlive(crc=1, data_field_length=9))
    assert crc16(lie_crc) == 0
    assert CFDPEOF().truncate(-1) == bytes(CFDPEOF())[:-1]
    with pytest.raises(ValueError, match="removes nothing"):
        CFDPEOF().truncate(100)
    over = bytes(CFDPMetadata(source_file_name=b"abc", source_file_name_len=1, options=[]))
    # "a" is the source name; "b" (98) is read as the destination's length octet.
    with pytest.raises(CfdpDecodeError, match=r"destination file name LV \(length 98\)"):
        parse(over)
    under = bytes(CFDPNak(directive_code="eof"))  # a NAK layout under the EOF code
    assert under[7] == 4 and len(under) == 7 + 1 + 8
    for decode in (CFDP, parse):
        with pytest.raises(CfdpDecodeError, match=r"EOF data field ends inside the file size"):
            decode(under)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: CFDPPrompt(entity_id_length=9), r"entity_id_length is 1-8 octets, not 9"),
        (lambda: CFDPPrompt(sequence_number_length=0), r"sequence_number_length is 1-8 octets"),
        (lambda: CFDPPrompt(source_entity=256, entity_id_length=1), r"256 does not fit in 1"),
        (lambda: CFDPPrompt(source_entity=2**64), r"entity_id_length is 1-8 octets, not 9"),
        (lambda: CFDPKeepAlive(progress=2**32), r"progress 4294967296 does not fit in 4 octets"),
        (lambda: CFDPNak(segment_requests=[(0, 2**32)]), r"does not fit in 4 octets"),
        (lambda: CFDPEOF(condition=16), r"condition is a 4-bit field, not 16"),
        (lambda: CFDPFinished(file_status=4), r"file_status is a 2-bit field"),
        (lambda: CFDPPrompt(version=8), r"version is a 3-bit field"),
        (lambda: CFDPFileData(metadata=bytes(64)), r"segment metadata is at most 63 octets"),
        (lambda: CFDPMetadata(source_file_name=bytes(256)), r"source_file_name_len is one octet"),
        (lambda: CFDPTLV(type=2, value=bytes(300)), r"length is one octet"),
        (lambda: CFDPFileData(data=bytes(65535)), r"data field of 65539 octets, over 65535"),
        (lambda: CFDPEOF(checksum=2**32), r"checksum 4294967296 does not fit in 4 octets"),
    ],
)
def test_building_refuses_what_does_not_fit(build: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        bytes(build())


def test_explicit_widths_of_three_to_seven_octets() -> None:
    for width in (3, 5, 6, 7):
        raw = bytes(CFDPPrompt(entity_id_length=width, sequence_number_length=width, dest_entity=9))
        assert raw[3] == ((width - 1) << 4) | (width - 1)
        assert parse(raw).getfieldval("dest_entity") == 9
        assert len(raw) == 4 + 3 * width + 2


def test_bind_puts_the_layer_on_a_udp_port() -> None:
    nak = CFDPNak(start_of_scope=1, end_of_scope=9, segment_requests=[(2, 3)])
    raw = bytes(IP() / UDP(sport=40000, dport=5222) / nak)
    assert type(IP(raw)[UDP].payload) is Raw  # no port of its own
    bind(5222)
    try:
        got = IP(raw)[UDP].payload
        assert type(got) is CFDPNak
        assert got.getfieldval("segment_requests") == [(2, 3)]
        assert UDP(bytes(UDP() / CFDPPrompt())).dport == 5222
        back = bytes(IP() / UDP(sport=5222, dport=40001) / nak)
        assert type(IP(back)[UDP].payload) is CFDPNak
    finally:
        unbind(5222)
    assert type(IP(raw)[UDP].payload) is Raw
