"""LTP (RFC 5326) block sender and block receiver, played from
``specs/ltp/LTP.tla``.

Each method named like a model action (``SenderTxCheckpoint``,
``ReceiverRxCheckpoint``, ...) is that action: the same guard, the same
segment out, the same state change, logged under the action's name. Where
the model chooses among enabled actions, the tester takes the one a careful
implementation takes at once (it answers every segment when it arrives,
retransmits the data a report asks for straight away, and fires a timer only
after the retransmission interval the SUT is configured with). Nothing here
departs from the model: every segment the tester sends is one its actions
emit, and trace validation checks that, so that a tester bug shows as the
tester's (verdict ``error``), never as a fail of the implementation.

The block is cut as the model counts it and as the SUT adapters configure
their side: red segments of ``segment_size`` bytes from offset 0 (the last
may be shorter), then green segments from ``red_len``. The client data is
the pattern both sides of every adapter share, the ``payload`` of
specs/ltp/wire.json (:func:`pattern`).

What the tester cannot play is refused before the run with
:class:`~conformance.tester.core.CannotPlay`, naming the field (:func:`check`).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from conformance.core import wire
from conformance.core.types import ALIVE_PROBE, Scenario
from conformance.protocols.ltp import LtpBlock
from conformance.tester.core import CannotPlay, Context, Role
from dissectors.ltp.layer import (
    LTP,
    LTPDataSegment,
    LtpDecodeError,
    LTPUndefinedControlSegment,
    RawSDNV,
    classify,
    parse,
)

# The cancel reasons of the model (RFC 5326 §3.2.4): a retransmission limit
# exceeded, and a session refused for an unknown client service (8.2).
RLEXC = 2
UNREACH = 1
MISCOLORED = 3


def pattern(offset: int, length: int) -> bytes:
    """Client data of the block at [offset, offset + length)."""
    return wire.payload("ltp", offset, length)


def grid(p: LtpBlock) -> list[tuple[int, int]]:
    """The block's data segments as (offset, length): red first, then green."""
    out = []
    for start, end in ((0, p.red_len), (p.red_len, p.block_len)):
        for off in range(start, end, p.segment_size):
            out.append((off, min(p.segment_size, end - off)))
    return out


def check(scn: Scenario, role: str) -> None:
    """Raise CannotPlay, naming the field, for what the tester cannot play."""
    p = scn.params
    assert isinstance(p, LtpBlock)
    check_probes(scn, role)
    if p.red_len == 0 and scn.probes:
        raise CannotPlay(
            "probes: the robustness probes are built on the block's checkpoint and report, which "
            "a green-only block (params.red_len 0) has not"
        )
    if p.miscolored_sender and role != "sender":
        raise CannotPlay(
            "params.miscolored_sender: only the tester's sender plays a miscolored sender; run "
            "with --tester sender"
        )


def _unit(seg: LTP) -> dict[str, Any]:
    """A segment's match fields (those impairments name) for the action log."""
    out: dict[str, Any] = {
        k: v for k, v in classify(seg).items() if k not in ("type_code", "kind", "red",
                                                            "checkpoint", "eorp", "eob")
    }  # fmt: skip
    return out


# ---------------------------------------------------------------------------
# Robustness probes (scenario ``probes``)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeKind:
    """One robustness case: which tester role sends it, the answer the RFC
    requires ("discard": none; a segment type; "any": either reading holds)
    and the rule."""

    role: str
    expect: str
    rule: str
    text: str


_HEADER = "RFC 5326 §6 (a segment whose header does not conform is discarded at once)"
PROBES: dict[str, ProbeKind] = {
    "truncated-checkpoint": ProbeKind(
        "sender", "discard", _HEADER, "a checkpoint of the session cut 3 octets short"
    ),
    "bad-sdnv-checkpoint": ProbeKind(
        "sender", "discard", _HEADER, "a checkpoint whose offset SDNV runs to 13 octets"
    ),
    "long-sdnv-checkpoint": ProbeKind(
        "sender",
        "discard",
        _HEADER + ", §2 (SDNVs of at most 64 bits here)",
        "a checkpoint whose offset SDNV holds 70 bits",
    ),  # fmt: skip
    "wrong-version": ProbeKind(
        "sender", "discard", _HEADER + ", §3.1 (version 0)", "a checkpoint of version 1"
    ),
    "reserved-data-types": ProbeKind(
        "sender",
        "discard",
        _HEADER + ", §3.1.2 (types 5 and 6 are undefined)",
        "data segments of the undefined types 5 and 6",
    ),  # fmt: skip
    "reserved-control-types": ProbeKind(
        "sender",
        "discard",
        _HEADER + ", §3.1.2 (types 10 and 11 are undefined)",
        "control segments of the undefined types 10 and 11",
    ),  # fmt: skip
    "unknown-session-cancel": ProbeKind(
        "sender",
        "CAS",
        "RFC 5326 §6.17 (a CS is acknowledged with a CAS, known session or not)",
        "a CS for a session the receiver never saw",
    ),  # fmt: skip
    "miscolored": ProbeKind(
        "sender",
        "CR",
        "RFC 5326 §6.21 (a red data segment above green data already received is "
        "discarded, the session cancelled, and a CR with reason MISCOLORED SHOULD be sent)",
        "a session of its own: green data at the second segment's offset, then red data "
        "at the third's",
    ),  # fmt: skip
    "unknown-session-report-ack": ProbeKind(
        "sender",
        "discard",
        "RFC 5326 §6.14 (an RA only stops an RS timer)",
        "an RA for a session the receiver never saw",
    ),  # fmt: skip
    "truncated-report": ProbeKind(
        "receiver", "discard", _HEADER, "a report segment cut 2 octets short"
    ),
    "bad-sdnv-report": ProbeKind(
        "receiver", "discard", _HEADER, "a report segment whose upper bound SDNV runs to 13 octets"
    ),
    "claims-outside-bounds": ProbeKind(
        "receiver",
        "any",
        "RFC 5326 §3.2.2 (claims MUST lie within the bounds; the RFC does not say whether a "
        "receiver of such an RS discards it, so either is allowed)",
        "a report segment whose one claim runs past its upper bound",
    ),  # fmt: skip
    "unknown-session-report": ProbeKind(
        "receiver",
        "RA",
        "RFC 5326 §6.13 (every RS gets an RA, also for an unknown session)",
        "an RS for a session the sender never opened",
    ),  # fmt: skip
    "unknown-session-cancel-receiver": ProbeKind(
        "receiver",
        "CAR",
        "RFC 5326 §6.17 (a CR is acknowledged with a CAR, known session or not)",
        "a CR for a session the sender never opened",
    ),  # fmt: skip
}


# The tester's own last probe after segments to discard (send_alive), and
# how long after them it goes.
ALIVE = ALIVE_PROBE
ALIVE_AFTER_S = 0.2


@dataclass
class _Probe:
    kind: str
    spec: ProbeKind
    count: int
    session: tuple[int, int] | None = None  # a session of its own
    serial: tuple[str, int] | None = None  # ("checkpoint_serial" | "report_serial", P)
    sent: int = 0
    answers: list[str] = field(default_factory=list)
    payloads: list[str] = field(default_factory=list)
    answer_payloads: list[str] = field(default_factory=list)

    def result(self) -> dict[str, Any]:
        e = self.spec.expect
        if e == "discard":
            ok = not self.answers
            want = "no answer allowed"
        elif e == "any":
            ok, want = True, "an answer or none allowed"
        else:
            ok, want = e in self.answers, f"{'an' if e[0] in 'AEIOU' else 'a'} {e} required"
        seen = ", ".join(self.answers) or "no answer"
        status = "unsent" if not self.sent else "pass" if ok else "fail"
        return {
            "kind": self.kind,
            "sent": self.sent,
            "expect": e,
            "answers": self.answers,
            "status": status,
            "rule": self.spec.rule,
            "message": f"{self.spec.text} ({self.sent} sent): {want}, {seen} seen",
            "payloads": self.payloads,
            "answer_payloads": self.answer_payloads,
            "sessions": [list(self.session)] if self.session else [],
        }


def split_report(
    spans: list[tuple[int, int]], lb: int, ub: int, max_claims: int
) -> list[tuple[int, int, list[tuple[int, int]]]]:
    """RFC 5326 §6.11: a report on ``spans`` within [lb, ub) as RSs of at
    most ``max_claims`` claims each, (lower, upper, spans) per RS: the first
    starts at lb, the last ends at ub, each other ends where its last claim
    ends (LTP.tla's ReportSegs)."""
    groups = [spans[i : i + max_claims] for i in range(0, len(spans), max_claims)] or [[]]
    out = []
    lo = lb
    for k, group in enumerate(groups):
        hi = ub if k == len(groups) - 1 else group[-1][1]
        out.append((lo, hi, group))
        lo = hi
    return out


def check_probes(scn: Scenario, role: str) -> None:
    for i, pr in enumerate(scn.probes):
        spec = PROBES.get(pr.kind)
        if spec is None:
            raise CannotPlay(
                f"probes[{i}].kind: unknown LTP probe {pr.kind!r} (known: {', '.join(PROBES)})"
            )
        if spec.role != role:
            raise CannotPlay(
                f"probes[{i}].kind: {pr.kind} is sent by the tester's {spec.role}; run with "
                f"--tester {spec.role}"
            )


def _with(seg: LTP, **fields: Any) -> LTP:
    """A copy of ``seg`` with some fields replaced."""
    out = seg.copy()
    for name, value in fields.items():
        setattr(out, name, value)
    return out


def _fresh(like: int) -> int:
    """A session number the session's originator never used, of the same
    shape as ``like``, its own: the bits above the lowest 16 kept, the
    rest drawn anew. RFC 5326 §3.1 leaves the number's format to the
    originator, and an engine may read its high bits (HDTN routes an RS or
    a CR by them, LtpUdpEngineManager.cpp:340-349): a number drawn from
    the whole range probes its routing, not the procedure for a session it
    never opened."""
    low = random.randint(1, 0xFFFF)
    n = (like & ~0xFFFF) | low
    return n if n != like else (like & ~0xFFFF) | (low % 0xFFFF + 1)


# An SDNV of 13 octets (RFC 5326 §2 and our decoders accept at most 10).
_TOO_LONG = RawSDNV(b"\x81" + b"\x80" * 11 + b"\x00")


class _Probing:
    """Probe sending and answer attribution, mixed into both roles."""

    name: str
    probes: list[_Probe]
    session: tuple[int, int] | None
    ctx: Context

    def probe_bytes(self, pr: _Probe) -> list[bytes]:  # pragma: no cover - per role
        raise NotImplementedError

    def send_probes(self) -> None:
        # those that need an answer first: a segment to discard that stops
        # the engine (HDTN on a version it does not know) would leave them
        # unanswered, its fault counted on probes it never saw
        for pr in sorted(self.probes, key=lambda p: p.spec.expect == "discard"):
            if pr.sent:
                continue
            for _ in range(pr.count):
                for data in self.probe_bytes(pr):
                    self.ctx.send(data, "Probe", kind=pr.kind, hex=data.hex())
                    pr.payloads.append(data.hex())
                    pr.sent += 1
        if any(p.spec.expect == "discard" for p in self.probes) and all(
            p.kind != ALIVE for p in self.probes
        ):
            self.ctx.arm("probe-alive", ALIVE_AFTER_S, self.send_alive)

    def send_alive(self) -> None:
        """A cancel for a session of its own, once the segments to discard
        have had time to be taken: an engine that stopped on one of them no
        longer listens, and its host answers ICMP port unreachable, which the
        run reads (runner.settle_probes: the probe ``engine-stopped``). Not
        judged itself (a live engine may answer it or not here)."""
        kind = "unknown-session-cancel" if self.name == "sender" else (
            "unknown-session-cancel-receiver")  # fmt: skip
        base = PROBES[kind]
        pr = _Probe(ALIVE, ProbeKind(base.role, "any", base.rule, "after the segments to "
                    "discard, " + base.text + ", to see the engine still listens"), 1)  # fmt: skip
        model = _Probe(kind, base, 1)
        for data in self.probe_bytes(model):
            self.ctx.send(data, "Probe", kind=ALIVE, hex=data.hex())
            pr.payloads.append(data.hex())
            pr.sent += 1
        pr.session = model.session
        self.probes.append(pr)

    def attribute(self, data: bytes) -> bool:
        """True when ``data`` answers a probe (recorded, kept from the role)."""
        if not self.probes:
            return False
        try:
            seg = parse(data)
        except LtpDecodeError:
            return False
        sid = (int(seg.session_originator), int(seg.session_number))
        for pr in self.probes:
            hit = pr.session == sid
            if not hit and pr.serial is not None and sid == self.session:
                name, value = pr.serial
                hit = (seg.type_name in ("RS", "RA") or seg.is_checkpoint) and int(
                    seg.getfieldval(name) or 0
                ) == value
            if hit:
                pr.answers.append(seg.type_name)
                pr.answer_payloads.append(data.hex())
                self.ctx.log("ProbeAnswer", kind=pr.kind, rx=_unit(seg))
                return True
        return False


class _Side(_Probing, Role):
    """What both LTP roles share: the session they play, the scenario's
    knobs, sending a segment as an action, the cancel procedure."""

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
        p = scn.params
        assert isinstance(p, LtpBlock)
        self.p = p
        self.limit = p.retransmission_limit
        self.engine = engine
        self.peer_engine = peer_engine
        self.rtx_s = retransmission_s
        self.close_wait_s = close_wait_s
        self.grid = grid(p)
        self.outcome = "none"
        self.detail = ""
        self.ended_at: float | None = None
        self.state = "open"  # "open", "cs_sent"/"cr_sent" (cancelling), "closed"
        self.session: tuple[int, int] | None = None
        self.cx_tx = 0  # times the cancel segment was queued (6.16)
        self.cx_reason = RLEXC  # the reason its cancel segments carry
        self.ignored = 0
        self.probes = [_Probe(pr.kind, PROBES[pr.kind], pr.count) for pr in scn.probes]
        # other sessions' data colors (6.21): lowest green, highest red offset,
        # cancelled
        self.colors: dict[tuple[int, int], tuple[int | None, int | None, bool]] = {}

    # -- segments --------------------------------------------------------------

    def seg(self, type_: str, **fields: Any) -> LTP:
        assert self.session is not None
        return LTP(
            type=type_,
            session_originator=self.session[0],
            session_number=self.session[1],
            **fields,
        )

    def tx(self, action: str, seg: LTP, rx: LTP | None = None) -> None:
        """Send ``seg`` as model action ``action`` (answering ``rx``)."""
        extra = {"rx": _unit(rx)} if rx is not None else {}
        self.ctx.send(bytes(seg), action, tx=_unit(seg), **extra)

    def on_datagram(self, data: bytes) -> None:
        """A probe's answer is the probe's; a segment of our session goes to
        the role's :meth:`process`; anything else is discarded (logged)."""
        if self.attribute(data):
            return
        seg = self.read(data)
        if seg is not None:
            self.process(seg)

    def process(self, seg: LTP) -> None:  # pragma: no cover - per role
        raise NotImplementedError

    def read(self, data: bytes) -> LTP | None:
        """The segment of our session in ``data``, else None (logged): §6
        discards a segment whose header does not conform."""
        try:
            seg = parse(data)
        except LtpDecodeError as exc:
            self.ignored += 1
            self.ctx.log("Discard", why=f"malformed: {exc}", octets=len(data))
            return None
        sid = (int(seg.session_originator), int(seg.session_number))
        if self.session is None and self.name == "receiver" and seg.is_data:
            self.session = sid
        if sid != self.session:
            self.ignored += 1
            self.other_session(seg, sid)
            return None
        return seg

    # A session the tester does not play: RFC 5326 still asks for an
    # acknowledgment of reports and cancels (the model's RxRedundant
    # actions, which stand for "received after the session closed").
    _UNKNOWN_SESSION_ACKS = {
        ("sender", "RS"): ("SenderRxRedundantReport", "RA"),  # 6.13
        ("sender", "CR"): ("SenderRxRedundantCancel", "CAR"),  # 6.17
        ("receiver", "CS"): ("ReceiverRxRedundantCancel", "CAS"),  # 6.17
    }

    def other_session(self, seg: LTP, sid: tuple[int, int]) -> None:
        if self.name == "receiver" and seg.is_data and self.miscolored(seg, sid):
            return
        ack = self._UNKNOWN_SESSION_ACKS.get((self.name, seg.type_name))
        if ack is None:
            self.ctx.log("Discard", why=f"session {sid[0]}/{sid[1]} is not ours", rx=_unit(seg))
            return
        action, type_ = ack
        # (scapy's Packet takes its fields as **Any)
        fields: dict[str, Any] = {"report_serial": int(seg.report_serial)} if type_ == "RA" else {}
        out = LTP(type=type_, session_originator=sid[0], session_number=sid[1], **fields)
        self.ctx.send(bytes(out), action, rx=_unit(seg), tx=_unit(out), session="unknown")

    def miscolored(self, seg: LTP, sid: tuple[int, int]) -> bool:
        """6.21 for a session the tester does not play: data colored against
        what that session already had (red above green, green below red) is
        discarded and the session cancelled with a CR MISCOLORED, once (the
        tester runs no cancel timer for it). True when it answered."""
        lo_green, hi_red, done = self.colors.get(sid, (None, None, False))
        off = int(seg.offset)
        bad = (seg.is_red and lo_green is not None and off > lo_green) or (
            not seg.is_red and hi_red is not None and off < hi_red
        )
        if bad and not done:
            out = LTP(type="CR", session_originator=sid[0], session_number=sid[1],
                      reason=MISCOLORED)  # fmt: skip
            self.ctx.send(bytes(out), "ReceiverCancelOnMiscolored", rx=_unit(seg), tx=_unit(out),
                          session="other")  # fmt: skip
        if seg.is_red:
            hi_red = off if hi_red is None else max(hi_red, off)
        else:
            lo_green = off if lo_green is None else min(lo_green, off)
        self.colors[sid] = (lo_green, hi_red, done or bad)
        return bad

    def end(self, outcome: str, detail: str) -> None:
        """The notice to the client (7.3-7.6); the last one is the outcome."""
        self.outcome = outcome
        self.detail = detail
        self.ended_at = time.monotonic()

    # -- cancel (6.15, 6.16, 6.19) ---------------------------------------------

    def cancel(
        self, action: str, type_: str, state: str, detail: str, rx: LTP | None = None
    ) -> None:
        """Cancel Session (6.19): stop every timer, queue the cancel segment,
        start its timer (6.15)."""
        for name in self.ctx.armed():
            self.ctx.stop(name)
        self.state = state
        self.cx_tx = 1
        self.end("cancelled", detail)
        self.tx(action, self.seg(type_, reason=self.cx_reason), rx=rx)
        self.ctx.arm("cancel", self.rtx_s, self.expire_cancel_timer)

    def expire_cancel_timer(self) -> None:
        role = self.name.capitalize()
        ctype = "CS" if self.name == "sender" else "CR"
        if self.cx_tx <= self.limit:  # 6.16
            self.cx_tx += 1
            self.tx(f"{role}ExpireCancelTimer", self.seg(ctype, reason=self.cx_reason))
            self.ctx.arm("cancel", self.rtx_s, self.expire_cancel_timer)
        else:  # 6.16, 6.20
            self.state = "closed"
            self.ctx.log(f"{role}AbandonCancel")
            self.close()

    def rx_cancel_ack(self, seg: LTP) -> None:
        """6.18: the cancel timer stops and the session closes."""
        self.ctx.log(f"{self.name.capitalize()}RxCancelAck", rx=_unit(seg))
        if self.state in ("cs_sent", "cr_sent"):
            self.ctx.stop("cancel")
            self.state = "closed"
            self.close()

    def rx_cancel(self, seg: LTP, ack: str) -> None:
        """6.17: a cancel is acknowledged, whatever the session's state; an
        open session is cancelled (7.5/7.6) and every one closes (6.20)."""
        role = self.name.capitalize()
        if self.state == "open":
            for name in self.ctx.armed():
                self.ctx.stop(name)
            self.end("cancelled", f"cancelled by the peer (reason {int(seg.reason)})")
            action = f"{role}RxCancel"
        else:
            self.ctx.stop("cancel")
            action = f"{role}RxRedundantCancel"
        self.state = "closed"
        self.tx(action, self.seg(ack), rx=seg)
        self.close()

    def result(self) -> dict[str, Any]:
        end = self.ended_at or self.closed_at
        return {
            "role": self.name,
            "outcome": self.outcome,
            "detail": self.detail,
            "duration_s": round((end - self.started) if end else 0.0, 6),
            "session_originator": self.session[0] if self.session else None,
            "session_number": self.session[1] if self.session else None,
            "ignored": self.ignored,
            "probes": [pr.result() for pr in self.probes],
        }


class LtpSender(_Side):
    """The block sender of LTP.tla (actions Sender*)."""

    name = "sender"

    def __init__(self, ctx: Context, scn: Scenario, **kw: Any) -> None:
        super().__init__(ctx, scn, **kw)
        self.session = (self.engine, random.randint(1, 2**31 - 1))
        self.n_red = sum(1 for off, _ in self.grid if off < self.p.red_len)
        self.cp_serial = random.randint(1, 2**14 - 1) - 1  # 3.2.1: serials start at random
        self.cp: LTP | None = None  # the checkpoint whose timer runs
        self.cp_tx = 0
        self.claimed: set[int] = set()  # red segment indices claimed
        self.rs_seen: set[int] = set()

    def data(self, i: int, *, cp: int | None = None, rs: int = 0) -> LTP:
        off, length = self.grid[i]
        if i >= self.n_red:
            kind = "GD-EOB" if i == len(self.grid) - 1 else "GD"
            return self.seg(kind, client_service_id=self.p.client_service_id, offset=off,
                            data=pattern(off, length))  # fmt: skip
        if cp is None:
            return self.seg("RD", client_service_id=self.p.client_service_id, offset=off,
                            data=pattern(off, length))  # fmt: skip
        last = i == self.n_red - 1
        kind = "RD-CP" if not last else "RD-CP-EORP-EOB" if self.n_red == len(self.grid) else (
            "RD-CP-EORP")  # fmt: skip
        return self.seg(kind, client_service_id=self.p.client_service_id, offset=off,
                        data=pattern(off, length), checkpoint_serial=cp,
                        report_serial=rs)  # fmt: skip

    def start(self) -> None:
        for i in range(len(self.grid)):
            if i < self.n_red - 1:
                self.tx("SenderTxRedData", self.data(i))  # 6.1
            elif i == self.n_red - 1:
                self.send_checkpoint("SenderTxCheckpoint", i, rs=0)  # 6.1, 6.2
            else:
                self.tx("SenderTxGreenData", self.data(i))  # 6.1
            if i == 0 and self.p.miscolored_sender:
                # fault injection: green data inside the red part (6.21)
                self.tx("SenderTxMiscoloredData", self.seg(
                    "GD", client_service_id=self.p.client_service_id, offset=0,
                    data=pattern(0, self.grid[0][1])))  # fmt: skip
        if self.n_red == 0:  # 6.12, 7.4: all sent, and no red part to be claimed
            self.complete("all data sent; no red part")
        # The receiver's session exists now: the probes meet it.
        self.send_probes()

    def complete(self, detail: str) -> None:
        """6.12, 7.4, 6.20: the completion notice; the session closes."""
        self.ctx.stop("checkpoint")
        self.cp = None
        self.state = "closed"
        self.end("completed", detail)
        self.ctx.log("SenderSignalCompletion")
        self.close()

    def probe_bytes(self, pr: _Probe) -> list[bytes]:
        assert self.session is not None
        last = self.n_red - 1
        off, length = self.grid[last]
        serial = random.randint(2**20, 2**30)  # never one of the session's own
        pr.serial = ("checkpoint_serial", serial)
        cp = self.data(last, cp=serial, rs=0)
        k = pr.kind
        if k == "truncated-checkpoint":
            return [cp.truncate(-3)]
        if k == "bad-sdnv-checkpoint":
            return [bytes(_with(self.data(last, cp=serial, rs=0), offset=_TOO_LONG))]
        if k == "long-sdnv-checkpoint":
            return [bytes(_with(cp, offset=RawSDNV.of(2**70)))]
        if k == "wrong-version":
            return [bytes(_with(cp, version=1))]
        if k == "reserved-data-types":
            return [
                bytes(
                    LTPDataSegment(
                        type=t,
                        session_originator=self.session[0],
                        session_number=self.session[1],
                        client_service_id=self.p.client_service_id,
                        offset=off,
                        data=pattern(off, length),
                    )
                )  # fmt: skip
                for t in (5, 6)
            ]
        if k == "reserved-control-types":
            return [
                bytes(
                    LTPUndefinedControlSegment(
                        type=t, session_originator=self.session[0], session_number=self.session[1]
                    )
                )  # fmt: skip
                for t in (10, 11)
            ]
        other = (self.session[0], _fresh(self.session[1]))
        pr.session = other
        if k == "miscolored":
            # green then red above it, in a session of its own (8.2: the
            # first data segment opens it; 6.21 a: the red one is miscolored)
            green, red = self.p.segment_size, 2 * self.p.segment_size
            return [
                bytes(
                    LTPDataSegment(
                        type=t, session_originator=other[0], session_number=other[1],
                        client_service_id=self.p.client_service_id, offset=off,
                        data=pattern(off, self.p.segment_size),
                    )
                )
                for t, off in ((4, green), (0, red))  # GD, then RD
            ]  # fmt: skip
        if k == "unknown-session-cancel":
            seg = LTP(type="CS", session_originator=other[0], session_number=other[1],
                      reason=RLEXC)  # fmt: skip
        else:  # unknown-session-report-ack
            seg = LTP(type="RA", session_originator=other[0], session_number=other[1],
                      report_serial=random.randint(1, 2**14))  # fmt: skip
        return [bytes(seg)]

    def send_checkpoint(self, action: str, i: int, rs: int) -> None:
        self.cp_serial += 1
        self.cp = self.data(i, cp=self.cp_serial, rs=rs)
        self.cp_tx = 1
        self.tx(action, self.cp)
        self.ctx.arm("checkpoint", self.rtx_s, self.expire_checkpoint_timer)

    def expire_checkpoint_timer(self) -> None:
        if self.state != "open" or self.cp is None:
            return
        if self.cp_tx <= self.limit:  # 6.7
            self.cp_tx += 1
            self.tx("SenderExpireCheckpointTimer", self.cp)
            self.ctx.arm("checkpoint", self.rtx_s, self.expire_checkpoint_timer)
        else:  # 6.7, 6.19, 7.5
            self.cp = None
            self.cancel(
                "SenderCancelSession",
                "CS",
                "cs_sent",
                f"checkpoint retransmission limit {self.limit} exceeded",
            )

    def claimed_segments(self, seg: LTP) -> set[int]:
        lb = int(seg.lower_bound)
        spans = [(lb + int(c.offset), lb + int(c.offset) + int(c.length)) for c in seg.claims]
        out = set()
        for i in range(self.n_red):
            off, length = self.grid[i]
            if any(a <= off and off + length <= b for a, b in spans):
                out.add(i)
        return out

    def process(self, seg: LTP) -> None:
        t = seg.type_name
        if t == "RS":
            self.rx_report(seg)
        elif t == "CR":
            self.cp = None
            self.rx_cancel(seg, "CAR")
        elif t == "CAS":
            self.rx_cancel_ack(seg)
        else:
            self.ignored += 1
            self.ctx.log("Discard", why="not a segment a block sender processes", **_unit(seg))

    def rx_report(self, seg: LTP) -> None:
        serial = int(seg.report_serial)
        ack = self.seg("RA", report_serial=serial)
        if self.state != "open" or serial in self.rs_seen:  # 6.13, 8.1
            self.tx("SenderRxRedundantReport", ack, rx=seg)
            return
        self.rs_seen.add(serial)
        lb, ub = int(seg.lower_bound), int(seg.upper_bound)
        claims = self.claimed_segments(seg)
        self.claimed |= claims
        if self.cp is not None and int(seg.checkpoint_serial) == int(self.cp.checkpoint_serial):
            self.ctx.stop("checkpoint")
            self.cp = None
        missing = [i for i in range(self.n_red) if lb <= self.grid[i][0] < ub and i not in claims]
        self.tx("SenderRxReport", ack, rx=seg)  # 6.13
        for i in missing[:-1]:
            self.tx("SenderRetxRedData", self.data(i))
        if missing:
            self.send_checkpoint("SenderRetxCheckpoint", missing[-1], rs=serial)
        if len(self.claimed) == self.n_red:  # 6.12, 7.4
            self.complete("red part fully claimed")


class LtpReceiver(_Side):
    """The block receiver of LTP.tla (actions Receiver*)."""

    name = "receiver"

    def __init__(self, ctx: Context, scn: Scenario, **kw: Any) -> None:
        super().__init__(ctx, scn, **kw)
        self.red: dict[int, bytes] = {}  # offset -> data
        self.green: dict[int, int] = {}  # offset -> length
        self.eob = False
        self.delivered = False
        self.payload_ok = True
        self.rs_serial = random.randint(1, 2**14 - 1) - 1
        self.reports: dict[int, LTP] = {}  # report serial -> RS
        self.rs_tx: dict[int, int] = {}
        self.by_cp: dict[int, list[int]] = {}  # checkpoint serial -> its RSs' serials
        # the model's ServiceKnown = FALSE: the first data segment is refused
        self.unknown = self.p.service_at_receiver != self.p.client_service_id
        self.refusing = self.unknown
        self.acked: set[int] = set()

    def start(self) -> None:
        self.ctx.log("Init")

    def probe_bytes(self, pr: _Probe) -> list[bytes]:
        assert self.session is not None
        rs = self.probe_rs
        serial = random.randint(2**20, 2**30)  # never one of the session's own
        pr.serial = ("report_serial", serial)
        lb, ub = int(rs.lower_bound), int(rs.upper_bound)
        probe = _with(rs, report_serial=serial)
        k = pr.kind
        if k == "truncated-report":
            return [probe.truncate(-2)]
        if k == "bad-sdnv-report":
            return [bytes(_with(probe, upper_bound=_TOO_LONG))]
        if k == "claims-outside-bounds":
            return [bytes(_with(probe, claims=[(0, ub - lb + 1)]))]
        other = (self.session[0], _fresh(self.session[1]))
        pr.session = other
        if k == "unknown-session-report":
            seg = LTP(type="RS", session_originator=other[0], session_number=other[1],
                      report_serial=random.randint(1, 2**14), checkpoint_serial=1,
                      upper_bound=1, lower_bound=0, claims=[(0, 1)])  # fmt: skip
        else:  # unknown-session-cancel-receiver
            seg = LTP(type="CR", session_originator=other[0], session_number=other[1],
                      reason=RLEXC)  # fmt: skip
        return [bytes(seg)]

    def process(self, seg: LTP) -> None:
        t = seg.type_name
        if seg.is_data:
            self.rx_data(seg)
        elif t == "RA":
            self.rx_report_ack(seg)
        elif t == "CS":
            self.rx_cancel(seg, "CAS")
        elif t == "CAR":
            self.rx_cancel_ack(seg)
        else:
            self.ignored += 1
            self.ctx.log("Discard", why="not a segment a block receiver processes", **_unit(seg))
        self.try_close()

    def record(self, seg: LTP) -> None:
        off, data = int(seg.offset), bytes(seg.data)
        if data != pattern(off, len(data)):
            self.payload_ok = False
        if seg.is_red:
            self.red[off] = data
        else:
            self.green[off] = len(data)
            self.eob = self.eob or seg.is_eob

    def rx_data(self, seg: LTP) -> None:
        name = "Red" if seg.is_red else "Green"
        if self.unknown:  # the data names a client service we do not have
            # the first segment refuses the session (8.2), each later one draws
            # a CR of its own (6's preamble: for red data a MUST); a closed
            # session's cancellation sequence starts again (6.15)
            first, self.refusing = self.refusing, False
            if first or self.state == "closed":
                self.cx_tx = 1
                self.cx_reason = UNREACH
                self.ctx.arm("cancel", self.rtx_s, self.expire_cancel_timer)
            self.state = "cr_sent"
            action = "ReceiverRefuseSession" if first else "ReceiverRefuseData"
            self.tx(action, self.seg("CR", reason=UNREACH), rx=seg)
            return
        if self.state != "open":  # the model's choice: discarded once not open
            action = (
                "ReceiverDiscardCheckpoint" if seg.is_checkpoint else f"ReceiverDiscard{name}Data"
            )
            self.ctx.log(action, rx=_unit(seg))
            return
        if not seg.is_checkpoint:
            self.record(seg)
            self.ctx.log(f"ReceiverRx{name}Data", rx=_unit(seg))  # 3.2.1, 6.10, 7.2
        else:
            self.rx_checkpoint(seg)
        self.deliver()

    def rx_checkpoint(self, seg: LTP) -> None:
        cp = int(seg.checkpoint_serial)
        self.record(seg)
        if cp in self.by_cp:  # 6.8 (b): a new copy of each affected RS
            mine = self.by_cp[cp]
            if all(self.rs_tx[i] <= self.limit for i in mine):
                for i in mine:
                    self.rs_tx[i] += 1
                    self.tx("ReceiverRxRedundantCheckpoint", self.reports[i], rx=seg)
                    if i not in self.acked:
                        self.ctx.arm(
                            f"report-{i}", self.rtx_s, partial(self.expire_report_timer, i)
                        )
            else:
                self.cancel(
                    "ReceiverCancelOnRedundantCheckpoint",
                    "CR",
                    "cr_sent",
                    f"report retransmission limit {self.limit} exceeded",
                    rx=seg,
                )
            return
        # 6.11 (a): the bounds and claims of the report answering this
        # checkpoint, as one RS or more (at most max_claims_per_rs claims each).
        answered = int(seg.report_serial)
        lb = int(self.reports[answered].lower_bound) if answered in self.reports else 0
        ub = int(seg.offset) + len(bytes(seg.data))
        spans = self.claims(lb, ub)
        rss = []
        for lo, hi, group in split_report(spans, lb, ub, self.p.max_claims_per_rs):
            self.rs_serial += 1
            rs = self.seg(
                "RS",
                report_serial=self.rs_serial,
                checkpoint_serial=cp,
                upper_bound=hi,
                lower_bound=lo,
                claims=[(a - lo, b - a) for a, b in group],
            )
            self.reports[self.rs_serial] = rs
            self.rs_tx[self.rs_serial] = 1
            rss.append(self.rs_serial)
        self.by_cp[cp] = rss
        if self.probes and sum(b - a for a, b in spans) == ub - lb:
            # Before the RS, at the first checkpoint whose report claims all
            # of its bounds: a probe whose claims are taken leaves the
            # sender with nothing to retransmit, as the real RS does.
            self.probe_rs = self.reports[rss[0]]
            self.send_probes()
        for serial in rss:
            self.tx("ReceiverRxCheckpoint", self.reports[serial], rx=seg)
            self.ctx.arm(f"report-{serial}", self.rtx_s, partial(self.expire_report_timer, serial))

    def claims(self, lb: int, ub: int) -> list[tuple[int, int]]:
        """Received red data in [lb, ub) as maximal ranges."""
        spans: list[tuple[int, int]] = []
        for off in sorted(self.red):
            a, b = max(lb, off), min(ub, off + len(self.red[off]))
            if a >= b:
                continue
            if spans and spans[-1][1] >= a:
                spans[-1] = (spans[-1][0], max(spans[-1][1], b))
            else:
                spans.append((a, b))
        return spans

    def expire_report_timer(self, i: int) -> None:
        if self.state != "open" or i in self.acked:
            return
        if self.rs_tx[i] <= self.limit:  # 6.8 (a)
            self.rs_tx[i] += 1
            self.tx("ReceiverExpireReportTimer", self.reports[i])
            self.ctx.arm(f"report-{i}", self.rtx_s, lambda: self.expire_report_timer(i))
        else:  # 6.8, 6.19, 7.6
            self.cancel(
                "ReceiverCancelSession",
                "CR",
                "cr_sent",
                f"report retransmission limit {self.limit} exceeded",
            )

    def rx_report_ack(self, seg: LTP) -> None:
        i = int(seg.report_serial)
        self.ctx.log("ReceiverRxReportAck", rx=_unit(seg))  # 6.14
        if self.state == "open" and i in self.reports:
            self.acked.add(i)
            self.ctx.stop(f"report-{i}")

    def red_bytes(self) -> int:
        return sum(len(d) for d in self.red.values())

    def deliver(self) -> None:
        if self.p.red_len == 0:
            return  # no red part, no red-part reception notice (7.3)
        if self.state == "open" and not self.delivered and self.red_bytes() >= self.p.red_len:
            self.delivered = True  # 6.9, 7.3
            self.end("completed", "red part delivered")
            self.ctx.log("ReceiverDeliverRedPart", red_bytes=self.red_bytes())

    def try_close(self) -> None:
        """6.14, 6.20: delivered and every RS acknowledged. The green part's
        end is awaited ``close_wait_s`` (the model may close at any time
        after; waiting lets late green data be delivered)."""
        if self.p.red_len == 0 and self.state == "open" and self.eob:
            # 8.2: a green-only block's EOB; the red part, of zero length, is
            # taken as received, and the session closes with no notice
            self.state = "closed"
            self.end("closed", "green EOB of a green-only block")
            self.ctx.log("ReceiverCloseOnGreenEob")
            self.close()
            return
        if self.state != "open" or not self.delivered or set(self.reports) - self.acked:
            return
        if self.eob:
            self.close_session()
        elif not self.ctx.running("close-wait"):
            self.ctx.arm("close-wait", self.close_wait_s, self.close_session)

    def close_session(self) -> None:
        if self.state == "open":
            self.state = "closed"
            self.ctx.stop("close-wait")
            self.ctx.log("ReceiverCloseSession")
            self.close()

    def result(self) -> dict[str, Any]:
        out = super().result()
        if self.outcome == "completed" and self.state != "closed":
            # MCLTP's ReceiverNotice: the red-part notice (7.3) is not the
            # session's end; one not closed (6.20) when we stopped is open
            out["outcome"] = "open"
        out["red_bytes_delivered"] = self.p.red_len if self.delivered else 0
        out["green_bytes_delivered"] = sum(self.green.values())
        out["green_offsets"] = sorted(self.green)
        out["payload_ok"] = self.payload_ok
        return out


ROLES: dict[str, type[_Side]] = {"sender": LtpSender, "receiver": LtpReceiver}
