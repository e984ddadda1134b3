"""CFDP (CCSDS 727.0-B-5) in the protocol registry: its scenario parameters
(one file transfer), what its receiving entity delivers, the judge's rules
and its generator (so far: model checking, specs/cfdp/CFDP.tla).

Not built yet (issue 10): the Lua dissector named below, SUT adapters,
test generation and trace validation. The CLI says so when asked for them.
The TLA+ action names in the rules are those of specs/cfdp/CFDP.tla; the
section numbers are those the implementations' sources cite for
727.0-B-5 (specs/cfdp/README.md), the book not being reachable here.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from conformance import wire
from conformance.protocols.base import (
    Delivery,
    Dissector,
    ProtocolParams,
    ProtocolSpec,
    Rule,
    load_readings,
)

# The model's condition codes (CFDP.tla, Conditions) by their names in the
# condition-code table (specs/cfdp/wire.json, Table 5-5).
MODEL_CONDITIONS: dict[str, str] = {
    "NoError": "no_error",
    "AckLimit": "positive_ack_limit_reached",
    "ChecksumFailure": "file_checksum_failure",
    "NakLimit": "nak_limit_reached",
    "Inactivity": "inactivity_detected",
    "CheckLimit": "check_limit_reached",
    "CancelRequest": "cancel_request_received",
}

# The model's transmission modes (CFDP.tla, Modes) by scenario name.
MODEL_MODES: dict[str, str] = {"class1": "c1", "class1-closure": "c1c", "class2": "c2"}


class CfdpTransfer(ProtocolParams):
    """The one file a scenario transfers, and how both entities are set up.

    The sender cuts the file into File Data PDUs of at most ``segment_size``
    octets of file data each (§5.3), so impairments name them by their
    offset; the model counts abstract segments, one per File Data PDU.
    """

    protocol: Literal["cfdp"] = "cfdp"
    file_len: Annotated[int, Field(ge=0, le=1 << 32)] = Field(description="file size in octets")
    segment_size: Annotated[int, Field(gt=0, le=65000)] = Field(
        1024, description="file-data octets per File Data PDU"
    )
    mode: Literal["class1", "class1-closure", "class2"] = Field(
        "class2",
        description="transmission mode: Class 1 (unacknowledged), Class 1 with closure "
        "requested, or Class 2 (acknowledged)",
    )
    checksum_type: Literal["modular", "crc32", "crc32c", "null"] = Field(
        "modular", description="the Metadata's checksum type (SANA checksum identifiers)"
    )
    pdu_crc: bool = Field(False, description="every PDU ends with a CRC-16 (§5.1 CRC flag)")
    entity_id_len: Annotated[int, Field(ge=1, le=8)] = Field(
        2, description="octets of each entity ID (§5.1)"
    )
    sequence_number_len: Annotated[int, Field(ge=1, le=8)] = Field(
        4, description="octets of the transaction sequence number (§5.1)"
    )
    ack_limit: Annotated[int, Field(ge=0, le=100)] = Field(
        1, description="positive-ACK limit: retransmissions of EOF or Finished (4.7.1)"
    )
    nak_limit: Annotated[int, Field(ge=0, le=100)] = Field(
        1, description="NAK limit: NAK-timer expiries that re-send the NAK (4.6.4.7)"
    )
    check_limit: Annotated[int, Field(ge=0, le=100)] = Field(
        1, description="check limit: Class 1 check-timer expiries (4.6.3.2, 4.6.3.3)"
    )

    def retx_limit(self) -> int:
        return self.ack_limit


class CfdpDelivery(Delivery):
    """What a CFDP receiving entity delivered: the file's octets, retained
    only once complete and its checksum verified (4.6.1.2)."""

    protocol: Literal["cfdp"] = "cfdp"
    file_bytes_delivered: Annotated[int, Field(ge=0)] = 0

    model_config = ConfigDict(extra="forbid")

    def describe(self) -> str:
        return f"file {self.file_bytes_delivered} B"

    @classmethod
    def labels(cls) -> dict[str, str]:
        return {"file_bytes_delivered": "file B"}


def condition_name(code: object) -> str:
    """A condition code by name, its number in parentheses (Table 5-5)."""
    if isinstance(code, int) and not isinstance(code, bool):
        name = wire.names("cfdp", "condition_codes").get(code)
        return f"{name} ({code})" if name else f"undefined condition ({code})"
    return str(code)


SPEC = ProtocolSpec(
    name="cfdp",
    title="CCSDS File Delivery Protocol",
    spec="CCSDS 727.0-B-5",
    params=CfdpTransfer,
    delivery=CfdpDelivery,
    dissector=Dissector(
        lua=wire.SPECS.parent / "dissectors" / "cfdp" / "cfdp.lua",
        proto="dtncfdp",
        label="CCSDS File Delivery Protocol (dtnconform)",
    ),
    generator="generators.cfdp",
    unit="PDU",
    rules={
        "file_bytes_delivered": {
            "": Rule(
                "4.6.1.2",
                "the file is delivered once all of it and its Metadata have arrived after "
                "the EOF and its checksum verifies, and only then",
                ("ReceiverTxFinished",),
            ),
        },
        "sender_outcome": {
            "completed": Rule(
                "4.6.3.2, 4.7",
                "Class 1 ends at the EOF; with closure or in Class 2 the Finished ends it",
                ("SenderTxEof", "SenderRxFinished"),
            ),
            "cancelled": Rule(
                "4.8, 4.11.2.2",
                "a fault or a cancel request ends it by a notice of cancellation",
                ("SenderRxCancelAck", "SenderRxFinished", "SenderCancelTransaction"),
            ),
            "abandoned": Rule(
                "4.8, 4.11.2.2.3",
                "a fault whose handler is abandon, or a fault while cancelling",
                ("SenderFaultAckLimit",),
            ),
        },
        "receiver_outcome": {
            "completed": Rule(
                "4.6.1.2, 4.7",
                "the file is delivered; in Class 2 the ACK of the Finished ends it",
                ("ReceiverTxFinished", "ReceiverRxFinishedAck"),
            ),
            "cancelled": Rule(
                "4.6.6, 4.8",
                "an EOF(cancel), a fault or a cancel request ends it",
                ("ReceiverRxCancelEof", "ReceiverRxFinishedAck", "ReceiverCancelTransaction"),
            ),
            "abandoned": Rule(
                "4.8, 4.11.2.3.2",
                "a fault whose handler is abandon, or a fault while cancelling",
                ("ReceiverFaultAckLimit",),
            ),
        },
    },
    readings=load_readings(wire.SPECS / "cfdp" / "readings.json"),
)
