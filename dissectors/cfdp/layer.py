"""Scapy layer for CCSDS File Delivery Protocol PDUs (CCSDS 727.0-B-5 §5).

Every protocol fact (file directive codes, condition codes, file statuses,
transaction statuses, TLV types, the names of the one- and two-bit codes, the
versions, the widest data field and segment metadata) is read from
``specs/cfdp/wire.json`` through :mod:`conformance.core.wire`; nothing here
restates a table. The classes only describe the wire layout, and their field
names are the ``fields`` vocabulary of wire.json wherever one applies. The
book is not reachable here: the section and table numbers below are those the
implementations' sources cite for 727.0-B-5 (as in specs/cfdp/README.md),
none checked against the text.

Layout (``fields_desc`` in wire order):

* every PDU, the fixed header (§5.1, Table 5-1): ``version`` (3 bits),
  ``pdu_type``, ``direction``, ``mode``, ``crc``, ``large_file`` (1 bit each),
  ``data_field_length`` (16 bits, the CRC included), ``segmentation_control``
  (1 bit), ``entity_id_length`` (3 bits), ``segment_metadata`` (1 bit),
  ``sequence_number_length`` (3 bits), ``source_entity``, ``transaction``,
  ``dest_entity``. The two widths are held in octets, 1-8 (the wire carries
  the width less one); then the data field, whose last two octets are
  ``crc_value`` (CRC-16, :func:`crc16`) when ``crc`` is 1;
* file directives (§5.2): ``directive_code`` (one octet, Table 5-4), then:

  - :class:`CFDPEOF` (§5.2.2, Table 5-6): ``condition`` (4 bits), ``spare``
    (4), ``checksum`` (32 bits), ``file_size`` (FSS), ``fault_location``
    (an entity-ID TLV, only when the condition is not no_error);
  - :class:`CFDPFinished` (§5.2.3, Table 5-7): ``condition`` (4 bits),
    ``spare`` (1), ``delivery_code`` (1), ``file_status`` (2),
    ``filestore_responses`` (TLVs), ``fault_location`` (entity-ID TLV);
  - :class:`CFDPAck` (§5.2.4, Table 5-8): ``ack_of`` (4 bits), ``ack_subtype``
    (4), ``condition`` (4), ``spare`` (2), ``transaction_status`` (2);
  - :class:`CFDPMetadata` (§5.2.5, Table 5-9): ``reserved1`` (1 bit),
    ``closure_requested`` (1), ``reserved2`` (2), ``checksum_type`` (4),
    ``file_size`` (FSS), the source and destination file names as LVs
    (Table 5-2: ``source_file_name_len``, ``source_file_name``,
    ``dest_file_name_len``, ``dest_file_name``), ``options`` (TLVs);
  - :class:`CFDPNak` (§5.2.6, Tables 5-10, 5-11): ``start_of_scope``,
    ``end_of_scope`` (FSS each), ``segment_requests`` (``(start, end)``
    pairs, FSS each);
  - :class:`CFDPPrompt` (§5.2.7): ``response_required`` (1 bit), ``spare`` (7);
  - :class:`CFDPKeepAlive` (§5.2.8): ``progress`` (FSS);
  - :class:`CFDPDirective`: a directive code wire.json does not define; its
    ``parameters`` are the rest of the data field;

  each directive ends with ``excess``: octets after its parameters inside the
  data field (none in a well-formed PDU, so empty unless given);
* :class:`CFDPFileData` (§5.3, Table 5-14): with the header's segment metadata
  flag, ``record_continuation`` (2 bits), ``segment_metadata_length`` (6 bits)
  and ``metadata``; then ``offset`` (FSS) and ``data`` (the rest of the data
  field).

FSS fields (file size, offset, scope bounds, segment requests, progress) are
4 octets, or 8 when ``large_file`` is 1 (§5.1). TLVs (§5.4, Table 5-3) are
:class:`CFDPTLV` (``type``, ``length``, ``value``) and, for type entity_id,
:class:`CFDPEntityIdTLV` (``type``, ``length``, ``entity_id``); a
``fault_location`` given as an int is that entity ID's TLV.

``CFDP(...)`` returns the class of its PDU: ``CFDP(raw_bytes)`` dissects by the
PDU type bit and the directive code; ``CFDP(directive_code="nak", ...)``,
``CFDP(directive_code=8, ...)`` or ``CFDP(pdu_type="file_data", ...)`` builds
one. A subclass may be called directly (``CFDPEOF(...)``, ``CFDPNak(raw)``)::

    CFDPEOF(source_entity=1, transaction=3, dest_entity=2, crc=1,
            condition="cancel_request_received", checksum=0xDEADBEEF,
            file_size=1000, fault_location=2)
    CFDPFileData(large_file=1, offset=2**32 + 7, data=b"xyz",
                 record_continuation="start_and_end", metadata=b"\\x01")

CFDP has no UDP port (wire.json ``udp_port`` is null); :func:`bind` puts the
layer on one, :func:`unbind` takes it off.

Computed when building unless given: ``data_field_length`` (the CRC counted),
``entity_id_length`` and ``sequence_number_length`` (the smallest of 1, 2, 4
or 8 octets that holds the IDs, resp. the sequence number: spacepackets reads
no other widths), ``segment_metadata`` (1 when a file data PDU is
given any segment metadata field), ``direction`` (the way the PDU travels:
toward the sender for Finished, NAK, Keep Alive and the ACK of an EOF, else
toward the receiver), ``ack_subtype`` (1 for the ACK of a Finished, else 0;
wire.json ``fields``), ``crc_value`` (when ``crc`` is 1), the LV, TLV and
segment metadata lengths, and an entity-ID TLV's width (that of the PDU's
entity IDs). A dissected PDU keeps the values it was read with: after
changing a field, ``del pdu.crc_value`` (or ``data_field_length``) has it
computed again. Enumerated fields hold their codes (``pdu.condition == 15``);
``show()`` names them.

Malformed PDUs on purpose (a model-driven tester sends them): give any length
a value that lies (``data_field_length=3``, a TLV ``length=200``), a wrong
``crc_value``, ``crc=1`` on any PDU, an undefined ``version`` or
``directive_code`` (``CFDPDirective(directive_code=0)``), ``excess`` octets
after a directive's parameters, a fault location that is no entity-ID TLV or
comes with no_error, a layout under another PDU's code
(``CFDPNak(directive_code=4)``); :meth:`CFDP.truncate` cuts the PDU short and
``pdu / Raw(b"..")`` appends bytes after it. Building refuses only what cannot
be put in the field at all (a value wider than its bits or octets, a width
outside 1-8, a length over 255): :class:`ValueError`.

Reading: :func:`parse` is the strict decoder and raises only
:class:`CfdpDecodeError`: exactly one PDU per datagram (a defined version, the
header complete, the data field length equal to what follows the header), a
matching CRC when the flag is set, a defined directive code, every fixed
field, LV and TLV inside the data field, the LVs of every filestore request
and response inside their TLV's value (:func:`filestore_content`), nothing
after a directive's parameters, a fault location that is one entity-ID TLV of
1-8 octets, last, and only with a condition other than no_error, an ACK of a
defined directive, Metadata options of the option TLV types and NAK segment
requests of whole pairs. The error names the field at fault and the kind of
fault (:class:`CfdpFault`: malformed, invalid, CRC), the first one found in
that order; our Lua dissector and the emulator's classifier agree with it on
every datagram (``dissectors/tests/test_fuzz_agreement.py``). :func:`classify`
gives the flat match fields of a parsed PDU, those of the emulator's
classifier. Plain Scapy dissection (``CFDP(raw)``, or under UDP once bound)
uses the same fields; it raises :class:`CfdpDecodeError` where the PDU cannot
be laid out (the header or the data field runs past the datagram, a fixed
field, LV or TLV runs past the data field, an LV past its filestore TLV) and
shows rather than rejects the rest (a bad CRC, an unknown directive, excess
octets, a misplaced fault location, bytes after the PDU as a ``Raw`` payload).
"""

# scapy.contrib.description = CCSDS File Delivery Protocol (CFDP), CCSDS 727.0-B-5 (dtnconform)
# scapy.contrib.status = loads

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from scapy.base_classes import BasePacket
from scapy.fields import (
    AnyField,
    BitEnumField,
    BitField,
    BitFieldLenField,
    ByteEnumField,
    ConditionalField,
    Field,
    FieldLenField,
    PacketListField,
    ShortField,
    StrField,
    StrLenField,
    XShortField,
)
from scapy.layers.inet import UDP
from scapy.packet import (
    NoPayload,
    Packet,
    bind_bottom_up,
    bind_layers,
    split_bottom_up,
    split_layers,
)

from conformance.core import wire

__all__ = [
    "CONDITION_CODES",
    "DATA_FIELD_LENGTH_MAX",
    "DELIVERY_CODES",
    "DIRECTIONS",
    "DIRECTIVES",
    "FILE_STATUSES",
    "FIXED_HEADER_LEN",
    "MODES",
    "PDU_TYPES",
    "RECORD_CONTINUATIONS",
    "RESPONSES_REQUIRED",
    "SEGMENT_METADATA_LENGTH_MAX",
    "TLV_TYPES",
    "TRANSACTION_STATUSES",
    "UDP_PORT",
    "VERSION",
    "VERSIONS",
    "CFDP",
    "CFDPAck",
    "CFDPDirective",
    "CFDPEOF",
    "CFDPEntityIdTLV",
    "CFDPFileData",
    "CFDPFinished",
    "CFDPKeepAlive",
    "CFDPMetadata",
    "CFDPNak",
    "CFDPPrompt",
    "CFDPTLV",
    "CfdpDecodeError",
    "CfdpFault",
    "FilestoreContent",
    "ConditionCode",
    "DirectiveCode",
    "TlvType",
    "bind",
    "classify",
    "crc16",
    "filestore_content",
    "header_len",
    "parse",
    "unbind",
]

# ---------------------------------------------------------------------------
# Wire facts (specs/cfdp/wire.json)
# ---------------------------------------------------------------------------

_FACTS = wire.load("cfdp")
_VALUES: dict[str, Any] = _FACTS["values"]

UDP_PORT: int | None = _FACTS["udp_port"]  # null: no port is assigned
VERSIONS: tuple[int, ...] = tuple(int(v) for v in _VALUES["version"]["one_of"])  # Table 5-1
VERSION: int = max(VERSIONS)  # the version built: 1, 727.0-B-5
DIRECTIVES: dict[int, str] = wire.names("cfdp", "directives")  # Table 5-4
CONDITION_CODES: dict[int, str] = wire.names("cfdp", "condition_codes")  # Table 5-5
FILE_STATUSES: dict[int, str] = wire.names("cfdp", "file_statuses")  # §5.2.3
TRANSACTION_STATUSES: dict[int, str] = wire.names("cfdp", "transaction_statuses")  # §5.2.4
TLV_TYPES: dict[int, str] = wire.names("cfdp", "tlv_types")  # §5.4
DATA_FIELD_LENGTH_MAX: int = int(_VALUES["data_field_length"]["max"])
SEGMENT_METADATA_LENGTH_MAX: int = int(_VALUES["segment_metadata_length"]["max"])


def _listed(field: str, bits: int) -> dict[int, str]:
    """The names wire.json's ``values`` lists for a ``bits``-bit field, by code:
    a name's position in the list is its code (``pdu_type``: file_directive 0,
    file_data 1)."""
    names = list(_VALUES[field]["names"])
    if len(names) != 1 << bits:
        raise wire.WireFactsError(
            f"wire.json values.{field} names {len(names)} codes, not {1 << bits}"
        )
    return dict(enumerate(names))


PDU_TYPES = _listed("pdu_type", 1)  # §5.1
DIRECTIONS = _listed("direction", 1)  # §5.1
MODES = _listed("mode", 1)  # §5.1
DELIVERY_CODES = _listed("delivery_code", 1)  # §5.2.3
RESPONSES_REQUIRED = _listed("response_required", 1)  # §5.2.7
RECORD_CONTINUATIONS = _listed("record_continuation", 2)  # §5.3


def _codes(names: dict[int, str]) -> dict[str, int]:
    return {name: code for code, name in names.items()}


_DIRECTIVE_CODES = _codes(DIRECTIVES)
_TLV_CODES = _codes(TLV_TYPES)
_PDU_TYPE_CODES = _codes(PDU_TYPES)
_DIRECTION_CODES = _codes(DIRECTIONS)
_FILE_DIRECTIVE = _PDU_TYPE_CODES["file_directive"]
_FILE_DATA = _PDU_TYPE_CODES["file_data"]
_NO_ERROR = _codes(CONDITION_CODES)["no_error"]
_RETAINED = _codes(FILE_STATUSES)["retained"]
_ENTITY_ID_TLV = _TLV_CODES["entity_id"]
_FILESTORE_RESPONSE_TLV = _TLV_CODES["filestore_response"]
_FILESTORE_REQUEST_TLV = _TLV_CODES["filestore_request"]
# Table 5-9: the TLVs a Metadata PDU carries as options.
_METADATA_OPTION_NAMES = (
    "filestore_request",
    "message_to_user",
    "fault_handler_override",
    "flow_label",
)
_METADATA_OPTIONS = frozenset(_TLV_CODES[n] for n in _METADATA_OPTION_NAMES)

DirectiveCode = enum.IntEnum("DirectiveCode", _DIRECTIVE_CODES)  # type: ignore[misc]
DirectiveCode.__doc__ = "File directive codes (Table 5-4), from wire.json: DirectiveCode.nak == 8."
ConditionCode = enum.IntEnum("ConditionCode", _codes(CONDITION_CODES))  # type: ignore[misc]
ConditionCode.__doc__ = "Condition codes (Table 5-5), from wire.json."
TlvType = enum.IntEnum("TlvType", _TLV_CODES)  # type: ignore[misc]
TlvType.__doc__ = "TLV types (§5.4), from wire.json: TlvType.entity_id == 6."

FIXED_HEADER_LEN = 4  # §5.1: the octets before the entity IDs
_ID_WIDTH_MAX = 8  # 3 bits hold the width less one
_AUTO_WIDTHS = (1, 2, 4, 8)
_CRC_LEN = 2


class CfdpFault(enum.Enum):
    """What kind of fault a :class:`CfdpDecodeError` reports."""

    #: the octets cannot be laid out as §5 lays them out: a field, LV or TLV
    #: runs past the datagram, the data field or its TLV, octets are left
    #: over, or the version is undefined (our Lua dissector's MALFORMED group)
    MALFORMED = "malformed"
    #: laid out, but against a rule :func:`parse` enforces (an undefined
    #: directive code, a misplaced or misshapen fault location, an ACK of an
    #: undefined directive, a Metadata option of another TLV type); the Lua
    #: dissector shows such a PDU with a PROTOCOL expert
    INVALID = "invalid"
    #: well-formed and valid, but its CRC-16 does not match
    CRC = "crc"


class CfdpDecodeError(ValueError):
    """The bytes are not exactly one well-formed CFDP PDU; the message says
    what is wrong (and, for an LV or TLV, at which octet of the PDU).

    ``field`` names the field at fault: a field name of this layer
    (``file_size``, ``source_file_name_len``, ``fault_location``, ...), the
    name of an LV inside a filestore TLV (``first_file_name``,
    ``second_file_name``, ``filestore_message``, each with ``_len`` for its
    length octet), ``header`` when the datagram ends inside the fixed header,
    or ``excess`` for octets after a directive's parameters; our Lua
    dissector names the same field (``dtncfdp.malformed.field``) for a
    malformed PDU. ``kind`` says what is wrong with it (:class:`CfdpFault`).
    """

    def __init__(self, message: str, *, field: str, kind: CfdpFault = CfdpFault.MALFORMED) -> None:
        super().__init__(message)
        self.field = field
        self.kind = kind


def header_len(octet3: int) -> int:
    """The length of the fixed header whose fourth octet is ``octet3`` (§5.1):
    4 octets, two entity IDs and the transaction sequence number."""
    return FIXED_HEADER_LEN + 2 * (((octet3 >> 4) & 0x07) + 1) + (octet3 & 0x07) + 1


# ---------------------------------------------------------------------------
# CRC-16 (§5.1: the CRC flag's trailer)
# ---------------------------------------------------------------------------


def _crc_table() -> tuple[int, ...]:
    table = []
    for i in range(256):
        c = i << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) if c & 0x8000 else (c << 1)
        table.append(c & 0xFFFF)
    return tuple(table)


_CRC_TABLE = _crc_table()


def crc16(data: bytes) -> int:
    """The PDU CRC: CRC-16/CCITT-FALSE (polynomial 0x1021, preset 0xFFFF, no
    reflection, no final XOR), as the channel emulator's classifier and
    spacepackets (``crc16.ibm_3740``) compute it: ``crc16(b"123456789")`` is
    0x29B1, and the CRC of a PDU with its CRC appended is 0."""
    crc = 0xFFFF
    for octet in data:
        crc = ((crc << 8) & 0xFFFF) ^ _CRC_TABLE[(crc >> 8) ^ octet]
    return crc


# ---------------------------------------------------------------------------
# Widths and where a field lies
# ---------------------------------------------------------------------------


def _min_octets(value: int) -> int:
    return max(1, (int(value).bit_length() + 7) // 8)


def _auto_width(*values: int) -> int:
    """The smallest of 1, 2, 4, 8 octets that holds every value (wider values:
    their own width, which building then refuses as over 8)."""
    need = max(_min_octets(v) for v in values)
    return next((w for w in _AUTO_WIDTHS if w >= need), need)


def _entity_width(pkt: Packet) -> int:
    width = pkt.getfieldval("entity_id_length")
    if width is None:
        return _auto_width(pkt.getfieldval("source_entity"), pkt.getfieldval("dest_entity"))
    return int(width)


def _sequence_width(pkt: Packet) -> int:
    width = pkt.getfieldval("sequence_number_length")
    return _auto_width(pkt.getfieldval("transaction")) if width is None else int(width)


def _fss(pkt: Packet) -> int:
    """The octets of an FSS field: 8 with the large file flag, else 4 (§5.1)."""
    return 8 if pkt.getfieldval("large_file") else 4


def _room(pkt: Packet, s: bytes) -> int:
    """Octets of the data field left before the CRC (negative when the data
    field is too short to hold the CRC)."""
    return len(s) - (_CRC_LEN if pkt.getfieldval("crc") else 0)


def _label(pkt: Packet) -> str:
    return str(getattr(type(pkt), "label", pkt.name))


def _octet(pkt: Packet, s: bytes, pos: int = 0) -> int | None:
    """Which octet of the PDU being dissected octet ``pos`` of ``s`` is (None
    when not known)."""
    total = getattr(pkt, "_pdu_len", None)  # set by CFDP.pre_dissect
    return total - len(s) + pos if total is not None else None


def _at(pkt: Packet, s: bytes, pos: int = 0) -> str:
    """Where octet ``pos`` of ``s`` lies in the PDU being dissected, as text
    for a message (empty when not known)."""
    octet = _octet(pkt, s, pos)
    return f" at octet {octet}" if octet is not None else ""


_SEGMETA_FIELDS = ("record_continuation", "segment_metadata_length", "metadata")


def _segmeta_on(pkt: Packet) -> bool:
    """Whether a file data PDU carries segment metadata (§5.3): the header
    flag, or when it is left to compute, whether any segment metadata field
    was given."""
    flag = pkt.getfieldval("segment_metadata")
    if flag is None:
        return any(pkt.fields.get(name) is not None for name in _SEGMETA_FIELDS)
    return bool(flag)


# ---------------------------------------------------------------------------
# Fields
# ---------------------------------------------------------------------------


class _BitsMixin:
    """Bits of a PDU: building refuses a value wider than the field (never
    masked); ``opens`` names the octet the field starts, whose absence from
    the data field is an error when dissecting."""

    name: str
    size: int
    opens: str | None

    def i2m(self, pkt: Packet | None, x: Any) -> int:
        value = super().i2m(pkt, x)  # type: ignore[misc]
        if not isinstance(value, int) or not 0 <= value < 1 << self.size:
            raise ValueError(f"{self.name} is a {self.size}-bit field, not {value!r}")
        return value

    def getfield(self, pkt: Packet, s: Any) -> Any:
        if self.opens and isinstance(s, bytes) and _room(pkt, s) < 1:
            raise CfdpDecodeError(
                f"the {_label(pkt)} data field ends before the {self.opens}", field=self.name
            )
        return super().getfield(pkt, s)  # type: ignore[misc]


class _Bits(_BitsMixin, BitField):
    __slots__ = ["opens"]

    def __init__(self, name: str, default: int | None, size: int, opens: str | None = None) -> None:
        BitField.__init__(self, name, default, size)
        self.opens = opens


class _EnumBits(_BitsMixin, BitEnumField):
    __slots__ = ["opens"]

    def __init__(
        self,
        name: str,
        default: int | None,
        size: int,
        names: dict[int, str],
        opens: str | None = None,
    ) -> None:
        BitEnumField.__init__(self, name, default, size, names)
        self.opens = opens


class _WidthField(_Bits):
    """An entity-ID or sequence-number width (§5.1), held in octets (1-8); the
    wire carries the width less one. None: ``auto(pkt)``."""

    __slots__ = ["auto"]

    def __init__(self, name: str, auto: Callable[[Packet], int]) -> None:
        _Bits.__init__(self, name, None, 3)
        self.auto = auto

    def i2m(self, pkt: Packet | None, x: Any) -> int:
        width = self.auto(pkt) if x is None and pkt is not None else int(x or 0)
        if not 1 <= width <= _ID_WIDTH_MAX:
            raise ValueError(f"{self.name} is 1-{_ID_WIDTH_MAX} octets, not {width}")
        return width - 1

    def m2i(self, pkt: Packet | None, x: int) -> int:
        return x + 1


class _DirectionField(_EnumBits):
    """The direction bit (§5.1); None: the way the PDU travels."""

    def __init__(self) -> None:
        _EnumBits.__init__(self, "direction", None, 1, DIRECTIONS)

    def i2m(self, pkt: Packet | None, x: Any) -> int:
        if x is None and isinstance(pkt, CFDP):
            x = pkt.default_direction()
        return _EnumBits.i2m(self, pkt, x)


class _SegmentMetadataFlag(_Bits):
    """The segment metadata flag (§5.1); None: whether a file data PDU was
    given any segment metadata field."""

    def __init__(self) -> None:
        _Bits.__init__(self, "segment_metadata", None, 1)

    def i2m(self, pkt: Packet | None, x: Any) -> int:
        if x is None and pkt is not None:
            x = int(_segmeta_on(pkt))
        return _Bits.i2m(self, pkt, x)


class _AckSubtypeField(_Bits):
    """The ACK's directive subtype code (§5.2.4); None: 1 for the ACK of a
    Finished, else 0 (wire.json ``fields.ack_subtype``)."""

    def __init__(self) -> None:
        _Bits.__init__(self, "ack_subtype", None, 4)

    def i2m(self, pkt: Packet | None, x: Any) -> int:
        if x is None and pkt is not None:
            x = int(pkt.getfieldval("ack_of") == _DIRECTIVE_CODES["finished"])
        return _Bits.i2m(self, pkt, x)


class _SegmentMetadataLength(BitFieldLenField):
    """The 6-bit segment metadata length (§5.3), counted from ``metadata``."""

    def __init__(self) -> None:
        BitFieldLenField.__init__(self, "segment_metadata_length", None, 6, length_of="metadata")

    def i2m(self, pkt: Packet | None, x: Any) -> int:
        n = BitFieldLenField.i2m(self, pkt, x)
        if not 0 <= n <= SEGMENT_METADATA_LENGTH_MAX:
            raise ValueError(
                f"segment metadata is at most {SEGMENT_METADATA_LENGTH_MAX} octets (§5.3), not {n}"
            )
        return n


class _UInt(Field):
    """An unsigned big-endian integer of ``width(pkt)`` octets: an entity ID,
    a sequence number, a checksum, an FSS field. Building refuses a value
    that does not fit; dissecting it past the data field (before the CRC) or
    the header is an error."""

    __slots__ = ["width", "what", "in_data_field", "hex_repr"]

    def __init__(
        self,
        name: str,
        default: int | None,
        width: Callable[[Packet], int],
        what: str,
        in_data_field: bool = True,
        hex_repr: bool = False,
    ) -> None:
        Field.__init__(self, name, default, "Q")
        self.width = width
        self.what = what
        self.in_data_field = in_data_field
        self.hex_repr = hex_repr

    def addfield(self, pkt: Packet, s: bytes, val: Any) -> bytes:
        value = int(self.i2m(pkt, val))
        width = self.width(pkt)
        if value < 0:
            raise ValueError(f"{self.name} is unsigned, not {value}")
        try:
            return s + value.to_bytes(width, "big")
        except OverflowError:
            raise ValueError(f"{self.name} {value} does not fit in {width} octets") from None

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, int]:
        width = self.width(pkt)
        room = _room(pkt, s) if self.in_data_field else len(s)
        if room < width:
            where = f"{_label(pkt)} data field" if self.in_data_field else f"{_label(pkt)}"
            raise CfdpDecodeError(
                f"the {where} ends inside the {self.what} ({width} octets, {max(room, 0)} left)",
                field=self.name,
            )
        return s[width:], int.from_bytes(s[:width], "big")

    def i2len(self, pkt: Packet, x: Any) -> int:
        return self.width(pkt)

    def i2repr(self, pkt: Packet | None, x: Any) -> str:
        if self.hex_repr and isinstance(x, int):
            return f"0x{x:08x}"
        return repr(x)


class _LengthOctet(FieldLenField):
    """The length octet of an LV or TLV (Tables 5-2, 5-3): counted from its
    value when None; dissecting it past the end is an error."""

    __slots__ = ["opens", "in_data_field"]

    def __init__(self, name: str, length_of: str, opens: str, in_data_field: bool = True) -> None:
        FieldLenField.__init__(self, name, None, length_of=length_of, fmt="B")
        self.opens = opens
        self.in_data_field = in_data_field

    def i2m(self, pkt: Packet | None, x: Any) -> int:
        n = FieldLenField.i2m(self, pkt, x)
        if not 0 <= n <= 255:
            raise ValueError(f"{self.name} is one octet (0-255), not {n}")
        return n

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, int]:
        room = _room(pkt, s) if self.in_data_field else len(s)
        if room < 1:
            where = f"{_label(pkt)} data field" if self.in_data_field else _label(pkt)
            raise CfdpDecodeError(
                f"the {where} ends before the {self.opens}{_at(pkt, s)}", field=self.name
            )
        return s[1:], s[0]


class _LengthValue(StrLenField):
    """The value of an LV (or TLV, or the segment metadata): as many octets as
    its length says; running past the end is an error."""

    __slots__ = ["what", "in_data_field"]

    def __init__(
        self,
        name: str,
        length_from: Callable[[Packet], int],
        what: str,
        in_data_field: bool = True,
    ) -> None:
        StrLenField.__init__(self, name, b"", length_from=length_from)
        self.what = what
        self.in_data_field = in_data_field

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, bytes]:
        assert self.length_from is not None  # set by __init__
        n = self.length_from(pkt)
        room = _room(pkt, s) if self.in_data_field else len(s)
        if n > room:
            where = f"{_label(pkt)} data field" if self.in_data_field else _label(pkt)
            raise CfdpDecodeError(
                f"the {self.what} (length {n}){_at(pkt, s, -1)} runs past the end of the "
                f"{where} ({max(room, 0)} octets left)",
                field=self.name,
            )
        return s[n:], s[:n]


class _RestField(StrField):
    """The rest of the data field before the CRC: file data, a directive's
    ``excess`` octets or an unknown directive's parameters."""

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, bytes]:
        n = max(0, _room(pkt, s))
        return s[n:], s[:n]


class _CrcField(XShortField):
    """The CRC-16 trailer (§5.1): computed when None."""

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, int]:
        if len(s) < _CRC_LEN:
            raise CfdpDecodeError(
                f"the {_label(pkt)} data field has no room for its CRC", field="crc_value"
            )
        return s[_CRC_LEN:], int.from_bytes(s[:_CRC_LEN], "big")


class _DirectiveCodeField(ByteEnumField):
    """The directive code octet (§5.2, Table 5-4)."""

    def __init__(self, default: int) -> None:
        ByteEnumField.__init__(self, "directive_code", default, DIRECTIVES)

    def i2m(self, pkt: Packet | None, x: Any) -> int:
        value = ByteEnumField.i2m(self, pkt, x)
        if not 0 <= value <= 255:
            raise ValueError(f"directive_code is one octet (0-255), not {value}")
        return value

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, int]:
        if _room(pkt, s) < 1:
            raise CfdpDecodeError(
                "the file directive's data field ends before the directive code",
                field="directive_code",
            )
        return s[1:], s[0]


class _TLVListField(PacketListField):
    """TLVs back to back up to the end of the data field (before the CRC),
    each a :class:`CFDPTLV`; with ``takes``, only while the type octet
    satisfies it. A TLV running past the data field is an error. With
    ``entity_ids``, an int stands for :class:`CFDPEntityIdTLV` of that ID."""

    __slots__ = ["what", "takes", "entity_ids"]

    def __init__(
        self,
        name: str,
        what: str,
        takes: Callable[[int], bool] | None = None,
        entity_ids: bool = False,
    ) -> None:
        self.what = what
        self.takes = takes
        self.entity_ids = entity_ids
        PacketListField.__init__(self, name, [], CFDPTLV)

    def any2i(self, pkt: Packet | None, x: Any) -> Any:
        if x is None:
            x = []
        elif self.entity_ids and isinstance(x, int):
            x = [CFDPEntityIdTLV(entity_id=x)]
        elif isinstance(x, Packet):
            x = [x]
        return PacketListField.any2i(self, pkt, x)

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, list[BasePacket]]:
        end = max(0, _room(pkt, s))
        items: list[BasePacket] = []
        pos = 0
        while pos < end:
            if self.takes is not None and not self.takes(s[pos]):
                break
            kind = TLV_TYPES.get(s[pos], "unassigned")
            if pos + 2 > end:
                raise CfdpDecodeError(
                    f"the {self.what} TLV (type {s[pos]}, {kind}){_at(pkt, s, pos)} runs past "
                    f"the end of the {_label(pkt)} data field: no length octet",
                    field=self.name,
                )
            n = s[pos + 1]
            if pos + 2 + n > end:
                raise CfdpDecodeError(
                    f"the {self.what} TLV (type {s[pos]}, {kind}, length {n}){_at(pkt, s, pos)} "
                    f"runs past the end of the {_label(pkt)} data field "
                    f"({end - pos - 2} octets left for its value)",
                    field=self.name,
                )
            # the LVs of a filestore request or response lie inside its value
            filestore_content(s[pos], s[pos + 2 : pos + 2 + n], _octet(pkt, s, pos + 2))
            items.append(CFDPTLV(s[pos : pos + 2 + n], _internal=1, _parent=pkt))
            pos += 2 + n
        return s[pos:], items


class _SegmentRequestsField(Field):
    """NAK segment requests (§5.2.6, Table 5-11): ``(start, end)`` offset
    pairs, FSS each, as many whole pairs as the data field holds (what is left
    is the NAK's ``excess``)."""

    islist = 1  # a list is one value (else Scapy makes one packet per item)

    def __init__(self, name: str) -> None:
        Field.__init__(self, name, [])

    def any2i(self, pkt: Packet | None, x: Any) -> list[tuple[int, int]]:
        out = []
        for pair in x or []:
            start, end = pair
            out.append((int(start), int(end)))
        return out

    def i2m(self, pkt: Packet | None, x: Any) -> Any:
        return x or []

    def addfield(self, pkt: Packet, s: bytes, val: Any) -> bytes:
        width = _fss(pkt)
        out = bytearray(s)
        for start, end in self.i2m(pkt, val):
            for value in (start, end):
                if value < 0:
                    raise ValueError(f"segment request offsets are unsigned, not {value}")
                try:
                    out += int(value).to_bytes(width, "big")
                except OverflowError:
                    raise ValueError(
                        f"segment request offset {value} does not fit in {width} octets"
                    ) from None
        return bytes(out)

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, list[tuple[int, int]]]:
        width = _fss(pkt)
        count = max(0, _room(pkt, s)) // (2 * width)
        pairs = []
        for i in range(count):
            at = 2 * width * i
            pairs.append(
                (
                    int.from_bytes(s[at : at + width], "big"),
                    int.from_bytes(s[at + width : at + 2 * width], "big"),
                )
            )
        return s[2 * width * count :], pairs

    def i2len(self, pkt: Packet, x: Any) -> int:
        return 2 * _fss(pkt) * len(x or [])

    def i2repr(self, pkt: Packet | None, x: Any) -> str:
        return repr(x)


# ---------------------------------------------------------------------------
# TLVs (§5.4, Table 5-3)
# ---------------------------------------------------------------------------


# Filestore request and response TLV values (§5.4). The book is not reachable
# here; the layout is the one the implementations' sources decode:
#
# - us-irs/spacepackets-py src/spacepackets/cfdp/tlv/tlv.py
#   (FileStoreRequestBase._common_unpacker, FileStoreResponseTlv._set_fields;
#   the TLV cited as "CCSDS 727.0-B-5 p.77", the action codes in
#   tlv/defs.py as "p.86"): one octet of action code (4 bits) and status code
#   (response) or spare (request) (4 bits), the first file name LV, a second
#   file name LV for rename, append and replace (actions 2-4) only, and for a
#   response the filestore message LV; spacepackets 0.32.0 (cfdp-py's) raises
#   "Detected length exceeds size of passed bytearray" on an LV that runs
#   past them;
# - us-irs/spacepackets-rs src/cfdp/tlv/mod.rs (FilestoreResponseTlv::
#   from_bytes, has_second_filename; FilestoreRequestTlv::from_bytes): the
#   same layout;
# - yamcs/yamcs yamcs-core/src/main/java/org/yamcs/cfdp/pdu/
#   FileStoreResponse.java, ActionCode.java (hasSecondFileName: 2-4),
#   FinishedPacket.java (each filestore response decoded inside its TLV's
#   value): the same layout;
# - dariol83/ccsds eu.dariolucia.ccsds.cfdp/src/main/java/eu/dariolucia/ccsds/
#   cfdp/protocol/pdu/tlvs/FilestoreResponseTLV.java ("Filestore Response TLV
#   Contents: Table 5-17") and FilestoreRequestTLV.java ("Table 5-15"): the
#   same fields, but it writes and reads the second file name LV for every
#   action (empty when unused);
# - nasa/CF fsw/src/cf_cfdp_pdu.h cites "section 5.4 of CCSDS 727.0-B-5" for
#   the TLV types and LibreCube cfdp 0.2.0 (cfdp/pdu/finished.py) leaves
#   filestore responses undecoded ("TODO").
#
# So an LV that runs past the TLV's value is malformed for every one of them.
# Octets left after the LVs (dariol83/ccsds's empty second name) are shown,
# not rejected, and so is a filestore TLV without even its action code octet
# (our Lua dissector flags both as PROTOCOL, not MALFORMED).
_SECOND_NAME_ACTIONS = frozenset({2, 3, 4})  # rename, append, replace


@dataclass(frozen=True)
class FilestoreContent:
    """The value of a filestore request or response TLV (§5.4, laid out as
    the comment above says): ``action_code`` (4 bits), ``status_code``
    (response) or ``spare`` (request) (4 bits), ``first_file_name``,
    ``second_file_name`` (actions 2-4 only, else None), ``filestore_message``
    (response only, else None), and ``extra``, the octets after the LVs."""

    response: bool
    action_code: int
    status_code: int | None
    spare: int | None
    first_file_name: bytes
    second_file_name: bytes | None
    filestore_message: bytes | None
    extra: bytes


def filestore_content(kind: int, value: bytes, at: int | None = None) -> FilestoreContent | None:
    """The content of a TLV of type ``kind`` whose value is ``value``: None
    unless it is a filestore request or response with at least its action
    code octet. An LV that runs past the value raises
    :class:`CfdpDecodeError` whose ``field`` names the LV (``first_file_name``,
    ``second_file_name``, ``filestore_message``; with ``_len`` when even the
    length octet is missing). ``at``: the octet of the PDU where the value
    starts, for the message."""
    if kind not in (_FILESTORE_REQUEST_TLV, _FILESTORE_RESPONSE_TLV) or not value:
        return None
    response = kind == _FILESTORE_RESPONSE_TLV
    what = "filestore response" if response else "filestore request"
    action = value[0] >> 4
    names = ["first_file_name"]
    if action in _SECOND_NAME_ACTIONS:
        names.append("second_file_name")
    if response:
        names.append("filestore_message")
    parts: dict[str, bytes] = {}
    pos = 1
    for name in names:
        label = name.replace("_", " ")
        where = f" at octet {at + pos}" if at is not None else ""
        if pos >= len(value):
            raise CfdpDecodeError(
                f"the {what} TLV's value ends before the {label} LV{where}", field=f"{name}_len"
            )
        n = value[pos]
        if pos + 1 + n > len(value):
            raise CfdpDecodeError(
                f"the {label} LV (length {n}){where} runs past the end of the {what} TLV's "
                f"value ({len(value) - pos - 1} octets left)",
                field=name,
            )
        parts[name] = value[pos + 1 : pos + 1 + n]
        pos += 1 + n
    low = value[0] & 0x0F
    return FilestoreContent(
        response=response,
        action_code=action,
        status_code=low if response else None,
        spare=None if response else low,
        first_file_name=parts["first_file_name"],
        second_file_name=parts.get("second_file_name"),
        filestore_message=parts.get("filestore_message"),
        extra=value[pos:],
    )


class CFDPTLV(Packet):
    """A TLV (§5.4, Table 5-3): type octet (wire.json ``tlv_types``), length
    octet, value. ``CFDPTLV(...)`` returns :class:`CFDPEntityIdTLV` for type
    entity_id (unless built with a ``value``: octets as given); the other
    types keep their value as octets (a filestore request or response, a
    message to user, a fault handler override, a flow label). A filestore
    request's or response's LVs are read by :attr:`filestore`; dissecting a
    PDU whose filestore TLV's LVs run past its value raises
    :class:`CfdpDecodeError`."""

    name = "CFDP TLV"
    label: ClassVar[str] = "TLV"
    fields_desc = [
        ByteEnumField("type", 0, TLV_TYPES),
        _LengthOctet("length", "value", opens="TLV length octet", in_data_field=False),
        _LengthValue("value", lambda p: p.length, what="TLV value", in_data_field=False),
    ]

    @classmethod
    def dispatch_hook(cls, _pkt: bytes | None = None, *args: Any, **kargs: Any) -> type[Packet]:
        if cls is not CFDPTLV:
            return cls
        if not _pkt and "value" in kargs:
            return cls  # raw octets on purpose, whatever the type
        kind = _pkt[0] if _pkt else kargs.get("type", 0)
        if isinstance(kind, str):
            kind = _TLV_CODES.get(kind, -1)
        return CFDPEntityIdTLV if kind == _ENTITY_ID_TLV else cls

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s

    @property
    def type_name(self) -> str:
        return TLV_TYPES.get(self.getfieldval("type"), "unassigned")

    @property
    def filestore(self) -> FilestoreContent | None:
        """The content of a filestore request or response TLV (None for the
        other types, or a value without its action code octet); an LV that
        runs past the value raises :class:`CfdpDecodeError` (dissecting a PDU
        already did)."""
        if "value" not in self.fieldtype:
            return None  # an entity ID TLV
        return filestore_content(self.getfieldval("type"), bytes(self.getfieldval("value")))

    def mysummary(self) -> str:
        return f"TLV {self.type_name}"


class CFDPEntityIdTLV(CFDPTLV):
    """An entity ID TLV (§5.4): the value is an unsigned entity ID of
    ``length`` octets (computed: the entity ID width of the PDU it is in, or
    the smallest of 1, 2, 4, 8 that holds the ID if that is too narrow). The
    fault location of an EOF or Finished PDU is one."""

    name = "CFDP entity ID TLV"
    label = "entity ID TLV"
    fields_desc = [
        ByteEnumField("type", _ENTITY_ID_TLV, TLV_TYPES),
        _LengthOctet("length", "entity_id", opens="TLV length octet", in_data_field=False),
        _UInt("entity_id", 0, lambda p: _tlv_entity_width(p), "entity ID", in_data_field=False),
    ]


def _tlv_entity_width(tlv: Packet) -> int:
    """An entity ID TLV's width: its ``length`` when given, else the entity
    ID width of the PDU it is in (standalone: 1), or the smallest of 1, 2, 4,
    8 octets that holds the ID when that is too narrow."""
    length = tlv.getfieldval("length")
    if length is not None:
        return int(length)
    value = tlv.getfieldval("entity_id")
    pdu = tlv.parent
    width = _entity_width(pdu) if isinstance(pdu, CFDP) else 1
    return width if _min_octets(value) <= width else _auto_width(value)


# ---------------------------------------------------------------------------
# PDUs
# ---------------------------------------------------------------------------


def _layout(
    content: list[AnyField],
    pdu_type: int = _FILE_DIRECTIVE,
    directive: str | None = None,
    excess: bool = True,
    code_octet: bool = True,
) -> list[AnyField]:
    """The fields of a PDU whose data field holds ``content`` (§5.1): the
    fixed header, the directive code of a file directive (``directive``'s
    code, 0 when None; none without ``code_octet``), the content, the
    ``excess`` octets of a directive, the CRC when the flag is set."""
    fields: list[AnyField] = [
        _Bits("version", VERSION, 3),
        _EnumBits("pdu_type", pdu_type, 1, PDU_TYPES),
        _DirectionField(),
        _EnumBits("mode", 0, 1, MODES),
        _Bits("crc", 0, 1),
        _Bits("large_file", 0, 1),
        ShortField("data_field_length", None),
        _Bits("segmentation_control", 0, 1),
        _WidthField("entity_id_length", _entity_width),
        _SegmentMetadataFlag(),
        _WidthField("sequence_number_length", _sequence_width),
        _UInt("source_entity", 0, _entity_width, "source entity ID", in_data_field=False),
        _UInt(
            "transaction", 0, _sequence_width, "transaction sequence number", in_data_field=False
        ),
        _UInt("dest_entity", 0, _entity_width, "destination entity ID", in_data_field=False),
    ]
    if pdu_type == _FILE_DIRECTIVE and code_octet:
        fields.append(_DirectiveCodeField(_DIRECTIVE_CODES[directive] if directive else 0))
    fields += content
    if excess:
        fields.append(_RestField("excess", b""))
    fields.append(
        ConditionalField(_CrcField("crc_value", None), lambda p: p.getfieldval("crc") == 1)
    )
    return fields


_L = TypeVar("_L", bound="type[CFDP]")


class CFDP(Packet):
    """A CFDP PDU (§5). ``CFDP(...)`` returns the subclass that lays out the
    PDU (see the module docstring). This base class lays out none: its
    ``data_field`` is the whole data field before the CRC."""

    name = "CFDP PDU"
    label: ClassVar[str] = "PDU"
    directive: ClassVar[str | None] = None
    toward: ClassVar[str] = "toward_receiver"
    _by_directive: ClassVar[dict[int, type[CFDP]]] = {}
    # Set by pre_dissect: the PDU's length (for octet positions in messages)
    # and the datagram's octets after it (the Raw payload).
    __slots__ = ["_pdu_len", "_after_pdu"]
    fields_desc = _layout([_RestField("data_field", b"")], excess=False, code_octet=False)

    @classmethod
    def register(cls, layout: _L) -> _L:
        """Class decorator: ``layout`` lays out the directive named by its
        ``directive`` (a name of wire.json's directives table)."""
        if layout.directive not in _DIRECTIVE_CODES:
            raise wire.WireFactsError(f"wire.json defines no directive {layout.directive!r}")
        code = _DIRECTIVE_CODES[layout.directive]
        if code in CFDP._by_directive:
            raise ValueError(f"directive {code} already laid out by {CFDP._by_directive[code]}")
        CFDP._by_directive[code] = layout
        return layout

    @classmethod
    def dispatch_hook(cls, _pkt: bytes | None = None, *args: Any, **kargs: Any) -> type[Packet]:
        if cls is not CFDP:
            return cls
        if _pkt:
            if _pkt[0] & 0x10:
                return CFDPFileData
            if len(_pkt) >= FIXED_HEADER_LEN and len(_pkt) > header_len(_pkt[3]):
                return cls._by_directive.get(_pkt[header_len(_pkt[3])], CFDPDirective)
            return CFDPDirective
        pdu_type = kargs.get("pdu_type")
        if isinstance(pdu_type, str):
            pdu_type = _PDU_TYPE_CODES.get(pdu_type)
        if pdu_type == _FILE_DATA:
            return CFDPFileData
        code = kargs.get("directive_code")
        if isinstance(code, str):
            code = _DIRECTIVE_CODES.get(code, -1)
        if code is None:
            return cls
        return cls._by_directive.get(code, CFDPDirective)

    def default_direction(self) -> int:
        """The direction bit of this PDU when none is given: the way it travels."""
        return _DIRECTION_CODES[self.toward]

    # -- building ----------------------------------------------------------------

    def post_build(self, pkt: bytes, pay: bytes) -> bytes:
        if self.getfieldval("data_field_length") is None:
            n = len(pkt) - header_len(pkt[3])
            if n > DATA_FIELD_LENGTH_MAX:
                raise ValueError(f"data field of {n} octets, over {DATA_FIELD_LENGTH_MAX}")
            pkt = pkt[:1] + n.to_bytes(2, "big") + pkt[3:]
        if self.getfieldval("crc") == 1 and self.getfieldval("crc_value") is None:
            body = pkt[:-_CRC_LEN]
            pkt = body + crc16(body).to_bytes(_CRC_LEN, "big")
        return pkt + pay

    def truncate(self, n: int) -> bytes:
        """The PDU cut short: its first ``n`` octets (``n < 0``: without its
        last ``-n``). ValueError unless strictly shorter than the whole."""
        whole = bytes(self)
        cut = whole[:n]
        if len(cut) >= len(whole):
            raise ValueError(f"truncate({n}) of a {len(whole)}-octet PDU removes nothing")
        return cut

    # -- dissecting --------------------------------------------------------------

    def pre_dissect(self, s: bytes) -> bytes:
        """Cut the datagram to the PDU (header and data field); what follows
        becomes a ``Raw`` payload. Where the header or the data field runs
        past the datagram the PDU cannot be delimited: :class:`CfdpDecodeError`."""
        _check_header(s)
        hl = header_len(s[3])
        end = hl + int.from_bytes(s[1:3], "big")
        if len(s) < end:
            raise CfdpDecodeError(
                f"data field length {end - hl} runs past the datagram: "
                f"{len(s) - hl} octets follow the {hl}-octet header",
                field="data_field_length",
            )
        self._pdu_len = end
        self._after_pdu = s[end:]
        return s[:end]

    def post_dissect(self, s: bytes) -> bytes:
        after, self._after_pdu = self._after_pdu, b""
        return s + after

    # -- reading -----------------------------------------------------------------

    @property
    def header_length(self) -> int:
        """Octets of the fixed header: 4, two entity IDs, the sequence number."""
        return FIXED_HEADER_LEN + 2 * _entity_width(self) + _sequence_width(self)

    @property
    def fss(self) -> int:
        """Octets of this PDU's FSS fields: 4, or 8 with the large file flag."""
        return _fss(self)

    @property
    def directive_name(self) -> str | None:
        """The directive's wire.json name (None for file data or an unknown code)."""
        if self.getfieldval("pdu_type") == _FILE_DATA or "directive_code" not in self.fieldtype:
            return None
        return DIRECTIVES.get(self.getfieldval("directive_code"))

    def mysummary(self) -> str:
        get = self.getfieldval
        return (
            f"CFDP {self.label} {get('source_entity')}->{get('dest_entity')} "
            f"transaction {get('transaction')}"
        )


def _direction_get(self: CFDP) -> int | None:
    """The direction bit (§5.1); None until built when left to compute."""
    return self.getfieldval("direction")


def _direction_set(self: CFDP, value: Any) -> None:
    # Scapy sets its own (sniffing) ``direction`` slot to None on every packet
    # it makes or copies; only a value is the field's.
    if value is not None:
        self.setfieldval("direction", value)


# Scapy's Packet has a ``direction`` slot (the sniffing direction) that would
# shadow the field of that name; a class attribute of that name in the body
# would be taken as the field's default, so the property is set afterwards.
CFDP.direction = property(_direction_get, _direction_set)  # type: ignore[assignment]


class _FaultLocationMixin:
    """The fault location of an EOF or Finished PDU (§5.2.2, §5.2.3)."""

    getfieldval: Callable[[str], Any]

    @property
    def fault_location_id(self) -> int | None:
        """The entity ID of the fault location TLV, if there is one of type
        entity_id."""
        for tlv in self.getfieldval("fault_location"):
            if isinstance(tlv, CFDPEntityIdTLV):
                return int(tlv.getfieldval("entity_id"))
        return None


@CFDP.register
class CFDPEOF(_FaultLocationMixin, CFDP):
    """EOF (§5.2.2, Table 5-6): condition code, spare, file checksum, file
    size, and a fault location entity-ID TLV unless the condition is no_error."""

    name = "CFDP EOF"
    label = "EOF"
    directive = "eof"
    fields_desc = _layout(
        [
            _EnumBits("condition", _NO_ERROR, 4, CONDITION_CODES, opens="condition code"),
            _Bits("spare", 0, 4),
            _UInt("checksum", 0, lambda p: 4, "file checksum", hex_repr=True),
            _UInt("file_size", 0, _fss, "file size"),
            _TLVListField("fault_location", "fault location", entity_ids=True),
        ],
        directive="eof",
    )


@CFDP.register
class CFDPFinished(_FaultLocationMixin, CFDP):
    """Finished (§5.2.3, Table 5-7): condition code, spare bit, delivery code,
    file status, filestore response TLVs, and a fault location entity-ID TLV."""

    name = "CFDP Finished"
    label = "Finished"
    directive = "finished"
    toward = "toward_sender"
    fields_desc = _layout(
        [
            _EnumBits("condition", _NO_ERROR, 4, CONDITION_CODES, opens="condition code"),
            _Bits("spare", 0, 1),
            _EnumBits("delivery_code", 0, 1, DELIVERY_CODES),
            _EnumBits("file_status", _RETAINED, 2, FILE_STATUSES),
            _TLVListField(
                "filestore_responses",
                "filestore response",
                takes=lambda kind: kind == _FILESTORE_RESPONSE_TLV,
            ),
            _TLVListField("fault_location", "fault location", entity_ids=True),
        ],
        directive="finished",
    )


@CFDP.register
class CFDPAck(CFDP):
    """ACK (§5.2.4, Table 5-8): the directive code acknowledged, its subtype,
    condition code, spare, transaction status."""

    name = "CFDP ACK"
    label = "ACK"
    directive = "ack"
    toward = "toward_sender"
    fields_desc = _layout(
        [
            _EnumBits(
                "ack_of",
                _DIRECTIVE_CODES["eof"],
                4,
                DIRECTIVES,
                opens="acknowledged directive code",
            ),
            _AckSubtypeField(),
            _EnumBits("condition", _NO_ERROR, 4, CONDITION_CODES, opens="condition code"),
            _Bits("spare", 0, 2),
            _EnumBits("transaction_status", 0, 2, TRANSACTION_STATUSES),
        ],
        directive="ack",
    )

    def default_direction(self) -> int:
        """The ACK of a Finished goes toward the receiver, of an EOF toward the
        sender."""
        finished = self.getfieldval("ack_of") == _DIRECTIVE_CODES["finished"]
        return _DIRECTION_CODES["toward_receiver" if finished else "toward_sender"]


@CFDP.register
class CFDPMetadata(CFDP):
    """Metadata (§5.2.5, Table 5-9): reserved bit, closure requested, two
    reserved bits, checksum type, file size, source and destination file
    names (LVs, Table 5-2), options (TLVs)."""

    name = "CFDP Metadata"
    label = "Metadata"
    directive = "metadata"
    fields_desc = _layout(
        [
            _Bits("reserved1", 0, 1, opens="closure requested and checksum type octet"),
            _Bits("closure_requested", 0, 1),
            _Bits("reserved2", 0, 2),
            _Bits("checksum_type", 0, 4),
            _UInt("file_size", 0, _fss, "file size"),
            _LengthOctet("source_file_name_len", "source_file_name", opens="source file name LV"),
            _LengthValue(
                "source_file_name",
                lambda p: p.getfieldval("source_file_name_len"),
                what="source file name LV",
            ),
            _LengthOctet("dest_file_name_len", "dest_file_name", opens="destination file name LV"),
            _LengthValue(
                "dest_file_name",
                lambda p: p.getfieldval("dest_file_name_len"),
                what="destination file name LV",
            ),
            _TLVListField("options", "option"),
        ],
        directive="metadata",
    )


@CFDP.register
class CFDPNak(CFDP):
    """NAK (§5.2.6, Tables 5-10, 5-11): start and end of scope, then segment
    requests as ``(start, end)`` offset pairs."""

    name = "CFDP NAK"
    label = "NAK"
    directive = "nak"
    toward = "toward_sender"
    fields_desc = _layout(
        [
            _UInt("start_of_scope", 0, _fss, "start of scope"),
            _UInt("end_of_scope", 0, _fss, "end of scope"),
            _SegmentRequestsField("segment_requests"),
        ],
        directive="nak",
    )


@CFDP.register
class CFDPPrompt(CFDP):
    """Prompt (§5.2.7): response required (nak or keep_alive), 7 spare bits."""

    name = "CFDP Prompt"
    label = "Prompt"
    directive = "prompt"
    fields_desc = _layout(
        [
            _EnumBits("response_required", 0, 1, RESPONSES_REQUIRED, opens="response required"),
            _Bits("spare", 0, 7),
        ],
        directive="prompt",
    )


@CFDP.register
class CFDPKeepAlive(CFDP):
    """Keep Alive (§5.2.8): progress."""

    name = "CFDP Keep Alive"
    label = "Keep Alive"
    directive = "keep_alive"
    toward = "toward_sender"
    fields_desc = _layout([_UInt("progress", 0, _fss, "progress")], directive="keep_alive")


class CFDPDirective(CFDP):
    """A file directive whose code wire.json does not define (Table 5-4
    reserves the others); its ``parameters`` are the rest of the data field.
    :func:`parse` rejects it."""

    name = "CFDP unknown directive"
    label = "unknown directive"
    fields_desc = _layout([_RestField("parameters", b"")], excess=False)


class CFDPFileData(CFDP):
    """File data (§5.3, Table 5-14): with the segment metadata flag, record
    continuation state, segment metadata length and metadata; then the
    offset and the file data."""

    name = "CFDP File Data"
    label = "File Data"
    fields_desc = _layout(
        [
            ConditionalField(
                _EnumBits(
                    "record_continuation",
                    0,
                    2,
                    RECORD_CONTINUATIONS,
                    opens="record continuation state",
                ),
                _segmeta_on,
            ),
            ConditionalField(_SegmentMetadataLength(), _segmeta_on),
            ConditionalField(
                _LengthValue(
                    "metadata",
                    lambda p: p.getfieldval("segment_metadata_length"),
                    what="segment metadata",
                ),
                _segmeta_on,
            ),
            _UInt("offset", 0, _fss, "offset"),
            _RestField("data", b""),
        ],
        pdu_type=_FILE_DATA,
        excess=False,
    )


_unlaid = sorted(set(DIRECTIVES) - set(CFDP._by_directive))
if _unlaid:
    raise wire.WireFactsError(f"wire.json directives {_unlaid} have no layout")


def bind(port: int) -> None:
    """Dissect UDP datagrams to or from ``port`` as CFDP and send
    ``UDP() / <PDU>`` to it (CFDP has no port of its own: wire.json
    ``udp_port`` is null)."""
    bind_layers(UDP, CFDP, dport=port)
    bind_bottom_up(UDP, CFDP, sport=port)


def unbind(port: int) -> None:
    """Undo :func:`bind` for ``port``."""
    split_layers(UDP, CFDP, dport=port)
    split_bottom_up(UDP, CFDP, sport=port)


# ---------------------------------------------------------------------------
# Strict decoding
# ---------------------------------------------------------------------------


def _check_header(data: bytes) -> None:
    """The datagram holds the whole fixed header (§5.1), or
    :class:`CfdpDecodeError` (field ``header``)."""
    if len(data) < FIXED_HEADER_LEN:
        raise CfdpDecodeError(
            f"truncated header: {len(data)} octets, fewer than the {FIXED_HEADER_LEN} fixed ones",
            field="header",
        )
    hl = header_len(data[3])
    if len(data) < hl:
        raise CfdpDecodeError(
            f"truncated header: {len(data)} octets of a {hl}-octet header", field="header"
        )


def _invalid(message: str, field: str) -> CfdpDecodeError:
    return CfdpDecodeError(message, field=field, kind=CfdpFault.INVALID)


def _check_fault_location(pdu: CFDP) -> None:
    """§5.2.2, §5.2.3: the fault location is one entity-ID TLV of 1-8 octets,
    present only when the condition is not no_error."""
    tlvs = pdu.getfieldval("fault_location")
    if not tlvs:
        return
    first = tlvs[0]
    kind = first.getfieldval("type")
    if kind != _ENTITY_ID_TLV:
        raise _invalid(
            f"{pdu.label} fault location TLV has type {kind} "
            f"({TLV_TYPES.get(kind, 'unassigned')}), not an entity ID TLV ({_ENTITY_ID_TLV})",
            "fault_location",
        )
    n = first.getfieldval("length")
    if not 1 <= n <= _ID_WIDTH_MAX:
        raise _invalid(
            f"{pdu.label} fault location entity ID of {n} octets (1-{_ID_WIDTH_MAX})",
            "fault_location",
        )
    if len(tlvs) > 1:
        kind = tlvs[1].getfieldval("type")
        raise _invalid(
            f"{pdu.label}: a TLV of type {kind} ({TLV_TYPES.get(kind, 'unassigned')}) "
            "after the fault location TLV, which ends the PDU",
            "fault_location",
        )
    if pdu.getfieldval("condition") == _NO_ERROR:
        raise _invalid(
            f"{pdu.label} with condition no_error carries a fault location TLV "
            "(it is omitted when there is no error)",
            "fault_location",
        )


# a directive's (wire.json name's) label, as each directive's class gives it
DIRECTIVE_LABELS: dict[str, str] = {
    c.directive: c.label
    for c in (CFDPEOF, CFDPFinished, CFDPAck, CFDPMetadata, CFDPNak, CFDPPrompt, CFDPKeepAlive)
}


def nak_requests(data: bytes) -> list[tuple[int, int]]:
    """A NAK's segment requests (§5.2.6, Table 5-11) as ``(start, end)``
    offset pairs in wire order, read as far as they dissect (a NAK whose CRC
    fails keeps them); [] for any other PDU."""
    try:
        pdu = CFDP(bytes(data))
    except Exception:  # noqa: BLE001 - Scapy raises what its fields raise
        return []
    if not isinstance(pdu, CFDPNak):
        return []
    return [(int(a), int(b)) for a, b in pdu.getfieldval("segment_requests") or []]


def parse(data: bytes) -> CFDP:
    """Decode one datagram as exactly one well-formed PDU (see the module
    docstring for what that means); raise :class:`CfdpDecodeError` otherwise.

    The first fault found is the one raised, looking for them in this order:
    malformations in wire order (:attr:`CfdpFault.MALFORMED`: the version,
    the header, the data field length against the datagram, the room for the
    CRC, the directive code octet, then the parameters as they are
    dissected, then octets left after them), then the rules
    (:attr:`CfdpFault.INVALID`: an undefined directive code, the fault
    location, the ACK's directive, the Metadata options), then the CRC
    (:attr:`CfdpFault.CRC`): a PDU with a bad CRC is otherwise well-formed
    and valid. Our Lua dissector and the channel emulator's classifier put
    the same faults first (``dissectors/tests/test_fuzz_agreement.py``)."""
    data = bytes(data)
    version = data[0] >> 5 if data else VERSION
    if version not in VERSIONS:
        raise CfdpDecodeError(
            f"version {version} is not one of {VERSIONS} (Table 5-1)", field="version"
        )
    _check_header(data)
    hl = header_len(data[3])
    dfl = int.from_bytes(data[1:3], "big")
    if hl + dfl != len(data):
        raise CfdpDecodeError(
            f"data field length {dfl} does not match the datagram: "
            f"{len(data) - hl} octets follow the {hl}-octet header",
            field="data_field_length",
        )
    crc = bool(data[0] & 0x02)
    if crc and dfl < _CRC_LEN:
        raise CfdpDecodeError(
            f"CRC flag set but the data field of {dfl} octets cannot hold the CRC",
            field="crc_value",
        )
    if not data[0] & 0x10:
        if dfl - (_CRC_LEN if crc else 0) < 1:
            raise CfdpDecodeError(
                "file directive PDU without a directive code (empty data field)",
                field="directive_code",
            )
        code = data[hl]
        if code not in DIRECTIVES:
            known = ", ".join(f"{c} {n}" for c, n in sorted(DIRECTIVES.items()))
            raise _invalid(
                f"unknown directive code {code} (0x{code:02x}); Table 5-4 defines {known}",
                "directive_code",
            )
    pdu = CFDP(data)
    assert isinstance(pdu, CFDP) and isinstance(pdu.payload, NoPayload)
    excess = pdu.getfieldval("excess") if "excess" in pdu.fieldtype else b""
    if excess:
        if isinstance(pdu, CFDPNak):
            raise CfdpDecodeError(
                f"NAK: {len(excess)} octets after the segment requests, not a whole "
                f"(start, end) pair of {2 * pdu.fss} octets",
                field="segment_requests",
            )
        raise CfdpDecodeError(
            f"{pdu.label}: {len(excess)} octets after its parameters in the data field",
            field="excess",
        )
    if isinstance(pdu, CFDPEOF | CFDPFinished):
        _check_fault_location(pdu)
    elif isinstance(pdu, CFDPAck):
        acked = pdu.getfieldval("ack_of")
        if acked not in DIRECTIVES:
            raise _invalid(
                f"ACK of directive code {acked}, which Table 5-4 does not define", "ack_of"
            )
    elif isinstance(pdu, CFDPMetadata):
        for i, option in enumerate(pdu.getfieldval("options")):
            kind = option.getfieldval("type")
            if kind not in _METADATA_OPTIONS:
                raise _invalid(
                    f"Metadata option {i} is a TLV of type {kind} "
                    f"({TLV_TYPES.get(kind, 'unassigned')}), not one of "
                    f"{', '.join(_METADATA_OPTION_NAMES)} (Table 5-9)",
                    "options",
                )
    if crc:
        sent = int.from_bytes(data[-_CRC_LEN:], "big")
        want = crc16(data[:-_CRC_LEN])
        if sent != want:
            raise CfdpDecodeError(
                f"bad CRC: 0x{sent:04x} on the wire, 0x{want:04x} computed",
                field="crc_value",
                kind=CfdpFault.CRC,
            )
    return pdu


# ---------------------------------------------------------------------------
# The match fields
# ---------------------------------------------------------------------------


def classify(pdu: CFDP) -> dict[str, int | str | bool]:
    """The flat field dictionary impairments match on (the ``fields`` of
    specs/cfdp/wire.json), keys and values as the channel emulator's
    classifier (``conformance/channel/emulator/core/src/classify/cfdp.rs``) gives
    them for the same octets: the header's fields, ``crc_ok`` with the CRC
    flag, then the file data's or the directive's. ``pdu`` is one
    :func:`parse` accepts, or a dissected PDU whose only fault is its CRC."""
    get = pdu.getfieldval
    raw = bytes(pdu)
    out: dict[str, int | str | bool] = {
        "version": get("version"),
        "pdu_type": PDU_TYPES[get("pdu_type")],
        "direction": DIRECTIONS[get("direction")],
        "mode": MODES[get("mode")],
        "crc": bool(get("crc")),
        "large_file": bool(get("large_file")),
        "data_field_length": get("data_field_length"),
        "source_entity": get("source_entity"),
        "transaction": get("transaction"),
        "dest_entity": get("dest_entity"),
    }
    if get("crc"):
        out["crc_ok"] = crc16(raw[:-_CRC_LEN]) == int.from_bytes(raw[-_CRC_LEN:], "big")
    if isinstance(pdu, CFDPFileData):
        out["segmentation_control"] = bool(get("segmentation_control"))
        out["segment_metadata"] = bool(get("segment_metadata"))
        if get("segment_metadata"):
            out["record_continuation"] = RECORD_CONTINUATIONS[get("record_continuation")]
            out["segment_metadata_length"] = get("segment_metadata_length")
        out["offset"] = get("offset")
        out["length"] = len(get("data"))
        return out
    code = get("directive_code")
    out["directive"] = DIRECTIVES[code]
    out["directive_code"] = code
    if isinstance(pdu, CFDPEOF):
        out["condition"] = CONDITION_CODES[get("condition")]
        out["checksum"] = get("checksum")
        out["file_size"] = get("file_size")
        if pdu.fault_location_id is not None:
            out["fault_location"] = pdu.fault_location_id
    elif isinstance(pdu, CFDPFinished):
        out["condition"] = CONDITION_CODES[get("condition")]
        out["delivery_code"] = DELIVERY_CODES[get("delivery_code")]
        out["file_status"] = FILE_STATUSES[get("file_status")]
        if pdu.fault_location_id is not None:
            out["fault_location"] = pdu.fault_location_id
    elif isinstance(pdu, CFDPAck):
        out["ack_of"] = DIRECTIVES[get("ack_of")]
        out["ack_subtype"] = get("ack_subtype")
        out["condition"] = CONDITION_CODES[get("condition")]
        out["transaction_status"] = TRANSACTION_STATUSES[get("transaction_status")]
    elif isinstance(pdu, CFDPMetadata):
        out["closure_requested"] = bool(get("closure_requested"))
        out["checksum_type"] = get("checksum_type")
        out["file_size"] = get("file_size")
    elif isinstance(pdu, CFDPNak):
        out["start_of_scope"] = get("start_of_scope")
        out["end_of_scope"] = get("end_of_scope")
        out["segment_requests"] = len(get("segment_requests"))
    elif isinstance(pdu, CFDPPrompt):
        out["response_required"] = RESPONSES_REQUIRED[get("response_required")]
    elif isinstance(pdu, CFDPKeepAlive):
        out["progress"] = get("progress")
    return out
