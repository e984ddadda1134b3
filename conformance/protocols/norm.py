"""NORM (RFC 5740) in the protocol registry: its scenario parameters (one
object to a group of receivers), what a receiver delivers, and the model
checker of specs/norm/NORM.tla.

NORM starts with its ``checker`` alone (docs/adding-a-protocol.md): the
generator, outcome sets, trace model, tester, dissector and the libnorm
endpoint are the next increments of issue 32, and each capability it lacks
says so in ``missing``. The TLA+ action names in the rules are those of
specs/norm/NORM.tla; the sections are RFC 5740's (RFC 5510 §8.3.1 for the FEC
code's "any k of n").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import ConfigDict, Field

from conformance.core import wire
from conformance.core.capabilities import Capabilities
from conformance.core.contract import (
    Delivery,
    Dissector,
    ProtocolParams,
    ProtocolSpec,
    Rule,
    load_readings,
)
from conformance.core.registry import register

if TYPE_CHECKING:
    from conformance.core.types import Scenario


class NormObject(ProtocolParams):
    """One NORM_OBJECT_DATA or NORM_OBJECT_FILE object sent to a group: its
    size and segmentation into FEC blocks (§5.1.1), and the sender's knobs
    that shape repair (§5.3, §5.4, §4.2.3.1)."""

    protocol: Literal["norm"] = "norm"
    object_len: Annotated[int, Field(gt=0, description="the object's octets")]
    segment_size: Annotated[
        int, Field(gt=0, description="NormSegmentSize: the payload octets of one symbol")
    ]
    block_len: Annotated[
        int, Field(gt=0, le=255, description="source symbols per FEC block (k)")
    ] = 64
    parity: Annotated[int, Field(ge=0, le=254, description="parity symbols per block (n - k)")] = 8
    receivers: Annotated[int, Field(gt=0, description="receivers in the group")] = 1
    backoff_factor: Annotated[
        int, Field(ge=0, description="K_sender, the back-off factor (§5.3)")
    ] = 4
    robust_factor: Annotated[
        int, Field(gt=0, description="NORM_ROBUST_FACTOR (§4.2.3.1; RFC 5740 recommends 20)")
    ] = 20
    unicast_nack: bool = Field(False, description="receivers unicast their NACKs (§5.4.4)")
    ack_request: bool = Field(
        False, description="the FLUSH asks every receiver to acknowledge the object (§5.5.3)"
    )

    model_config = ConfigDict(extra="forbid")

    def check(self, scn: Scenario) -> None:
        if self.block_len + self.parity > 255:
            raise ValueError(
                "params.parity: block_len + parity is over 255, the most one block of FEC ids 2 and "
                "5 holds with m = 8 (RFC 5510 §6.1)"
            )
        for o in scn.expect.outcomes:
            if isinstance(o.delivered, NormDelivery) and o.delivered.object_bytes > self.object_len:
                raise ValueError("expect: object_bytes exceeds params.object_len")

    def largest_unit(self) -> tuple[int, int, str] | None:
        # the NORM_DATA header with FEC payload id 5 (§4.2.1, 20 octets) and
        # its EXT_FTI (RFC 5510 §5.2.4.1, 12 octets), which libnorm sends in
        # every NORM_DATA unless told otherwise; block_len + parity <= 255
        # keeps it FEC id 5 (check)
        return self.segment_size, 32, "NORM_DATA header and EXT_FTI"


class NormDelivery(Delivery):
    """What one NORM receiver delivered: the object's octets, given only once
    every block decodes (RFC 5510 §8.3.1)."""

    protocol: Literal["norm"] = "norm"
    object_bytes: Annotated[int, Field(ge=0)] = 0

    model_config = ConfigDict(extra="forbid")


def provides() -> Capabilities:
    """What NORM provides so far: the model checker."""
    from generators.norm import purposes

    later = "not built yet for NORM (issue 32's next increments: specs/norm/README.md)"
    return Capabilities(
        checker=purposes,
        missing={
            "generator": later,
            "catalogue": later,
            "robustness": later,
            "outcomes": later,
            "trace": later,
            "tester": later,
            "probes": later,
            "retx_table": "the retransmission table is LTP's (licklider's limits)",
            "search_space": later,
            "interop": later,
            "bench": "the benchmarks run on LTP (conformance/bench.py)",
        },
    )


SPEC = ProtocolSpec(
    provides=provides,
    name="norm",
    title="NACK-Oriented Reliable Multicast",
    spec="RFC 5740",
    params=NormObject,
    delivery=NormDelivery,
    dissector=Dissector(
        lua=wire.SPECS.parent / "dissectors" / "norm" / "norm.lua",
        proto="dtnnorm",
        label="NACK-Oriented Reliable Multicast (dtnconform)",
    ),
    unit="message",
    rules={
        "object_bytes": {
            "": Rule(
                "RFC 5510 §8.3.1",
                "a receiver delivers the object only once every FEC block decodes",
                ("ReceiverDeliverObject",),
            )
        },
    },
    readings=load_readings(wire.SPECS / "norm" / "readings.json"),
)

register(SPEC)
