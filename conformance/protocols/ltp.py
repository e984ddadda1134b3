"""LTP (RFC 5326) in the protocol registry: its scenario parameters (one
block), what its receiver delivers (red and green bytes), the judge's rules,
its dissector and its generator.

The TLA+ action names in the rules are those of specs/ltp/LTP.tla.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import ConfigDict, Field, model_validator

from conformance.core import wire
from conformance.core.capabilities import Capabilities
from conformance.core.contract import (
    FRAME_OVERHEAD,
    Delivery,
    Dissector,
    FieldTypes,
    ProtocolParams,
    ProtocolSpec,
    Rule,
    field_int,
    load_readings,
)
from conformance.core.registry import register

if TYPE_CHECKING:
    from conformance.core.types import Scenario

# The longest SDNV we accept (specs/ltp/wire.json).
SDNV_MAX: int = wire.load("ltp")["sdnv"]["max_bytes"]


def _sdnv_len(value: int) -> int:
    return max(1, math.ceil(value.bit_length() / 7))


class LtpBlock(ProtocolParams):
    """Geometry and knobs of the one LTP block a scenario transfers, in bytes.

    The block is ``block_len`` bytes of client data, the first ``red_len`` of
    them red (RFC 5326 §2.1, §6.1); the sender cuts it into data segments of at
    most ``segment_size`` bytes of client data each, so impairments name data
    segments by their byte offset (§3.2.1). Model-generated scenarios use one
    abstract model segment per data segment.
    """

    block_len: Annotated[int, Field(gt=0, le=1 << 30)] = Field(
        description="client-data bytes in the block"
    )
    red_len: Annotated[int, Field(ge=0)] = Field(
        description="bytes of the block that are red (the first red_len); the rest is green"
    )
    segment_size: Annotated[int, Field(gt=0, le=65000)] = Field(
        description="client-data bytes per data segment (payload only, no header)"
    )
    client_service_id: Annotated[int, Field(ge=0, lt=2**63)] = Field(
        1,
        description="destination client service in the data segments; the receiver registers "
        "this service too unless receiver_client_service_id says otherwise",
    )
    receiver_client_service_id: Annotated[int, Field(ge=0, lt=2**63)] | None = Field(
        None,
        description="the client service the receiver registers (default: client_service_id); "
        "a different value makes the sender name an unknown service (RFC 5326 §8.2, CR UNREACH)",
    )
    retransmission_limit: Annotated[int, Field(ge=0, le=100)] = Field(
        1,
        description="checkpoint, report and cancel retransmission limit the expectation "
        "assumes (RFC 5326 §6.7, §6.8, §6.16); the endpoints are configured with it",
    )

    max_claims_per_rs: Annotated[int, Field(ge=1, le=1000)] = Field(
        20,
        description="the most reception claims one report segment carries; a report with "
        "more is several RSs (RFC 5326 §6.11). The receiver is configured with it",
    )
    miscolored_sender: bool = Field(
        False,
        description="fault injection (RFC 5326 §6.21): the sender also sends green data at "
        "offset 0, inside the red part, once, after its first red segment. Only the "
        "model-driven tester's sender plays it (--tester sender); the receiver under test must "
        "discard it and cancel the session (the model's MiscoloredSender)",
    )
    receiver_cancels_idle: bool = Field(
        False,
        description="the receiving engine cancels, for its client, a session that has "
        "stalled: nothing on its way to it and no report timer running (a cancellation "
        "request, RFC 5326 §4.2, CR USR_CNCLD). Not a fault: an implementation's declared "
        "profile (HDTN's housekeeping), set where it plays the receiver (the model's "
        "IdleCancels)",
    )

    protocol: Literal["ltp"] = "ltp"

    @model_validator(mode="before")
    @classmethod
    def _legacy_segments(cls, data: object) -> object:
        # Scenario files written before geometry in bytes counted the block
        # in whole segments: red_segments and green_segments of segment_size.
        if isinstance(data, dict) and ("red_segments" in data or "green_segments" in data):
            data = dict(data)
            size = data.get("segment_size")
            red, green = data.pop("red_segments", 0), data.pop("green_segments", 0)
            if isinstance(size, int) and isinstance(red, int) and isinstance(green, int):
                data.setdefault("red_len", size * red)
                data.setdefault("block_len", size * (red + green))
        return data

    @model_validator(mode="after")
    def _red_within_block(self) -> LtpBlock:
        if self.red_len > self.block_len:
            raise ValueError(f"red_len {self.red_len} exceeds block_len {self.block_len}")
        return self

    def grid_span(self, byte: int) -> tuple[int, int] | None:
        """The scenario's segment holding ``byte``: the red part cut from 0,
        the green from ``red_len`` (RFC 5326 §2), in ``segment_size`` pieces."""
        if not 0 <= byte < self.block_len:
            return None
        base, end = (0, self.red_len) if byte < self.red_len else (self.red_len, self.block_len)
        start = base + (byte - base) // self.segment_size * self.segment_size
        return start, min(start + self.segment_size, end)

    @property
    def green_len(self) -> int:
        return self.block_len - self.red_len

    @property
    def service_at_receiver(self) -> int:
        if self.receiver_client_service_id is None:
            return self.client_service_id
        return self.receiver_client_service_id

    def retx_limit(self) -> int:
        return self.retransmission_limit

    def features(self, role: str | None = None) -> list[str]:
        """red and green: the block's parts (RFC 5326 §3.1); foreign-service:
        the receiver has not the sender's client service (§6.21, UNREACH);
        idle-cancel, of the receiver alone: it cancels a stalled session
        (§4.2, receiver_cancels_idle)."""
        out = ["red"] if self.red_len else []
        out += ["green"] if self.green_len else []
        out += ["foreign-service"] if self.service_at_receiver != self.client_service_id else []
        idle = self.receiver_cancels_idle and role in (None, "receiver")
        return out + (["idle-cancel"] if idle else [])

    def tester_role(self) -> str | None:
        """The role only the model-driven tester can play here (None: any
        side may be the implementation's): a miscolored sender is one."""
        return "sender" if self.miscolored_sender else None

    def check(self, scn: Scenario) -> None:
        for o in scn.expect.outcomes:
            d = o.delivered
            assert isinstance(d, LtpDelivery)
            # a multiple of the red part: each red-part notice delivers all of
            # it (a block delivered again by a session opened anew, reading 4)
            red = d.red_bytes_delivered
            if red % self.red_len if self.red_len else red:
                raise ValueError("expect: red_bytes_delivered is not a whole number of red parts")
            # a miscolored sender's green segment inside the red part may be
            # taken as green before it is found out (RFC 5326 §6.21)
            extra = min(self.segment_size, self.red_len) if self.miscolored_sender else 0
            if d.green_bytes_delivered > self.green_len + extra:
                raise ValueError("expect: green_bytes_delivered exceeds the green part")

    def largest_unit(self) -> tuple[int, int, str]:
        """A data segment (RFC 5326 §3.2.1): its client data, and its header
        and segment fields at their longest."""
        from dissectors.ltp.layer import max_data_header_len

        header = max_data_header_len(self.block_len, self.client_service_id)
        return min(self.segment_size, self.block_len), header, "LTP header"

    def queued_bytes(self, mtu: int) -> tuple[int, int]:
        """(forward, return) frame bytes one transfer may have queued ahead
        of an acknowledged segment: the whole block's data segments forward,
        one report segment back.

        RFC 5326 §3: a data segment is a control byte, the session ID (two
        SDNVs), the extension counts, then client service ID, offset, length
        and, on a checkpoint, checkpoint and report serial numbers (SDNVs,
        §3.2.1); the sender never lets a segment straddle the red/green
        boundary. A report segment (§3.2.2) is the header, report serial,
        checkpoint serial, upper and lower bounds, the claim count and an
        (offset, length) pair per claim, at most one claim per red data
        segment. Unknown SDNVs (engine IDs, session numbers, serials) count
        their longest encoding."""
        red_segs = math.ceil(self.red_len / self.segment_size)
        green_segs = math.ceil(self.green_len / self.segment_size)
        header = 1 + 2 * SDNV_MAX + 1
        ds_fields = _sdnv_len(self.client_service_id) + 2 * _sdnv_len(self.block_len) + 2 * SDNV_MAX
        forward = self.block_len + (red_segs + green_segs) * (header + ds_fields + FRAME_OVERHEAD)
        claims = max(1, red_segs)
        report = (
            header + 2 * SDNV_MAX + 3 * _sdnv_len(self.block_len)
            + claims * 2 * _sdnv_len(self.block_len)
        )  # fmt: skip
        return forward, report + FRAME_OVERHEAD


class LtpDelivery(Delivery):
    """What an LTP receiver delivered: red-part bytes, summed over its
    red-part reception notices (RFC 5326 §7.3: a block delivered again, in a
    session opened anew under reading 4, counts twice), and green-part
    bytes (§7.2)."""

    protocol: Literal["ltp"] = "ltp"
    red_bytes_delivered: Annotated[int, Field(ge=0)] = 0
    green_bytes_delivered: Annotated[int, Field(ge=0)] = 0
    green_offsets: list[Annotated[int, Field(ge=0)]] | None = Field(
        None,
        description="the block offsets of the green data the client was given, one per "
        "distinct §7.2 notice, where the harness reports them (or, for the model's ends, the "
        "green segments it delivered): the bytes' count alone cannot tell the green segment "
        "at offset 0 from the EOB",
    )

    model_config = ConfigDict(extra="forbid")

    def parts(self) -> dict[str, int | str]:
        return {
            "red_bytes_delivered": self.red_bytes_delivered,
            "green_bytes_delivered": self.green_bytes_delivered,
        }

    def agrees(self, other: Delivery) -> bool:
        mine = self.green_offsets
        theirs = other.green_offsets if isinstance(other, LtpDelivery) else None
        return mine is None or theirs is None or sorted(set(mine)) == sorted(set(theirs))

    def describe(self) -> str:
        return f"red {self.red_bytes_delivered} B, green {self.green_bytes_delivered} B"

    def finer(self) -> tuple[str, str]:
        if self.green_offsets is None:
            return "", ""
        at = ", ".join(str(o) for o in sorted(set(self.green_offsets)))
        return "green_offsets", f"green data at block offset {at}" if at else "no green data"

    @classmethod
    def labels(cls) -> dict[str, str]:
        return {"red_bytes_delivered": "red B", "green_bytes_delivered": "green B"}


def cancel_reason(code: object) -> str:
    """A cancel segment's reason by name, its code in parentheses: "RLEXC
    (2)" (RFC 5326 §3.2.4)."""
    if isinstance(code, int) and not isinstance(code, bool):
        name = wire.names("ltp", "cancel_reasons").get(code)
        return f"{name} ({code})" if name else f"undefined reason ({code})"
    return str(code)


def segment_label(f: Mapping[str, object]) -> str:
    """One line for a segment on the ladder: type, offsets, serials, claims."""
    parts = [str(f.get("type", "?"))]
    if "offset" in f:
        parts.append(f"off={f['offset']} len={f.get('length')}")
    if f.get("type") == "RS":
        parts.append(f"rs={f.get('report_serial')} cp={f.get('checkpoint_serial')} "
                     f"[{f.get('lower_bound')}-{f.get('upper_bound')})")  # fmt: skip
        offs, lens = f.get("claim.offset", []), f.get("claim.length", [])
        if isinstance(offs, list) and isinstance(lens, list) and offs:
            parts.append(
                "claims " + ",".join(f"{o}+{ln}" for o, ln in zip(offs, lens, strict=False))
            )
    elif f.get("type") == "RA":
        parts.append(f"rs={f.get('report_serial')}")
    elif f.get("checkpoint"):
        parts.append(f"cp={f.get('checkpoint_serial')}")
    if "reason" in f:
        parts.append(cancel_reason(f["reason"]))
    return " ".join(parts)


def report_claims(payload: bytes, fields: Mapping[str, object]) -> dict[str, list[int]]:
    """An RS's reception claims (§3.2.2), kept on its record beside the
    classifier's fields under our dissector's names: ``claim.offset`` (from
    the lower bound) and ``claim.length``."""
    if fields.get("type") != "RS":
        return {}
    from dissectors.ltp.layer import report_claims as claims

    pairs = claims(payload)
    return {"claim.offset": [o for o, _ in pairs], "claim.length": [n for _, n in pairs]}


def data_span(fields: Mapping[str, object]) -> tuple[int, int] | None:
    """A data segment's client data (RFC 5326 §3.2.1), else None."""
    if fields.get("kind") in ("red_data", "green_data"):
        return field_int(fields["offset"]), field_int(fields["length"])
    return None


def sized(size: int) -> dict[str, object]:
    """A campaign's block of ``size`` bytes: all red, in 1000-byte segments."""
    return {"block_len": size, "red_len": size, "segment_size": 1000}


def provides() -> Capabilities:
    """What LTP provides. Imported when first asked for: each of these
    modules builds on the types above."""
    from conformance.tester import ltp as tester
    from dissectors.ltp import bench
    from generators.ltp import catalogue, interop, outcomes, purposes, search, trace

    return Capabilities(
        checker=purposes,
        generator=purposes,
        catalogue=purposes,
        robustness=purposes,
        outcomes=outcomes,
        trace=trace,
        tester=tester,
        probes=tester,
        retx_table=catalogue,
        search_space=search,
        bench=bench,
        interop=interop,
    )


def endpoint_knobs(scn: Scenario, role: str) -> dict[str, int | str | list[str]]:
    """Every setting of one LTP role (docs/implementers.md, "Knobs"): the
    block, the engines, the client service, and the timers
    conformance.timers derives from the channel unless the scenario gives
    them."""
    from conformance import timers
    from suts.base import ENGINES

    b = scn.params
    assert isinstance(b, LtpBlock)
    t = timers.derive(scn)
    engine, peer_engine = ENGINES[role]
    return {
        "engine": engine,
        "peer-engine": peer_engine,
        "block-len": b.block_len,
        "red-len": b.red_len,
        "segment-size": b.segment_size,
        # the sender names the service in its data segments; the receiver
        # registers its own (another makes the sender's unreachable, §6.21)
        "client-service-id": b.client_service_id if role == "sender" else b.service_at_receiver,
        # one period for checkpoints, reports and cancels (§6.2, §6.3, §6.15)
        "retransmission-ms": math.ceil(t.retransmission_ms),
        # for each of them (§6.7, §6.8, §6.16): the model's one limit
        "retransmission-limit": b.retransmission_limit,
        "max-claims-per-rs": b.max_claims_per_rs,
        # keep serving after the session ended: late segments meet an engine
        "linger-ms": math.ceil(t.linger_ms),
        # a receiver with nothing outstanding and a session still open (its
        # green EOB lost) stops waiting after this and reports open
        "close-wait-ms": math.ceil(t.close_wait_ms),
        "time-limit-ms": math.ceil(t.time_limit_s * 1000),
    }


SPEC = ProtocolSpec(
    provides=provides,
    name="ltp",
    title="Licklider Transmission Protocol",
    spec="RFC 5326",
    params=LtpBlock,
    delivery=LtpDelivery,
    dissector=Dissector(
        lua=wire.SPECS.parent / "dissectors" / "ltp" / "ltp.lua",
        proto="dtnltp",
        label="Licklider Transmission Protocol (dtnconform)",
        fields=FieldTypes(
            bool_fields=frozenset({"red", "checkpoint", "eorp", "eob"}),
            str_fields=frozenset({"type_name", "kind"}),
            bytes_fields=frozenset(
                {"data", "ext.value", "ext.auth.key_id", "ext.auth.value", "ext.cookie"}
            ),
            repeated=frozenset(
                {"ext.tag", "ext.length", "ext.value", "claim.offset", "claim.length"}
            ),
        ),  # fmt: skip
        # dtnltp.type is the code (names as its value_string), type_name the name
        match_renames={"type": "type_code", "type_name": "type"},
        analysis_pref="analysis",
    ),
    label=segment_label,
    extras=report_claims,
    colors={
        "red_data": "#c0392b",
        "green_data": "#1e8449",
        "report": "#2c3e50",
        "report_ack": "#8e44ad",
        "cancel": "#d35400",
        "cancel_ack": "#a04000",
    },  # fmt: skip
    unit="segment",
    data_span=data_span,
    sized=sized,
    endpoint_knobs=endpoint_knobs,
    rules={
        "red_bytes_delivered": {
            "": Rule(
                "6.9, 7.3",
                "the red part is delivered once all of it has arrived, and only then",
                ("ReceiverDeliverRedPart",),
            ),
        },
        "green_bytes_delivered": {
            "": Rule(
                "6.10, 7.2",
                "each green segment that arrives is delivered; none is retransmitted",
                ("ReceiverRxGreenData",),
            ),
        },
        "green_offsets": {
            "": Rule(
                "6.10, 7.2, 7.6, 8.2",
                "each green segment the session takes is delivered where it lies in the block; "
                "green data reaching a cancelling session, or miscolored, is not",
                ("ReceiverRxGreenData", "ReceiverDiscardGreenData"),
            ),
        },
        "sender_outcome": {
            "completed": Rule(
                "6.12, 7.4",
                "the session completes once reports claim the whole red part",
                ("SenderRxReport", "SenderSignalCompletion"),
            ),
            "cancelled": Rule(
                "6.7, 6.17, 6.19, 7.5",
                "the checkpoint retransmission limit, or a CR, cancels the sending session",
                ("SenderCancelSession", "SenderRxCancel"),
            ),
            "open": Rule("6", "no procedure ends this sending session"),
        },
        "receiver_outcome": {
            "completed": Rule(
                "6.9, 7.3",
                "the red part is delivered once all of it has arrived",
                ("ReceiverDeliverRedPart",),
            ),
            "cancelled": Rule(
                "6.8, 6.17, 6.19, 7.6",
                "the report retransmission limit, on an RS timer or a redundant checkpoint, "
                "or a CS, cancels the receiving session",
                (
                    "ReceiverCancelSession",
                    "ReceiverCancelOnRedundantCheckpoint",
                    "ReceiverRxCancel",
                ),
            ),
            "open": Rule(
                "6, 6.17, 8.2",
                "no procedure ends a receiving session that got no checkpoint and no cancel, "
                "and a receiver the session never reached gives no notice",
            ),
            "closed": Rule(
                "6.20, 8.2",
                "a green-only block's receiver closes at its EOB with no notice; with a red "
                "part, a receiver with the green EOB and no red data does so under reading 5's "
                "alternative only",
                ("ReceiverCloseOnGreenEob",),
            ),
        },
    },
    closed_rule=Rule(
        "6.20, 7.3, 7.6",
        "a session closed with neither a red-part reception nor a cancellation notice",
    ),
    payload_rule=Rule("7.2, 7.3", "delivered data is the data the sender sent"),
    told_rule=Rule("7.1", "the Session Start notice returns the ID of the session begun"),
    readings=load_readings(wire.SPECS / "ltp" / "readings.json"),
)

register(SPEC)
