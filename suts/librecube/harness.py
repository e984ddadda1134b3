#!/usr/bin/env python3
"""dtnconform system-under-test harness for LibreCube cfdp 0.2.0 (CCSDS 727.0-B-5 CFDP).

Run it with the venv of suts/librecube/setup.sh:

    suts/librecube/.venv/bin/python suts/librecube/harness.py send|recv --listen IP:PORT ...

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

The command line and the result are those of suts/cfdppy/harness.py; the last
stdout line is one JSON object (README.md).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import select
import signal
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
        f"cannot import LibreCube cfdp 0.2.0: {exc} (run suts/librecube/setup.sh and use "
        "suts/librecube/.venv/bin/python)"
    )
    CfdpEntity = object  # type: ignore[assignment,misc]
    Transport = object  # type: ignore[assignment,misc]

IMPLEMENTATION = "LibreCube cfdp 0.2.0"
SOURCE_FILE = "dtnc-source.bin"  # the sender's file, in its --workdir
DEST_FILE = "dtnc-received.bin"  # the Metadata's destination file name
POLL_S = 0.005  # longest wait for a datagram before the harness looks at the entity again
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
# Table 5-7's file status, as LibreCube's FileStatus numbers them (constants.py:70-74).
FILE_STATUS_NAMES = {
    0: "discarded_deliberately",
    1: "discarded_filestore_rejection",
    2: "retained",
    3: "unreported",
}
# SANA checksum identifiers.
CHECKSUM_IDS: dict[str, int] = {"modular": 0, "crc32c": 2, "crc32": 3, "null": 15}
REQUESTS = ("cancel", "suspend", "prompt_nak", "prompt_keep_alive")
MATCH_KEYS = ("directive", "ack_of", "pdu_type", "offset", "condition")
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


def condition_name(code: int | None) -> str:
    if code is None:
        return ""
    return CONDITION_NAMES.get(int(code), f"condition_{int(code)}")


def pattern(length: int) -> bytes:
    """The file: octet i is (i * 31 + 7) & 0xFF (period 256)."""
    block = bytes((i * 31 + 7) & 0xFF for i in range(256))
    return (block * (length // 256 + 1))[:length]


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


class UsageError(Exception):
    """A knob LibreCube or the harness cannot take: an "error" result."""


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
    p.add_argument(
        "--check-limit",
        type=int,
        default=1,
        help="accepted for the common CLI; LibreCube cfdp 0.2.0 has no check timer",
    )
    p.add_argument("--ack-timer-ms", type=int, default=1000)
    p.add_argument("--nak-timer-ms", type=int, default=1000)
    p.add_argument(
        "--check-timer-ms",
        type=int,
        default=1000,
        help="accepted for the common CLI; LibreCube cfdp 0.2.0 has no check timer",
    )
    p.add_argument("--inactivity-ms", type=int, default=30000)
    p.add_argument(
        "--checksum-fault-handler",
        choices=("cancel", "ignore"),
        default="cancel",
        help="fault handler for File Checksum Failure (LibreCube's default is cancel)",
    )
    p.add_argument("--request", action="append", default=[], help="a user's request (JSON)")
    p.add_argument("--time-limit-ms", type=int, default=60000)
    p.add_argument("--linger-ms", type=int, default=1000)
    p.add_argument("--workdir", type=Path, default=Path("."))
    p.add_argument("-v", "--verbose", action="store_true", help="log every PDU on stderr")
    return p


def check_args(args: argparse.Namespace) -> None:
    """The generic checks, then what LibreCube 0.2.0 cannot take (README.md,
    "What LibreCube cfdp 0.2.0 cannot do")."""
    if args.entity_id is None:
        args.entity_id = 1 if args.role == "send" else 2
    if args.peer_entity_id is None:
        args.peer_entity_id = 2 if args.role == "send" else 1
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

    sender = args.role == "send"
    me = IMPLEMENTATION
    if args.pdu_crc:
        raise UsageError(
            f"--pdu-crc 1: {me} has no PDU CRC: no PDU it builds sets the CRC flag (every PDU "
            "class defaults crc_flag=0, e.g. pdu/eof.py:11, and the machines pass none) and "
            "PduHeader.decode raises ValueError('PDUs with CRC are not yet supported') on a PDU "
            "that has one (pdu/header.py:132-134)"
        )
    if args.mode == "class1-closure":
        raise UsageError(
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
        raise UsageError(f"--checksum {args.checksum}: {me} cannot take it: {how}")
    if not sender and args.mode == "class2" and args.nak_mode == "immediate":
        raise UsageError(
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
        raise UsageError(
            f"--entity-id-len {args.entity_id_len}: {me} sends entity IDs {args.entity_id} and "
            f"{args.peer_entity_id} in {width} octet(s) only: PduHeader.encode overwrites the "
            "width with the fewest octets the larger ID needs (pdu/header.py:53-56)"
        )
    if sender and args.seq_len != 1:
        raise UsageError(
            f"--seq-len {args.seq_len}: {me} sends 1-octet sequence numbers only: the "
            "machines build every PDU with the default length_of_seq_number=0, i.e. one octet "
            "(e.g. pdu/eof.py:17; machines/sender1.py, sender2.py pass none), and "
            "PduHeader.encode writes length_of_seq_number + 1 octets (pdu/header.py:81-85)"
        )


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
    made: bool | None = None  # None: not decided yet
    detail: str = ""
    made_at: float | None = None
    resume_at: float | None = None  # monotonic time of the Resume.request (suspend)

    def describe_trigger(self) -> str:
        fields = ", ".join(f"{k}={v}" for k, v in self.match.items())
        return f"occurrence {self.occurrence} of {self.direction} PDU [{fields}]"

    def result(self) -> dict[str, Any]:
        out: dict[str, Any] = {"request": self.kind, "made": bool(self.made), "detail": self.detail}
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
# PDU fields, read by the harness itself (for triggers, counters and the log)
# --------------------------------------------------------------------------


def pdu_fields(data: bytes) -> dict[str, Any] | None:
    """The wire.json fields a request's ``match`` may name, plus a label;
    None for a datagram too short to be a PDU."""
    if len(data) < 4:
        return None
    large = data[0] & 1
    header = 4 + 2 * (((data[3] >> 4) & 7) + 1) + (data[3] & 7) + 1
    body = data[header:]
    fsize = 8 if large else 4
    if (data[0] >> 4) & 1:  # file data
        if (data[3] >> 3) & 1 and body:  # segment metadata: length in the low 6 bits
            body = body[1 + (body[0] & 0x3F) :]
        if len(body) < fsize:
            return None
        offset = int.from_bytes(body[:fsize], "big")
        size = len(body) - fsize - (2 if (data[0] >> 1) & 1 else 0)
        return {"pdu_type": "file_data", "offset": offset, "label": f"file_data[{offset}+{size}]"}
    if not body:
        return None
    code = body[0]
    name = DIRECTIVE_NAMES.get(code, f"directive_{code}")
    out: dict[str, Any] = {"pdu_type": "file_directive", "directive": name, "label": name}
    if code == 6 and len(body) >= 3:
        of = DIRECTIVE_NAMES.get(body[1] >> 4, "?")
        out["ack_of"] = of
        out["condition"] = condition_name(body[2] >> 4)
        out["label"] = f"ack({of},{out['condition']})"
    elif code in (4, 5) and len(body) >= 2:
        out["condition"] = condition_name(body[1] >> 4)
        out["label"] = f"{name}({out['condition']})"
    elif code == 8:
        segs = body[1 + 2 * fsize :]
        reqs = [
            (
                int.from_bytes(segs[i : i + fsize], "big"),
                int.from_bytes(segs[i + fsize : i + 2 * fsize], "big"),
            )
            for i in range(0, len(segs) - 2 * fsize + 1, 2 * fsize)
        ]
        out["label"] = "nak[" + ",".join(f"{a}-{b}" for a, b in reqs) + "]"
    elif code == 9 and len(body) >= 2:
        out["label"] = "prompt(keep_alive)" if body[1] >> 7 else "prompt(nak)"
    return out


def counter_key(fields: dict[str, Any]) -> str:
    if fields["pdu_type"] == "file_data":
        return "file_data"
    if fields.get("directive") == "nak":
        return "nak"
    return str(fields["label"])


# --------------------------------------------------------------------------
# What LibreCube tells its user
# --------------------------------------------------------------------------


@dataclass
class Observer:
    """Records the indications and faults of the transaction."""

    t0: float
    machine: Any = None  # the LibreCube state machine of this transaction
    finished: list[tuple[str, str, str]] = field(default_factory=list)  # cond, delivery, status
    abandoned: str | None = None
    suspended: int = 0
    resumed: int = 0
    faults: list[str] = field(default_factory=list)  # conditions LibreCube declared
    cancel_pdu: str | None = None  # condition of the last EOF/Finished(cancel) it sent
    dest_path: Path | None = None
    delivered_bytes: int = 0
    payload_ok: bool | None = None
    after_end: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ended(self) -> bool:
        m = self.machine
        return m is not None and m.state == MachineState.COMPLETED

    def note(self, text: str, after: bool | None = None) -> None:
        """Log an event; one after the transaction's end goes to after_end."""
        if self.ended() if after is None else after:
            self.after_end.append(text)
            LOG.info("[after the end] %s", text)
        else:
            LOG.info("%s", text)


class HarnessEntity(CfdpEntity):  # type: ignore[misc,valid-type]
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
        self.obs.note(f"Transaction.indication {transaction_id}")

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
        cond = condition_name(condition_code)
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
            self._check_file(obs.dest_path)

    def _check_file(self, path: Path) -> None:
        obs = self.obs
        try:
            data = path.read_bytes()
        except OSError as exc:
            obs.note(f"delivered file {path} unreadable: {exc}")
            obs.payload_ok = False
            return
        obs.delivered_bytes = len(data)
        obs.payload_ok = data == pattern(len(data))
        obs.note(f"delivered file {path}: {len(data)} B, payload_ok={obs.payload_ok}")

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
        LOG.debug("File-Segment-Recv.indication offset=%d len=%d", offset, length)

    def suspended_indication(self, transaction_id: Any, condition_code: Any) -> None:
        after = self.obs.ended()
        self.obs.note(f"Suspended.indication {condition_name(condition_code)}", after)
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
        self.obs.note(f"Fault.indication {condition_name(condition_code)}")

    def abandoned_indication(self, transaction_id: Any, condition_code: Any, progress: Any) -> None:
        obs = self.obs
        after = obs.ended()
        obs.note(f"Abandoned.indication {condition_name(condition_code)}", after)
        if not after:
            obs.abandoned = condition_name(condition_code)


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


class HarnessTransport(Transport):  # type: ignore[misc,valid-type]
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
        self.requests: list[Request] = [parse_request(r, args.role) for r in args.request]
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
        fields = pdu_fields(data) or {"pdu_type": "?", "label": "?"}
        with self.lock:
            key = counter_key(fields) if fields["pdu_type"] != "?" else "?"
            self.sent[key] = self.sent.get(key, 0) + 1
            with contextlib.suppress(OSError):
                self.sock.sendto(data, self.args.peer)
            LOG.debug("-> %s (%d B)", fields["label"], len(data))
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
            key = counter_key(fields)
            self.received[key] = self.received.get(key, 0) + 1
            LOG.debug("<- %s (%d B)", fields["label"], len(data))
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

    # -- requests ----------------------------------------------------------

    def observe(self, direction: str, fields: dict[str, Any]) -> None:
        for req in self.requests:
            if req.made is not None or req.direction != direction:
                continue
            if all(fields.get(k) == v for k, v in req.match.items()):
                req.seen += 1
                if req.seen >= req.occurrence:
                    self.make_request(req)

    def make_request(self, req: Request) -> None:
        """Right after the triggering PDU was handed to the socket (sent) or
        to the entity (received): LibreCube's request methods (core.py:189-215)
        only queue an event for its event thread."""
        now = time.monotonic() - self.obs.t0
        what = f"{req.kind} after {req.describe_trigger()}"
        machine = self.obs.machine
        if req.kind in ("prompt_nak", "prompt_keep_alive"):
            req.made = False
            req.detail = (
                f"{IMPLEMENTATION} has no Prompt service: no state machine or CfdpEntity "
                "method sends a Prompt PDU (pdu/prompt.py's PromptPdu is used only to decode, "
                "core.py:402-403), and a Prompt reaching an open transaction raises "
                "RuntimeError in pdu_received (core.py:465-466)"
            )
            return
        if machine is None or machine.state == MachineState.COMPLETED:
            req.made = False
            req.detail = "no transaction active at the trigger (it had ended or not begun)"
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
            source_filename=SOURCE_FILE,
            destination_filename=DEST_FILE,
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


def settle(run: Runner, timed_out: bool, why_stopped: str) -> dict[str, Any]:
    """The outcome from LibreCube's own indications (README: "The result")."""
    obs = run.obs
    detail: list[str] = []
    condition = "no_error"
    crashed = run.fatal is not None and run.ended_at is None
    if run.fatal is not None and not crashed:
        obs.after_end.append(run.fatal)
    if not run.started:
        outcome = "timeout"
        detail.append(f"no transaction reached this entity ({why_stopped})")
        if run.fatal is not None:
            detail.append(run.fatal)
    elif obs.abandoned is not None:
        outcome = "abandoned"
        condition = obs.abandoned
        detail.append(f"Abandoned.indication ({condition})")
    elif timed_out or crashed:
        outcome = "timeout"
        if obs.finished:
            condition = obs.finished[-1][0]
        elif obs.cancel_pdu is not None:
            condition = obs.cancel_pdu
        if crashed:
            detail.append(f"entity stopped: {run.fatal}; its transaction never ended")
        else:
            state = obs.machine.state if obs.machine is not None else "?"
            detail.append(f"transaction not ended ({why_stopped}); LibreCube in state {state}")
        if obs.finished:
            detail.append(f"last Transaction-Finished.indication: {obs.finished[-1][0]}")
    elif obs.finished:
        cond, delivery, status = obs.finished[-1]
        condition = cond
        outcome = "completed" if cond == "no_error" else "cancelled"
        detail.append(f"Transaction-Finished.indication: {cond}, {delivery}, file {status}")
        if len(obs.finished) > 1:
            earlier = ", ".join(c for c, _, _ in obs.finished[:-1])
            detail.append(f"earlier indications: {earlier}")
    else:
        outcome = "closed"
        detail.append("state machine COMPLETED with no indication")
    if obs.faults:
        counts: dict[str, int] = {}
        for cond in obs.faults:
            counts[cond] = counts.get(cond, 0) + 1
        listed = ", ".join(k if n == 1 else f"{k} x{n}" for k, n in counts.items())
        detail.append(
            f"faults declared: {listed} (LibreCube's log, machines/base.py:100-140; its cancel "
            "handler only queues a Cancel.request event, base.py:142-144, whose condition is "
            "cancel_request_received)"
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
        if req.made is None:
            req.made = False
            req.detail = f"trigger never seen ({req.describe_trigger()}; seen {req.seen})"
        elif req.made and req.kind == "suspend" and obs.suspended == 0:
            req.made = False
            req.detail += (
                "; but LibreCube ignored it: no Suspended.indication followed (Receiver1 has no "
                "Suspend.request handling: its update_state, machines/receiver1.py:24-142, has "
                "no E31 branch)"
            )
    if condition not in CONDITION_NAMES.values():
        detail.append(f"condition code {condition.removeprefix('condition_')} is no Table 5-5 code")
        condition = ""
    end = run.ended_at if run.ended_at is not None else time.monotonic()
    result: dict[str, Any] = {"outcome": outcome}
    if run.sender:
        result["file_bytes_delivered"] = 0
        result["sender_condition"] = condition or "no_error"
        result["payload_ok"] = None
    else:
        result["file_bytes_delivered"] = obs.delivered_bytes if obs.payload_ok is not None else 0
        result["receiver_condition"] = condition if run.started else ""
        result["payload_ok"] = obs.payload_ok
    result["duration_s"] = round(end - obs.t0, 3)
    result["requests"] = [r.result() for r in run.requests]
    result["detail"] = "; ".join(detail)
    result["pdus_sent"] = dict(sorted(run.sent.items()))
    result["pdus_received"] = dict(sorted(run.received.items()))
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
    logging.getLogger("cfdp").addHandler(FaultLog(obs))
    # An exception in one of LibreCube's threads (its event thread runs every
    # state machine, core.py:117-128) stops that thread: recorded, and the run ends.
    crashes: list[str] = []

    def on_thread_exception(hook: threading.ExceptHookArgs) -> None:
        exc = hook.exc_value
        name = hook.thread.name if hook.thread is not None else "?"
        text = f"{IMPLEMENTATION} raised {hook.exc_type.__name__}({exc}){where(exc)} in {name}"
        if exc is not None and exc.__traceback__ is not None:
            LOG.error("%s\n%s", text, "".join(traceback.format_tb(exc.__traceback__)))
        crashes.append(text)

    threading.excepthook = on_thread_exception
    try:
        sock = open_socket(args.listen)
    except OSError as exc:
        raise UsageError(f"cannot bind {args.listen}: {exc}") from exc
    stop = {"signal": ""}

    def on_signal(signum: int, _frame: Any) -> None:
        stop["signal"] = signal.Signals(signum).name

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    runner = Runner(args, sock, obs)
    LOG.info(
        "%s listening on %s:%d, peer %s:%d (%s)",
        args.role,
        *args.listen,
        *args.peer,
        IMPLEMENTATION,
    )
    deadline = t0 + args.time_limit_ms / 1000.0
    timed_out = False
    why_stopped = "time limit"
    try:
        runner.start()
        while True:
            now = time.monotonic()
            if crashes:
                runner.fatal = crashes[0]
                break
            if stop["signal"]:
                why_stopped = f"stopped by {stop['signal']}"
                timed_out = runner.ended_at is None
                break
            if runner.ended_at is not None and now >= runner.ended_at + args.linger_ms / 1000.0:
                break
            if now >= deadline:
                timed_out = runner.ended_at is None
                why_stopped = f"time limit {args.time_limit_ms} ms"
                break
            runner.read_socket(min(POLL_S, deadline - now))
            runner.resume_due()
            if runner.ended_at is None and obs.ended():
                runner.ended_at = time.monotonic()
                LOG.info("transaction ended; lingering %d ms", args.linger_ms)
    finally:
        runner.stop_entity()
        sock.close()
    if crashes and runner.fatal is None:
        runner.fatal = crashes[0]
    return settle(runner, timed_out, why_stopped)


def main(argv: list[str] | None = None) -> int:
    t0 = time.monotonic()
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if args.verbose else logging.INFO,
        format=f"%(relativeCreated)8.1fms {args.role} %(name)s %(levelname)s %(message)s",
    )
    # LibreCube's own log: its debug lines (every event) with -v; its fault
    # lines are errors and always shown (and recorded, FaultLog).
    logging.getLogger("cfdp").setLevel(logging.DEBUG if args.verbose else logging.ERROR)
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
    code = main()
    # LibreCube's timers are non-daemon threading.Timers: end the process now
    # rather than wait for one it restarted while stopping.
    sys.stderr.flush()
    os._exit(code)
