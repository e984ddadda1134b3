"""CFDP (CCSDS 727.0-B-5) in the protocol registry: its scenario parameters
(one file transfer), what its receiving entity delivers, the judge's rules
and its generator (model checking, specs/cfdp/CFDP.tla, and the scenario
catalogue with its outcome sets, generators/cfdp/outcomes.py; trace validation,
generators/cfdp/trace.py).

The model-driven tester plays either entity (conformance/tester/cfdp.py),
with the users' cancel, suspend and Prompt requests.
The TLA+ action names in the rules are those of specs/cfdp/CFDP.tla; the
section numbers are those the implementations' sources cite for
727.0-B-5 (specs/cfdp/README.md), the book not being reachable here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import AfterValidator, ConfigDict, Field

from conformance.core import wire
from conformance.core.capabilities import Capabilities
from conformance.core.contract import (
    Delivery,
    Dissector,
    FieldTypes,
    ProtocolParams,
    ProtocolSpec,
    Rule,
    Strict,
    field_int,
    load_readings,
)
from conformance.core.registry import register

if TYPE_CHECKING:
    from conformance.core.types import Scenario

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


class Trigger(Strict):
    """A PDU crossing the channel, named as an impairment's match names it
    (``specs/cfdp/wire.json`` fields): the ``occurrence``-th PDU in
    ``direction`` whose fields equal every entry of ``match``."""

    direction: Literal["forward", "return"]
    match: dict[str, int | str | bool] = Field(min_length=1)
    occurrence: Annotated[int, Field(ge=1)] = 1

    def describe(self) -> str:
        fields = ", ".join(f"{k}={v}" for k, v in self.match.items())
        return f"{_ordinal(self.occurrence)} {self.direction} PDU [{fields}]"


class CfdpRequest(Strict):
    """A user's request at one entity, made once ``after`` has crossed the
    channel (at any point after: the model allows every one).  ``suspend``
    is followed by resume ``resume_after_ms`` later; the Prompts are the
    sending entity's (Class 2, after its EOF)."""

    entity: Literal["sender", "receiver"]
    request: Literal["cancel", "suspend", "prompt_nak", "prompt_keep_alive"]
    after: Trigger
    resume_after_ms: Annotated[float, Field(ge=0, le=3_600_000)] = 500.0

    def describe(self) -> str:
        what = self.request.replace("_", " ").replace("keep alive", "keep-alive")
        then = f", resumed {self.resume_after_ms:g} ms later" if self.request == "suspend" else ""
        return f"{self.entity} {what} after the {self.after.describe()}{then}"


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


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
    nak_mode: Literal["immediate", "deferred"] = Field(
        "immediate",
        description="the Class 2 receiver's lost-segment detection: a NAK as each gap "
        "appears, or one after the EOF (4.6.4.3.1)",
    )
    requests: list[CfdpRequest] = Field(
        default_factory=list, description="users' requests during the transfer"
    )

    def retx_limit(self) -> int:
        return self.ack_limit

    def features(self, role: str | None = None) -> list[str]:
        """The mode (§7.2: class1, class1-closure, class2), the checksum
        (checksum-modular, -crc32, -crc32c, -null), pdu-crc, a Class 2
        receiver's deferred-nak, and each user's request (request-cancel,
        -suspend, -prompt_nak, -prompt_keep_alive)."""
        out = [self.mode, f"checksum-{self.checksum_type}"]
        out += ["pdu-crc"] if self.pdu_crc else []
        out += ["deferred-nak"] if self.mode == "class2" and self.nak_mode == "deferred" else []
        return out + sorted({f"request-{r.request}" for r in self.requests})

    def check(self, scn: Scenario) -> None:
        for i, r in enumerate(self.requests):
            if r.request.startswith("prompt") and (r.entity != "sender" or self.mode != "class2"):
                raise ValueError(
                    f"params.requests[{i}]: a Prompt is the sending entity's, in Class 2 (the "
                    "model's SenderTxPrompt)"
                )
            unknown = set(r.after.match) - set(wire.load("cfdp")["fields"])
            if unknown:
                raise ValueError(
                    f"params.requests[{i}].after.match: {sorted(unknown)} are no fields of "
                    "specs/cfdp/wire.json"
                )
        for o in scn.expect.outcomes:
            d = o.delivered
            if isinstance(d, CfdpDelivery) and d.file_bytes_delivered not in (0, self.file_len):
                raise ValueError("expect: a CFDP file is delivered whole or not at all (4.6.1.2)")

    def largest_unit(self) -> tuple[int, int, str]:
        """A File Data PDU (§5.3): its file data, and the fixed header, both
        entity IDs and the sequence number (§5.1), the segment offset (4
        octets, 8 with the large-file flag) and the CRC-16 when on."""
        from dissectors.cfdp.layer import FIXED_HEADER_LEN

        offset = 8 if self.file_len > 0xFFFF_FFFF else 4
        header = FIXED_HEADER_LEN + 2 * self.entity_id_len + self.sequence_number_len + offset
        header += 2 if self.pdu_crc else 0
        return min(self.segment_size, self.file_len), header, "CFDP header"


def _condition(name: str) -> str:
    if name not in wire.names("cfdp", "condition_codes").values():
        raise ValueError(f"{name!r} is no condition code of Table 5-5 (specs/cfdp/wire.json)")
    return name


# A condition code by its name in Table 5-5 (specs/cfdp/wire.json).
Condition = Annotated[str, AfterValidator(_condition)]


class CfdpDelivery(Delivery):
    """What a CFDP receiving entity delivered: the file's octets, retained
    only once complete and its checksum verified (4.6.1.2)."""

    protocol: Literal["cfdp"] = "cfdp"
    file_bytes_delivered: Annotated[int, Field(ge=0)] = 0
    sender_condition: Condition = Field(
        "no_error", description="the sending entity's condition code at its end (Table 5-5)"
    )
    receiver_condition: Condition | Literal[""] = Field(
        "no_error",
        description="the receiving entity's condition code at its end; '' when the "
        "transaction never reached it",
    )

    model_config = ConfigDict(extra="forbid")

    def parts(self) -> dict[str, int | str]:
        return {
            "file_bytes_delivered": self.file_bytes_delivered,
            "sender_condition": self.sender_condition,
            "receiver_condition": self.receiver_condition,
        }

    def total(self) -> int:
        return self.file_bytes_delivered

    @classmethod
    def observed(cls, sender: Delivery | None, receiver: Delivery | None) -> Delivery | None:
        """The receiving entity's file and condition, the sending entity's
        condition: each end reports its own (the adapters' results)."""
        if receiver is None and sender is None:
            return None
        rx = receiver if isinstance(receiver, CfdpDelivery) else cls()
        tx = sender if isinstance(sender, CfdpDelivery) else cls()
        return rx.model_copy(update={"sender_condition": tx.sender_condition})

    def describe(self) -> str:
        rx = self.receiver_condition or "never reached"
        return f"file {self.file_bytes_delivered} B, conditions {self.sender_condition}/{rx}"

    @classmethod
    def labels(cls) -> dict[str, str]:
        return {
            "file_bytes_delivered": "file B",
            "sender_condition": "sender condition",
            "receiver_condition": "receiver condition",
        }


def condition_name(code: object) -> str:
    """A condition code by name, its number in parentheses (Table 5-5)."""
    if isinstance(code, int) and not isinstance(code, bool):
        name = wire.names("cfdp", "condition_codes").get(code)
        return f"{name} ({code})" if name else f"undefined condition ({code})"
    return str(code)


# The rule behind each condition code a transaction may end with.
_CONDITION_RULES: dict[str, Rule] = {
    "": Rule("4.8", "a transaction ends with the condition code of what ended it"),
    "no_error": Rule(
        "4.6.1.2, 4.7",
        "a transaction that delivered the file ends with no error",
        ("ReceiverTxFinished", "SenderRxFinished"),
    ),
    "positive_ack_limit_reached": Rule(
        "4.7.1, 4.8",
        "the positive-ACK timer expiring at its limit is a fault",
        ("SenderFaultAckLimit", "ReceiverFaultAckLimit"),
    ),
    "nak_limit_reached": Rule(
        "4.6.4.7, 4.8", "the NAK timer expiring at its limit is a fault", ("ReceiverFaultNakLimit",)
    ),
    "check_limit_reached": Rule(
        "4.6.3.2, 4.6.3.3, 4.8",
        "the Class 1 check timer expiring at its limit is a fault",
        ("SenderFaultCheckLimit", "ReceiverFaultCheckLimit"),
    ),
    "inactivity_detected": Rule(
        "4.8",
        "the inactivity timer expiring is a fault (no § cited for the timer)",
        ("SenderFaultInactivity", "ReceiverFaultInactivity"),
    ),
    "file_checksum_failure": Rule(
        "4.6.1.2, 4.8",
        "a file whose checksum does not verify is a fault, not a delivery",
        ("ReceiverFaultChecksum",),
    ),
    "cancel_request_received": Rule(
        "4.6.6, 4.11.2.2",
        "a user's cancel request ends the transaction by a notice of cancellation",
        ("SenderCancelTransaction", "ReceiverCancelTransaction", "ReceiverRxCancelEof"),
    ),
}


def pdu_label(f: Mapping[str, object]) -> str:
    """One line for a PDU from its classifier fields, as our dissector's Info
    column words it: "EOF 1->2 tx 3 NoError size 4000", "File Data 1->2 tx 3
    [0, 1000)", "NAK 2->1 tx 3 scope [0, 4000) 2 requests"."""
    from dissectors.cfdp.layer import DIRECTIVE_LABELS as labels

    if f.get("pdu_type") == "file_data":
        parts = ["File Data"]
    else:
        name = str(f.get("directive", ""))
        parts = [labels.get(name, f"directive {f.get('directive_code', '?')}")]
    if "source_entity" in f and "dest_entity" in f:
        parts.append(f"{f['source_entity']}->{f['dest_entity']} tx {f.get('transaction')}")
    if "condition" in f:
        parts.append(condition_name(f["condition"]))
    directive = f.get("directive")
    if directive in ("eof", "metadata") and "file_size" in f:
        parts.append(f"size {f['file_size']}")
    if directive == "eof" and isinstance(f.get("checksum"), int):
        parts.append(f"checksum 0x{f['checksum']:08x}")
    if directive == "finished":
        parts += [str(f[k]) for k in ("delivery_code", "file_status") if k in f]
    if directive == "ack" and "ack_of" in f:
        parts.insert(1, f"of {labels.get(str(f['ack_of']), f['ack_of'])}")
        if "transaction_status" in f:
            parts.append(str(f["transaction_status"]))
    if directive == "nak" and "end_of_scope" in f:
        parts.append(f"scope [{f.get('start_of_scope')}, {f['end_of_scope']})")
        n = field_int(f.get("segment_requests") or 0)
        parts.append(f"{n} request" + ("" if n == 1 else "s"))
    if directive == "prompt" and "response_required" in f:
        parts.append(str(f["response_required"]))
    if directive == "keep_alive" and "progress" in f:
        parts.append(f"progress {f['progress']}")
    if f.get("pdu_type") == "file_data" and "length" in f:
        start = field_int(f["offset"])
        parts.append(f"[{start}, {start + field_int(f['length'])})")
    if f.get("crc_ok") is False:
        parts.append("[bad CRC]")
    return " ".join(parts)


def nak_requests(payload: bytes, fields: Mapping[str, object]) -> dict[str, list[int]]:
    """A NAK's segment requests (§5.2.6, Table 5-11), kept on its record
    beside the classifier's fields under our dissector's names:
    ``segment.start`` and ``segment.end``."""
    if fields.get("directive") != "nak":
        return {}
    from dissectors.cfdp.layer import nak_requests as requests

    pairs = requests(payload)
    return {"segment.start": [a for a, _ in pairs], "segment.end": [b for _, b in pairs]}


def data_span(fields: Mapping[str, object]) -> tuple[int, int] | None:
    """A File Data PDU's file data (§5.3), else None."""
    if fields.get("pdu_type") == "file_data":
        return field_int(fields["offset"]), field_int(fields["length"])
    return None


def sized(size: int) -> dict[str, object]:
    """A campaign's file of ``size`` octets: Class 2, 1024-octet File Data."""
    return {"file_len": size, "segment_size": 1024, "mode": "class2"}


def endpoint_knobs(scn: Scenario, role: str) -> dict[str, int | str | list[str]]:
    """Every setting of one CFDP entity (docs/implementers.md, "Knobs"),
    named as the shared CFDP harness command line names its flags
    (suts/cfdp/cfdppy/README.md); ``request``: the role's users' requests,
    each one JSON object."""
    from conformance import timers
    from suts.base import ENGINES

    t = scn.params
    assert isinstance(t, CfdpTransfer)
    tm = timers.derive(scn)
    entity, peer = ENGINES[role]
    rtx = math.ceil(tm.retransmission_ms)
    out: dict[str, int | str | list[str]] = {
        "entity-id": entity,
        "peer-entity-id": peer,
        "entity-id-len": t.entity_id_len,
        "seq-len": t.sequence_number_len,
        "mode": t.mode,
        "checksum": t.checksum_type,
        "pdu-crc": int(t.pdu_crc),
        "segment-size": t.segment_size,
        "nak-mode": t.nak_mode,
        "ack-limit": t.ack_limit,
        "nak-limit": t.nak_limit,
        "check-limit": t.check_limit,
        # one period for every timer, sized from the channel (conformance.timers)
        "ack-timer-ms": rtx,
        "nak-timer-ms": rtx,
        "check-timer-ms": rtx,
        # inactivity: past every retransmission the limits allow, so that it
        # does not overtake them (the model lets it fire only on a silent peer)
        "inactivity-ms": (max(t.ack_limit, t.nak_limit, t.check_limit) + 2) * 2 * rtx,
        "linger-ms": math.ceil(tm.linger_ms),
        "time-limit-ms": math.ceil(tm.time_limit_s * 1000),
    }
    if role == "sender":
        out["file-len"] = t.file_len
    out["request"] = [r.model_dump_json() for r in t.requests if r.entity == role]
    return out


def provides() -> Capabilities:
    """What CFDP provides. Imported when first asked for: each of these
    modules builds on the types above."""
    from conformance.tester import cfdp as tester
    from generators.cfdp import interop, outcomes, purposes, trace

    return Capabilities(
        checker=purposes,
        generator=purposes,
        outcomes=outcomes,
        trace=trace,
        tester=tester,
        interop=interop,
        missing={
            "catalogue": "CFDP's catalogue is part of its generation (generate makes it)",
            "robustness": "the CFDP tester has no robustness probes yet",
            "probes": "the CFDP tester has no robustness probes yet",
            "retx_table": "the retransmission table is LTP's (licklider's limits)",
            "search_space": "not built yet for CFDP (the PDUs a plan may impair, the transfer "
            "each example runs)",
            "bench": "the benchmarks run on LTP (conformance/bench.py); CFDP has no benchmark "
            "traffic yet",
        },
    )


SPEC = ProtocolSpec(
    provides=provides,
    # its 789 purpose scenarios in three roles would be hours per mutant
    mutation_suite="interop",
    name="cfdp",
    title="CCSDS File Delivery Protocol",
    spec="CCSDS 727.0-B-5",
    params=CfdpTransfer,
    delivery=CfdpDelivery,
    dissector=Dissector(
        lua=wire.SPECS.parent / "dissectors" / "cfdp" / "cfdp.lua",
        proto="dtncfdp",
        label="CCSDS File Delivery Protocol (dtnconform)",
        fields=FieldTypes(
            bool_fields=frozenset(
                {
                    "crc",
                    "crc_ok",
                    "large_file",
                    "segmentation_control",
                    "segment_metadata",
                    "header.segmentation_control",
                    "header.segment_metadata",
                    "closure_requested",
                    "end_system_status",
                    "metadata_segmentation_control",
                    "analysis.retransmission",
                }
            ),
            str_fields=frozenset(
                {
                    "pdu_type",
                    "direction",
                    "mode",
                    "directive",
                    "condition",
                    "delivery_code",
                    "file_status",
                    "ack_of",
                    "transaction_status",
                    "response_required",
                    "record_continuation",
                    "source_file_name",
                    "dest_file_name",
                    "fs.first_file_name",
                    "fs.second_file_name",
                    "fs.message",
                    "analysis.response_time",
                }
            ),
            bytes_fields=frozenset(
                {
                    "metadata",
                    "data",
                    "tlv.value",
                    "message_to_user",
                    "flow_label",
                    "excess",
                    "parameters",
                }
            ),
            repeated=frozenset(
                {
                    "tlv.type",
                    "tlv.length",
                    "tlv.value",
                    "tlv.entity_id",
                    "segment.start",
                    "segment.end",
                    "fs.action",
                    "fs.spare",
                    "fs.status",
                    "fs.first_file_name_len",
                    "fs.first_file_name",
                    "fs.second_file_name_len",
                    "fs.second_file_name",
                    "fs.message_len",
                    "fs.message",
                    "message_to_user",
                    "flow_label",
                    "fho.condition",
                    "fho.handler",
                    "analysis.ack_frame",
                    "analysis.finished_frame",
                }
            ),
        ),  # fmt: skip
        # transaction analysis: off when runs are decoded, on for validate
        analysis_pref="analysis",
    ),
    unit="PDU",
    label=pdu_label,
    extras=nak_requests,
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
        # the condition code the model allows (Table 5-5), by value
        "sender_condition": _CONDITION_RULES,
        "receiver_condition": _CONDITION_RULES,
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
    # 3.4.6 as dariolucia/ccsds cites it (TransactionIndication.java): the
    # indication is generated on receipt of a Put.request, and its ID lets
    # the source user identify the transaction thereafter
    told_rule=Rule(
        "3.4.6",
        "the Transaction.indication gives the source user the ID of the transaction its "
        "Put.request began: the source entity ID and sequence number its PDUs carry",
    ),
    # 3.4.10 as dariolucia/ccsds cites it (FileSegmentRecvIndication.java):
    # generating the indication is optional; where generated, its offset and
    # length are those of the File Data PDU received
    segment_told_rule=Rule(
        "3.4.10",
        "a File-Segment-Recv.indication gives the destination user the offset and length of "
        "the file data of a File Data PDU received",
    ),
    readings=load_readings(wire.SPECS / "cfdp" / "readings.json"),
    # No port is assigned (specs/cfdp/wire.json note): runs use 5111, the
    # port of cfdp-py's and cfdp-rs's UDP examples.
    run_port=5111,
    data_span=data_span,
    sized=sized,
    endpoint_knobs=endpoint_knobs,
)

register(SPEC)
