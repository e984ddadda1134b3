"""LTP codec: SDNVs (RFC 6256, as RFC 5326 §2 uses them) and segments (RFC 5326 §3)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance import ltp


@pytest.mark.parametrize(
    ("value", "wire"),
    [
        (0, "00"),
        (0x7F, "7f"),
        (0x80, "8100"),
        (0xABC, "953c"),  # RFC 6256 §2.1 example
        (0x1234, "a434"),  # RFC 6256 §2.1 example
        (0x4234, "818434"),  # RFC 6256 §2.1 example
        (2**64 - 1, "81ffffffffffffffff7f"),
    ],
)
def test_sdnv_known_encodings(value: int, wire: str) -> None:
    assert ltp.sdnv_encode(value).hex() == wire
    assert ltp.sdnv_decode(bytes.fromhex(wire)) == (value, len(wire) // 2)


@given(st.integers(min_value=0, max_value=2**64 - 1), st.binary(max_size=4))
def test_sdnv_round_trip_leaves_the_rest(value: int, rest: bytes) -> None:
    enc = ltp.sdnv_encode(value)
    assert ltp.sdnv_decode(enc + rest) == (value, len(enc))


def test_sdnv_rejects_truncation_and_overlong() -> None:
    with pytest.raises(ltp.LtpDecodeError, match="past the end"):
        ltp.sdnv_decode(b"\x81\x82")
    with pytest.raises(ltp.LtpDecodeError, match="longer than 10"):
        ltp.sdnv_decode(b"\x81" * 11 + b"\x00")
    with pytest.raises(ValueError):
        ltp.sdnv_encode(-1)


def _segments() -> st.SearchStrategy[ltp.Segment]:
    sdnv = st.integers(min_value=0, max_value=2**40)
    ext = st.builds(ltp.Extension, st.integers(0, 255), st.binary(max_size=6))

    @st.composite
    def build(draw: st.DrawFn) -> ltp.Segment:
        t = draw(st.sampled_from(sorted(ltp.SEGMENT_TYPES)))
        seg = ltp.Segment(
            type_code=t,
            session_originator=draw(sdnv),
            session_number=draw(sdnv),
            header_extensions=draw(st.lists(ext, max_size=2)),
            trailer_extensions=draw(st.lists(ext, max_size=2)),
        )
        if t <= 7:
            seg.client_service_id, seg.offset = draw(sdnv), draw(sdnv)
            seg.data = draw(st.binary(max_size=40))
            if 1 <= t <= 3:
                seg.checkpoint_serial, seg.report_serial = draw(sdnv), draw(sdnv)
        elif t == 8:
            seg.report_serial, seg.checkpoint_serial = draw(sdnv), draw(sdnv)
            seg.upper_bound, seg.lower_bound = draw(sdnv), draw(sdnv)
            seg.claims = draw(st.lists(st.tuples(sdnv, sdnv), max_size=4))
        elif t == 9:
            seg.report_serial = draw(sdnv)
        elif t in (12, 14):
            seg.reason = draw(st.integers(0, 255))
        return seg

    return build()


@given(_segments())
def test_segment_round_trip(seg: ltp.Segment) -> None:
    assert ltp.parse(seg.encode()) == seg


def test_report_segment_bytes() -> None:
    """RFC 5326 §3.2.2: report serial, checkpoint serial, upper bound, lower
    bound, claim count, then (offset, length) per claim, all SDNVs."""
    seg = ltp.Segment(
        type_code=8, session_originator=1, session_number=77, report_serial=3,
        checkpoint_serial=2, upper_bound=3000, lower_bound=0, claims=[(0, 1000), (2000, 1000)],
    )  # fmt: skip
    header = "08014d00"  # type 8, originator 1, session 77, no extensions
    body = "030297380002"  # serials 3 and 2, bounds 3000 and 0, 2 claims
    claims = "0087688f508768"  # (0, 1000), (2000, 1000)
    assert seg.encode().hex() == header + body + claims
    fields = ltp.classify(ltp.parse(seg.encode()))
    assert fields["type"] == "RS" and fields["claim_count"] == 2 and fields["kind"] == "report"


def test_cancel_acks_have_no_content() -> None:
    for code in (13, 15, 10, 11):
        wire = ltp.Segment(type_code=code, session_originator=5, session_number=6).encode()
        assert wire == bytes([code, 5, 6, 0])
        assert ltp.parse(wire).type_code == code


@pytest.mark.parametrize(
    ("wire", "why"),
    [
        ("", "empty"),
        ("1001020000", "version 1"),
        ("000102", "extension counts"),
        ("0001020001000a", "runs past"),
        ("0901020003ff", "trailing"),
    ],
)
def test_parse_rejects_malformed(wire: str, why: str) -> None:
    with pytest.raises(ltp.LtpDecodeError, match=why):
        ltp.parse(bytes.fromhex(wire))


def test_matches_by_name_code_and_flag() -> None:
    seg = ltp.Segment(type_code=2, session_originator=1, session_number=2, client_service_id=1,
                      offset=2000, data=b"x" * 10, checkpoint_serial=5, report_serial=0)  # fmt: skip
    f = ltp.classify(seg)
    assert ltp.matches(f, {"type": "RD-CP-EORP"})
    assert ltp.matches(f, {"type": 2, "offset": 2000})
    assert ltp.matches(f, {"checkpoint": True, "kind": "red_data"})
    assert not ltp.matches(f, {"checkpoint": 1})  # a flag is not a number
    assert not ltp.matches(f, {"offset": 1000})
    assert not ltp.matches(f, {"upper_bound": 0})  # absent field never matches
