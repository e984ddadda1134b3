#!/usr/bin/env python3
"""dtnconform system-under-test harness for LibreCube cfdp 0.2.0 (CCSDS 727.0-B-5 CFDP).

Run it with the venv of suts/cfdp/librecube/setup.sh:

    suts/cfdp/librecube/.venv/bin/python suts/cfdp/librecube/harness.py send|recv --listen IP:PORT ...

One process plays one CFDP entity of one file transfer: ``send`` makes a
LibreCube ``CfdpEntity`` send the file with a Put.request (its ``Sender1`` or
``Sender2`` state machine), ``recv`` lets the entity take the transaction the
first PDU starts (``Receiver1`` or ``Receiver2``). One raw CFDP PDU per UDP
datagram. Every PDU that leaves is the bytes LibreCube hands its transport
(``Transport.request``); every datagram that arrives goes to the entity
unchanged through the transport's ``indication`` (``CfdpEntity.pdu_received``),
as LibreCube's own ``UdpTransport`` does. The harness provides that transport
(its own socket), the user (the entity's indication methods), the file and the
users' requests; LibreCube runs its state machines in its own threads.

The command line and the result are those of suts/cfdp/cfdppy/harness.py; the last
stdout line is one JSON object (README.md).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import version as _version
from pathlib import Path
from typing import Any

_IMPORT_ERROR: str | None = None
try:
    import cfdp.constants as cfdp_constants
    from cfdp import CfdpEntity
    from cfdp.constants import (
        ChecksumType,
        ConditionCode,
        DeliveryCode,
        FaultHandlerAction,
        MachineState,
        TransmissionMode,
    )
    from cfdp.filestore import NativeFileStore
    from cfdp.meta import get_required_octets
    from cfdp.transport.base import Transport

    if _version("cfdp") != "0.2.0":
        raise ImportError(f"cfdp {_version('cfdp')} is installed, not 0.2.0")
except ImportError as exc:  # pragma: no cover - reported as an "error" result (also
    # importlib.metadata.PackageNotFoundError, an ImportError)
    _IMPORT_ERROR = (
        f"cannot import LibreCube cfdp 0.2.0: {exc} (run suts/cfdp/librecube/setup.sh and use "
        "suts/cfdp/librecube/.venv/bin/python)"
    )
    CfdpEntity = object
    Transport = object

# harnesskit (suts/cfdp/common/): the harnesses' command line, requests and result
sys.path.append(str(Path(__file__).resolve().parent.parent / "common"))
import harnesskit as common  # noqa: E402

IMPLEMENTATION = "LibreCube cfdp 0.2.0"
POLL_S = 0.005  # longest wait for a datagram before the harness looks at the entity again
# Table 5-7's file status, as LibreCube's FileStatus numbers them (constants.py:70-74).
FILE_STATUS_NAMES = {
    0: "discarded_deliberately",
    1: "discarded_filestore_rejection",
    2: "retained",
    3: "unreported",
}
# The faults LibreCube declares, by the words of its log line "[id] Fault: ..."
# (machines/base.py:100-140); it has no other report of a fault whose handler
# is cancel (its fault_indication, core.py:302, is never called).
FAULT_WORDS: dict[str, str] = {
    "Inactivity timeout": "inactivity_detected",
    "Filestore": "filestore_rejection",
    "Ack limit": "positive_ack_limit_reached",
    "File size": "file_size_error",
    "File checksum": "file_checksum_failure",
    "Nak limit": "nak_limit_reached",
}
# The faults the model handles with notice of cancellation.
MODEL_CANCEL_FAULTS = (
    "POSITIVE_ACK_LIMIT_REACHED",
    "NAK_LIMIT_REACHED",
    "INACTIVITY_DETECTED",
    "CHECK_LIMIT_REACHED",
)

LOG = logging.getLogger("dtnc-librecube")


def where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    f = frames[-1]
    path = Path(f.filename)
    parts = path.parts
    name = "/".join(parts[parts.index("cfdp") :]) if "cfdp" in parts else path.name
    return f" at {name}:{f.lineno}"


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    no_check_timer = f"accepted for the common CLI; {IMPLEMENTATION} has no check timer"
    return common.build_parser(
        IMPLEMENTATION,
        check_limit=no_check_timer,
        check_timer_ms=no_check_timer,
        checksum_fault_handler=(
            "fault handler for File Checksum Failure (LibreCube's default is cancel)"
        ),
    )


def check_args(args: argparse.Namespace) -> None:
    """The generic checks, then what LibreCube 0.2.0 cannot take (README.md,
    "What LibreCube cfdp 0.2.0 cannot do")."""
    common.check_args(args)
    sender = args.role == "send"
    me = IMPLEMENTATION
    if args.pdu_crc:
        raise common.UsageError(
            f"--pdu-crc 1: {me} has no PDU CRC: no PDU it builds sets the CRC flag (every PDU "
            "class defaults crc_flag=0, e.g. pdu/eof.py:11, and the machines pass none) and "
            "PduHeader.decode raises ValueError('PDUs with CRC are not yet supported') on a PDU "
            "that has one (pdu/header.py:132-134)"
        )
    if args.mode == "class1-closure":
        raise common.UsageError(
            f"--mode class1-closure: {me} has no Class 1 closure: CfdpEntity.put's "
            "closure_requested is 'not implemented' (core.py:159), send_metadata never sets the "
            "Metadata's closure flag (machines/sender1.py:108-122, MetadataPdu default 0 at "
            "pdu/metadata.py:23), Sender1 ends at its EOF without waiting for a Finished "
            "(sender1.py:57-62) and Receiver1 never sends one (machines/receiver1.py)"
        )
    if args.checksum != "modular":
        if sender:
            how = (
                "its Metadata always names the modular checksum (type 0): send_metadata passes "
                "no checksum_type (machines/sender1.py:110, sender2.py:338), so MetadataPdu "
                "keeps its default 0 (pdu/metadata.py:24)"
            )
        else:
            how = (
                "its receiver verifies every file with the modular checksum whatever the "
                "Metadata says: core.py:505-522 builds the receiving Transaction with no "
                "checksum_type (default MODULAR, transaction.py:31) and nothing reads "
                "MetadataPdu.checksum_type (pdu/metadata.py:140)"
            )
        if args.checksum != "null":
            how += (
                "; and NativeFileHandle.calculate_checksum computes only the modular (0) and "
                "null (15) checksums, raising NotImplementedError for any other "
                "(filestore/native.py:145-167)"
            )
        raise common.UsageError(f"--checksum {args.checksum}: {me} cannot take it: {how}")
    if not sender and args.mode == "class2" and args.nak_mode == "immediate":
        raise common.UsageError(
            f"--nak-mode immediate: {me}'s Class 2 receiver has only the deferred procedure: "
            "it sends its first NAK on entering GET_MISSING_DATA after the EOF "
            "(machines/receiver2.py:106-120, 168-172) and again at NAK-timer expiries "
            "(receiver2.py:230-238); nothing NAKs a gap as it appears (receiver2.py:94-104)"
        )
    # Entity IDs: PduHeader.encode sets the width to the fewest octets the larger
    # of the two IDs needs, whatever it is given (pdu/header.py:53-56). A
    # receiver's replies use the IDs of the PDU it got (machines/base.py:272-281).
    # A Class 1 receiver sends no PDU at all.
    width = max(get_required_octets(args.entity_id), get_required_octets(args.peer_entity_id))
    if (sender or args.mode == "class2") and args.entity_id_len != width:
        raise common.UsageError(
            f"--entity-id-len {args.entity_id_len}: {me} sends entity IDs {args.entity_id} and "
            f"{args.peer_entity_id} in {width} octet(s) only: PduHeader.encode overwrites the "
            "width with the fewest octets the larger ID needs (pdu/header.py:53-56)"
        )
    if sender and args.seq_len != 1:
        raise common.UsageError(
            f"--seq-len {args.seq_len}: {me} sends 1-octet sequence numbers only: the "
            "machines build every PDU with the default length_of_seq_number=0, i.e. one octet "
            "(e.g. pdu/eof.py:17; machines/sender1.py, sender2.py pass none), and "
            "PduHeader.encode writes length_of_seq_number + 1 octets (pdu/header.py:81-85)"
        )


# --------------------------------------------------------------------------
# Users' requests
# --------------------------------------------------------------------------


@dataclass
class Request(common.Request):
    resume_at: float | None = None  # monotonic time of the Resume.request (suspend)


# --------------------------------------------------------------------------
# PDU fields, read by the harness itself (for triggers, counters and the log)
# --------------------------------------------------------------------------


def pdu_fields(data: bytes) -> dict[str, Any] | None:
    """harnesskit's fields of a raw PDU; None for one too short to decode."""
    try:
        return common.pdu_fields(data)
    except common.Undecodable:
        return None


# --------------------------------------------------------------------------
# What LibreCube tells its user
# --------------------------------------------------------------------------


@dataclass
class Observer(common.Observed):
    """Records the indications and faults of the transaction."""

    log = LOG

    machine: Any = None  # the LibreCube state machine of this transaction
    suspended: int = 0
    resumed: int = 0
    faults: list[str] = field(default_factory=list)  # conditions LibreCube declared
    cancel_pdu: str | None = None  # condition of the last EOF/Finished(cancel) it sent
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ended(self) -> bool:
        m = self.machine
        return m is not None and m.state == MachineState.COMPLETED

    def note(self, text: str, after: bool | None = None) -> None:
        """Log an event; one after the transaction's end goes to after_end."""
        self.record(text, self.ended() if after is None else after)


class HarnessEntity(CfdpEntity):
    """LibreCube's CfdpEntity. The user's side is its indication methods
    (core.py:219-325), overridden here to record them. Two more overrides
    feed it what its Put.request cannot take: the transaction sequence
    number (--seq-num) and the file segment size (--segment-size)."""

    def __init__(self, obs: Observer, seq_num: int, **kwargs: Any) -> None:
        self.obs = obs
        self._seq_num = seq_num
        self._held: list[tuple[Any, Any]] | None = None
        super().__init__(**kwargs)

    # -- what put() cannot take ---------------------------------------------

    def _increment_transaction_seq_counter(self) -> int:
        # LibreCube numbers transactions 1, 2, ... (core.py:103-105); this
        # entity makes one, numbered --seq-num.
        return self._seq_num

    def trigger_event(self, event: Any, pdu: Any = None) -> None:
        if self._held is not None:
            self._held.append((event, pdu))
            return
        super().trigger_event(event, pdu)

    def put_segmented(
        self, segment_size: int, made: Callable[[Any, Any], None], **kwargs: Any
    ) -> None:
        """put() with a segment size: put takes none (segmentation_control is
        'not implemented', core.py:155) and its Transaction cuts the file into
        DEFAULT_MAX_FILE_SEGMENT_LEN = 4096 octets (transaction.py:32, 53). The
        Put.request's first events are held back until the Transaction has
        --segment-size (and ``made`` has the transaction ID and its machine),
        so that no PDU is built before."""
        self._held = []
        try:
            tid = self.put(**kwargs)
            machine = self.machines[tid]
            machine.transaction.file_segment_size = segment_size
            made(tid, machine)
        finally:
            held, self._held = self._held or [], None
            for event, pdu in held:
                super().trigger_event(event, pdu)

    # -- indications (core.py:219-325) --------------------------------------

    def transaction_indication(self, transaction_id: Any) -> None:
        # transaction.py: the ID is (source entity ID, sequence number)
        ok = isinstance(transaction_id, tuple) and len(transaction_id) == 2
        source, seq = transaction_id if ok else (None, None)
        self.obs.tell(source, seq)

    def eof_sent_indication(self, transaction_id: Any) -> None:
        self.obs.note("EOF-Sent.indication")

    def eof_received_indication(self, transaction_id: Any) -> None:
        self.obs.note("EOF-Recv.indication")

    def transaction_finished_indication(
        self,
        transaction_id: Any,
        condition_code: Any,
        file_status: Any,
        delivery_code: Any,
        filestore_responses: Any = None,
        status_report: Any = None,
    ) -> None:
        obs = self.obs
        cond = common.condition_name(condition_code)
        complete = delivery_code == DeliveryCode.DATA_COMPLETE
        delivery = "data_complete" if complete else "data_incomplete"
        after = obs.ended()
        status = FILE_STATUS_NAMES.get(int(file_status), str(file_status))
        obs.note(
            f"Transaction-Finished.indication condition={cond} {delivery} file {status}", after
        )
        if after:
            return
        with obs.lock:
            obs.finished.append((cond, delivery, status))
        if cond == "no_error" and complete and obs.dest_path is not None:
            obs.check_file(obs.dest_path)

    def metadata_received_indication(
        self,
        transaction_id: Any,
        source_entity_id: Any,
        file_size: Any = None,
        source_filename: Any = None,
        destination_filename: Any = None,
        messages_to_user: Any = None,
    ) -> None:
        after = self.obs.ended()
        self.obs.note(
            f"Metadata-Recv.indication file_size={file_size} dest={destination_filename!r}", after
        )
        if not after and destination_filename:
            self.obs.dest_path = Path(self.filestore.get_native_path(destination_filename))

    def filesegment_received_indication(
        self, transaction_id: Any, offset: int, length: int, *args: Any, **kwargs: Any
    ) -> None:
        self.obs.segment(offset, length, self.obs.ended())

    def suspended_indication(self, transaction_id: Any, condition_code: Any) -> None:
        after = self.obs.ended()
        self.obs.note(f"Suspended.indication {common.condition_name(condition_code)}", after)
        if not after:
            self.obs.suspended += 1

    def resumed_indication(self, transaction_id: Any, progress: Any) -> None:
        after = self.obs.ended()
        self.obs.note(f"Resumed.indication progress={progress}", after)
        if not after:
            self.obs.resumed += 1

    def report_indication(self, transaction_id: Any, status_report: Any) -> None:
        self.obs.note(f"Report.indication {status_report!r}")

    def fault_indication(self, transaction_id: Any, condition_code: Any, progress: Any) -> None:
        self.obs.note(f"Fault.indication {common.condition_name(condition_code)}")

    def abandoned_indication(self, transaction_id: Any, condition_code: Any, progress: Any) -> None:
        obs = self.obs
        after = obs.ended()
        obs.note(f"Abandoned.indication {common.condition_name(condition_code)}", after)
        if not after:
            obs.abandoned = common.condition_name(condition_code)


class FaultLog(logging.Handler):
    """LibreCube reports a fault only in its log ("[id] Fault: Nak limit",
    machines/base.py:100-140); this handler records those lines."""

    PATTERN = re.compile(r"Fault: (.+)$")

    def __init__(self, obs: Observer) -> None:
        super().__init__(level=logging.ERROR)
        self.obs = obs

    def emit(self, record: logging.LogRecord) -> None:
        m = self.PATTERN.search(record.getMessage())
        if not m:
            return
        cond = FAULT_WORDS.get(m.group(1).strip(), m.group(1).strip())
        after = self.obs.ended()
        self.obs.note(f"fault declared: {cond}", after)
        if not after:
            with self.obs.lock:
                self.obs.faults.append(cond)


# --------------------------------------------------------------------------
# The transport and the entity around it
# --------------------------------------------------------------------------


class HarnessTransport(Transport):
    """A LibreCube Transport (transport/base.py) on the harness's socket:
    like its UdpTransport (transport/udp.py) with routing {"*": [peer]} it
    sends every PDU to --peer and passes every datagram, from any address,
    to ``self.indication`` (the entity's pdu_received, core.py:86)."""

    def __init__(self, run: Runner) -> None:
        super().__init__()
        self.run = run

    def request(self, data: bytes) -> None:  # LibreCube sends a PDU
        self.run.on_sent(bytes(data))


class Runner:
    def __init__(self, args: argparse.Namespace, sock: socket.socket, obs: Observer) -> None:
        self.args = args
        self.sock = sock
        self.obs = obs
        self.sender = args.role == "send"
        self.requests = [common.parse_request(r, args.role, Request) for r in args.request]
        self.sent: dict[str, int] = {}
        self.received: dict[str, int] = {}
        self.dropped: dict[str, int] = {}
        self.lock = threading.RLock()
        self.tid: Any = None
        self.ended_at: float | None = None
        self.fatal: str | None = None
        self.later: Any = None  # the last state machine LibreCube made after the end

        handlers = self.fault_handlers()
        self.transport = HarnessTransport(self)
        self.entity = HarnessEntity(
            obs,
            args.seq_num,
            entity_id=args.entity_id,
            filestore=NativeFileStore(str(Path.cwd())),
            transport=self.transport,
            eof_sent_indication_required=True,
            eof_received_indication_required=True,
            filesegment_received_indication_required=True,
            transaction_finished_indication_required=True,
            suspended_indication_required=True,
            resumed_indication_required=True,
            default_fault_handlers=handlers,
            transaction_inactivity_limit=args.inactivity_ms / 1000.0,
            positive_ack_timer_interval=args.ack_timer_ms / 1000.0,
            positive_ack_timer_expiration_limit=args.ack_limit + 1,
            nak_timer_interval=args.nak_timer_ms / 1000.0,
            nak_timer_expiration_limit=args.nak_limit + 1,
        )
        # The entity keeps default_fault_handlers (core.py:79) but never reads
        # it: Transaction.get_fault_handler takes the Put.request's overrides,
        # else the module table DEFAULT_FAULT_HANDLERS (transaction.py:101-105).
        # A receiving transaction has no overrides (core.py:505-522), so that
        # table is the receiver's only fault-handler setting.
        self.handlers = handlers
        if not self.sender:
            cfdp_constants.DEFAULT_FAULT_HANDLERS.update(handlers)

    def fault_handlers(self) -> dict[int, str]:
        """LibreCube's defaults are cancel for every fault (constants.py:138-150);
        the model's five are set explicitly (check limit included, though
        LibreCube never declares it), File Checksum Failure per
        --checksum-fault-handler."""
        table = dict(cfdp_constants.DEFAULT_FAULT_HANDLERS)
        for name in MODEL_CANCEL_FAULTS:
            table[getattr(ConditionCode, name)] = FaultHandlerAction.CANCEL
        table[ConditionCode.FILE_CHECKSUM_FAILURE] = (
            FaultHandlerAction.CANCEL
            if self.args.checksum_fault_handler == "cancel"
            else FaultHandlerAction.IGNORE
        )
        return table

    @property
    def started(self) -> bool:
        return self.obs.machine is not None

    # -- I/O ---------------------------------------------------------------

    def on_sent(self, data: bytes) -> None:
        """Every PDU LibreCube sends (from its event thread, or from
        pdu_received for a stray Finished, core.py:478-496)."""
        fields = pdu_fields(data) or {"pdu_type": "?", "label": "?"}  # counted as "?"
        with self.lock:
            common.count_pdu(self.sent, fields, len(data), "->", LOG)
            with contextlib.suppress(OSError):
                self.sock.sendto(data, self.args.peer)
            if self.obs.ended():
                self.obs.note(f"sent {fields['label']}", True)
            elif fields.get("directive") in ("eof", "finished"):
                cond = fields.get("condition")
                if cond and cond != "no_error":
                    self.obs.cancel_pdu = str(cond)
            self.observe("forward" if self.sender else "return", fields)

    def on_datagram(self, data: bytes) -> None:
        fields = pdu_fields(data)
        with self.lock:
            if fields is None:
                self.drop("undecodable", f"{len(data)} B")
                return
            common.count_pdu(self.received, fields, len(data), "<-", LOG)
            try:
                self.transport.indication(data)
            except Exception as exc:
                # LibreCube refuses the PDU by raising in pdu_received (e.g.
                # PduHeader.decode on a CRC flag, core.py:409/444/466 on Prompt,
                # Keep Alive, or an ACK of another directive): dropped. (Its
                # own UdpTransport's receive thread would die here, udp.py:46-58.)
                self.drop(
                    f"LibreCube raised {type(exc).__name__}{where(exc)}",
                    f"{fields['label']}: {exc}",
                )
            self.track_machine()
            self.observe("return" if self.sender else "forward", fields)

    def drop(self, why: str, text: str) -> None:
        self.dropped[why] = self.dropped.get(why, 0) + 1
        LOG.debug("dropped (%s): %s", why, text)

    def track_machine(self) -> None:
        """The receiver's transaction is the first state machine a PDU makes;
        a later one for the same transaction ID (core.py:363-370 replaces a
        COMPLETED machine when another PDU of it arrives) is noted."""
        machines = self.entity.machines
        if self.obs.machine is None:
            if machines:
                self.tid, self.obs.machine = next(iter(machines.items()))
                self.obs.note(
                    f"transaction {self.tid}: LibreCube started {type(self.obs.machine).__name__}"
                )
            return
        current = machines.get(self.tid)
        if current is not None and current is not self.obs.machine and current is not self.later:
            self.later = current
            self.obs.note(
                f"LibreCube started a new {type(current).__name__} for transaction "
                f"{self.tid} (core.py:363-370)",
                True,
            )

    def step(self, timeout: float) -> None:
        """What arrives within ``timeout`` s, a Resume.request due, and the
        end of the transaction: its state machine COMPLETED."""
        common.read_datagrams(self.sock, timeout, self.on_datagram, LOG)
        self.resume_due()
        if self.ended_at is None and self.obs.ended():
            self.ended_at = time.monotonic()
            LOG.info("transaction ended; lingering %d ms", self.args.linger_ms)

    # -- requests ----------------------------------------------------------

    def observe(self, direction: str, fields: dict[str, Any]) -> None:
        for req in self.requests:
            if req.fired(direction, fields):
                self.make_request(req)

    def make_request(self, req: Request) -> None:
        """Right after the triggering PDU was handed to the socket (sent) or
        to the entity (received): LibreCube's request methods (core.py:189-215)
        only queue an event for its event thread."""
        now = time.monotonic() - self.obs.t0
        what = f"{req.kind} after {req.describe_trigger()}"
        machine = self.obs.machine
        if req.kind in common.PROMPTS:
            req.not_made(
                f"{IMPLEMENTATION} has no Prompt service: no state machine or CfdpEntity "
                "method sends a Prompt PDU (pdu/prompt.py's PromptPdu is used only to decode, "
                "core.py:402-403), and a Prompt reaching an open transaction raises "
                "RuntimeError in pdu_received (core.py:465-466)"
            )
            return
        if machine is None or machine.state == MachineState.COMPLETED:
            req.not_made("no transaction active at the trigger (it had ended or not begun)")
            return
        if req.kind == "cancel":
            self.entity.cancel(self.tid)
            req.made, req.made_at = True, now
            req.detail = "CfdpEntity.cancel (a Cancel.request event, E33) given to LibreCube"
        else:  # suspend, then resume after resume_after_ms
            self.entity.suspend(self.tid)
            req.made, req.made_at = True, now
            req.resume_at = time.monotonic() + req.resume_after_ms / 1000.0
            req.detail = "CfdpEntity.suspend (E31) given to LibreCube"
        self.obs.note(f"request made: {what}")

    def resume_due(self) -> None:
        now = time.monotonic()
        with self.lock:
            for req in self.requests:
                if req.resume_at is not None and now >= req.resume_at:
                    req.resume_at = None
                    machine = self.obs.machine
                    if machine is None or machine.state == MachineState.COMPLETED:
                        req.detail += "; Resume.request not made: the transaction had ended"
                        continue
                    self.entity.resume(self.tid)
                    req.detail += (
                        f"; CfdpEntity.resume (E32) after {req.resume_after_ms:g} ms "
                        f"(at {now - self.obs.t0:.3f} s)"
                    )
                    self.obs.note("request made: resume")

    # -- the run -----------------------------------------------------------

    def start(self) -> None:
        if not self.sender:
            return
        mode = (
            TransmissionMode.ACKNOWLEDGED
            if self.args.mode == "class2"
            else TransmissionMode.UNACKNOWLEDGED
        )

        def made(tid: Any, machine: Any) -> None:
            self.tid, self.obs.machine = tid, machine
            self.obs.note(f"Put.request made: transaction {tid}, {type(machine).__name__}")

        self.entity.put_segmented(
            self.args.segment_size,
            made,
            destination_id=self.args.peer_entity_id,
            source_filename=common.SOURCE_FILE,
            destination_filename=common.DEST_FILE,
            transmission_mode=mode,
            fault_handler_overrides=self.handlers,
            checksum_type=ChecksumType.MODULAR,
        )

    def stop_entity(self) -> None:
        """Cancel every timer LibreCube has running and stop its threads."""
        machines = list(self.entity.machines.values())
        if self.obs.machine is not None:
            machines.append(self.obs.machine)
        for m in machines:
            for name in ("inactivity_timer", "ack_timer", "nak_timer"):
                timer = getattr(m, name, None)
                if timer is not None:
                    with contextlib.suppress(Exception):
                        timer.cancel()
        with contextlib.suppress(Exception):
            self.entity.shutdown()


# --------------------------------------------------------------------------
# The result
# --------------------------------------------------------------------------


def settle(run: Runner, stopped: tuple[bool, str]) -> dict[str, Any]:
    """The outcome from LibreCube's own indications (README: "The result")."""
    obs = run.obs
    state = obs.machine.state if obs.machine is not None else "?"
    case, out = obs.judge(
        run, stopped, "Abandoned.indication", [obs.cancel_pdu], f"LibreCube in state {state}"
    )
    detail = out.detail
    if not case:
        out.outcome = "closed"
        detail.append("state machine COMPLETED with no indication")
    if obs.faults:
        detail.append(
            f"faults declared: {common.tally(obs.faults)} (LibreCube's log, machines/base.py:100-140; "
            "its cancel handler only queues a Cancel.request event, base.py:142-144, whose "
            "condition is cancel_request_received)"
        )
    if obs.suspended or obs.resumed:
        detail.append(f"Suspended.indication x{obs.suspended}, Resumed.indication x{obs.resumed}")
    if run.dropped:
        detail.append("dropped PDUs: " + ", ".join(f"{k} {v}" for k, v in run.dropped.items()))
    if obs.after_end:
        shown = "; ".join(obs.after_end[:6])
        more = f" (+{len(obs.after_end) - 6} more)" if len(obs.after_end) > 6 else ""
        detail.append(f"after the end: {shown}{more}")
    for req in run.requests:
        if not req.close() and req.made and req.kind == "suspend" and obs.suspended == 0:
            req.made = False
            req.detail += (
                "; but LibreCube ignored it: no Suspended.indication followed (Receiver1 has no "
                "Suspend.request handling: its update_state, machines/receiver1.py:24-142, has "
                "no E31 branch)"
            )
    if out.condition not in common.CONDITION_NAMES.values():
        code = out.condition.removeprefix("condition_")
        detail.append(f"condition code {code} is no Table 5-5 code")
        out.condition = ""
    return obs.result(IMPLEMENTATION, run, out)


def run(args: argparse.Namespace, t0: float) -> dict[str, Any]:
    check_args(args)
    common.prepare_workdir(args)
    obs = Observer(t0=t0)
    logging.getLogger("cfdp").addHandler(FaultLog(obs))
    # An exception in one of LibreCube's threads (its event thread runs every
    # state machine, core.py:117-128) stops that thread: recorded, and the run ends.
    crashes: list[str] = []

    def on_thread_exception(hook: threading.ExceptHookArgs) -> None:
        exc = hook.exc_value
        name = hook.thread.name if hook.thread is not None else "?"
        at = where(exc) if exc is not None else ""
        text = f"{IMPLEMENTATION} raised {hook.exc_type.__name__}({exc}){at} in {name}"
        if exc is not None and exc.__traceback__ is not None:
            LOG.error("%s\n%s", text, "".join(traceback.format_tb(exc.__traceback__)))
        crashes.append(text)

    threading.excepthook = on_thread_exception
    sock = common.bind_listen(args.listen)
    stop = common.StopSignal().install()
    runner = Runner(args, sock, obs)
    common.log_listening(LOG, args, IMPLEMENTATION)
    try:
        runner.start()
        stopped = common.drive(args, t0, stop, runner, runner.step, POLL_S, lambda: bool(crashes))
    finally:
        runner.stop_entity()
        sock.close()
    if crashes and runner.fatal is None:
        runner.fatal = crashes[0]
    return settle(runner, stopped)


def librecube_logging(args: argparse.Namespace) -> None:
    # LibreCube's own log: its debug lines (every event) with -v; its fault
    # lines are errors and always shown (and recorded, FaultLog).
    logging.getLogger("cfdp").setLevel(logging.DEBUG if args.verbose else logging.ERROR)


def main(argv: list[str] | None = None) -> int:
    return common.main(
        argv, IMPLEMENTATION, build_parser, run, LOG, _IMPORT_ERROR, librecube_logging
    )


if __name__ == "__main__":
    code = main()
    # LibreCube's timers are non-daemon threading.Timers: end the process now
    # rather than wait for one it restarted while stopping.
    sys.stderr.flush()
    os._exit(code)
