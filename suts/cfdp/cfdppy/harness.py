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
import logging
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
    CheckTimerProvider = object
    CfdpUserBase = object
    DefaultFaultHandlerBase = object
    ProvidesSeqCount = object

# harnesskit (suts/cfdp/common/), appended so that suts/cfdp/cfdppy does not shadow cfdp-py
sys.path.append(str(Path(__file__).resolve().parent.parent / "common"))
import harnesskit as common  # noqa: E402

IMPLEMENTATION = "cfdp-py 0.7.0"
POLL_S = 0.005  # how often the handler's state machine runs when nothing arrives
# What cfdp-py can put in a PDU header: entity IDs are spacepackets
# UnsignedByteFields (1, 2, 4 or 8 octets, spacepackets/util.py:162-165);
# the SourceHandler takes sequence numbers of 8, 16 or 32 bits only
# (cfdppy/handler/source.py:938-941); the header parser reads 1, 2, 4 or 8
# (spacepackets/cfdp/pdu/header.py:383-386).
ENTITY_ID_WIDTHS = (1, 2, 4, 8)
SEND_SEQ_WIDTHS = (1, 2, 4)
PARSE_SEQ_WIDTHS = (1, 2, 4, 8)

LOG = logging.getLogger("dtnc-cfdppy")


# --------------------------------------------------------------------------
# Command line (harnesskit's, with what cfdp-py does with it)
# --------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    return common.build_parser(
        IMPLEMENTATION,
        inactivity_ms="accepted for the common CLI; cfdp-py 0.7.0 has no inactivity timer",
        checksum_fault_handler=(
            "fault handler for File Checksum Failure (cfdp-py's default is ignore)"
        ),
    )


def check_args(args: argparse.Namespace) -> None:
    """The widths cfdp-py can take, then the common checks."""
    if args.entity_id_len not in ENTITY_ID_WIDTHS:
        raise common.UsageError(
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
        raise common.UsageError(f"--seq-len {args.seq_len}: in {IMPLEMENTATION}, {why}")
    common.check_args(args)


# --------------------------------------------------------------------------
# Users' requests
# --------------------------------------------------------------------------


@dataclass
class Request(common.Request):
    due: bool = False  # triggered: made once the handler's queue is drained


# --------------------------------------------------------------------------
# PDU fields (for triggers, counters and the log)
# --------------------------------------------------------------------------


def pdu_fields(pdu: Any) -> dict[str, Any]:
    """The wire.json fields a request's ``match`` may name, plus a label,
    of a PDU as spacepackets has it."""
    if pdu.pdu_type == PduType.FILE_DATA:
        return common.file_data_fields(int(pdu.offset), len(pdu.file_data))
    code = int(pdu.directive_type)
    if code == DirectiveType.ACK_PDU:
        return common.directive_fields(
            code,
            ack_of=int(pdu.directive_code_of_acked_pdu),
            condition=pdu.condition_code_of_acked_pdu,
        )
    if code in (DirectiveType.EOF_PDU, DirectiveType.FINISHED_PDU):
        return common.directive_fields(code, condition=pdu.condition_code)
    if code == DirectiveType.NAK_PDU:
        return common.directive_fields(code, segment_requests=list(pdu.segment_requests))
    if code == DirectiveType.PROMPT_PDU:
        return common.directive_fields(code, response=pdu.response_required.name.lower())
    return common.directive_fields(code)


# --------------------------------------------------------------------------
# What cfdp-py tells its user
# --------------------------------------------------------------------------


@dataclass
class Observer(common.Observed):
    """Records the indications and fault-handler calls of one transaction."""

    log = LOG

    settled: bool = False
    transaction_seen: bool = False
    faults: list[tuple[str, str]] = field(default_factory=list)  # handler, condition
    cancel_condition: str | None = None  # the last notice of cancellation
    eof_sent: list[str] = field(default_factory=list)  # condition of each EOF the handler built

    def note(self, text: str) -> None:
        """Log an event; one after the transaction's end goes to after_end."""
        self.record(text, self.settled)


class HarnessUser(CfdpUserBase):
    """cfdp-py's user: records each indication it gives."""

    def __init__(self, obs: Observer) -> None:
        super().__init__(NativeFilestore())
        self.obs = obs

    def transaction_indication(self, transaction_indication_params: Any) -> None:
        self.obs.transaction_seen = True
        tid = transaction_indication_params.transaction_id
        self.obs.tell(getattr(tid, "source_id", None), getattr(tid, "seq_num", None))

    def eof_sent_indication(self, transaction_id: Any) -> None:
        self.obs.note("EOF-Sent.indication")

    def transaction_finished_indication(self, params: Any) -> None:
        fp = params.finished_params
        cond = common.condition_name(fp.condition_code)
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
            self.obs.check_file(path)

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
        self.obs.segment(params.offset, params.length, self.obs.settled)

    def report_indication(self, transaction_id: Any, status_report: Any) -> None:
        self.obs.note(f"Report.indication {status_report!r}")

    def suspended_indication(self, transaction_id: Any, cond_code: Any) -> None:
        self.obs.note(f"Suspended.indication {common.condition_name(cond_code)}")

    def resumed_indication(self, transaction_id: Any, progress: int) -> None:
        self.obs.note(f"Resumed.indication progress={progress}")

    def fault_indication(self, transaction_id: Any, cond_code: Any, progress: int) -> None:
        self.obs.note(f"Fault.indication {common.condition_name(cond_code)} progress={progress}")

    def abandoned_indication(self, transaction_id: Any, cond_code: Any, progress: int) -> None:
        self.obs.note(
            f"Abandoned.indication {common.condition_name(cond_code)} progress={progress}"
        )

    def eof_recv_indication(self, transaction_id: Any) -> None:
        self.obs.note("EOF-Recv.indication")


class HarnessFaultHandlers(DefaultFaultHandlerBase):
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
        name = common.condition_name(cond)
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


class HarnessCheckTimers(CheckTimerProvider):
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


class FixedSeqNum(ProvidesSeqCount):
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
        self.requests = [common.parse_request(r, args.role, Request) for r in args.request]
        self.sent: dict[str, int] = {}
        self.received: dict[str, int] = {}
        self.dropped: dict[str, int] = {}
        self.started = False
        self.ended_at: float | None = None
        self.more = False  # the last run of the state machine sent something
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
            crc_type=ChecksumType(common.CHECKSUM_IDS[args.checksum]),
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
        common.count_pdu(self.sent, fields, len(data), "->", LOG)
        with contextlib.suppress(OSError):
            self.sock.sendto(data, self.peer)
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
        common.count_pdu(self.received, fields, len(data), "<-", LOG)
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
        """Run the state machine once without a PDU (timers, the next File
        Data PDU: one per run, source.py's flow control). ``more``: it sent
        something and may send again, so the next read does not wait. The
        socket is read between every two runs, so that a NAK reaches a
        sender still sending (docs/implementers.md); the harness once ran
        256 in a row."""
        self.more = False
        if self.busy():
            try:
                self.handler.state_machine()
            except Exception as exc:
                raise Fatal(self.describe_exc(exc, "running its state machine")) from exc
            self.note_activity()
            self.more = self.drain() > 0
            self.make_due_requests()
        self.note_activity()

    def note_activity(self) -> None:
        if self.busy() or self.obs.transaction_seen:
            self.started = True

    # -- requests ----------------------------------------------------------

    def observe(self, direction: str, fields: dict[str, Any]) -> None:
        for req in self.requests:
            if not req.due and req.fired(direction, fields):
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
            req.not_made(
                f"{IMPLEMENTATION} has no Suspend.request/Resume.request: neither "
                "SourceHandler nor DestHandler offers one, and its notice of suspension is a "
                "TODO (source.py:986-988, dest.py:1202-1204)"
            )
        elif req.kind in common.PROMPTS:
            if not self.sender:
                req.not_made("a Prompt is the sending entity's request")
                return
            needed = (
                ResponseRequired.NAK if req.kind == "prompt_nak" else ResponseRequired.KEEP_ALIVE
            )
            try:
                prompt = self.source.create_prompt_pdu(needed)
            except Exception as exc:
                raise Fatal(self.describe_exc(exc, f"making {what}")) from exc
            if prompt is None:
                req.not_made("SourceHandler.create_prompt_pdu returned None: no transaction active")
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
                req.not_made("no transaction active at the trigger (it had ended or not begun)")
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
                req.not_made(f"{type(handler).__name__}.cancel_request refused (returned False)")

    # -- the run -----------------------------------------------------------

    def start(self) -> None:
        if not self.sender:
            return
        req = PutRequest(
            destination_id=self.peer_id,
            source_file=Path(common.SOURCE_FILE),
            dest_file=Path(common.DEST_FILE),
            trans_mode=self.transmission_mode(),
            closure_requested=self.args.mode == "class1-closure",
        )
        if not self.source.put_request(req):
            raise Fatal("SourceHandler.put_request refused the Put.request")
        self.started = True
        self.obs.transaction_seen = True

    def step(self, timeout: float) -> None:
        """What arrives within ``timeout`` s, the handler's own work, and
        the end of the transaction: the handler back to IDLE, noticed after
        every datagram too, so that a late PDU taken in the same batch (which
        may open a new transaction) comes after the end, not before it."""

        def take(data: bytes) -> None:
            self.on_datagram(data)
            self.check_ended()

        common.read_datagrams(self.sock, 0.0 if self.more else timeout, take, LOG)
        self.pump()
        self.check_ended()

    def check_ended(self) -> None:
        if self.ended_at is None and self.started and not self.busy():
            self.ended_at = time.monotonic()
            self.obs.settled = True
            LOG.info("transaction ended; lingering %d ms", self.args.linger_ms)


# --------------------------------------------------------------------------
# The result
# --------------------------------------------------------------------------


def settle(ent: Entity, obs: Observer, stopped: tuple[bool, str]) -> dict[str, Any]:
    """The outcome from cfdp-py's own indications (README: "The result")."""
    # the condition of the last EOF the SourceHandler built, if a cancel one
    cancel_eof = obs.eof_sent[-1] if obs.eof_sent and obs.eof_sent[-1] != "no_error" else None
    step = ent.handler.step.name if ent.busy() else "IDLE"
    # A timeout also when cfdp-py raised and the entity stopped there ("crashed"),
    # as an application with an unhandled exception would.
    case, out = obs.judge(
        ent,
        stopped,
        "transaction abandoned by the fault handler",
        [cancel_eof, obs.cancel_condition],
        f"cfdp-py in step {step}",
    )
    detail = out.detail
    if case in ("crashed", "not_ended"):
        if obs.cancel_condition is not None:
            detail.append(f"notice of cancellation: {obs.cancel_condition}")
        if case == "not_ended":
            detail.append(f"{IMPLEMENTATION} has no inactivity timer")
    elif not case and cancel_eof is not None:
        # A Class 1 sender's notice of cancellation (a fault's or a
        # Cancel.request's): cfdp-py sends EOF(cancel) and resets with no
        # Transaction-Finished.indication (source.py:835-841); the condition
        # is the one of that EOF.
        out.outcome, out.condition = "cancelled", cancel_eof
        detail.append(
            f"notice of cancellation: EOF({cancel_eof}) sent, handler back to IDLE with no "
            "Transaction-Finished.indication"
        )
    elif not case:
        out.outcome = "closed"
        detail.append("handler went back to IDLE with no indication")
    if out.condition not in common.CONDITION_NAMES.values():
        detail.append(
            f"cfdp-py's condition code {out.condition.removeprefix('condition_')} is no "
            "Table 5-5 code: reported as ''"
        )
        out.condition = ""
    if obs.faults:
        detail.append("fault handlers: " + common.tally([f"{h} {c}" for h, c in obs.faults]))
    if ent.dropped:
        detail.append("dropped PDUs: " + ", ".join(f"{k} {v}" for k, v in ent.dropped.items()))
    if obs.after_end:
        detail.append("after the end: " + "; ".join(obs.after_end[:6]))
    for req in ent.requests:
        req.close()
    return obs.result(IMPLEMENTATION, ent, out)


def run(args: argparse.Namespace, t0: float) -> dict[str, Any]:
    check_args(args)
    common.prepare_workdir(args)
    obs = Observer(t0=t0)
    sock = common.bind_listen(args.listen)
    common.log_listening(LOG, args, IMPLEMENTATION)
    stop = common.StopSignal().install()
    ent = Entity(args, sock, obs)
    stopped = (False, "time limit")  # (timed out, why)
    try:
        ent.start()
        ent.pump()
        stopped = common.drive(args, t0, stop, ent, ent.step, POLL_S)
    except Fatal as exc:
        ent.fatal = str(exc)
        LOG.error("%s", exc)
    finally:
        sock.close()
    return settle(ent, obs, stopped)


def quiet_cfdppy(args: argparse.Namespace) -> None:
    if not args.verbose:
        logging.getLogger("cfdppy").setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    return common.main(argv, IMPLEMENTATION, build_parser, run, LOG, _IMPORT_ERROR, quiet_cfdppy)


if __name__ == "__main__":
    sys.exit(main())
