"""Scapy layer for Licklider Transmission Protocol segments (RFC 5326 §3).

Every protocol fact (segment type codes and names, their kind and red /
checkpoint / EORP / EOB flags, cancel reason codes, extension tags, the UDP
port, the version number, the widest SDNV) is read from
``specs/ltp/wire.json`` through :mod:`conformance.core.wire`; nothing here restates
a table. The classes only describe the wire layout.

Layout (``fields_desc`` in wire order, field names = the Lua dissector's
``dtnltp.<name>`` leaves):

* every segment: ``version`` and ``type`` (the control byte, §3.1),
  ``session_originator`` and ``session_number`` (SDNVs, §3.1),
  ``hdr_ext_count`` and ``trl_ext_count`` (§3.1.4), ``header_extensions``,
  the content, ``trailer_extensions`` (§3.3); extensions are
  :class:`LTPExtension` (``tag``, ``length``, ``value``);
* :class:`LTPDataSegment` (types 0-7, §3.2.1): ``client_service_id``,
  ``offset``, ``length``, for checkpoints ``checkpoint_serial`` and
  ``report_serial``, then ``data``;
* :class:`LTPReportSegment` (8, §3.2.2): ``report_serial``,
  ``checkpoint_serial``, ``upper_bound``, ``lower_bound``, ``claim_count``,
  ``claims`` (:class:`LTPReceptionClaim`: ``offset``, ``length``);
* :class:`LTPReportAckSegment` (9, §3.2.3): ``report_serial``;
* :class:`LTPCancelSegment` (12, 14, §3.2.4): ``reason`` (one octet);
* :class:`LTPCancelAckSegment` (13, 15) and
  :class:`LTPUndefinedControlSegment` (10, 11): no content.

Which class lays out which type code follows the ``kind`` of each entry of
the wire facts' segment types (decorator :meth:`LTP.register`).
``LTP(...)`` returns the class of its type: ``LTP(raw_bytes)`` dissects by the
low nibble of the first octet, ``LTP(type="RS", ...)`` or ``LTP(type=8, ...)``
builds a report segment. ``bind_layers`` puts LTP on UDP port 1113 (both
directions)::

    LTP(type="RS", session_originator=1, session_number=77, report_serial=3,
        checkpoint_serial=2, upper_bound=6000, lower_bound=1000,
        claims=[(0, 2000), (3000, 500)])
    IP() / UDP() / LTP(type="RD-CP", client_service_id=1, offset=0, data=b"abc",
                       checkpoint_serial=9, report_serial=0)

Lengths and counts (``length`` of data and extensions, ``claim_count``,
``hdr_ext_count``, ``trl_ext_count``) are computed when building unless given.

Malformed segments on purpose (a model-driven tester sends them):

* give any length or count a value that lies (``length=2047`` with 5 octets
  of data, ``claim_count=100``, ``hdr_ext_count=3`` with one extension);
  bounds and claims are plain values (``lower_bound`` above ``upper_bound``,
  claims outside ``[lower_bound, upper_bound)``); ``version=1``; an undefined
  ``type`` (5, 6, 10, 11); a layout that does not match the type
  (``LTPReportSegment(type=0)`` is report content under a data type code);
* any SDNV field takes a :class:`RawSDNV`, put on the wire as it is:
  ``RawSDNV(b"\\x81")`` never ends (it runs past the end of the segment when
  nothing follows), ``RawSDNV.of(5, width=11)`` is longer than 10 octets; an
  int of 2**64 or more encodes as an SDNV over 64 bits;
* :meth:`LTP.truncate` gives the first n octets; ``segment / Raw(b"..")``
  appends trailing bytes.

Building refuses only what cannot be put in the field at all: a negative
SDNV, a nibble (version, type, extension count) outside 0-15, a reason over
255 (:class:`ValueError`).

Reading: :func:`parse` is the strict decoder for our own uses and raises only
:class:`LtpDecodeError`: exactly one well-formed segment per datagram
(version 0, every SDNV complete, at most 10 octets and at most 64 bits, every
length inside the datagram, the whole datagram consumed), the acceptance of
the channel emulator's classifier (``conformance/channel/emulator/core/src/classify/ltp.rs``).
:func:`classify` gives the flat field dictionary impairments match on (the
``fields`` of wire.json), equal to that classifier's output. Plain Scapy
dissection (``LTP(raw)``, ``UDP`` on port 1113) uses the same fields: it raises
:class:`LtpDecodeError` where the segment cannot be delimited (under UDP, Scapy
then shows the payload as ``Raw``), and shows rather than rejects a nonzero
version or trailing bytes (a ``Raw`` payload).

Speed: Scapy builds and dissects some tens of thousands of segments per
second, plenty for sending test segments and for tests. Captures are decoded
by tshark with the Lua dissector (:mod:`dissectors.tshark`), never with this
layer, and the channel emulator classifies in Rust.
"""

# scapy.contrib.description = Licklider Transmission Protocol (LTP), RFC 5326 (dtnconform)
# scapy.contrib.status = loads

from __future__ import annotations

import enum
from collections.abc import Callable
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
    StrLenField,
)
from scapy.layers.inet import UDP
from scapy.packet import NoPayload, Packet, bind_bottom_up, bind_layers
from scapy.volatile import RandNum

from conformance.core import wire
from conformance.core.classifiers import UINT_MAX

__all__ = [
    "CANCEL_REASONS",
    "CHECKPOINT_TYPES",
    "EXTENSION_TAGS",
    "LTP",
    "SDNV_MAX_BYTES",
    "SDNV_MAX_VALUE",
    "SEGMENT_TYPES",
    "TYPE_NAMES",
    "UDP_PORT",
    "VERSION",
    "CancelReason",
    "LTPCancelAckSegment",
    "LTPCancelSegment",
    "LTPDataSegment",
    "LTPExtension",
    "LTPReceptionClaim",
    "LTPReportAckSegment",
    "LTPReportSegment",
    "LTPUndefinedControlSegment",
    "LtpDecodeError",
    "RawSDNV",
    "SegmentType",
    "classify",
    "max_data_header_len",
    "parse",
    "sdnv_decode",
    "sdnv_encode",
]

# ---------------------------------------------------------------------------
# Wire facts (specs/ltp/wire.json)
# ---------------------------------------------------------------------------

_FACTS = wire.load("ltp")
UDP_PORT: int = int(_FACTS["udp_port"])  # RFC 5326 §10.1
VERSION: int = int(_FACTS["version"]["value"])  # §3.1
SDNV_MAX_BYTES: int = int(_FACTS["sdnv"]["max_bytes"])  # §2: 10 octets hold 64 bits
SDNV_MAX_VALUE: int = UINT_MAX  # the widest value read: 64 bits, as the emulator's u64
SEGMENT_TYPES: dict[int, wire.Code] = wire.table("ltp", "segment_types")  # §3.1.2
TYPE_NAMES: dict[int, str] = wire.names("ltp", "segment_types")
CANCEL_REASONS: dict[int, str] = wire.names("ltp", "cancel_reasons")  # §3.2.4
EXTENSION_TAGS: dict[int, str] = wire.names("ltp", "extension_tags")  # §3.1.4

SegmentType = enum.IntEnum(  # type: ignore[misc]
    "SegmentType", {name.replace("-", "_"): code for code, name in TYPE_NAMES.items()}
)
SegmentType.__doc__ = (
    "Segment type codes (RFC 5326 §3.1.2), generated from wire.json: "
    "SegmentType.RD_CP_EORP == 2 (wire name 'RD-CP-EORP')."
)
CancelReason = enum.IntEnum("CancelReason", {n: c for c, n in CANCEL_REASONS.items()})  # type: ignore[misc]
CancelReason.__doc__ = "Cancel reason codes (RFC 5326 §3.2.4), generated from wire.json."

CHECKPOINT_TYPES: frozenset[int] = frozenset(c for c, e in SEGMENT_TYPES.items() if e["checkpoint"])
_DATA_KINDS = frozenset({"red_data", "green_data"})
_TYPE_CODES: dict[str, int] = {name: code for code, name in TYPE_NAMES.items()}
# The part of classify()'s dictionary that depends on the type code alone.
_TYPE_FIELDS: dict[int, dict[str, int | str | bool]] = {
    code: {
        "type": e.name,
        "type_code": code,
        "kind": e["kind"],
        "red": e["red"],
        "checkpoint": e["checkpoint"],
        "eorp": e["eorp"],
        "eob": e["eob"],
    }
    for code, e in SEGMENT_TYPES.items()
}


class LtpDecodeError(ValueError):
    """The bytes are not exactly one well-formed LTP segment; the message says
    what is wrong and, for an SDNV, at which octet of the datagram.

    ``field`` names the field at fault, as our Lua dissector does
    (``dtnltp.malformed.field``): a field name of this layer (``version``,
    ``session_number``, ``hdr_ext_count``, ``length``, ``data``,
    ``claim_count``, ``reason``, ...), the list a faulty item belongs to
    (``header_extensions``, ``trailer_extensions``, ``claims``), or
    ``trailing_bytes`` for octets after the segment; None where no field is
    known (:func:`sdnv_decode` of bare octets)."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field

    def at(self, field: str) -> LtpDecodeError:
        """The same error, blamed on ``field``."""
        return LtpDecodeError(str(self), field=field)


# ---------------------------------------------------------------------------
# SDNV (RFC 5326 §2, RFC 6256 §2.1): big-endian base 128, high bit = "more"
# ---------------------------------------------------------------------------


def sdnv_encode(value: int, width: int | None = None) -> bytes:
    """The SDNV of ``value`` (RFC 6256 §2.1), shortest form; with ``width``,
    padded to that many octets with leading 0x80 (valid, not minimal; wider
    than :data:`SDNV_MAX_BYTES` it is one :func:`parse` rejects). Values of
    2**64 and more encode too (also rejected by :func:`parse`)."""
    if value < 0:
        raise ValueError(f"an SDNV encodes a non-negative integer, not {value}")
    out = bytearray([value & 0x7F])
    value >>= 7
    while value:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    if width is not None:
        if width < len(out):
            raise ValueError(f"the value needs {len(out)} SDNV octets, more than width {width}")
        out.extend(b"\x80" * (width - len(out)))
    out.reverse()
    return bytes(out)


def sdnv_decode(buf: bytes, pos: int = 0) -> tuple[int, int]:
    """Decode the SDNV at ``pos``; return (value, position after it).

    Strict: at most :data:`SDNV_MAX_BYTES` octets and a value of at most
    :data:`SDNV_MAX_VALUE` (64 bits), else :class:`LtpDecodeError`."""
    value = 0
    end = min(len(buf), pos + SDNV_MAX_BYTES)
    for i in range(pos, end):
        octet = buf[i]
        value = (value << 7) | (octet & 0x7F)
        if octet < 0x80:
            if value > SDNV_MAX_VALUE:
                raise LtpDecodeError(f"SDNV at byte {pos} exceeds 64 bits")
            return value, i + 1
    if end - pos < SDNV_MAX_BYTES:
        raise LtpDecodeError(f"SDNV at byte {pos} runs past the end")
    raise LtpDecodeError(f"SDNV at byte {pos} longer than {SDNV_MAX_BYTES} bytes")


class RawSDNV(bytes):
    """SDNV octets put on the wire as they are, as the value of any SDNV field
    (malformed segments on purpose): ``RawSDNV(b"\\x81")`` never ends,
    ``RawSDNV.of(5, width=11)`` is a valid SDNV 11 octets long."""

    @classmethod
    def of(cls, value: int, width: int | None = None) -> RawSDNV:
        """:func:`sdnv_encode` of ``value`` (padded to ``width`` octets)."""
        return cls(sdnv_encode(value, width))

    @property
    def value(self) -> int:
        """The value, when the octets are exactly one strict SDNV."""
        value, end = sdnv_decode(self)
        if end != len(self):
            raise LtpDecodeError(f"{len(self) - end} octets after the SDNV")
        return value

    def __repr__(self) -> str:
        return f"RawSDNV({bytes(self)!r})"


def _datagram(pkt: Packet) -> bytes:
    """The octets the outermost segment was dissected from (the reference for
    byte positions in error messages)."""
    while pkt.parent is not None:
        pkt = pkt.parent
    return bytes(pkt.original or b"")


def _nibble(name: str, value: int) -> int:
    if not 0 <= value <= 15:
        raise ValueError(f"{name} is a 4-bit field (0-15), not {value}")
    return value


# ---------------------------------------------------------------------------
# Fields
# ---------------------------------------------------------------------------


class SDNVField(Field):
    """An SDNV (RFC 5326 §2). Building takes any non-negative int (over 64 bits
    too) or a :class:`RawSDNV`; dissecting is strict (:func:`sdnv_decode`)."""

    __slots__: list[str] = []

    def __init__(self, name: str, default: int | None, fmt: str = "Q") -> None:
        Field.__init__(self, name, default, fmt)

    def any2i(self, pkt: Packet | None, x: Any) -> Any:
        if isinstance(x, bytes | bytearray) and not isinstance(x, RawSDNV):
            return RawSDNV(x)
        return x

    def i2m(self, pkt: Packet | None, x: Any) -> Any:
        return 0 if x is None else x

    def addfield(self, pkt: Packet, s: bytes, val: Any) -> bytes:
        value = self.i2m(pkt, val)
        if isinstance(value, RawSDNV):
            return s + value
        if value < 0:
            raise ValueError(f"{self.name}: an SDNV encodes a non-negative integer, not {value}")
        return s + sdnv_encode(value)

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, int]:
        try:
            value, end = sdnv_decode(s)
        except LtpDecodeError as local:
            # Decode again where it sits in the datagram, for the message.
            whole = _datagram(pkt)
            try:
                sdnv_decode(whole, len(whole) - len(s))
            except LtpDecodeError as placed:
                raise placed.at(self.name) from None
            raise local.at(self.name) from None
        return s[end:], value

    def i2repr(self, pkt: Packet | None, x: Any) -> str:
        return repr(x)

    def randval(self) -> RandNum:
        return RandNum(0, SDNV_MAX_VALUE)


class SDNVLenField(FieldLenField, SDNVField):
    """An SDNV length or count: computed from ``length_of`` / ``count_of`` when
    None, else put as given (a lie on purpose, or a :class:`RawSDNV`)."""

    __slots__: list[str] = []

    def __init__(self, name: str, default: int | None, **kwargs: Any) -> None:
        FieldLenField.__init__(self, name, default, fmt="Q", **kwargs)


class _NibbleField(BitField):
    """A 4-bit field (version): 0-15 or ValueError, never masked."""

    def __init__(self, name: str, default: int) -> None:
        BitField.__init__(self, name, default, 4)

    def i2m(self, pkt: Packet | None, x: int | None) -> int:
        return _nibble(self.name, 0 if x is None else x)


class _TypeField(BitEnumField):
    """The segment type code (§3.1.2), named from wire.json."""

    def __init__(self, name: str, default: int) -> None:
        BitEnumField.__init__(self, name, default, 4, TYPE_NAMES)

    def i2m(self, pkt: Packet | None, x: list[int] | int | None) -> int:
        return _nibble(self.name, BitEnumField.i2m(self, pkt, x))


class _ExtensionCountField(BitFieldLenField):
    """A 4-bit extension count (§3.1.4): counted from the list when None."""

    def __init__(self, name: str, count_of: str) -> None:
        BitFieldLenField.__init__(self, name, None, 4, count_of=count_of)

    def i2m(self, pkt: Packet | None, x: int | None) -> int:
        count = BitFieldLenField.i2m(self, pkt, x)
        if not 0 <= count <= 15:
            raise ValueError(f"{self.name}: at most 15 extensions (RFC 5326 §3.1.4), not {count}")
        return count

    def getfield(self, pkt: Packet, s: Any) -> Any:
        if isinstance(s, bytes) and not s:
            raise LtpDecodeError("header ends before the extension counts", field=self.name)
        return BitFieldLenField.getfield(self, pkt, s)


class _BoundedStrField(StrLenField):
    """Octets of a length given by an earlier field; dissecting past the end
    of the datagram is an error (``overrun`` is the message)."""

    __slots__ = ["overrun"]

    def __init__(self, name: str, length_from: Callable[[Packet], int], overrun: str) -> None:
        StrLenField.__init__(self, name, b"", length_from=length_from)
        self.overrun = overrun

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, bytes]:
        assert self.length_from is not None  # set by __init__
        n = self.length_from(pkt)
        if n > len(s):
            raise LtpDecodeError(self.overrun.format(n=n), field=self.name)
        return s[n:], s[:n]


class _OctetField(ByteEnumField):
    """One octet (extension tag, cancel reason); dissecting it past the end of
    the datagram is an error (``missing`` is the message)."""

    __slots__ = ["missing"]

    def __init__(self, name: str, default: int, names: dict[int, str], missing: str) -> None:
        ByteEnumField.__init__(self, name, default, names)
        self.missing = missing

    def i2m(self, pkt: Packet | None, x: Any) -> int:
        value = ByteEnumField.i2m(self, pkt, x)
        if not 0 <= value <= 255:
            raise ValueError(f"{self.name} is one octet (0-255), not {value}")
        return value

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, int]:
        if not s:
            raise LtpDecodeError(self.missing, field=self.name)
        return s[1:], s[0]


class _CountedListField(PacketListField):
    """``count_from(pkt)`` sub-packets back to back. A tuple stands for a
    sub-packet with those values of its ``tuple_fields``. Dissection errors are
    raised (blamed on this list), never turned into ``Raw`` items; with
    ``bounded`` (the name of the count field), a count larger than the
    octets left can hold is refused before any item is read: each item takes
    at least two octets (a report's claims: two SDNVs)."""

    __slots__ = ["bounded", "item_cls"]

    def __init__(
        self,
        name: str,
        pkt_cls: type[LTPExtension] | type[LTPReceptionClaim],
        count_from: Callable[[Packet], int],
        bounded: str | None = None,
    ) -> None:
        PacketListField.__init__(self, name, [], pkt_cls, count_from=count_from)
        self.bounded = bounded
        # ``cls`` as given (PacketListField's ``cls`` may be any callable)
        self.item_cls = pkt_cls

    def any2i(self, pkt: Packet | None, x: Any) -> Any:
        if isinstance(x, list):
            x = [
                self.item_cls(**dict(zip(self.item_cls.tuple_fields, item, strict=True)))
                if isinstance(item, tuple)
                else item
                for item in x
            ]
        return PacketListField.any2i(self, pkt, x)

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, list[BasePacket]]:
        assert self.count_from is not None  # set by __init__
        count = self.count_from(pkt)
        if self.bounded and count > len(s) // 2:
            raise LtpDecodeError(
                f"claim count {count} impossibly large (room for at most {len(s) // 2})",
                field=self.bounded,
            )
        items: list[BasePacket] = []
        for _ in range(count):
            item = self.item_cls(_internal=1, _parent=pkt)
            try:
                s = item.do_dissect(s)
            except LtpDecodeError as exc:
                raise exc.at(self.name) from None
            items.append(item)
        return s, items


# ---------------------------------------------------------------------------
# Sub-structures
# ---------------------------------------------------------------------------


class LTPExtension(Packet):
    """A header (§3.1.4) or trailer (§3.3) extension: one-octet tag, SDNV
    length, value. In a segment's extension list, ``(tag, value)`` stands for
    ``LTPExtension(tag=tag, value=value)``."""

    name = "LTP extension"
    tuple_fields: ClassVar[tuple[str, ...]] = ("tag", "value")
    fields_desc = [
        _OctetField("tag", 0, EXTENSION_TAGS, missing="extension runs past the datagram"),
        SDNVLenField("length", None, length_of="value"),
        _BoundedStrField(
            "value", lambda p: p.length, overrun="extension value runs past the datagram"
        ),
    ]

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


class LTPReceptionClaim(Packet):
    """A report's reception claim (§3.2.2): SDNV offset (from the lower bound)
    and length. In a report's ``claims``, ``(offset, length)`` stands for
    ``LTPReceptionClaim(offset=offset, length=length)``."""

    name = "LTP reception claim"
    tuple_fields: ClassVar[tuple[str, ...]] = ("offset", "length")
    fields_desc = [SDNVField("offset", 0), SDNVField("length", 0)]

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


# ---------------------------------------------------------------------------
# Segments
# ---------------------------------------------------------------------------


def _layout(kinds: tuple[str, ...], content: list[AnyField]) -> list[AnyField]:
    """The fields of a segment whose content is ``content`` (§3.1, §3.3); the
    default type is the lowest code of ``kinds``."""
    default_type = min((c for c, e in SEGMENT_TYPES.items() if e["kind"] in kinds), default=0)
    return [
        _NibbleField("version", VERSION),
        _TypeField("type", default_type),
        SDNVField("session_originator", 0),
        SDNVField("session_number", 0),
        _ExtensionCountField("hdr_ext_count", count_of="header_extensions"),
        _ExtensionCountField("trl_ext_count", count_of="trailer_extensions"),
        _CountedListField("header_extensions", LTPExtension, lambda p: p.hdr_ext_count),
        *content,
        _CountedListField("trailer_extensions", LTPExtension, lambda p: p.trl_ext_count),
    ]


def _int(value: Any) -> int:
    """A field's integer value (a RawSDNV's decoded value)."""
    return value.value if isinstance(value, RawSDNV) else int(value)


_L = TypeVar("_L", bound="type[LTP]")


class LTP(Packet):
    """An LTP segment (RFC 5326 §3). ``LTP(...)`` returns the subclass that lays
    out the segment's type (see the module docstring); a subclass may be built
    directly, with any type code."""

    name = "LTP"
    kinds: ClassVar[tuple[str, ...]] = ()
    _by_type: ClassVar[dict[int, type[LTP]]] = {}
    fields_desc = _layout((), [])

    @classmethod
    def register(cls, layout: _L) -> _L:
        """Class decorator: ``layout`` lays out every type code whose wire.json
        ``kind`` is one of ``layout.kinds``."""
        for code, entry in SEGMENT_TYPES.items():
            if entry["kind"] in layout.kinds:
                if code in LTP._by_type:
                    raise ValueError(f"type {code} already laid out by {LTP._by_type[code]}")
                LTP._by_type[code] = layout
        return layout

    @classmethod
    def dispatch_hook(cls, _pkt: bytes | None = None, *args: Any, **kargs: Any) -> type[Packet]:
        if _pkt:
            return cls._by_type.get(_pkt[0] & 0x0F, cls)
        code = kargs.get("type", 0)
        if isinstance(code, str):
            code = _TYPE_CODES.get(code, -1)
        return cls._by_type.get(code, cls) if isinstance(code, int) else cls

    # -- the facts of this segment's type code --------------------------------

    @property
    def segment_type(self) -> wire.Code:
        return SEGMENT_TYPES[self.getfieldval("type")]

    @property
    def type_name(self) -> str:
        return TYPE_NAMES[self.getfieldval("type")]

    @property
    def kind(self) -> str:
        return str(self.segment_type["kind"])

    @property
    def is_data(self) -> bool:
        return self.kind in _DATA_KINDS

    @property
    def is_red(self) -> bool:
        return bool(self.segment_type["red"])

    @property
    def is_checkpoint(self) -> bool:
        return bool(self.segment_type["checkpoint"])

    @property
    def is_eorp(self) -> bool:
        return bool(self.segment_type["eorp"])

    @property
    def is_eob(self) -> bool:
        return bool(self.segment_type["eob"])

    # -- building malformed segments -------------------------------------------

    def truncate(self, n: int) -> bytes:
        """The segment cut short: its first ``n`` octets (``n < 0``: without
        its last ``-n``). ValueError unless strictly shorter than the whole."""
        whole = bytes(self)
        cut = whole[:n]
        if len(cut) >= len(whole):
            raise ValueError(f"truncate({n}) of a {len(whole)}-octet segment removes nothing")
        return cut

    # -- reading -----------------------------------------------------------------

    def content_fields(self) -> dict[str, int]:
        """The content's match fields (§3.2), in :func:`classify` order."""
        return {}

    def mysummary(self) -> str:
        orig = self.getfieldval("session_originator")
        num = self.getfieldval("session_number")
        return f"LTP {TYPE_NAMES.get(self.getfieldval('type'), '?')} {orig}/{num}"


@LTP.register
class LTPDataSegment(LTP):
    """Data segment (§3.2.1), red (types 0-3) or green (4-7): client service
    ID, offset, length, for checkpoints (1-3) the checkpoint and report serial
    numbers, then the client service data."""

    name = "LTP data segment"
    kinds = ("red_data", "green_data")
    fields_desc = _layout(
        kinds,
        [
            SDNVField("client_service_id", 0),
            SDNVField("offset", 0),
            SDNVLenField("length", None, length_of="data"),
            ConditionalField(
                SDNVField("checkpoint_serial", 0), lambda p: p.type in CHECKPOINT_TYPES
            ),
            ConditionalField(SDNVField("report_serial", 0), lambda p: p.type in CHECKPOINT_TYPES),
            _BoundedStrField(
                "data", lambda p: p.length, overrun="data length {n} runs past the datagram"
            ),
        ],
    )

    def content_fields(self) -> dict[str, int]:
        get = self.getfieldval
        out = {"client_service_id": _int(get("client_service_id")), "offset": _int(get("offset"))}
        if get("type") in CHECKPOINT_TYPES:
            out["checkpoint_serial"] = _int(get("checkpoint_serial"))
            out["report_serial"] = _int(get("report_serial"))
        length = get("length")
        out["length"] = len(get("data")) if length is None else _int(length)
        return out


@LTP.register
class LTPReportSegment(LTP):
    """Report segment (§3.2.2): report and checkpoint serial numbers, upper
    and lower bounds, claim count, reception claims (offsets from the lower
    bound)."""

    name = "LTP report segment"
    kinds = ("report",)
    fields_desc = _layout(
        kinds,
        [
            SDNVField("report_serial", 0),
            SDNVField("checkpoint_serial", 0),
            SDNVField("upper_bound", 0),
            SDNVField("lower_bound", 0),
            SDNVLenField("claim_count", None, count_of="claims"),
            _CountedListField(
                "claims", LTPReceptionClaim, lambda p: p.claim_count, bounded="claim_count"
            ),
        ],
    )

    def received(self) -> list[tuple[int, int]]:
        """The block ranges ``[start, end)`` the claims report received
        (§3.2.2: each claim's offset counts from the lower bound)."""
        lower = _int(self.getfieldval("lower_bound"))
        out = []
        for claim in self.getfieldval("claims"):
            start = lower + _int(claim.getfieldval("offset"))
            out.append((start, start + _int(claim.getfieldval("length"))))
        return out

    def content_fields(self) -> dict[str, int]:
        get = self.getfieldval
        count = get("claim_count")
        return {
            "checkpoint_serial": _int(get("checkpoint_serial")),
            "report_serial": _int(get("report_serial")),
            "upper_bound": _int(get("upper_bound")),
            "lower_bound": _int(get("lower_bound")),
            "claim_count": len(get("claims")) if count is None else _int(count),
        }


@LTP.register
class LTPReportAckSegment(LTP):
    """Report-acknowledgment segment (§3.2.3): the report serial number."""

    name = "LTP report-acknowledgment segment"
    kinds = ("report_ack",)
    fields_desc = _layout(kinds, [SDNVField("report_serial", 0)])

    def content_fields(self) -> dict[str, int]:
        return {"report_serial": _int(self.getfieldval("report_serial"))}


@LTP.register
class LTPCancelSegment(LTP):
    """Cancel segment from the block sender (CS) or receiver (CR) (§3.2.4):
    one reason-code octet."""

    name = "LTP cancel segment"
    kinds = ("cancel",)
    fields_desc = _layout(
        kinds,
        [_OctetField("reason", 0, CANCEL_REASONS, missing="cancel segment without a reason code")],
    )

    def content_fields(self) -> dict[str, int]:
        return {"reason": int(self.getfieldval("reason"))}


@LTP.register
class LTPCancelAckSegment(LTP):
    """Cancel-acknowledgment segment to the block sender (CAS) or receiver
    (CAR) (§3.2.4): no content."""

    name = "LTP cancel-acknowledgment segment"
    kinds = ("cancel_ack",)
    fields_desc = _layout(kinds, [])


@LTP.register
class LTPUndefinedControlSegment(LTP):
    """A control segment of an undefined type (10, 11; §3.1.2): no content."""

    name = "LTP undefined control segment"
    kinds = ("undefined",)
    fields_desc = _layout(kinds, [])


_unlaid = sorted(set(SEGMENT_TYPES) - set(LTP._by_type))
if _unlaid:
    raise wire.WireFactsError(f"wire.json segment types {_unlaid} have a kind no layout handles")

# UDP port 1113 (§10.1): dissection guesses LTP (whose dispatch picks the
# layout) on either port; building UDP() / <any segment> sets the destination.
bind_layers(UDP, LTP, dport=UDP_PORT)
bind_bottom_up(UDP, LTP, sport=UDP_PORT)


# ---------------------------------------------------------------------------
# Strict decoding and the match fields
# ---------------------------------------------------------------------------


def parse(payload: bytes) -> LTP:
    """Decode one UDP payload as exactly one well-formed segment (one segment
    per datagram, as ION's udplso/udplsi and licklider send them); raise
    :class:`LtpDecodeError` otherwise."""
    if not payload:
        raise LtpDecodeError("empty datagram", field="version")
    version = payload[0] >> 4
    if version != VERSION:
        raise LtpDecodeError(f"version {version} is not {VERSION} (RFC 5326 §3.1)", field="version")
    segment = LTP(bytes(payload))
    rest = segment.payload
    if not isinstance(rest, NoPayload):
        raise LtpDecodeError(
            f"{len(rest)} trailing bytes after the segment", field="trailing_bytes"
        )
    assert isinstance(segment, LTP)
    return segment


def report_claims(payload: bytes) -> list[tuple[int, int]]:
    """A report segment's reception claims (§3.2.2) as ``(offset from the
    lower bound, length)`` pairs in wire order; [] for any other segment, or
    octets that do not dissect as one."""
    try:
        segment = LTP(bytes(payload))
    except Exception:  # noqa: BLE001 - Scapy raises what its fields raise
        return []
    if not isinstance(segment, LTPReportSegment):
        return []
    return [(_int(c.offset), _int(c.length)) for c in segment.claims or []]


def classify(segment: LTP) -> dict[str, int | str | bool]:
    """The flat field dictionary impairments match on (the ``fields`` of
    specs/ltp/wire.json), keys in the channel emulator's order: the type's
    name, code, kind and flags, the session ID, then the content's fields."""
    out = dict(_TYPE_FIELDS[segment.getfieldval("type")])
    out["session_originator"] = _int(segment.getfieldval("session_originator"))
    out["session_number"] = _int(segment.getfieldval("session_number"))
    out.update(segment.content_fields())
    return out


def max_data_header_len(block_len: int, client_service_id: int, engine_id: int = 2) -> int:
    """The longest header (and segment fields before the client data) a data
    segment of this block can have (RFC 5326 §3.1, §3.2.1): version/type,
    engine id, a session number and checkpoint/report serials of up to 32 bits
    each (5-octet SDNVs), no extensions, the client service id, offset and
    length. A conservative bound, for checking that segments fit the MTU."""
    u32 = len(sdnv_encode(2**32 - 1))
    return (
        1  # version + segment type flags
        + len(sdnv_encode(engine_id))
        + u32  # session number
        + 1  # header and trailer extension counts
        + len(sdnv_encode(client_service_id))
        + len(sdnv_encode(max(0, block_len - 1)))  # offset
        + len(sdnv_encode(block_len))  # length
        + 2 * u32  # checkpoint and report serial numbers
    )
