"""LTP wire codec (RFC 5326 §3): SDNVs, segment parsing and building.

One vocabulary for LTP fields runs through the whole product: the keys of
:func:`classify` are the names a scenario's impairment may match on, the leaf
names of the Lua dissector's fields (``dtnltp.<name>``) and the keys of a
:class:`~conformance.types.SegmentRecord`'s ``fields``.

Reading never raises anything but :class:`LtpDecodeError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance.classifiers import vocabulary

# RFC 5326 §3.1, segment type codes (the low 4 bits of the control byte).
SEGMENT_TYPES: dict[int, str] = {
    0: "RD",  # red data, not a checkpoint
    1: "RD-CP",  # red data, checkpoint
    2: "RD-CP-EORP",  # red data, checkpoint, end of red part
    3: "RD-CP-EORP-EOB",  # red data, checkpoint, end of red part, end of block
    4: "GD",  # green data
    5: "GD-U5",  # green data, undefined
    6: "GD-U6",  # green data, undefined
    7: "GD-EOB",  # green data, end of block
    8: "RS",  # report segment
    9: "RA",  # report-acknowledgment segment
    10: "CTRL-U10",  # control segment, undefined
    11: "CTRL-U11",  # control segment, undefined
    12: "CS",  # cancel segment from block sender
    13: "CAS",  # cancel-acknowledgment segment to block sender
    14: "CR",  # cancel segment from block receiver
    15: "CAR",  # cancel-acknowledgment segment to block receiver
}
TYPE_CODES: dict[str, int] = {name: code for code, name in SEGMENT_TYPES.items()}

# RFC 5326 §3.2.4, reason codes of cancel segments.
CANCEL_REASONS: dict[int, str] = {
    0: "USR_CNCLD",
    1: "UNREACH",
    2: "RLEXC",
    3: "MISCOLORED",
    4: "SYS_CNCLD",
    5: "RXMTCYCEXC",
}

# Every field name classify() can produce; impairments may match on these.
# Declared once, in conformance/classifiers.json (shared with the Rust
# channel emulator's classifier).
MATCH_FIELDS: frozenset[str] = frozenset(vocabulary("ltp"))


class LtpDecodeError(ValueError):
    """The bytes are not a well-formed LTP segment."""


# ---------------------------------------------------------------------------
# SDNV (RFC 5326 §2, RFC 6256): big-endian base-128, high bit = "more".
# ---------------------------------------------------------------------------


def sdnv_encode(value: int) -> bytes:
    if value < 0:
        raise ValueError("SDNV encodes non-negative integers only")
    out = [value & 0x7F]
    value >>= 7
    while value:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    return bytes(reversed(out))


def max_data_header_len(block_len: int, client_service_id: int, engine_id: int = 2) -> int:
    """The longest header (and segment fields before the client data) a data
    segment of this block can have (RFC 5326 §3.1, §3.2.1): version/type,
    engine id, a session number and checkpoint/report serials of up to 32 bits
    each (5-byte SDNVs), no extensions, the client service id, offset and
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


def sdnv_decode(buf: bytes, pos: int = 0, max_bytes: int = 10) -> tuple[int, int]:
    """Decode one SDNV at ``pos``; return (value, position after it).

    ``max_bytes`` bounds the encoding (10 bytes hold a 64-bit value).
    """
    value = 0
    for i in range(max_bytes):
        if pos + i >= len(buf):
            raise LtpDecodeError(f"SDNV at byte {pos} runs past the end")
        b = buf[pos + i]
        value = (value << 7) | (b & 0x7F)
        if not b & 0x80:
            return value, pos + i + 1
    raise LtpDecodeError(f"SDNV at byte {pos} longer than {max_bytes} bytes")


# ---------------------------------------------------------------------------
# Segments
# ---------------------------------------------------------------------------


@dataclass
class Extension:
    tag: int
    value: bytes


@dataclass
class Segment:
    """A decoded LTP segment (RFC 5326 §3.1 header, §3.2 content, §3.3 trailer)."""

    type_code: int
    session_originator: int
    session_number: int
    version: int = 0
    header_extensions: list[Extension] = field(default_factory=list)
    trailer_extensions: list[Extension] = field(default_factory=list)
    # data segments (§3.2.1)
    client_service_id: int | None = None
    offset: int | None = None
    data: bytes = b""
    checkpoint_serial: int | None = None
    report_serial: int | None = None
    # report segments (§3.2.2)
    upper_bound: int | None = None
    lower_bound: int | None = None
    claims: list[tuple[int, int]] = field(default_factory=list)
    # cancel segments (§3.2.4)
    reason: int | None = None

    @property
    def type_name(self) -> str:
        return SEGMENT_TYPES[self.type_code]

    @property
    def is_data(self) -> bool:
        return self.type_code <= 7

    @property
    def is_red(self) -> bool:
        return self.type_code <= 3

    @property
    def is_checkpoint(self) -> bool:
        return 1 <= self.type_code <= 3

    @property
    def kind(self) -> str:
        if self.type_code <= 3:
            return "red_data"
        if self.type_code <= 7:
            return "green_data"
        return {
            8: "report",
            9: "report_ack",
            12: "cancel",
            14: "cancel",
            13: "cancel_ack",
            15: "cancel_ack",
        }.get(self.type_code, "undefined")

    def encode(self) -> bytes:
        out = bytearray()
        out.append(((self.version & 0xF) << 4) | (self.type_code & 0xF))
        out += sdnv_encode(self.session_originator) + sdnv_encode(self.session_number)
        if len(self.header_extensions) > 15 or len(self.trailer_extensions) > 15:
            raise ValueError("at most 15 extensions each way")
        out.append((len(self.header_extensions) << 4) | len(self.trailer_extensions))
        for ext in self.header_extensions:
            out += bytes([ext.tag]) + sdnv_encode(len(ext.value)) + ext.value
        out += self._encode_content()
        for ext in self.trailer_extensions:
            out += bytes([ext.tag]) + sdnv_encode(len(ext.value)) + ext.value
        return bytes(out)

    def _encode_content(self) -> bytes:
        t = self.type_code
        if t <= 7:
            body = (
                sdnv_encode(self.client_service_id or 0)
                + sdnv_encode(self.offset or 0)
                + sdnv_encode(len(self.data))
            )
            if 1 <= t <= 3:
                body += sdnv_encode(self.checkpoint_serial or 0)
                body += sdnv_encode(self.report_serial or 0)
            return body + self.data
        if t == 8:
            body = (
                sdnv_encode(self.report_serial or 0)
                + sdnv_encode(self.checkpoint_serial or 0)
                + sdnv_encode(self.upper_bound or 0)
                + sdnv_encode(self.lower_bound or 0)
                + sdnv_encode(len(self.claims))
            )
            for off, length in self.claims:
                body += sdnv_encode(off) + sdnv_encode(length)
            return body
        if t == 9:
            return sdnv_encode(self.report_serial or 0)
        if t in (12, 14):
            return bytes([self.reason or 0])
        return b""  # CAS, CAR and the undefined control types have no content


def parse(buf: bytes) -> Segment:
    """Decode one segment; the whole datagram must be consumed (one segment
    per UDP datagram, as ION's udplso/udplsi and licklider-udp send)."""
    if not buf:
        raise LtpDecodeError("empty datagram")
    control = buf[0]
    version, type_code = control >> 4, control & 0xF
    if version != 0:
        raise LtpDecodeError(f"version {version} is not 0 (RFC 5326 §3.1)")
    orig, pos = sdnv_decode(buf, 1)
    num, pos = sdnv_decode(buf, pos)
    if pos >= len(buf):
        raise LtpDecodeError("header ends before the extension counts")
    hcount, tcount = buf[pos] >> 4, buf[pos] & 0xF
    pos += 1
    seg = Segment(type_code=type_code, session_originator=orig, session_number=num)
    pos = _parse_extensions(buf, pos, hcount, seg.header_extensions)
    t = type_code
    if t <= 7:
        seg.client_service_id, pos = sdnv_decode(buf, pos)
        seg.offset, pos = sdnv_decode(buf, pos)
        length, pos = sdnv_decode(buf, pos)
        if 1 <= t <= 3:
            seg.checkpoint_serial, pos = sdnv_decode(buf, pos)
            seg.report_serial, pos = sdnv_decode(buf, pos)
        if pos + length > len(buf):
            raise LtpDecodeError(f"data length {length} runs past the datagram")
        seg.data = bytes(buf[pos : pos + length])
        pos += length
    elif t == 8:
        seg.report_serial, pos = sdnv_decode(buf, pos)
        seg.checkpoint_serial, pos = sdnv_decode(buf, pos)
        seg.upper_bound, pos = sdnv_decode(buf, pos)
        seg.lower_bound, pos = sdnv_decode(buf, pos)
        count, pos = sdnv_decode(buf, pos)
        if count > len(buf):
            raise LtpDecodeError(f"claim count {count} impossibly large")
        for _ in range(count):
            off, pos = sdnv_decode(buf, pos)
            length, pos = sdnv_decode(buf, pos)
            seg.claims.append((off, length))
    elif t == 9:
        seg.report_serial, pos = sdnv_decode(buf, pos)
    elif t in (12, 14):
        if pos >= len(buf):
            raise LtpDecodeError("cancel segment without a reason code")
        seg.reason = buf[pos]
        pos += 1
    pos = _parse_extensions(buf, pos, tcount, seg.trailer_extensions)
    if pos != len(buf):
        raise LtpDecodeError(f"{len(buf) - pos} trailing bytes after the segment")
    return seg


def _parse_extensions(buf: bytes, pos: int, count: int, out: list[Extension]) -> int:
    for _ in range(count):
        if pos >= len(buf):
            raise LtpDecodeError("extension runs past the datagram")
        tag = buf[pos]
        length, pos = sdnv_decode(buf, pos + 1)
        if pos + length > len(buf):
            raise LtpDecodeError("extension value runs past the datagram")
        out.append(Extension(tag, bytes(buf[pos : pos + length])))
        pos += length
    return pos


def classify(seg: Segment) -> dict[str, int | str | bool]:
    """The flat field dictionary impairments match on (see MATCH_FIELDS)."""
    out: dict[str, int | str | bool] = {
        "type": seg.type_name,
        "type_code": seg.type_code,
        "kind": seg.kind,
        "red": seg.is_red,
        "checkpoint": seg.is_checkpoint,
        "eorp": seg.type_code in (2, 3),
        "eob": seg.type_code in (3, 7),
        "session_originator": seg.session_originator,
        "session_number": seg.session_number,
    }
    optional = {
        "client_service_id": seg.client_service_id,
        "offset": seg.offset,
        "checkpoint_serial": seg.checkpoint_serial,
        "report_serial": seg.report_serial,
        "upper_bound": seg.upper_bound,
        "lower_bound": seg.lower_bound,
        "reason": seg.reason,
    }
    out.update({k: v for k, v in optional.items() if v is not None})
    if seg.is_data:
        out["length"] = len(seg.data)
    if seg.type_code == 8:
        out["claim_count"] = len(seg.claims)
    return out


def matches(fields: dict[str, int | str | bool], match: dict[str, int | str | bool]) -> bool:
    """True when every entry of ``match`` equals the segment's field.

    ``type`` may be given as a name ("RS") or a code (8)."""
    for key, want in match.items():
        have = fields.get(key)
        if key == "type" and isinstance(want, int) and not isinstance(want, bool):
            have = fields.get("type_code")
        if have is None or have != want or isinstance(have, bool) != isinstance(want, bool):
            return False
    return True
