"""What dtnconform's Python CFDP harnesses share: suts/cfdp/cfdppy/harness.py,
suts/cfdp/librecube/harness.py and suts/cfdp/yamcs/harness.py take one command line
and print one JSON result (suts/cfdp/cfdppy/README.md). This module is that
contract: the options, the file, the users' requests and their triggers,
the PDU fields those triggers match, the result line, and the process
around them (logging, signals, the UDP socket).

Standard library only (Python 3.11): the LibreCube harness runs it in a venv
that has nothing but LibreCube's cfdp. A harness puts suts/cfdp/common/ on sys.path and
imports ``harnesskit``. Each harness keeps what is its implementation's.
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

# the socket rule all harnesses share (suts/sockbuf.py): a harness runs with
# suts/cfdp/common on its path, and its own interpreter, so the repository's
# root is put on the path for it (sockbuf, like this kit, is standard library)
ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))
from suts.sockbuf import raise_receive_buffer  # noqa: E402

SOURCE_FILE = "dtnc-source.bin"  # the sender's file, in its --workdir
DEST_FILE = "dtnc-received.bin"  # the Metadata's destination file name
MAX_DATAGRAM = 65535
# Tables 5-4 and 5-5, and the file's pattern, are read from the spec's one copy.
WIRE_JSON = ROOT / "specs" / "cfdp" / "wire.json"
# SANA checksum identifiers, by --checksum.
CHECKSUM_IDS: dict[str, int] = {"modular": 0, "crc32c": 2, "crc32": 3, "null": 15}
REQUESTS = ("cancel", "suspend", "prompt_nak", "prompt_keep_alive")
PROMPTS = ("prompt_nak", "prompt_keep_alive")
MATCH_KEYS = ("directive", "ack_of", "pdu_type", "offset", "condition")


def _wire_facts() -> tuple[dict[int, str], dict[int, str], bytes, str | None]:
    """Table 5-5 (wire.json "condition_codes") and Table 5-4 ("directives"),
    code -> name, and one period of the file's pattern (wire.json "payload");
    an error text instead if the file cannot be read."""
    try:
        wire = json.loads(WIRE_JSON.read_text())
        tables = [
            {int(e["code"]): str(e["name"]) for e in wire[key]["entries"]}
            for key in ("condition_codes", "directives")
        ]
        p = wire["payload"]
        mul, inc, mod = int(p["multiplier"]), int(p["increment"]), int(p["modulus"])
        # octet i is (i * multiplier + increment) mod modulus: it repeats
        # every `modulus` octets, so one period is all a file needs
        period = bytes((i * mul + inc) % mod for i in range(mod))
        if not period:
            raise ValueError("payload.modulus must be at least 1")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        detail = f"{type(exc).__name__}: {exc}"
        return {}, {}, b"", f"cannot read Tables 5-4/5-5 and the payload from {WIRE_JSON}: {detail}"
    return tables[0], tables[1], period, None


CONDITION_NAMES, DIRECTIVE_NAMES, _PERIOD, SPEC_ERROR = _wire_facts()


def condition_name(code: int | None) -> str:
    """Table 5-5's name of a condition code ('' for none)."""
    if code is None:
        return ""
    return CONDITION_NAMES.get(int(code), f"condition_{int(code)}")


def pattern(length: int) -> bytes:
    """The file every harness sends and checks: specs/cfdp/wire.json's
    "payload" for ``length`` octets."""
    if SPEC_ERROR is not None:
        raise RuntimeError(SPEC_ERROR)
    return (_PERIOD * (length // len(_PERIOD) + 1))[:length]


def is_pattern(data: bytes) -> bool:
    return data == pattern(len(data))


def tally(items: list[str]) -> str:
    """'a x2, b' for [a, a, b] (in order of first appearance)."""
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return ", ".join(k if n == 1 else f"{k} x{n}" for k, n in counts.items())


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


class UsageError(Exception):
    """A knob the implementation or the harness cannot take: an "error" result."""


def parse_addr(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected IP:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def build_parser(implementation: str, **helps: str) -> argparse.ArgumentParser:
    """The command line every CFDP harness takes (suts/cfdp/cfdppy/README.md, "CLI").
    ``helps`` gives an option's help text by its dest, for what one
    implementation does with it (e.g. ``inactivity_ms="accepted, unused"``)."""
    p = argparse.ArgumentParser(
        prog="harness.py",
        description=f"Run one CFDP file transfer with {implementation} (one role per process).",
    )
    seen: set[str] = set()

    def add(*flags: str, **kwargs: Any) -> None:
        action = p.add_argument(*flags, **kwargs)
        seen.add(action.dest)
        if action.dest in helps:
            action.help = helps[action.dest]

    add("role", choices=("send", "recv"))
    add("--listen", type=parse_addr, required=True, help="local IP:PORT to bind")
    add("--peer", type=parse_addr, required=True, help="IP:PORT every PDU goes to")
    add("--entity-id", type=int, help="local entity ID (default 1 send, 2 recv)")
    add("--peer-entity-id", type=int, help="peer entity ID (default 2 send, 1 recv)")
    add("--entity-id-len", type=int, default=2, choices=range(1, 9), metavar="{1..8}")
    add("--seq-len", type=int, default=4, choices=range(1, 9), metavar="{1..8}")
    add("--seq-num", type=int, default=1, help="transaction sequence number (send)")
    add("--mode", choices=("class1", "class1-closure", "class2"), default="class2")
    add("--checksum", choices=tuple(CHECKSUM_IDS), default="modular")
    add("--pdu-crc", type=int, choices=(0, 1), default=0)
    add("--segment-size", type=int, default=1024, help="file-data octets per PDU")
    add("--file-len", type=int, help="send: the file size in octets")
    add("--nak-mode", choices=("immediate", "deferred"), default="immediate")
    add("--ack-limit", type=int, default=1, help="EOF/Finished retransmissions")
    add("--nak-limit", type=int, default=1, help="NAK-timer expiries re-sending NAK")
    add("--check-limit", type=int, default=1, help="check-timer expiries before fault")
    add("--ack-timer-ms", type=int, default=1000)
    add("--nak-timer-ms", type=int, default=1000)
    add("--check-timer-ms", type=int, default=1000)
    add("--inactivity-ms", type=int, default=30000)
    add(
        "--checksum-fault-handler",
        choices=("cancel", "ignore"),
        default="cancel",
        help="fault handler for File Checksum Failure",
    )
    add("--request", action="append", default=[], help="a user's request (JSON)")
    add("--time-limit-ms", type=int, default=60000)
    add("--linger-ms", type=int, default=1000)
    add("--workdir", type=Path, default=Path("."))
    add("-v", "--verbose", action="store_true", help="log every PDU on stderr")
    unknown = sorted(set(helps) - seen)
    if unknown:
        raise ValueError(f"build_parser: no options {unknown}")
    return p


Check = Callable[[argparse.Namespace], None]


def check_args(
    args: argparse.Namespace,
    *,
    below: int | None = None,
    file_len_check: Check | None = None,
    segment_check: Check | None = None,
) -> None:
    """The entity IDs' defaults, then the checks every harness makes, in
    this order. ``below`` bounds the IDs and the sequence number further (an
    implementation's integer type); ``file_len_check`` and ``segment_check``
    are an implementation's own, made right after the checks of --file-len
    and --segment-size. Each check raises UsageError."""
    if args.entity_id is None:
        args.entity_id = 1 if args.role == "send" else 2
    if args.peer_entity_id is None:
        args.peer_entity_id = 2 if args.role == "send" else 1
    top = 1 << (8 * args.entity_id_len)
    if below is not None:
        top = min(top, below)
    for name in ("entity_id", "peer_entity_id"):
        if not 0 <= getattr(args, name) < top:
            raise UsageError(f"--{name.replace('_', '-')} does not fit {args.entity_id_len} octets")
    seq_top = 1 << (8 * args.seq_len)
    if below is not None:
        seq_top = min(seq_top, below)
    if not 0 <= args.seq_num < seq_top:
        raise UsageError(f"--seq-num {args.seq_num} does not fit {args.seq_len} octets")
    if args.entity_id == args.peer_entity_id:
        raise UsageError("--entity-id and --peer-entity-id must differ")
    if args.role == "send" and (args.file_len is None or args.file_len < 0):
        raise UsageError("send needs --file-len N (N >= 0)")
    if file_len_check is not None:
        file_len_check(args)
    if args.segment_size <= 0:
        raise UsageError("--segment-size must be positive")
    if segment_check is not None:
        segment_check(args)
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
    """A user's request (--request) and what became of it; a harness may
    subclass it for its own bookkeeping."""

    kind: str
    direction: str
    match: dict[str, Any]
    occurrence: int
    resume_after_ms: float
    seen: int = 0
    made: bool | None = None  # None: not decided yet
    detail: str = ""
    made_at: float | None = None

    def describe_trigger(self) -> str:
        fields = ", ".join(f"{k}={v}" for k, v in self.match.items())
        return f"occurrence {self.occurrence} of {self.direction} PDU [{fields}]"

    def fired(self, direction: str, fields: dict[str, Any]) -> bool:
        """Count a PDU of ``direction`` whose fields equal every ``match``
        entry; True when that makes the trigger's occurrence (a request not
        yet decided only)."""
        if self.made is not None or self.direction != direction:
            return False
        if all(fields.get(k) == v for k, v in self.match.items()):
            self.seen += 1
            return self.seen >= self.occurrence
        return False

    def not_made(self, detail: str) -> None:
        self.made = False
        self.detail = detail

    def close(self) -> bool:
        """At the end: a request still undecided was not made, its trigger
        never seen (True then)."""
        if self.made is not None:
            return False
        self.not_made(f"trigger never seen ({self.describe_trigger()}; seen {self.seen})")
        return True

    def result(self) -> dict[str, Any]:
        out: dict[str, Any] = {"request": self.kind, "made": bool(self.made), "detail": self.detail}
        if self.made_at is not None:
            out["made_at_s"] = round(self.made_at, 3)
        return out


RequestT = TypeVar("RequestT", bound=Request)


def parse_request(text: str, role: str, cls: type[RequestT]) -> RequestT:
    """One --request JSON (README: "Users' requests") as a ``cls``; one
    naming the other role's entity is decided at once: not made."""
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
    req = cls(kind, direction, dict(match), occurrence, float(resume))
    entity = raw.get("entity")
    mine = "sender" if role == "send" else "receiver"
    if entity is not None and entity != mine:
        req.not_made(f"the request is the {entity}'s; this process is the {mine}")
    return req


# --------------------------------------------------------------------------
# PDU fields (for triggers, counters and the log)
# --------------------------------------------------------------------------


def file_data_fields(offset: int, length: int) -> dict[str, Any]:
    """The fields of a File Data PDU a request's ``match`` may name, plus a label."""
    return {"pdu_type": "file_data", "offset": offset, "label": f"file_data[{offset}+{length}]"}


def directive_fields(
    code: int,
    *,
    condition: int | None = None,
    ack_of: int | None = None,
    segment_requests: list[tuple[int, int]] | None = None,
    response: str | None = None,
) -> dict[str, Any]:
    """The wire.json fields of a file directive a request's ``match`` may
    name, plus a label: ACK (``ack_of`` and ``condition``), EOF or Finished
    (``condition``), NAK (``segment_requests``), Prompt (``response``:
    nak or keep_alive)."""
    name = DIRECTIVE_NAMES.get(code, f"directive_{code}")
    out: dict[str, Any] = {"pdu_type": "file_directive", "directive": name, "label": name}
    if ack_of is not None:
        of = DIRECTIVE_NAMES.get(ack_of, "?")
        out["ack_of"] = of
        out["condition"] = condition_name(condition)
        out["label"] = f"ack({of},{out['condition']})"
    elif condition is not None:
        out["condition"] = condition_name(condition)
        out["label"] = f"{name}({out['condition']})"
    elif segment_requests is not None:
        out["label"] = "nak[" + ",".join(f"{a}-{b}" for a, b in segment_requests) + "]"
    elif response is not None:
        out["label"] = f"prompt({response})"
    return out


class Undecodable(Exception):
    """A datagram too short for the PDU its header announces."""


def pdu_fields(data: bytes) -> dict[str, Any]:
    """The fields of one raw PDU (a read-only decoder of the octets; a PDU
    CRC is not checked): those a request's ``match`` may name, plus a label."""
    if len(data) < 4:
        raise Undecodable(f"{len(data)} octets: shorter than a PDU header")
    b0, b3 = data[0], data[3]
    width = 8 if b0 & 1 else 4  # large file flag: offsets of 8 octets
    crc = 2 if (b0 >> 1) & 1 else 0
    body = data[4 + 2 * (((b3 >> 4) & 7) + 1) + (b3 & 7) + 1 :]
    if not body:
        raise Undecodable(f"{len(data)} octets: no data field")
    if (b0 >> 4) & 1:  # File Data
        pos = 1 + (body[0] & 0x3F) if (b3 >> 3) & 1 else 0  # segment metadata
        if len(body) < pos + width:
            raise Undecodable("file data PDU shorter than its offset")
        offset = int.from_bytes(body[pos : pos + width], "big")
        return file_data_fields(offset, len(body) - pos - width - crc)
    code = body[0]
    if code in (4, 5) and len(body) >= 2:  # EOF, Finished
        return directive_fields(code, condition=body[1] >> 4)
    if code == 6 and len(body) >= 3:  # ACK
        return directive_fields(code, ack_of=body[1] >> 4, condition=body[2] >> 4)
    if code == 8:  # NAK: scope, then segment requests
        reqs = []
        pos = 1 + 2 * width
        while pos + 2 * width <= len(body) - crc:
            start = int.from_bytes(body[pos : pos + width], "big")
            end = int.from_bytes(body[pos + width : pos + 2 * width], "big")
            reqs.append((start, end))
            pos += 2 * width
        return directive_fields(code, segment_requests=reqs)
    if code == 9 and len(body) >= 2:  # Prompt
        return directive_fields(code, response="keep_alive" if body[1] >> 7 else "nak")
    return directive_fields(code)


def counter_key(fields: dict[str, Any]) -> str:
    """How the result's pdus_sent/pdus_received count a PDU."""
    if fields["pdu_type"] == "file_data":
        return "file_data"
    if fields.get("directive") == "nak":
        return "nak"
    return str(fields["label"])


def count_pdu(
    table: dict[str, int], fields: dict[str, Any], size: int, arrow: str, log: logging.Logger
) -> None:
    """Count a PDU sent ("->") or received ("<-") in ``table`` (the result's
    pdus_sent or pdus_received) and log it (-v)."""
    key = counter_key(fields)
    table[key] = table.get(key, 0) + 1
    log.debug("%s %s (%d B)", arrow, fields["label"], size)


# --------------------------------------------------------------------------
# The result
# --------------------------------------------------------------------------


@dataclass
class Outcome:
    """The result's outcome, the entity's condition (a Table 5-5 name) and
    the detail's parts."""

    outcome: str
    condition: str = "no_error"
    detail: list[str] = field(default_factory=list)
    # what the implementation raised when it stopped with its transaction
    # open (the result's "crashed": it takes no step again)
    crashed: str = ""


class Run(Protocol):
    """What the result reports of a harness's run of its entity."""

    sender: bool
    requests: Sequence[Request]
    sent: dict[str, int]  # PDUs by counter_key
    received: dict[str, int]

    @property
    def started(self) -> bool:
        """Whether a transaction reached the entity."""


class Stoppable(Run, Protocol):
    """A run the implementation's exception may stop (``fatal``)."""

    fatal: str | None
    ended_at: float | None  # monotonic time of the transaction's end


# How many File-Segment-Recv.indications a receiver's result reports: the
# suite's files are 2 to 16 segments; a campaign's may be thousands.
SEGMENTS_KEPT = 4096


@dataclass
class Observed:
    """The indications of the one transaction, for a harness that watches
    its implementation's (it subclasses this and sets ``log``). What comes
    after the transaction's end is only noted."""

    log: ClassVar[logging.Logger] = logging.getLogger("dtnc-cfdp")

    t0: float
    finished: list[tuple[str, str, str]] = field(default_factory=list)  # cond, delivery, status
    abandoned: str | None = None
    dest_path: Path | None = None
    delivered_bytes: int = 0
    payload_ok: bool | None = None
    after_end: list[str] = field(default_factory=list)
    # the transaction ID the Transaction.indication gave the source user:
    # [source entity, sequence number], [] for one without an ID, None for
    # no indication yet; a sender's result reports None as [] too, since the
    # indication is generated on receipt of the Put.request (727.0-B-5
    # 3.4.6): the result's told_session
    told: list[int] | None = None
    # the File-Segment-Recv.indications the destination user was given
    # (727.0-B-5 3.4.10), [offset, length] each as given, None for a value
    # that is not a number: the receiver's told_segments
    segments: list[list[int | None]] = field(default_factory=list)

    def tell(self, source: object, seq: object) -> None:
        """A Transaction.indication: the ID as the implementation gave it
        (either part None or not a number: given without an ID). The first
        one counts: a later one is only noted."""
        parts = [getattr(p, "value", p) for p in (source, seq)]
        ids = [p for p in parts if type(p) is int and p >= 0]
        if self.told is None:
            self.told = ids if len(ids) == 2 else []
        self.note(f"Transaction.indication ({parts[0]}, {parts[1]})")

    def segment(self, offset: object, length: object, after: bool) -> None:
        """A File-Segment-Recv.indication, as the implementation gave it;
        one ``after`` the transaction's end is only noted."""
        parts = [p if type(p) is int and p >= 0 else None for p in (offset, length)]
        # one a File Data PDU: logged at debug level, and a campaign's large
        # file reports its first SEGMENTS_KEPT only
        text = f"File-Segment-Recv.indication offset={offset} length={length}"
        self.log.debug("%s", text)
        if after:
            self.after_end.append(text)
        elif len(self.segments) < SEGMENTS_KEPT:
            self.segments.append(parts)

    def record(self, text: str, after: bool) -> None:
        """Log an event; one after the transaction's end goes to after_end."""
        if after:
            self.after_end.append(text)
            self.log.info("[after the end] %s", text)
        else:
            self.log.info("%s", text)

    def note(self, text: str) -> None:
        self.record(text, False)

    def check_file(self, path: Path) -> None:
        """The delivered file: its size, and whether it is the pattern."""
        try:
            data = path.read_bytes()
        except OSError as exc:
            self.note(f"delivered file {path} unreadable: {exc}")
            self.payload_ok = False
            return
        self.delivered_bytes = len(data)
        self.payload_ok = is_pattern(data)
        self.note(f"delivered file {path}: {len(data)} B, payload_ok={self.payload_ok}")

    def result(self, implementation: str, run: Stoppable, out: Outcome) -> dict[str, Any]:
        """The result line: the duration from the process's start to the
        transaction's end (or now); the receiver's file once it was checked."""
        end = run.ended_at if run.ended_at is not None else time.monotonic()
        delivered = self.delivered_bytes if self.payload_ok is not None else 0
        told: dict[str, Any] = (
            {"told_session": self.told or []} if run.sender else {"told_segments": self.segments}
        )
        return result_line(
            implementation, run, out, end - self.t0, (delivered, self.payload_ok), told
        )

    def judge(
        self,
        run: Stoppable,
        stopped: tuple[bool, str],
        abandoned_by: str,
        cancel_conditions: list[str | None],
        where: str,
    ) -> tuple[str, Outcome]:
        """The cases every such harness has (README: "The result"), by
        name, in this order: "crashed" before any transaction began (the
        implementation raised on the first PDU and the entity stopped
        there), "unreached" (timeout: no transaction reached the entity),
        "abandoned" (``abandoned_by`` names the report), "crashed" (timeout:
        the implementation raised and the entity stopped there before its
        transaction ended), "not_ended" (timeout:
        the time limit or a signal came first; ``where`` says where the
        implementation was), "finished" (after a Transaction-Finished
        .indication). A timeout's condition is the last indication's, else
        the first of ``cancel_conditions`` there is. "": none of them, the
        harness decides. ``stopped`` is (timed out, why the run stopped)."""
        timed_out, why_stopped = stopped
        out = Outcome("open")
        crashed = run.fatal is not None and run.ended_at is None
        if run.fatal is not None and not crashed:
            self.after_end.append(run.fatal)
        if not run.started:
            if crashed:
                # the first PDU made it raise: a transaction reached it, and
                # the entity stopped before it began (it takes no step again)
                out.detail.append(f"entity stopped: {run.fatal}; no transaction began")
                out.crashed = str(run.fatal)
                return "crashed", out
            out.detail.append(f"no transaction reached this entity ({why_stopped})")
            return "unreached", out
        if self.abandoned is not None:
            out.outcome, out.condition = "abandoned", self.abandoned
            out.detail.append(f"{abandoned_by} ({self.abandoned})")
            return "abandoned", out
        if timed_out or crashed:
            last = [self.finished[-1][0]] if self.finished else []
            known = [c for c in (*last, *cancel_conditions) if c is not None]
            out.condition = known[0] if known else "no_error"
            if crashed:
                out.detail.append(f"entity stopped: {run.fatal}; its transaction never ended")
                out.crashed = str(run.fatal)
            else:
                out.detail.append(f"transaction not ended ({why_stopped}); {where}")
            if self.finished:
                out.detail.append(f"last Transaction-Finished.indication: {self.finished[-1][0]}")
            return ("crashed" if crashed else "not_ended"), out
        if self.finished:
            cond, delivery, status = self.finished[-1]
            out.outcome = "completed" if cond == "no_error" else "cancelled"
            out.condition = cond
            out.detail.append(f"Transaction-Finished.indication: {cond}, {delivery}, file {status}")
            if len(self.finished) > 1:
                earlier = ", ".join(c for c, _, _ in self.finished[:-1])
                out.detail.append(f"earlier indications: {earlier}")
            return "finished", out
        return "", out


def result_line(
    implementation: str,
    run: Run,
    out: Outcome,
    duration_s: float,
    delivered: tuple[int, bool | None] = (0, None),
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The result (README: "The result"), in its key order: a sender reports
    its condition ('' as no_error) and no file; a receiver its condition
    ('' if no transaction reached it) and ``delivered``, its file's size
    and payload check. ``extra`` keys go before "implementation"."""
    result: dict[str, Any] = {"outcome": out.outcome}
    if run.sender:
        result["file_bytes_delivered"] = 0
        result["sender_condition"] = out.condition or "no_error"
        result["payload_ok"] = None
    else:
        result["file_bytes_delivered"] = delivered[0]
        result["receiver_condition"] = out.condition if run.started else ""
        result["payload_ok"] = delivered[1]
    result["duration_s"] = round(duration_s, 3)
    result["requests"] = [r.result() for r in run.requests]
    result["detail"] = "; ".join(out.detail)
    result["pdus_sent"] = dict(sorted(run.sent.items()))
    result["pdus_received"] = dict(sorted(run.received.items()))
    if out.crashed:
        result["crashed"] = out.crashed
    result.update(extra or {})
    result["implementation"] = implementation
    return result


def error_result(implementation: str, role: str | None, detail: str, t0: float) -> dict[str, Any]:
    """The harness's own failure: a knob it cannot take, a port, a bug."""
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
            "implementation": implementation,
        }
    )
    return out


def emit(result: dict[str, Any]) -> int:
    sys.stdout.write(json.dumps(result, sort_keys=False) + "\n")
    sys.stdout.flush()
    return 0


# --------------------------------------------------------------------------
# The process
# --------------------------------------------------------------------------


def open_socket(addr: tuple[str, int]) -> socket.socket:
    """A non-blocking UDP socket bound to ``addr``. Its receive buffer is
    16 MiB, past net.core.rmem_max where the process may (SO_RCVBUFFORCE,
    with CAP_NET_ADMIN, which a run's namespaces give it): a datagram
    dropped at a full socket makes the run an error (conformance/runner.py
    ``socket_overflowed``; suts/sockbuf.py, which suts/sockbuf.rs mirrors
    for the Rust harnesses). Its send buffer is raised to 4 MiB, as far as
    net.core.wmem_max lets it."""
    family = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_DGRAM)
    raise_receive_buffer(sock)
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    sock.bind(addr)
    sock.setblocking(False)
    return sock


def bind_listen(listen: tuple[str, int]) -> socket.socket:
    """open_socket on --listen; a port that cannot be bound is an error result."""
    try:
        return open_socket(listen)
    except OSError as exc:
        raise UsageError(f"cannot bind {listen}: {exc}") from exc


def read_datagrams(
    sock: socket.socket, timeout: float, handle: Callable[[bytes], None], log: logging.Logger
) -> None:
    """Wait up to ``timeout`` s for a datagram, then hand every one queued to ``handle``."""
    ready, _, _ = select.select([sock], [], [], max(0.0, timeout))
    if not ready:
        return
    for _ in range(1024):
        try:
            data, _addr = sock.recvfrom(MAX_DATAGRAM)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:  # e.g. ICMP port unreachable reported late
            log.debug("recvfrom: %s", exc)
            return
        handle(data)


def log_listening(log: logging.Logger, args: argparse.Namespace, implementation: str) -> None:
    """The line a test (or dtnconform) waits for: the role takes PDUs now."""
    log.info(
        "%s listening on %s:%d, peer %s:%d (%s)",
        args.role,
        *args.listen,
        *args.peer,
        implementation,
    )


def prepare_workdir(args: argparse.Namespace) -> None:
    """chdir to --workdir (made if missing); the sender writes its file, the
    receiver removes a file an earlier run delivered."""
    workdir: Path = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    os.chdir(workdir)
    if args.role == "send":
        Path(SOURCE_FILE).write_bytes(pattern(args.file_len))
    else:
        with contextlib.suppress(FileNotFoundError):
            Path(DEST_FILE).unlink()


class StopSignal:
    """SIGTERM and SIGINT end the run early (with a result): ``name`` is the
    signal's once one came."""

    def __init__(self) -> None:
        self.name = ""

    def install(self) -> StopSignal:
        signal.signal(signal.SIGTERM, self._caught)
        signal.signal(signal.SIGINT, self._caught)
        return self

    def _caught(self, signum: int, _frame: Any) -> None:
        self.name = signal.Signals(signum).name


def drive(
    args: argparse.Namespace,
    t0: float,
    stop: StopSignal,
    run: Stoppable,
    step: Callable[[float], None],
    poll_s: float,
    halt: Callable[[], bool] | None = None,
) -> tuple[bool, str]:
    """Run ``step(timeout)`` (take what arrives within timeout s, let the
    implementation work, note the transaction's end in ``run.ended_at``)
    until a signal, the end of the linger after the transaction's end, or
    the time limit (--time-limit-ms from the process's start); ``halt()``
    stops it early (the entity stopped). Returns (timed out, why)."""
    deadline = t0 + args.time_limit_ms / 1000.0
    while True:
        if halt is not None and halt():
            return False, "time limit"
        now = time.monotonic()
        if stop.name:
            return run.ended_at is None, f"stopped by {stop.name}"
        if run.ended_at is not None and now >= run.ended_at + args.linger_ms / 1000.0:
            return False, "ended"
        if now >= deadline:
            return run.ended_at is None, f"time limit {args.time_limit_ms} ms"
        step(min(poll_s, deadline - now))


def main(
    argv: list[str] | None,
    implementation: str,
    build_parser: Callable[[], argparse.ArgumentParser],
    run: Callable[[argparse.Namespace, float], dict[str, Any]],
    log: logging.Logger,
    import_error: str | None = None,
    configure_logging: Callable[[argparse.Namespace], None] | None = None,
) -> int:
    """A harness's main: parse, log on stderr, run, and print the one result
    line whatever happens (exit status 0)."""
    t0 = time.monotonic()
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if args.verbose else logging.INFO,
        format=f"%(relativeCreated)8.1fms {args.role} %(name)s %(levelname)s %(message)s",
    )
    if configure_logging is not None:
        configure_logging(args)
    problem = SPEC_ERROR or import_error
    if problem is not None:
        return emit(error_result(implementation, args.role, problem, t0))
    try:
        result = run(args, t0)
    except UsageError as exc:
        result = error_result(implementation, args.role, str(exc), t0)
    except Exception as exc:  # a harness bug: still one result line
        log.exception("harness failure")
        detail = f"harness failure: {type(exc).__name__}: {exc}"
        result = error_result(implementation, args.role, detail, t0)
    return emit(result)
