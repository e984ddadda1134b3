"""CFDP (CCSDS 727.0-B-5) sending and receiving entity, played from
``specs/cfdp/CFDP.tla``.

Each method named like a model action (``SenderTxFileData``,
``ReceiverRxEof``, ``ReceiverTimeoutNak`` ...) is that action: the same guard,
the same PDU out, the same state change, logged under the action's name.
Where the model chooses among enabled actions, the tester takes the one a
careful implementation takes at once: it sends the whole file at the start,
answers every PDU when it arrives, retransmits what a NAK asks for straight
away, delivers the file as soon as it is complete, and fires a timer only
after the interval the implementation under test is configured with
(``conformance.timers``, as ``suts/cfdp/common/adapter.py`` gives it). Its readings
are the model's defaults (specs/cfdp/readings.json). Every PDU it sends is
one its action emits in the model, and trace validation checks that, so a
tester bug shows as the tester's (verdict ``error``), never as a fail of the
implementation.

The file and its grid are the model's and the adapters': ``file_len``
octets of the pattern every harness shares (``suts.cfdp.common.harnesskit.pattern``),
cut into File Data PDUs of ``segment_size`` octets from offset 0. Entity 1
sends, entity 2 receives (``suts.base.ENGINES``); the transaction sequence
number is drawn afresh for every run (Yamcs ignores a reused one).

A user's suspend request stops the entity where it is: it sends nothing, its
timers stand still, and the PDUs that reach it wait, as the model leaves them
in the channel, until the resume request ``resume_after_ms`` later; then the
timers run on with the time they had left.

What the tester cannot play is refused before the run with
:class:`~conformance.tester.core.CannotPlay`, naming the field (:func:`check`).
"""

from __future__ import annotations

import random
import time
import zlib
from collections.abc import Callable
from functools import cache, partial
from typing import Any

from conformance.core import wire
from conformance.core.types import Scenario
from conformance.protocols.cfdp import MODEL_MODES, CfdpTransfer
from conformance.tester.core import CannotPlay, Context, Role
from dissectors.cfdp.layer import (
    CFDP,
    CFDPEOF,
    CFDPAck,
    CfdpDecodeError,
    CFDPFileData,
    CFDPFinished,
    CFDPKeepAlive,
    CFDPMetadata,
    CFDPNak,
    CFDPPrompt,
    parse,
)
from suts.cfdp.common.harnesskit import (
    CHECKSUM_IDS,
    Request,
    Undecodable,
    counter_key,
    pattern,
    pdu_fields,
)

NO_ERROR = "no_error"
# the model's fault conditions (CFDP.tla Faults) by Table 5-5 name
ACK_LIMIT = "positive_ack_limit_reached"
CHECKSUM_FAILURE = "file_checksum_failure"
NAK_LIMIT = "nak_limit_reached"
INACTIVITY = "inactivity_detected"
CHECK_LIMIT = "check_limit_reached"
CANCEL = "cancel_request_received"


# ---------------------------------------------------------------------------
# File checksums (the Metadata's checksum type, SANA checksum identifiers)
# ---------------------------------------------------------------------------


@cache
def _crc32c_table() -> tuple[int, ...]:
    out = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        out.append(c)
    return tuple(out)


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), reflected, initial and final value all ones."""
    table, c = _crc32c_table(), 0xFFFFFFFF
    for b in data:
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def modular(data: bytes) -> int:
    """The modular checksum: the file as 4-octet big-endian words from
    offset 0 (the last padded with zeros), summed modulo 2^32."""
    padded = data + bytes(-len(data) % 4)
    return sum(int.from_bytes(padded[i : i + 4], "big") for i in range(0, len(padded), 4)) & (
        0xFFFFFFFF
    )


def file_checksum(kind: str, data: bytes) -> int:
    if kind == "modular":
        return modular(data)
    if kind == "crc32":
        return zlib.crc32(data) & 0xFFFFFFFF
    if kind == "crc32c":
        return crc32c(data)
    return 0  # null


def check(scn: Scenario, role: str) -> None:
    """Raise CannotPlay, naming the field, for what the tester cannot play."""
    t = scn.params
    assert isinstance(t, CfdpTransfer)
    if scn.probes:
        raise CannotPlay("probes: the CFDP tester sends no robustness probes yet")
    if t.file_len == 0:
        raise CannotPlay(
            "params.file_len: the model's file has at least one File Data segment (NSeg > 0)"
        )


# ---------------------------------------------------------------------------
# What both entities share
# ---------------------------------------------------------------------------


class _Entity(Role):
    """One entity of one transaction: the PDU header, the limits and timers
    of the scenario, the counters and the result."""

    name = ""
    # times the outstanding EOF (sender) or Finished (receiver) was sent:
    # each role sets it, ack_timer counts it
    tx: int

    def __init__(
        self,
        ctx: Context,
        scn: Scenario,
        *,
        engine: int,
        peer_engine: int,
        retransmission_s: float,
        close_wait_s: float,
    ) -> None:
        super().__init__(ctx)
        t = scn.params
        assert isinstance(t, CfdpTransfer)
        self.t = t
        self.mode = MODEL_MODES[t.mode]  # c1, c1c, c2
        self.me, self.peer = engine, peer_engine
        self.timer_s = retransmission_s
        # as suts/cfdp/common/adapter.py sizes the implementations' inactivity timer
        self.inactivity_s = (
            (max(t.ack_limit, t.nak_limit, t.check_limit) + 2) * 2 * (retransmission_s)
        )
        self.size = t.segment_size
        self.n_seg = max(1, -(-t.file_len // t.segment_size))
        self.seq: int | None = None
        self.out = "open"  # the model's out: open, completed, cancelled, abandoned
        self.cc = NO_ERROR
        self.detail: list[str] = []
        self.pdus_sent: dict[str, int] = {}
        self.pdus_received: dict[str, int] = {}
        self.check_expiries = 0
        # this entity's users' requests (the other entity's are the SUT's)
        self.requests = [
            Request(r.request, r.after.direction, dict(r.after.match), r.after.occurrence,
                    r.resume_after_ms)
            for r in t.requests
            if r.entity == self.name
        ]  # fmt: skip
        self.due: list[Request] = []
        # a user's suspension: the timers it stopped, the PDUs that reached
        # the entity meanwhile (the model leaves them in the channel)
        self.suspended = False
        self.paused: dict[str, tuple[float, Callable[[], None]]] = {}
        self.held: list[bytes] = []

    @property
    def acknowledged(self) -> bool:
        return self.mode == "c2"

    def span(self, seg: int) -> tuple[int, int]:
        lo = seg * self.size
        return lo, min(lo + self.size, self.t.file_len)

    def header(self) -> dict[str, Any]:
        source, dest = (self.me, self.peer) if self.name == "sender" else (self.peer, self.me)
        return {
            "source_entity": source,
            "dest_entity": dest,
            "transaction": self.seq or 0,
            "entity_id_length": self.t.entity_id_len,
            "sequence_number_length": self.t.sequence_number_len,
            "mode": 0 if self.acknowledged else 1,
            "crc": int(self.t.pdu_crc),
        }

    def emit(self, pdu: CFDP, action: str, rx: str = "") -> None:
        """Send one PDU as the effect of model action ``action``."""
        for k, v in self.header().items():
            pdu.setfieldval(k, v)
        data = bytes(pdu)
        key = counter_key(pdu_fields(data))
        self.pdus_sent[key] = self.pdus_sent.get(key, 0) + 1
        self.ctx.send(data, action, tx=pdu.mysummary(), **({"rx": rx} if rx else {}))
        self.crossed("forward" if self.name == "sender" else "return", data)

    def crossed(self, direction: str, data: bytes) -> None:
        """A PDU this entity sent or took in: a user's request whose trigger
        it is becomes due, to be made once the step under way is over
        (:meth:`flush`): the request is a model step of its own."""
        for req in self.requests:
            try:
                fired = req.fired(direction, pdu_fields(data))
            except Undecodable:
                return
            if fired:
                self.due.append(req)

    def flush(self) -> None:
        """Make the requests that became due during the last step."""
        while self.due:
            self.make(self.due.pop(0))

    def arm(self, name: str, fire: Callable[[], None]) -> None:
        """(Re)start a timer of the scenario's period; its expiry is one step."""

        def step() -> None:
            fire()
            self.flush()

        self.ctx.arm(name, self.timer_s, step)

    def make(self, req: Request) -> None:
        """A user's request, as the model's action for it, or not made where
        the model has none enabled (the judge: request-unmade). A suspended
        entity takes no step but its resumption (the model's SActive, RActive)."""
        who = self.name.capitalize()
        able = not self.suspended and self.out == "open"
        if req.kind == "cancel" and able and self.cancellable():
            req.made, req.made_at = True, time.monotonic() - self.started
            self.fault(CANCEL, f"{who}CancelTransaction")
        elif req.kind.startswith("prompt") and able and self.promptable():
            req.made, req.made_at = True, time.monotonic() - self.started
            response = "nak" if req.kind == "prompt_nak" else "keep_alive"
            self.emit(CFDPPrompt(response_required=response), "SenderTxPrompt")
        elif req.kind == "suspend" and able and self.suspendable():
            req.made, req.made_at = True, time.monotonic() - self.started
            self.suspend(req.resume_after_ms / 1000)
        else:
            action = {"cancel": "CancelTransaction", "suspend": "SuspendTransaction"}.get(
                req.kind, "TxPrompt"
            )
            req.not_made(
                f"the model's {who}{action} is not enabled there (the transaction is "
                f"{self.out}{', suspended' if self.suspended else ''}, phase {self.state()})"
            )

    def suspend(self, resume_s: float) -> None:
        """The user's suspend request (Sender/ReceiverSuspendTransaction):
        the entity stops sending, its timers stand still, and what reaches
        it waits; the resume request comes ``resume_s`` later."""
        who = self.name.capitalize()
        self.note(f"{who}SuspendTransaction")
        self.suspended = True
        self.paused = self.ctx.pause()
        self.ctx.arm("resume", resume_s, self.resume)

    def resume(self) -> None:
        """Sender/ReceiverResumeTransaction: the timers run on with the time
        they had left, the PDUs that waited are taken in order, and the
        sender's initial transmission goes on."""
        self.note(f"{self.name.capitalize()}ResumeTransaction")
        self.suspended = False
        self.ctx.resume(self.paused)
        self.paused = {}
        self.flush()
        while self.held and not self.suspended:
            self.on_datagram(self.held.pop(0))
        if not self.suspended:
            self.proceed()

    def proceed(self) -> None:
        """What the entity does of its own accord once resumed."""

    def suspendable(self) -> bool:
        return False

    def cancellable(self) -> bool:
        return False

    def promptable(self) -> bool:
        return False

    def state(self) -> str:
        return ""

    @staticmethod
    def condition(pdu: CFDP) -> str:
        """The PDU's condition code by its Table 5-5 name."""
        code = int(pdu.getfieldval("condition"))
        return wire.names("cfdp", "condition_codes").get(code, f"condition_{code}")

    def note(self, action: str, rx: str = "", **fields: Any) -> None:
        """A model action that sends nothing."""
        self.ctx.log(action, **({"rx": rx} if rx else {}), **fields)

    def decode(self, data: bytes) -> CFDP | None:
        """The PDU of a datagram, or None (logged) for one the model has no
        action for: undecodable, or of another transaction."""
        try:
            pdu = parse(data)
        except CfdpDecodeError as exc:
            self.ctx.log("Undecodable", detail=str(exc), octets=len(data))
            return None
        try:
            key = counter_key(pdu_fields(data))
        except Undecodable:
            key = "undecodable"
        self.pdus_received[key] = self.pdus_received.get(key, 0) + 1
        src, seq = int(pdu.getfieldval("source_entity")), int(pdu.getfieldval("transaction"))
        if self.seq is None and self.name == "receiver" and src == self.peer:
            self.seq = seq  # the first PDU of the transaction
        if src != (self.me if self.name == "sender" else self.peer) or seq != self.seq:
            self.ctx.log("OtherTransaction", rx=pdu.mysummary(), source=src, transaction=seq)
            return None
        return pdu

    def checking(self) -> bool:
        """Is the Class 1 check timer still awaiting something?"""
        return True

    def fault(self, cc: str, action: str) -> None:
        raise NotImplementedError

    def on_check_timer(self) -> None:
        """The Class 1 check timer (the sender's 4.6.3.2, awaiting the
        Finished; the receiver's 4.6.3.3, awaiting missing data): expiries
        up to the check limit, then a check-limit fault."""
        if not self.checking():
            return
        who = self.name.capitalize()
        if self.check_expiries < self.t.check_limit:
            self.check_expiries += 1
            self.note(f"{who}TimeoutCheck")
            self.arm("check", self.on_check_timer)
        else:
            self.fault(CHECK_LIMIT, f"{who}FaultCheckLimit")

    def ack_timer(self, name: str, again: CFDP, *, cancelling: bool) -> None:
        """The positive-ACK timer of the outstanding EOF ("eof") or Finished
        ("fin") expires (4.7.1): ``again`` goes out below the limit; at it,
        a fault, unless the PDU outstanding is itself a notice of
        cancellation, which then abandons (4.11.2.2.3 at the sender,
        4.11.2.3.2 at the receiver)."""
        who = self.name.capitalize()
        if self.tx <= self.t.ack_limit:
            self.tx += 1
            self.emit(again, f"{who}Timeout{'Eof' if name == 'eof' else 'Finished'}")
            self.arm(name, self.on_eof_timer if name == "eof" else self.on_fin_timer)
        elif cancelling:
            self.note(f"{who}FaultAckLimit")
            self.end("abandoned")
        else:
            self.fault(ACK_LIMIT, f"{who}FaultAckLimit")

    def on_eof_timer(self) -> None:
        raise NotImplementedError

    def on_fin_timer(self) -> None:
        raise NotImplementedError

    def end(self, out: str, cc: str | None = None) -> None:
        """The transaction is over here: its outcome, its condition."""
        self.phase = "closed"
        self.out = out
        if cc is not None:
            self.cc = cc
        for name in self.ctx.armed():
            self.ctx.stop(name)
        self.close()

    def on_datagram(self, data: bytes) -> None:
        if self.suspended:
            self.held.append(data)
            self.ctx.log("HeldWhileSuspended", octets=len(data))
            return
        pdu = self.decode(data)
        if pdu is None:
            return
        self.handle(pdu, pdu.mysummary())
        self.crossed("return" if self.name == "sender" else "forward", data)
        self.flush()

    def handle(self, pdu: CFDP, rx: str) -> None:
        """One PDU of the transaction: the model's action that takes it."""
        raise NotImplementedError

    def counters(self) -> dict[str, Any]:
        for r in self.requests:
            r.close()  # a request whose trigger never came: not made
        return {
            "pdus_sent": dict(sorted(self.pdus_sent.items())),
            "pdus_received": dict(sorted(self.pdus_received.items())),
            "detail": "; ".join(self.detail),
            "requests": [r.result() for r in self.requests],
            "implementation": "dtnconform model-driven tester (specs/cfdp/CFDP.tla)",
        }


# ---------------------------------------------------------------------------
# The sending entity
# ---------------------------------------------------------------------------


class CfdpSender(_Entity):
    name = "sender"

    def __init__(self, ctx: Context, scn: Scenario, **kw: Any) -> None:
        super().__init__(ctx, scn, **kw)
        self.seq = random.randint(1, (1 << (8 * self.t.sequence_number_len)) - 1)
        self.file = pattern(self.t.file_len)
        self.phase = "data"  # data, eof, cancel, closed
        self.acked = False
        self.tx = 0  # times the outstanding EOF was sent

    def eof(self, cc: str) -> CFDPEOF:
        pdu = CFDPEOF(condition=cc, file_size=self.t.file_len)
        pdu.checksum = file_checksum(self.t.checksum_type, self.file)
        if cc != NO_ERROR:
            pdu.fault_location = self.me
        return pdu

    def start(self) -> None:
        self.steps: list[Callable[[], None]] = [
            self.SenderTxMetadata,
            *(partial(self.SenderTxFileData, seg) for seg in range(self.n_seg)),
            self.SenderTxEof,
        ]
        self.proceed()

    def proceed(self) -> None:
        """The initial transmission while it lasts (a cancel request may end
        it, a suspend request pause it): each PDU one step, a request due
        after it made before the next."""
        while self.steps and self.phase == "data" and not self.suspended:
            self.steps.pop(0)()
            self.flush()

    def cancellable(self) -> bool:
        return self.out == "open" and self.phase in ("data", "eof")

    def promptable(self) -> bool:
        return self.out == "open" and self.acknowledged and self.phase == "eof"

    def suspendable(self) -> bool:
        return self.phase in ("data", "eof", "cancel")  # SenderSuspendTransaction

    def state(self) -> str:
        return self.phase

    # -- initial transmission -------------------------------------------------

    def SenderTxMetadata(self, action: str = "SenderTxMetadata") -> None:
        md = CFDPMetadata(
            closure_requested=int(self.mode == "c1c"),
            checksum_type=CHECKSUM_IDS[self.t.checksum_type],
            file_size=self.t.file_len,
            source_file_name=b"dtnc-source.bin",
            dest_file_name=b"dtnc-received.bin",
        )
        self.emit(md, action)

    def SenderTxFileData(self, seg: int, action: str = "SenderTxFileData") -> None:
        lo, hi = self.span(seg)
        self.emit(CFDPFileData(offset=lo, data=self.file[lo:hi]), action)

    def SenderTxEof(self) -> None:
        """EOF(no error); Class 1 ends here; with closure the check timer
        awaits the Finished (reading 3's default); Class 2 starts its
        positive-ACK timer (4.7)."""
        self.tx = 1
        self.emit(self.eof(NO_ERROR), "SenderTxEof")
        if self.mode == "c1":
            self.end("completed")
            return
        self.phase = "eof"
        if self.mode == "c1c":
            self.arm("check", self.on_check_timer)
        else:
            self.arm("eof", self.on_eof_timer)

    # -- arrivals -------------------------------------------------------------

    def handle(self, pdu: CFDP, rx: str) -> None:
        kind = pdu.directive_name
        open_ = self.out == "open"
        if kind == "nak" and open_ and self.phase in ("data", "eof"):
            self.SenderRxNak(pdu, rx)
        elif kind == "ack" and pdu.ack_of == 4 and open_:  # ACK(EOF)
            cc = self.condition(pdu)
            if cc == NO_ERROR and self.phase == "eof":
                self.note("SenderRxEofAck", rx)
                self.acked = True
                self.ctx.stop("eof")

                def inactive() -> None:
                    self.on_inactivity()
                    self.flush()

                self.ctx.arm("inactivity", self.inactivity_s, inactive)
            elif cc != NO_ERROR and self.phase == "cancel":
                self.note("SenderRxCancelAck", rx)
                self.acked = True
                self.end("cancelled")
            else:
                self.note("SenderRxRedundantPdu", rx)
        elif kind == "finished" and open_ and self.phase in ("data", "eof", "cancel"):
            self.SenderRxFinished(pdu, rx)
        elif kind == "finished" and self.acknowledged:
            # reading 1's default: a Finished after the end is acknowledged again
            ack = CFDPAck(ack_of=5, condition=self.condition(pdu))
            self.emit(ack, "SenderRxRedundantFinished", rx)
        elif kind == "finished":
            self.note("SenderRxRedundantFinished", rx)
        else:
            self.note("SenderRxRedundantPdu", rx)

    def SenderRxNak(self, pdu: CFDP, rx: str) -> None:
        """4.6.4: what the NAK asks for goes out again (whole segments of the
        grid that a request touches; the Metadata for (0, 0))."""
        self.note("SenderRxNak", rx)
        md, segs = False, set()
        for start, end in pdu.segment_requests:
            if start == end == 0:
                md = True
                continue
            for seg in range(self.n_seg):
                lo, hi = self.span(seg)
                if lo < end and start < hi:
                    segs.add(seg)
        if md:
            self.SenderTxMetadata("SenderTxRetransmittedMetadata")
        for seg in sorted(segs):
            self.SenderTxFileData(seg, "SenderTxRetransmittedData")

    def SenderRxFinished(self, pdu: CFDP, rx: str) -> None:
        """The Finished ends the transaction with its condition (a cancelling
        sender keeps its own); Class 2 acknowledges it (4.7). Reading 4's
        default: one before the ACK(EOF) is taken too."""
        cc = self.condition(pdu)
        complete = int(pdu.getfieldval("delivery_code")) == 0  # data complete (Table 5-7)
        if self.acknowledged:
            self.emit(CFDPAck(ack_of=5, condition=cc), "SenderRxFinished", rx)
        else:
            self.note("SenderRxFinished", rx)
        cancelling = self.phase == "cancel"
        self.acked = True
        if cancelling:
            self.end("cancelled")
        else:
            self.end("completed" if cc == NO_ERROR and complete else "cancelled", cc)

    # -- timers ---------------------------------------------------------------

    def on_eof_timer(self) -> None:
        self.ack_timer("eof", self.eof(self.cc), cancelling=self.phase == "cancel")

    def on_inactivity(self) -> None:
        if self.out == "open" and self.phase == "eof" and self.acked:
            self.fault(INACTIVITY, "SenderFaultInactivity")

    def fault(self, cc: str, action: str) -> None:
        """4.8: the notice of cancellation (every fault handler here is
        "notice of cancellation"): EOF(condition), acknowledged in Class 2."""
        self.cc = cc
        self.ctx.stop("inactivity")
        self.emit(self.eof(cc), action)
        if self.acknowledged:
            self.phase, self.tx, self.acked = "cancel", 1, False
            self.arm("eof", self.on_eof_timer)
        else:
            self.end("cancelled")

    def result(self) -> dict[str, Any]:
        out = self.out
        if self.out == "open":
            self.detail.append(f"transaction open in phase {self.phase}")
        return {
            "outcome": out,
            "file_bytes_delivered": 0,
            "sender_condition": self.cc,
            "payload_ok": None,
            **self.counters(),
        }


# ---------------------------------------------------------------------------
# The receiving entity
# ---------------------------------------------------------------------------


class CfdpReceiver(_Entity):
    name = "receiver"

    def __init__(self, ctx: Context, scn: Scenario, **kw: Any) -> None:
        super().__init__(ctx, scn, **kw)
        self.phase = "none"  # none, open, fin, closed
        self.md = False
        self.got: dict[int, bytes] = {}
        self.eof_cc = ""
        self.eof_checksum: int | None = None
        self.naks = 0
        self.armed = False
        self.fin: CFDPFinished | None = None
        self.tx = 0
        self.kept = b""

    def start(self) -> None:
        """The receiving entity waits for the transaction's first PDU."""

    def cancellable(self) -> bool:
        return self.phase == "open"

    def suspendable(self) -> bool:
        return self.phase in ("open", "fin")  # ReceiverSuspendTransaction

    def state(self) -> str:
        return self.phase

    @property
    def active(self) -> bool:
        return self.phase in ("none", "open", "fin")

    def missing(self) -> list[int]:
        return [s for s in range(self.n_seg) if s not in self.got]

    def has_file(self) -> bool:
        return self.md and not self.missing()

    def nak(self, segs: list[int], end: int) -> CFDPNak:
        """A NAK of whole segments (contiguous ones in one request), with
        (0, 0) first when the Metadata is missing."""
        reqs: list[tuple[int, int]] = [(0, 0)] if not self.md else []
        for s in segs:
            lo, hi = self.span(s)
            if reqs and reqs[-1] != (0, 0) and reqs[-1][1] == lo:
                reqs[-1] = (reqs[-1][0], hi)
            else:
                reqs.append((lo, hi))
        return CFDPNak(start_of_scope=0, end_of_scope=end, segment_requests=reqs)

    def handle(self, pdu: CFDP, rx: str) -> None:
        kind = pdu.directive_name
        if self.phase in ("none", "open") and self.eof_cc == "":

            def inactive() -> None:
                self.on_inactivity()
                self.flush()

            self.ctx.arm("inactivity", self.inactivity_s, inactive)
        if kind is None:
            self.ReceiverRxFileData(pdu, rx)
        elif kind == "metadata":
            if self.active and self.phase != "fin":
                self.note("ReceiverRxMetadata", rx)
                self.md, self.phase = True, "open"
                self.try_complete()
            else:
                self.note("ReceiverRxRedundantPdu", rx)
        elif kind == "eof":
            self.on_eof(pdu, rx)
        elif kind == "ack" and pdu.ack_of == 5 and self.active and self.phase == "fin":
            self.note("ReceiverRxFinishedAck", rx)
            self.end("completed" if self.cc == NO_ERROR else "cancelled")
        elif kind == "prompt" and self.acknowledged and self.phase in ("none", "open"):
            self.phase = "open"
            if int(pdu.getfieldval("response_required")) == 0:
                end = max((self.span(s)[1] for s in self.got), default=0)
                gaps = (
                    self.missing()
                    if self.eof_cc
                    else [s for s in self.missing() if self.span(s)[1] <= end]
                )
                self.emit(
                    self.nak(gaps, self.t.file_len if self.eof_cc else end), "ReceiverRxPrompt", rx
                )
            else:
                progress = sum(len(v) for v in self.got.values())
                self.emit(CFDPKeepAlive(progress=progress), "ReceiverRxPrompt", rx)
        else:
            self.note("ReceiverRxRedundantPdu", rx)

    def ReceiverRxFileData(self, pdu: CFDP, rx: str) -> None:
        """File Data is stored (duplicates change nothing). 4.6.4.3.1: in
        Class 2 with immediate NAKs, a segment past a gap it opens (or File
        Data ahead of the Metadata) is answered at once by a NAK of the gaps."""
        if self.phase not in ("none", "open"):
            self.note("ReceiverRxRedundantPdu", rx)
            return
        off = int(pdu.getfieldval("offset"))
        data = bytes(pdu.getfieldval("data"))
        seg = off // self.size
        if off % self.size or seg >= self.n_seg or len(data) != self.span(seg)[1] - off:
            self.detail.append(f"File Data [{off}, {off + len(data)}) off the segment grid")
            self.note("ReceiverRxFileData", rx, off_grid=True)
            return
        new_gap = self.phase == "none" or any(
            o < seg and o not in self.got and not any(g > o for g in self.got)
            for o in range(self.n_seg)
        )
        self.phase = "open"
        self.got.setdefault(seg, data)
        gaps = self.missing() if self.eof_cc else [o for o in self.missing() if o < seg]
        if (
            self.acknowledged
            and self.t.nak_mode == "immediate"
            and self.eof_cc == ""
            and new_gap
            and (gaps or not self.md)
        ):
            self.emit(self.nak(gaps, self.span(seg)[1]), "ReceiverRxFileData", rx)
        else:
            self.note("ReceiverRxFileData", rx)
        self.try_complete()

    def on_eof(self, pdu: CFDP, rx: str) -> None:
        cc = self.condition(pdu)
        ack = CFDPAck(ack_of=4, condition=cc)
        if cc == NO_ERROR and self.phase in ("none", "open") and self.eof_cc == "":
            # EOF(no error): recorded; Class 2 acknowledges it (4.7)
            self.phase, self.eof_cc = "open", NO_ERROR
            self.eof_checksum = int(pdu.getfieldval("checksum"))
            self.ctx.stop("inactivity")
            if self.acknowledged:
                self.emit(ack, "ReceiverRxEof", rx)
            else:
                self.note("ReceiverRxEof", rx)
            if not self.try_complete():
                if self.acknowledged:
                    self.ReceiverTxNak()
                else:
                    self.arm("check", self.on_check_timer)
        elif cc != NO_ERROR and self.active:
            # 4.6.6: EOF(cancel) ends the transaction, acknowledged in Class 2
            if self.acknowledged:
                self.emit(ack, "ReceiverRxCancelEof", rx)
            else:
                self.note("ReceiverRxCancelEof", rx)
            self.eof_cc = cc
            self.end("cancelled", cc)
        elif self.acknowledged:
            # 4.7.2: acknowledged again (reading 2's default: the ACK only)
            self.emit(ack, "ReceiverRxRedundantEof", rx)
        else:
            self.note("ReceiverRxRedundantEof", rx)

    def ReceiverTxNak(self) -> None:
        """4.6.4.3.1: the NAK after the EOF of all that is missing; it arms
        the NAK timer (4.6.4.7)."""
        self.armed = True
        self.emit(self.nak(self.missing(), self.t.file_len), "ReceiverTxNak")
        self.arm("nak", self.on_nak_timer)

    def try_complete(self) -> bool:
        """4.6.1.2: once the EOF is in and the whole file too, the checksum is
        verified: the file is delivered (ReceiverTxFinished) or a checksum
        fault is declared."""
        if self.phase != "open" or self.eof_cc != NO_ERROR or not self.has_file():
            return False
        self.ctx.stop("nak")
        self.ctx.stop("check")
        file = b"".join(self.got[s] for s in range(self.n_seg))
        if file_checksum(self.t.checksum_type, file) != self.eof_checksum:
            self.fault(CHECKSUM_FAILURE, "ReceiverFaultChecksum")
            return True
        self.kept = file
        fin = CFDPFinished(condition=NO_ERROR, delivery_code="data_complete")
        if self.mode == "c1":
            self.note("ReceiverTxFinished")
            self.end("completed", NO_ERROR)
        elif self.mode == "c1c":
            self.emit(fin, "ReceiverTxFinished")
            self.end("completed", NO_ERROR)
        else:
            self.fin, self.tx, self.phase = fin, 1, "fin"
            self.emit(fin, "ReceiverTxFinished")
            self.arm("fin", self.on_fin_timer)
        return True

    def fault(self, cc: str, action: str) -> None:
        """4.8, notice of cancellation: Class 2 sends Finished(condition) and
        awaits its ACK; Class 1 with closure sends it and ends; Class 1 ends."""
        self.cc = cc
        for name in ("nak", "check", "inactivity"):
            self.ctx.stop(name)
        fin = CFDPFinished(condition=cc, delivery_code="data_incomplete", fault_location=self.me)
        if self.acknowledged:
            self.fin, self.tx, self.phase = fin, 1, "fin"
            self.emit(fin, action)
            self.arm("fin", self.on_fin_timer)
        else:
            if self.mode == "c1c" and self.md:
                self.emit(fin, action)
            else:
                self.note(action)
            self.end("cancelled", cc)

    def on_nak_timer(self) -> None:
        if self.phase != "open" or self.has_file():
            return
        if self.naks < self.t.nak_limit:
            self.naks += 1
            self.emit(self.nak(self.missing(), self.t.file_len), "ReceiverTimeoutNak")
            self.arm("nak", self.on_nak_timer)
        else:
            self.fault(NAK_LIMIT, "ReceiverFaultNakLimit")

    def on_fin_timer(self) -> None:
        if self.phase == "fin" and self.fin is not None:
            self.ack_timer("fin", self.fin.copy(), cancelling=self.cc != NO_ERROR)

    def checking(self) -> bool:
        return self.phase == "open" and not self.has_file()

    def on_inactivity(self) -> None:
        if self.phase == "open" and self.eof_cc == "":
            self.fault(INACTIVITY, "ReceiverFaultInactivity")

    def result(self) -> dict[str, Any]:
        out = self.out
        if self.phase == "none":
            self.detail.append("no transaction reached this entity")
        elif self.out == "open":
            self.detail.append(f"transaction open in phase {self.phase}")
        return {
            "outcome": out,
            "file_bytes_delivered": len(self.kept),
            "receiver_condition": "" if self.phase == "none" else self.cc,
            "payload_ok": (self.kept == pattern(len(self.kept))) if self.kept else None,
            **self.counters(),
        }


ROLES: dict[str, type[Role]] = {"sender": CfdpSender, "receiver": CfdpReceiver}
