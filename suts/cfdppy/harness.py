#!/usr/bin/env python3
"""dtnconform system-under-test harness for cfdp-py 0.7.0 (CCSDS 727.0-B-5 CFDP).

One process plays one CFDP entity of one file transfer: ``send`` drives a
cfdp-py ``SourceHandler``, ``recv`` a ``DestHandler``. One raw CFDP PDU per
UDP datagram, no space-packet wrapper. Every PDU that leaves comes from the
handler (``get_next_packet``, or ``SourceHandler.create_prompt_pdu`` for a
Prompt request); every datagram that arrives is decoded with spacepackets
and handed to the handler unchanged. The harness only drives it: UDP I/O,
polling the handler so that its timers run, the check-timer provider, the
user and fault-handler callbacks, the file, and the users' requests.

The last stdout line is one JSON object: the result (README.md).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import select
import signal
import socket
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_IMPORT_ERROR: str | None = None
try:
    from cfdppy import (
        CfdpState,
        CfdpUserBase,
        IndicationConfig,
        LocalEntityConfig,
        PacketDestination,
        PutRequest,
        RemoteEntityConfig,
        RemoteEntityConfigTable,
        get_packet_destination,
    )
    from cfdppy.exceptions import (
        InvalidDestinationId,
        InvalidPduDirection,
        InvalidPduForDestHandler,
        InvalidPduForSourceHandler,
        InvalidSourceId,
        InvalidTransactionSeqNum,
        NoRemoteEntityConfigFound,
        PduIgnoredForDest,
        PduIgnoredForSource,
    )
    from cfdppy.filestore import NativeFilestore
    from cfdppy.handler import DestHandler, SourceHandler
    from cfdppy.mib import CheckTimerProvider, DefaultFaultHandlerBase, EntityType
    from spacepackets.cfdp import (
        ChecksumType,
        ConditionCode,
        FaultHandlerCode,
        PduType,
        TransmissionMode,
    )
    from spacepackets.cfdp.pdu import DirectiveType, PduFactory
    from spacepackets.cfdp.pdu.finished import DeliveryCode
    from spacepackets.cfdp.pdu.prompt import ResponseRequired
    from spacepackets.countdown import Countdown
    from spacepackets.seqcount import ProvidesSeqCount
    from spacepackets.util import UnsignedByteField
except ImportError as exc:  # pragma: no cover - reported as an "error" result
    _IMPORT_ERROR = f"cannot import cfdp-py/spacepackets: {exc}"
    CheckTimerProvider = object  # type: ignore[assignment,misc]
    CfdpUserBase = object  # type: ignore[assignment,misc]
    DefaultFaultHandlerBase = object  # type: ignore[assignment,misc]
    ProvidesSeqCount = object  # type: ignore[assignment,misc]

IMPLEMENTATION = "cfdp-py 0.7.0"
SOURCE_FILE = "dtnc-source.bin"  # the sender's file, in its --workdir
DEST_FILE = "dtnc-received.bin"  # the Metadata's destination file name
POLL_S = 0.005  # how often the handler's state machine runs when nothing arrives
MAX_DATAGRAM = 65535

# Table 5-5 (specs/cfdp/wire.json "condition_codes").
CONDITION_NAMES: dict[int, str] = {
    0: "no_error",
    1: "positive_ack_limit_reached",
    2: "keep_alive_limit_reached",
    3: "invalid_transmission_mode",
    4: "filestore_rejection",
    5: "file_checksum_failure",
    6: "file_size_error",
    7: "nak_limit_reached",
    8: "inactivity_detected",
    9: "invalid_file_structure",
    10: "check_limit_reached",
    11: "unsupported_checksum_type",
    12: "reserved_12",
    13: "reserved_13",
    14: "suspend_request_received",
    15: "cancel_request_received",
}
# Table 5-4 (specs/cfdp/wire.json "directives").
DIRECTIVE_NAMES: dict[int, str] = {
    4: "eof",
    5: "finished",
    6: "ack",
    7: "metadata",
    8: "nak",
    9: "prompt",
    12: "keep_alive",
}
# SANA checksum identifiers.
CHECKSUM_IDS: dict[str, int] = {"modular": 0, "crc32c": 2, "crc32": 3, "null": 15}
REQUESTS = ("cancel", "suspend", "prompt_nak", "prompt_keep_alive")
MATCH_KEYS = ("directive", "ack_of", "pdu_type", "offset", "condition")
# What cfdp-py can put in a PDU header: entity IDs are spacepackets
# UnsignedByteFields (1, 2, 4 or 8 octets, spacepackets/util.py:162-165);
# the SourceHandler takes sequence numbers of 8, 16 or 32 bits only
# (cfdppy/handler/source.py:938-941); the header parser reads 1, 2, 4 or 8
# (spacepackets/cfdp/pdu/header.py:383-386).
ENTITY_ID_WIDTHS = (1, 2, 4, 8)
SEND_SEQ_WIDTHS = (1, 2, 4)
PARSE_SEQ_WIDTHS = (1, 2, 4, 8)

LOG = logging.getLogger("dtnc-cfdppy")


def condition_name(code: int) -> str:
    return CONDITION_NAMES.get(int(code), f"condition_{int(code)}")


def pattern(length: int) -> bytes:
    """The file: octet i is (i * 31 + 7) & 0xFF (period 256)."""
    block = bytes((i * 31 + 7) & 0xFF for i in range(256))
    return (block * (length // 256 + 1))[:length]


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


class UsageError(Exception):
    """A knob cfdp-py or the harness cannot take: an "error" result."""


def parse_addr(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected IP:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="harness.py",
        description=f"Run one CFDP file transfer with {IMPLEMENTATION} (one role per process).",
    )
    p.add_argument("role", choices=("send", "recv"))
    p.add_argument("--listen", type=parse_addr, required=True, help="local IP:PORT to bind")
    p.add_argument("--peer", type=parse_addr, required=True, help="IP:PORT every PDU goes to")
    p.add_argument("--entity-id", type=int, help="local entity ID (default 1 send, 2 recv)")
    p.add_argument("--peer-entity-id", type=int, help="peer entity ID (default 2 send, 1 recv)")
    p.add_argument("--entity-id-len", type=int, default=2, choices=range(1, 9), metavar="{1..8}")
    p.add_argument("--seq-len", type=int, default=4, choices=range(1, 9), metavar="{1..8}")
    p.add_argument("--seq-num", type=int, default=1, help="transaction sequence number (send)")
    p.add_argument("--mode", choices=("class1", "class1-closure", "class2"), default="class2")
    p.add_argument("--checksum", choices=tuple(CHECKSUM_IDS), default="modular")
    p.add_argument("--pdu-crc", type=int, choices=(0, 1), default=0)
    p.add_argument("--segment-size", type=int, default=1024, help="file-data octets per PDU")
    p.add_argument("--file-len", type=int, help="send: the file size in octets")
    p.add_argument("--nak-mode", choices=("immediate", "deferred"), default="immediate")
    p.add_argument("--ack-limit", type=int, default=1, help="EOF/Finished retransmissions")
    p.add_argument("--nak-limit", type=int, default=1, help="NAK-timer expiries re-sending NAK")
    p.add_argument("--check-limit", type=int, default=1, help="check-timer expiries before fault")
    p.add_argument("--ack-timer-ms", type=int, default=1000)
    p.add_argument("--nak-timer-ms", type=int, default=1000)
    p.add_argument("--check-timer-ms", type=int, default=1000)
    p.add_argument(
        "--inactivity-ms",
        type=int,
        default=30000,
        help="accepted for the common CLI; cfdp-py 0.7.0 has no inactivity timer",
    )
    p.add_argument(
        "--checksum-fault-handler",
        choices=("cancel", "ignore"),
        default="cancel",
        help="fault handler for File Checksum Failure (cfdp-py's default is ignore)",
    )
    p.add_argument("--request", action="append", default=[], help="a user's request (JSON)")
    p.add_argument("--time-limit-ms", type=int, default=60000)
    p.add_argument("--linger-ms", type=int, default=1000)
    p.add_argument("--workdir", type=Path, default=Path("."))
    p.add_argument("-v", "--verbose", action="store_true", help="log every PDU on stderr")
    return p


def check_args(args: argparse.Namespace) -> None:
    if args.entity_id is None:
        args.entity_id = 1 if args.role == "send" else 2
    if args.peer_entity_id is None:
        args.peer_entity_id = 2 if args.role == "send" else 1
    if args.entity_id_len not in ENTITY_ID_WIDTHS:
        raise UsageError(
            f"--entity-id-len {args.entity_id_len}: {IMPLEMENTATION} (spacepackets "
            f"UnsignedByteField) supports entity IDs of {ENTITY_ID_WIDTHS} octets only"
        )
    widths = SEND_SEQ_WIDTHS if args.role == "send" else PARSE_SEQ_WIDTHS
    if args.seq_len not in widths:
        why = (
            "its SourceHandler takes sequence numbers of 8, 16 or 32 bits only"
            if args.role == "send"
            else "spacepackets parses sequence numbers of 1, 2, 4 or 8 octets only"
        )
        raise UsageError(f"--seq-len {args.seq_len}: in {IMPLEMENTATION}, {why}")
    top = 1 << (8 * args.entity_id_len)
    for name in ("entity_id", "peer_entity_id"):
        if not 0 <= getattr(args, name) < top:
            raise UsageError(f"--{name.replace('_', '-')} does not fit {args.entity_id_len} octets")
    if not 0 <= args.seq_num < 1 << (8 * args.seq_len):
        raise UsageError(f"--seq-num {args.seq_num} does not fit {args.seq_len} octets")
    if args.entity_id == args.peer_entity_id:
        raise UsageError("--entity-id and --peer-entity-id must differ")
    if args.role == "send" and (args.file_len is None or args.file_len < 0):
        raise UsageError("send needs --file-len N (N >= 0)")
    if args.segment_size <= 0:
        raise UsageError("--segment-size must be positive")
    for name in ("ack_limit", "nak_limit", "check_limit"):
        if getattr(args, name) < 0:
            raise UsageError(f"--{name.replace('_', '-')} must be >= 0")
    for name in ("ack_timer_ms", "nak_timer_ms", "check_timer_ms", "inactivity_ms"):
        if getattr(args, name) <= 0:
            raise UsageError(f"--{name.replace('_', '-')} must be positive")


# --------------------------------------------------------------------------
# Users' requests
# --------------------------------------------------------------------------


@dataclass
class Request:
    kind: str
    direction: str
    match: dict[str, Any]
    occurrence: int
    resume_after_ms: float
    seen: int = 0
    due: bool = False
    made: bool | None = None  # None: not decided yet
    detail: str = ""
    made_at: float | None = None

    def describe_trigger(self) -> str:
        fields = ", ".join(f"{k}={v}" for k, v in self.match.items())
        return f"occurrence {self.occurrence} of {self.direction} PDU [{fields}]"

    def result(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "request": self.kind,
            "made": bool(self.made),
            "detail": self.detail,
        }
        if self.made_at is not None:
            out["made_at_s"] = round(self.made_at, 3)
        return out


def parse_request(text: str, role: str) -> Request:
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--request {text!r}: not JSON ({exc})") from exc
    if not isinstance(raw, dict):
        raise UsageError(f"--request {text!r}: not a JSON object")
    kind = raw.get("request")
    if kind not in REQUESTS:
        raise UsageError(f"--request {text!r}: request must be one of {REQUESTS}")
    after = raw.get("after")
    if not isinstance(after, dict):
        raise UsageError(f"--request {text!r}: 'after' must be an object")
    direction = after.get("direction")
    if direction not in ("forward", "return"):
        raise UsageError(f"--request {text!r}: after.direction must be forward or return")
    match = after.get("match")
    if not isinstance(match, dict) or not match:
        raise UsageError(f"--request {text!r}: after.match must be a non-empty object")
    unknown = sorted(set(match) - set(MATCH_KEYS))
    if unknown:
        raise UsageError(f"--request {text!r}: match keys {unknown} not supported {MATCH_KEYS}")
    occurrence = after.get("occurrence", 1)
    if not isinstance(occurrence, int) or occurrence < 1:
        raise UsageError(f"--request {text!r}: after.occurrence must be an integer >= 1")
    resume = raw.get("resume_after_ms", 500)
    if not isinstance(resume, int | float) or resume < 0:
        raise UsageError(f"--request {text!r}: resume_after_ms must be a number >= 0")
    req = Request(kind, direction, dict(match), occurrence, float(resume))
    entity = raw.get("entity")
    mine = "sender" if role == "send" else "receiver"
    if entity is not None and entity != mine:
        req.made = False
        req.detail = f"the request is the {entity}'s; this process is the {mine}"
    return req


# --------------------------------------------------------------------------
# PDU fields (for triggers, counters and the log)
# --------------------------------------------------------------------------


def pdu_fields(pdu: Any) -> dict[str, Any]:
    """The wire.json fields a request's ``match`` may name, plus a label."""
    if pdu.pdu_type == PduType.FILE_DATA:
        return {
            "pdu_type": "file_data",
            "offset": int(pdu.offset),
            "label": f"file_data[{int(pdu.offset)}+{len(pdu.file_data)}]",
        }
    code = int(pdu.directive_type)
    name = DIRECTIVE_NAMES.get(code, f"directive_{code}")
    out: dict[str, Any] = {"pdu_type": "file_directive", "directive": name, "label": name}
    if code == DirectiveType.ACK_PDU:
        of = DIRECTIVE_NAMES.get(int(pdu.directive_code_of_acked_pdu), "?")
        out["ack_of"] = of
        out["condition"] = condition_name(pdu.condition_code_of_acked_pdu)
        out["label"] = f"ack({of},{out['condition']})"
    elif code in (DirectiveType.EOF_PDU, DirectiveType.FINISHED_PDU):
        out["condition"] = condition_name(pdu.condition_code)
        out["label"] = f"{name}({out['condition']})"
    elif code == DirectiveType.NAK_PDU:
        reqs = ",".join(f"{a}-{b}" for a, b in pdu.segment_requests)
        out["label"] = f"nak[{reqs}]"
    elif code == DirectiveType.PROMPT_PDU:
        out["label"] = f"prompt({pdu.response_required.name.lower()})"
    return out


def counter_key(fields: dict[str, Any]) -> str:
    label = str(fields["label"])
    if fields["pdu_type"] == "file_data":
        return "file_data"
    if fields.get("directive") == "nak":
        return "nak"
    return label


# --------------------------------------------------------------------------
# What cfdp-py tells its user
# --------------------------------------------------------------------------


@dataclass
class Observer:
    """Records the indications and fault-handler calls of one transaction."""

    t0: float
    settled: bool = False
    transaction_seen: bool = False
    finished: list[tuple[str, str, str]] = field(default_factory=list)  # cond, delivery, status
    faults: list[tuple[str, str]] = field(default_factory=list)  # handler, condition
    abandoned: str | None = None
    cancel_condition: str | None = None  # the last notice of cancellation
    eof_sent: list[str] = field(default_factory=list)  # condition of each EOF the handler built
    delivered_bytes: int = 0
    payload_ok: bool | None = None
    dest_path: Path | None = None
    after_end: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        """Log an event; one after the transaction's end goes to after_end."""
        if self.settled:
            self.after_end.append(text)
            LOG.info("[after the end] %s", text)
        else:
            LOG.info("%s", text)


class HarnessUser(CfdpUserBase):  # type: ignore[misc,valid-type]
    """cfdp-py's user: records each indication it gives."""

    def __init__(self, obs: Observer) -> None:
        super().__init__(NativeFilestore())
        self.obs = obs

    def transaction_indication(self, transaction_indication_params: Any) -> None:
        self.obs.transaction_seen = True
        self.obs.note(f"Transaction.indication {transaction_indication_params.transaction_id}")

    def eof_sent_indication(self, transaction_id: Any) -> None:
        self.obs.note("EOF-Sent.indication")

    def transaction_finished_indication(self, params: Any) -> None:
        fp = params.finished_params
        cond = condition_name(fp.condition_code)
        complete = fp.delivery_code == DeliveryCode.DATA_COMPLETE
        delivery = "data_complete" if complete else "data_incomplete"
        status = fp.file_status.name.lower()
        self.obs.note(f"Transaction-Finished.indication condition={cond} {delivery} {status}")
        if self.obs.settled:
            return
        self.obs.transaction_seen = True
        self.obs.finished.append((cond, delivery, status))
        path = self.obs.dest_path
        if cond == "no_error" and delivery == "data_complete" and path is not None:
            self._check_file(path)

    def _check_file(self, path: Path) -> None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            self.obs.note(f"delivered file {path} unreadable: {exc}")
            self.obs.payload_ok = False
            return
        self.obs.delivered_bytes = len(data)
        self.obs.payload_ok = data == pattern(len(data))
        self.obs.note(f"delivered file {path}: {len(data)} B, payload_ok={self.obs.payload_ok}")

    def metadata_recv_indication(self, params: Any) -> None:
        self.obs.note(
            f"Metadata-Recv.indication file_size={params.file_size} dest={params.dest_file_name!r}"
        )
        if self.obs.settled or params.dest_file_name is None:
            return
        self.obs.transaction_seen = True
        path = Path(params.dest_file_name)
        # As the DestHandler does (dest.py:_init_vfs_handling): a directory
        # gets the source file's base name appended.
        if path.is_dir() and params.source_file_name is not None:
            path = path / Path(params.source_file_name).name
        self.obs.dest_path = path

    def file_segment_recv_indication(self, params: Any) -> None:
        LOG.debug("File-Segment-Recv.indication offset=%d len=%d", params.offset, params.length)

    def report_indication(self, transaction_id: Any, status_report: Any) -> None:
        self.obs.note(f"Report.indication {status_report!r}")

    def suspended_indication(self, transaction_id: Any, cond_code: Any) -> None:
        self.obs.note(f"Suspended.indication {condition_name(cond_code)}")

    def resumed_indication(self, transaction_id: Any, progress: int) -> None:
        self.obs.note(f"Resumed.indication progress={progress}")

    def fault_indication(self, transaction_id: Any, cond_code: Any, progress: int) -> None:
        self.obs.note(f"Fault.indication {condition_name(cond_code)} progress={progress}")

    def abandoned_indication(self, transaction_id: Any, cond_code: Any, progress: int) -> None:
        self.obs.note(f"Abandoned.indication {condition_name(cond_code)} progress={progress}")

    def eof_recv_indication(self, transaction_id: Any) -> None:
        self.obs.note("EOF-Recv.indication")


class HarnessFaultHandlers(DefaultFaultHandlerBase):  # type: ignore[misc,valid-type]
    """cfdp-py's defaults (mib.py:58-70), with the faults the model has set
    to notice of cancellation explicitly; File Checksum Failure, which
    cfdp-py ignores by default, per --checksum-fault-handler."""

    def __init__(self, obs: Observer, checksum_handler: str) -> None:
        super().__init__()
        self.obs = obs
        cancel = FaultHandlerCode.NOTICE_OF_CANCELLATION
        for cond in (
            ConditionCode.POSITIVE_ACK_LIMIT_REACHED,
            ConditionCode.NAK_LIMIT_REACHED,
            ConditionCode.INACTIVITY_DETECTED,
            ConditionCode.CHECK_LIMIT_REACHED,
        ):
            self.set_handler(cond, cancel)
        self.set_handler(
            ConditionCode.FILE_CHECKSUM_FAILURE,
            cancel if checksum_handler == "cancel" else FaultHandlerCode.IGNORE_ERROR,
        )

    def _record(self, handler: str, cond: Any, progress: int) -> None:
        name = condition_name(cond)
        self.obs.note(f"fault handler: {handler} for {name} (progress {progress})")
        if self.obs.settled:
            return
        self.obs.faults.append((handler, name))
        if handler == "notice_of_cancellation":
            self.obs.cancel_condition = name
        elif handler == "abandon":
            self.obs.abandoned = name

    def notice_of_suspension_cb(self, transaction_id: Any, cond: Any, progress: int) -> None:
        self._record("notice_of_suspension", cond, progress)

    def notice_of_cancellation_cb(self, transaction_id: Any, cond: Any, progress: int) -> None:
        self._record("notice_of_cancellation", cond, progress)

    def abandoned_cb(self, transaction_id: Any, cond: Any, progress: int) -> None:
        self._record("abandon", cond, progress)

    def ignore_cb(self, transaction_id: Any, cond: Any, progress: int) -> None:
        self._record("ignore", cond, progress)


class HarnessCheckTimers(CheckTimerProvider):  # type: ignore[misc,valid-type]
    """Check timers (4.6.3.2, 4.6.3.3). The DestHandler counts its own
    expiries against RemoteEntityConfig.check_limit; the SourceHandler
    declares Check Limit Reached at the first expiry of the one timer it
    gets (source.py:796-797), so the sender's timer lasts the whole limit."""

    def __init__(self, receiving_ms: int, sending_ms: int) -> None:
        self.receiving_ms = receiving_ms
        self.sending_ms = sending_ms

    def provide_check_timer(
        self, local_entity_id: Any, remote_entity_id: Any, entity_type: Any
    ) -> Any:
        ms = self.sending_ms if entity_type == EntityType.SENDING else self.receiving_ms
        return Countdown.from_millis(ms)


class FixedSeqNum(ProvidesSeqCount):  # type: ignore[misc,valid-type]
    """Yields --seq-num for the (one) transaction."""

    def __init__(self, first: int, width_octets: int) -> None:
        self._next = first
        self._bits = 8 * width_octets

    @property
    def max_bit_width(self) -> int:
        return self._bits

    @max_bit_width.setter
    def max_bit_width(self, width: int) -> None:
        self._bits = width

    def get_and_increment(self) -> int:
        value = self._next
        self._next = (value + 1) % (1 << self._bits)
        return value


# --------------------------------------------------------------------------
# The entity
# --------------------------------------------------------------------------

# Exceptions with which a handler refuses an inserted PDU before its state
# machine runs (its _check_inserted_packet): the PDU is dropped and logged.
REFUSALS: tuple[type[BaseException], ...] = ()
if _IMPORT_ERROR is None:
    REFUSALS = (
        InvalidPduDirection,
        InvalidPduForSourceHandler,
        InvalidPduForDestHandler,
        PduIgnoredForSource,
        PduIgnoredForDest,
        NoRemoteEntityConfigFound,
        InvalidSourceId,
        InvalidDestinationId,
        InvalidTransactionSeqNum,
    )


class Fatal(Exception):
    """cfdp-py (or spacepackets under it) raised something other than
    refusing a PDU: the entity stops there, as an application would."""


class Entity:
    def __init__(self, args: argparse.Namespace, sock: socket.socket, obs: Observer) -> None:
        self.args = args
        self.sock = sock
        self.obs = obs
        self.peer = args.peer
        self.sender = args.role == "send"
        self.requests: list[Request] = [parse_request(r, args.role) for r in args.request]
        self.sent: dict[str, int] = {}
        self.received: dict[str, int] = {}
        self.dropped: dict[str, int] = {}
        self.started = False
        self.ended_at: float | None = None
        self.fatal: str | None = None

        local_id = UnsignedByteField(args.entity_id, args.entity_id_len)
        peer_id = UnsignedByteField(args.peer_entity_id, args.entity_id_len)
        self.peer_id = peer_id
        self.user = HarnessUser(obs)
        faults = HarnessFaultHandlers(obs, args.checksum_fault_handler)
        local_cfg = LocalEntityConfig(
            local_entity_id=local_id,
            indication_cfg=IndicationConfig(),
            default_fault_handlers=faults,
        )
        remote_cfg = RemoteEntityConfig(
            entity_id=peer_id,
            max_file_segment_len=args.segment_size,
            max_packet_len=max(args.segment_size + 64, 1472),
            closure_requested=args.mode == "class1-closure",
            crc_on_transmission=bool(args.pdu_crc),
            default_transmission_mode=self.transmission_mode(),
            crc_type=ChecksumType(CHECKSUM_IDS[args.checksum]),
            positive_ack_timer_interval_seconds=args.ack_timer_ms / 1000.0,
            positive_ack_timer_expiration_limit=args.ack_limit + 1,
            check_limit=args.check_limit + 1,
            disposition_on_cancellation=False,
            immediate_nak_mode=args.nak_mode == "immediate",
            nak_timer_interval_seconds=args.nak_timer_ms / 1000.0,
            nak_timer_expiration_limit=args.nak_limit + 1,
        )
        table = RemoteEntityConfigTable([remote_cfg])
        timers = HarnessCheckTimers(
            receiving_ms=args.check_timer_ms,
            sending_ms=args.check_timer_ms * (args.check_limit + 1),
        )
        self.source: Any = None
        self.dest: Any = None
        if self.sender:
            self.source = SourceHandler(
                cfg=local_cfg,
                user=self.user,
                remote_cfg_table=table,
                check_timer_provider=timers,
                seq_num_provider=FixedSeqNum(args.seq_num, args.seq_len),
            )
        else:
            self.dest = DestHandler(
                cfg=local_cfg,
                user=self.user,
                remote_cfg_table=table,
                check_timer_provider=timers,
            )

    def transmission_mode(self) -> Any:
        if self.args.mode == "class2":
            return TransmissionMode.ACKNOWLEDGED
        return TransmissionMode.UNACKNOWLEDGED

    @property
    def handler(self) -> Any:
        return self.source if self.sender else self.dest

    def busy(self) -> bool:
        return self.handler.state != CfdpState.IDLE

    # -- I/O ---------------------------------------------------------------

    def send_pdu(self, pdu: Any) -> None:
        fields = pdu_fields(pdu)
        try:
            data = bytes(pdu.pack())
        except Exception as exc:
            raise Fatal(self.describe_exc(exc, f"packing {fields['label']}")) from exc
        key = counter_key(fields)
        self.sent[key] = self.sent.get(key, 0) + 1
        with contextlib.suppress(OSError):
            self.sock.sendto(data, self.peer)
        LOG.debug("-> %s (%d B)", fields["label"], len(data))
        if fields.get("directive") == "eof" and not self.obs.settled:
            self.obs.eof_sent.append(str(fields["condition"]))
        self.observe("forward" if self.sender else "return", fields)

    def drain(self) -> int:
        n = 0
        while True:
            holder = self.handler.get_next_packet()
            if holder is None:
                return n
            if holder.pdu is not None:
                self.send_pdu(holder.pdu)
                n += 1

    def drop(self, why: str, text: str) -> None:
        self.dropped[why] = self.dropped.get(why, 0) + 1
        LOG.debug("dropped (%s): %s", why, text)

    def on_datagram(self, data: bytes) -> None:
        try:
            pdu = PduFactory.from_raw(data)
        except Exception as exc:  # undecodable (bad CRC, too short, unknown code)
            self.drop("undecodable", f"{type(exc).__name__}: {exc}")
            return
        if pdu is None:
            self.drop("undecodable", "empty or unknown directive")
            return
        try:
            fields = pdu_fields(pdu)
            target = get_packet_destination(pdu)
        except Exception as exc:
            self.drop("undecodable", f"{type(exc).__name__}: {exc}")
            return
        key = counter_key(fields)
        self.received[key] = self.received.get(key, 0) + 1
        LOG.debug("<- %s (%d B)", fields["label"], len(data))
        self.observe("return" if self.sender else "forward", fields)
        mine = PacketDestination.SOURCE_HANDLER if self.sender else PacketDestination.DEST_HANDLER
        if target != mine:
            self.drop("for the other role", str(fields["label"]))
        else:
            try:
                self.handler.state_machine(pdu)
            except REFUSALS as exc:
                self.drop(type(exc).__name__, f"{fields['label']}: {exc}")
            except Exception as exc:
                raise Fatal(self.describe_exc(exc, f"inserting {fields['label']}")) from exc
            self.note_activity()
            self.drain()
        self.make_due_requests()

    @staticmethod
    def describe_exc(exc: BaseException, where: str) -> str:
        frames = traceback.extract_tb(exc.__traceback__)
        at = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
        return f"{IMPLEMENTATION} raised {type(exc).__name__}({exc}){at} while {where}"

    def pump(self) -> None:
        """Run the state machine without a PDU (timers, the next File Data
        PDU) until it has nothing more to send."""
        for _ in range(256):
            if not self.busy():
                break
            try:
                self.handler.state_machine()
            except Exception as exc:
                raise Fatal(self.describe_exc(exc, "running its state machine")) from exc
            self.note_activity()
            sent = self.drain()
            self.make_due_requests()
            if sent == 0:
                break
        self.note_activity()

    def note_activity(self) -> None:
        if self.busy() or self.obs.transaction_seen:
            self.started = True

    # -- requests ----------------------------------------------------------

    def observe(self, direction: str, fields: dict[str, Any]) -> None:
        for req in self.requests:
            if req.made is not None or req.due or req.direction != direction:
                continue
            if all(fields.get(k) == v for k, v in req.match.items()):
                req.seen += 1
                if req.seen >= req.occurrence:
                    req.due = True

    def make_due_requests(self) -> None:
        for req in self.requests:
            if req.due and req.made is None:
                req.due = False
                self.make_request(req)
                self.drain()

    def make_request(self, req: Request) -> None:
        now = time.monotonic() - self.obs.t0
        what = f"{req.kind} after {req.describe_trigger()}"
        handler = self.handler
        if req.kind == "suspend":
            req.made = False
            req.detail = (
                f"{IMPLEMENTATION} has no Suspend.request/Resume.request: neither "
                "SourceHandler nor DestHandler offers one, and its notice of suspension is a "
                "TODO (source.py:986-988, dest.py:1202-1204)"
            )
        elif req.kind in ("prompt_nak", "prompt_keep_alive"):
            if not self.sender:
                req.made = False
                req.detail = "a Prompt is the sending entity's request"
                return
            needed = (
                ResponseRequired.NAK if req.kind == "prompt_nak" else ResponseRequired.KEEP_ALIVE
            )
            try:
                prompt = self.source.create_prompt_pdu(needed)
            except Exception as exc:
                raise Fatal(self.describe_exc(exc, f"making {what}")) from exc
            if prompt is None:
                req.made = False
                req.detail = "SourceHandler.create_prompt_pdu returned None: no transaction active"
            else:
                req.made, req.made_at = True, now
                req.detail = (
                    "Prompt PDU from SourceHandler.create_prompt_pdu; note that cfdp-py's "
                    "DestHandler does not answer Prompts (no NAK or Keep Alive)"
                )
                self.obs.note(f"request made: {what}")
                self.send_pdu(prompt)
        else:  # cancel
            tid = handler.transaction_id
            if tid is None or not self.busy():
                req.made = False
                req.detail = "no transaction active at the trigger (it had ended or not begun)"
                return
            try:
                accepted = handler.cancel_request(tid)
            except Exception as exc:
                raise Fatal(self.describe_exc(exc, f"making {what}")) from exc
            if accepted:
                req.made, req.made_at = True, now
                req.detail = f"{type(handler).__name__}.cancel_request accepted"
                self.obs.note(f"request made: {what}")
            else:
                req.made = False
                req.detail = f"{type(handler).__name__}.cancel_request refused (returned False)"

    # -- the run -----------------------------------------------------------

    def start(self) -> None:
        if not self.sender:
            return
        req = PutRequest(
            destination_id=self.peer_id,
            source_file=Path(SOURCE_FILE),
            dest_file=Path(DEST_FILE),
            trans_mode=self.transmission_mode(),
            closure_requested=self.args.mode == "class1-closure",
        )
        if not self.source.put_request(req):
            raise Fatal("SourceHandler.put_request refused the Put.request")
        self.started = True
        self.obs.transaction_seen = True

    def read_socket(self, timeout: float) -> None:
        ready, _, _ = select.select([self.sock], [], [], max(0.0, timeout))
        if not ready:
            return
        for _ in range(1024):
            try:
                data, _addr = self.sock.recvfrom(MAX_DATAGRAM)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # e.g. ICMP port unreachable reported late
                LOG.debug("recvfrom: %s", exc)
                return
            self.on_datagram(data)


# --------------------------------------------------------------------------
# The result
# --------------------------------------------------------------------------


def settle(ent: Entity, obs: Observer, timed_out: bool, why_stopped: str) -> dict[str, Any]:
    """The outcome from cfdp-py's own indications (README: "The result")."""
    detail: list[str] = []
    condition = "no_error"
    outcome: str
    # the condition of the last EOF the SourceHandler built, if a cancel one
    cancel_eof = obs.eof_sent[-1] if obs.eof_sent and obs.eof_sent[-1] != "no_error" else None
    crashed = ent.fatal is not None and ent.ended_at is None
    if ent.fatal is not None and not crashed:
        obs.after_end.append(ent.fatal)
    if not ent.started:
        outcome = "timeout"
        detail.append(f"no transaction reached this entity ({why_stopped})")
        if ent.fatal is not None:
            detail.append(ent.fatal)
    elif obs.abandoned is not None:
        outcome = "abandoned"
        condition = obs.abandoned
        detail.append(f"transaction abandoned by the fault handler ({condition})")
    elif timed_out or crashed:
        # The transaction never ended at this entity: the time limit came
        # first, or cfdp-py raised and the entity stopped there, as an
        # application with an unhandled exception would.
        outcome = "timeout"
        if obs.finished:
            condition = obs.finished[-1][0]
        elif cancel_eof is not None:
            condition = cancel_eof
        elif obs.cancel_condition is not None:
            condition = obs.cancel_condition
        if crashed:
            detail.append(f"entity stopped: {ent.fatal}; its transaction never ended")
        else:
            step = ent.handler.step.name if ent.busy() else "IDLE"
            detail.append(f"transaction not ended ({why_stopped}); cfdp-py in step {step}")
        if obs.finished:
            detail.append(f"last Transaction-Finished.indication: {obs.finished[-1][0]}")
        if obs.cancel_condition is not None:
            detail.append(f"notice of cancellation: {obs.cancel_condition}")
        if not crashed:
            detail.append(f"{IMPLEMENTATION} has no inactivity timer")
    elif obs.finished:
        cond, delivery, status = obs.finished[-1]
        condition = cond
        outcome = "completed" if cond == "no_error" else "cancelled"
        detail.append(f"Transaction-Finished.indication: {cond}, {delivery}, file {status}")
        if len(obs.finished) > 1:
            earlier = ", ".join(c for c, _, _ in obs.finished[:-1])
            detail.append(f"earlier indications: {earlier}")
    elif cancel_eof is not None:
        # A Class 1 sender's notice of cancellation (a fault's or a
        # Cancel.request's): cfdp-py sends EOF(cancel) and resets with no
        # Transaction-Finished.indication (source.py:835-841); the condition
        # is the one of that EOF.
        outcome = "cancelled"
        condition = cancel_eof
        detail.append(
            f"notice of cancellation: EOF({condition}) sent, handler back to IDLE with no "
            "Transaction-Finished.indication"
        )
    else:
        outcome = "closed"
        detail.append("handler went back to IDLE with no indication")
    if condition not in CONDITION_NAMES.values():
        detail.append(
            f"cfdp-py's condition code {condition.removeprefix('condition_')} is no Table 5-5 "
            "code: reported as ''"
        )
        condition = ""
    if obs.faults:
        counts: dict[str, int] = {}
        for handler, cond in obs.faults:
            counts[f"{handler} {cond}"] = counts.get(f"{handler} {cond}", 0) + 1
        calls = [k if n == 1 else f"{k} x{n}" for k, n in counts.items()]
        detail.append("fault handlers: " + ", ".join(calls))
    if ent.dropped:
        detail.append("dropped PDUs: " + ", ".join(f"{k} {v}" for k, v in ent.dropped.items()))
    if obs.after_end:
        detail.append("after the end: " + "; ".join(obs.after_end[:6]))
    for req in ent.requests:
        if req.made is None:
            req.made = False
            req.detail = f"trigger never seen ({req.describe_trigger()}; seen {req.seen})"
    end = ent.ended_at if ent.ended_at is not None else time.monotonic()
    result: dict[str, Any] = {"outcome": outcome}
    if ent.sender:
        result["file_bytes_delivered"] = 0
        result["sender_condition"] = condition or "no_error"
        result["payload_ok"] = None
    else:
        delivered = obs.delivered_bytes if obs.payload_ok is not None else 0
        result["file_bytes_delivered"] = delivered
        result["receiver_condition"] = condition if ent.started else ""
        result["payload_ok"] = obs.payload_ok
    result["duration_s"] = round(end - obs.t0, 3)
    result["requests"] = [r.result() for r in ent.requests]
    result["detail"] = "; ".join(detail)
    result["pdus_sent"] = dict(sorted(ent.sent.items()))
    result["pdus_received"] = dict(sorted(ent.received.items()))
    result["implementation"] = IMPLEMENTATION
    return result


def error_result(role: str | None, detail: str, t0: float) -> dict[str, Any]:
    out: dict[str, Any] = {"outcome": "error", "file_bytes_delivered": 0}
    if role == "send":
        out["sender_condition"] = "no_error"
    elif role == "recv":
        out["receiver_condition"] = ""
    out.update(
        {
            "payload_ok": None,
            "duration_s": round(time.monotonic() - t0, 3),
            "requests": [],
            "detail": detail,
            "implementation": IMPLEMENTATION,
        }
    )
    return out


def emit(result: dict[str, Any]) -> int:
    sys.stdout.write(json.dumps(result, sort_keys=False) + "\n")
    sys.stdout.flush()
    return 0


def open_socket(listen: tuple[str, int]) -> socket.socket:
    family = socket.AF_INET6 if ":" in listen[0] else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_DGRAM)
    for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, opt, 4 << 20)
    sock.bind(listen)
    sock.setblocking(False)
    return sock


def run(args: argparse.Namespace, t0: float) -> dict[str, Any]:
    check_args(args)
    workdir: Path = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    os.chdir(workdir)
    if args.role == "send":
        Path(SOURCE_FILE).write_bytes(pattern(args.file_len))
    else:
        with contextlib.suppress(FileNotFoundError):
            Path(DEST_FILE).unlink()
    obs = Observer(t0=t0)
    try:
        sock = open_socket(args.listen)
    except OSError as exc:
        raise UsageError(f"cannot bind {args.listen}: {exc}") from exc
    LOG.info(
        "%s listening on %s:%d, peer %s:%d (%s)",
        args.role,
        *args.listen,
        *args.peer,
        IMPLEMENTATION,
    )
    stop = {"signal": ""}

    def on_signal(signum: int, _frame: Any) -> None:
        stop["signal"] = signal.Signals(signum).name

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    ent = Entity(args, sock, obs)
    deadline = t0 + args.time_limit_ms / 1000.0
    timed_out = False
    why_stopped = "time limit"
    try:
        ent.start()
        ent.pump()
        while True:
            now = time.monotonic()
            if stop["signal"]:
                why_stopped = f"stopped by {stop['signal']}"
                timed_out = ent.ended_at is None
                break
            if ent.ended_at is not None and now >= ent.ended_at + args.linger_ms / 1000.0:
                break
            if now >= deadline:
                timed_out = ent.ended_at is None
                why_stopped = f"time limit {args.time_limit_ms} ms"
                break
            ent.read_socket(min(POLL_S, deadline - now))
            ent.pump()
            if ent.ended_at is None and ent.started and not ent.busy():
                ent.ended_at = time.monotonic()
                obs.settled = True
                LOG.info("transaction ended; lingering %d ms", args.linger_ms)
    except Fatal as exc:
        ent.fatal = str(exc)
        LOG.error("%s", exc)
    finally:
        sock.close()
    return settle(ent, obs, timed_out, why_stopped)


def main(argv: list[str] | None = None) -> int:
    t0 = time.monotonic()
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if args.verbose else logging.INFO,
        format=f"%(relativeCreated)8.1fms {args.role} %(name)s %(levelname)s %(message)s",
    )
    if not args.verbose:
        logging.getLogger("cfdppy").setLevel(logging.WARNING)
    if _IMPORT_ERROR is not None:
        return emit(error_result(args.role, _IMPORT_ERROR, t0))
    try:
        result = run(args, t0)
    except UsageError as exc:
        result = error_result(args.role, str(exc), t0)
    except Exception as exc:  # a harness bug: still one result line
        LOG.exception("harness failure")
        result = error_result(args.role, f"harness failure: {type(exc).__name__}: {exc}", t0)
    return emit(result)


if __name__ == "__main__":
    sys.exit(main())
