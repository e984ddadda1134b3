"""LTP segments as the model's segments, for trace validation
(conformance/tracecheck.py, specs/ltp/TraceLTP.tla).

The model counts data in whole segments (red first). They are cut where
the trace's data segments start and end, and at the scenario's segment
size where the trace sent nothing (_Geometry): an implementation's own
segmentation is followed, so long as each data segment of the trace is one
of them; report bounds and claims must fall on their edges too. Checkpoint and report serial numbers are
renumbered 1, 2, ... in the order the wire first shows them, as the model
numbers them (RFC 5326 asks only that they be distinct, §3.2.1, §3.2.2).
Anything else raises Unrepresentable: the check is then 'unchecked', with
the reason, never a fail.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Hashable, Mapping, Sequence
from functools import cache

from conformance.core import wire
from conformance.core.contract import TraceModel, Unrepresentable, WireEvent, field_int
from conformance.core.types import Scenario, SegmentRecord
from conformance.protocols.ltp import SPEC as LTP
from conformance.protocols.ltp import LtpBlock
from generators.ltp import SPEC_DIR
from generators.ltp.outcomes import parse_outcomes
from generators.tlaval import Record
from generators.traps import action_comments, model_actions

TRACE_SPEC = SPEC_DIR / "TraceLTP.tla"
MODEL = SPEC_DIR / "LTP.tla"

# The definitions of LTP.tla whose disjuncts are actions (or other blocks).
NEXT_BLOCKS = ("SenderNext", "ReceiverNext", "ChannelNext", "ChannelReleaseNext", "Step", "Next")

DATA_TYPES = frozenset({"RD", "RD-CP", "RD-CP-EORP", "RD-CP-EORP-EOB", "GD", "GD-EOB"})
# The actions a timer's expiry takes and that emit (RFC 5326 6.7, 6.8 a,
# 6.15, 6.16; and a stalled session's cancel, IdleCancels).
TIMER_ACTIONS = (
    "SenderExpireCheckpointTimer",
    "SenderCancelSession",
    "SenderExpireCancelTimer",
    "ReceiverExpireReportTimer",
    "ReceiverCancelSession",
    "ReceiverExpireCancelTimer",
    "ReceiverCancelIdleSession",
)

# The model's cancels, by segment type: a retransmission limit exceeded
# (RLEXC) at either side, a receiver refusing a session for an unknown
# client service (UNREACH, 8.2), and one cancelling on a miscolored segment
# (MISCOLORED, 6.21; the trace's model has an honest sender, so a CR with it
# is rejected where the data was colored right; USR_CNCLD, a stalled
# session cancelled under a declared profile, is taken apart below).
MODELLED_REASONS = {
    "CS": frozenset({"RLEXC"}),
    "CR": frozenset({"RLEXC", "UNREACH", "MISCOLORED"}),
}


def _mk(
    t: str,
    off: int = 0,
    cp: int = 0,
    rs: int = 0,
    lb: int = 0,
    ub: int = 0,
    claims: frozenset[int] = frozenset(),
    reason: str = "",
) -> Record:
    """A segment as LTP.tla's record (Mk, ReportSeg, CancelSeg)."""
    return Record(type=t, off=off, cp=cp, rs=rs, lb=lb, ub=ub, claims=claims, reason=reason)


def blank_unit() -> Record:
    """The unit of a line that carries none (exit, end): LTP.tla's NoSeg."""
    return _mk("none")


def session_of(fields: Mapping[str, object]) -> Hashable:
    return (fields.get("session_originator"), fields.get("session_number"))


@cache
def action_sections() -> dict[str, list[str]]:
    """Action -> the RFC 5326 sections its comment in LTP.tla opens with
    ("\\* 6.17, 6.19, 7.6: a CS arrives ..."); none for the model's choices."""
    cite = re.compile(r"^((?:\d+(?:\.\d+)*(?:\s*\([a-z]\))?(?:,\s*|/)?)+):")
    out: dict[str, list[str]] = {}
    for name, comment in action_comments(MODEL).items():
        if c := cite.match(comment):
            out[name] = [x.strip() for x in re.split(r",\s*|/", c.group(1)) if x.strip()]
    return out


class _Geometry:
    """The block's data as the model's segments, cut where this trace's data
    segments start and end: an implementation's own segmentation (ION's
    counts the header in its segment size, so its segments fall at 0, 1000,
    1999, 2998), never a grid it may not share. Where no segment of the
    trace covers a range (never sent), the scenario's segment size cuts it.
    The model counts segments, not bytes: a data segment of the trace is
    one such segment or several consecutive ones sent together (where the
    implementation cut the same bytes otherwise at another time), and every
    report bound and claim must fall on their edges."""

    def __init__(self, block: LtpBlock, spans: Sequence[tuple[int, int]]) -> None:
        self.seg = block.segment_size
        self.red = block.red_len
        self.block = block.block_len
        # LTP.tla's MiscoloredSender: green data at offset 0 (RFC 5326 §6.21)
        self.miscolored = block.miscolored_sender
        cuts = {0, self.red, self.block}
        for a, b in spans:
            cuts |= {a, b}
        # the scenario's grid where the trace says nothing: a grid point
        # inside a segment of the trace is not a cut (the segments merged
        # where they overlap, as open intervals, then searched)
        merged: list[list[int]] = []
        for a, b in sorted(spans):
            if merged and a < merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        starts = [a for a, _ in merged]
        for start, end in ((0, self.red), (self.red, self.block)):
            for c in range(start + self.seg, end, self.seg):
                i = bisect.bisect_left(starts, c) - 1
                if i < 0 or not merged[i][0] < c < merged[i][1]:
                    cuts.add(c)
        edges = sorted(c for c in cuts if 0 <= c <= self.block)
        self.units = list(zip(edges, edges[1:], strict=False))
        self.n_red = sum(1 for a, _ in self.units if a < self.red)
        self.n_green = len(self.units) - self.n_red
        self.start = {a: i for i, (a, _) in enumerate(self.units)}
        self.on_grid = all((a - (0 if a < self.red else self.red)) % self.seg == 0 for a in edges
                           if a not in (self.red, self.block))  # fmt: skip

    def _grid(self) -> str:
        return "" if self.on_grid else (
            " (cut where this trace's data segments start and end: "
            + ", ".join(str(a) for a, _ in self.units[1:]) + ")"
        )  # fmt: skip

    def data_index(self, off: int, length: int, red: bool) -> int:
        i = self.start.get(off)
        if not red and self.miscolored and i == 0 and length == self.units[0][1]:
            return 0  # the model's MiscoloredSeg
        in_part = i is not None and (i < self.n_red) == red
        if i is None or not in_part or self.units[i][1] != off + length:
            raise Unrepresentable(
                f"{'red' if red else 'green'} data [{off}, {off + length}) is not one of the "
                f"block's segments{self._grid()}: it spans or splits them, and the model counts "
                "data in whole segments"
            )
        return i

    def data_pieces(self, off: int, length: int, red: bool) -> list[int]:
        """The model's segments a data segment of the trace carries: one,
        or, where the implementation cut this range differently at another
        time (ION resends 998 bytes and a 1-byte checkpoint where it first
        sent 999), the consecutive ones it spans. Red data only: red data
        is retransmitted (RFC 5326 §6.13), and a retransmission may be cut
        otherwise; green data is sent once, so green that spans or splits
        other green stays unchecked."""
        i = self.start.get(off)
        if i is None or not red or i >= self.n_red:
            return [self.data_index(off, length, red)]  # says why
        out = [i]
        while self.units[out[-1]][1] < off + length and out[-1] + 1 < len(self.units):
            out.append(out[-1] + 1)
        if self.units[out[-1]][1] != off + length or any((k < self.n_red) != red for k in out):
            return [self.data_index(off, length, red)]
        return out

    def bound(self, b: int) -> int:
        if b == self.red:
            return self.n_red
        if b not in self.start or b > self.red:
            raise Unrepresentable(
                f"report bound {b} is not at the edge of a red segment{self._grid()}"
            )
        return self.start[b]

    def claimed(self, lb: int, offs: Sequence[int], lens: Sequence[int]) -> frozenset[int]:
        spans = [(lb + o, lb + o + n) for o, n in zip(offs, lens, strict=False)]
        out = set()
        for i, (lo, hi) in enumerate(self.units[: self.n_red]):
            covered = [max(0, min(hi, b) - max(lo, a)) for a, b in spans]
            total = sum(covered)
            if total == hi - lo:
                out.add(i)
            elif total:
                raise Unrepresentable(
                    f"a reception claim covers part of red segment {i} ([{lo}, {hi})); the "
                    "model claims whole segments"
                )
        return frozenset(out)

    def green_bytes(self, indices: Sequence[int]) -> int:
        """Bytes of the green model segments ``indices``."""
        return sum(self.units[i][1] - self.units[i][0] for i in indices if i < len(self.units))

    def green_offsets(self, indices: Sequence[int]) -> list[int]:
        """Block offsets of the green model segments ``indices`` (the
        miscolored sender's green data at 0 included)."""
        return [self.units[i][0] for i in indices if i < len(self.units)]


def _one_gap_rs_per_report(
    units: Mapping[int, Record], events: Sequence[WireEvent], n_red: int, max_claims: int
) -> None:
    """Refuse a trace the model cannot follow: LTP.tla's sender keeps one
    retransmission and one checkpoint timer at a time, so it is exact only
    while at most one RS of a report (the RSs answering one checkpoint)
    with gaps in its scope has reached the sender. A block of at most three
    red segments, or reports of one RS each, never has two (LTP.tla,
    MaxClaims). The trace is followed up to the second one's arrival."""
    if n_red <= 3 or max_claims >= n_red:
        return
    gaps: dict[int, set[tuple[int, int]]] = {}
    for e in events:
        u = units.get(e.record)
        if e.kind != "arrive" or e.dir != "return" or u is None or u["type"] != "RS":
            continue
        lb, ub, claims = int(u["lb"]), int(u["ub"]), u["claims"]
        assert isinstance(claims, frozenset)
        if not set(range(lb, ub)) - claims:
            continue
        scopes = gaps.setdefault(int(u["cp"]), set())
        scopes.add((lb, ub))
        if len(scopes) > 1:
            shown = ", ".join(f"[{lb}, {ub})" for lb, ub in sorted(scopes))
            raise Unrepresentable(
                f"the sender got {len(scopes)} RSs answering checkpoint {u['cp']} that leave "
                f"gaps (model segments {shown}); the model's sender answers one at a time "
                "(specs/ltp/LTP.tla, MaxClaims)",
                at=e.t,
            )


def _ints(v: object) -> list[int]:
    if isinstance(v, list):
        return [int(x) for x in v]
    return [] if v is None else [field_int(v)]


def trace_model(
    scn: Scenario,
    records: Sequence[SegmentRecord],
    index: Sequence[int],
    events: Sequence[WireEvent],
) -> TraceModel:
    """The model's segment for each record of one session (``index`` gives
    each record's number in the run), and the TLC constants."""
    block = scn.params
    assert isinstance(block, LtpBlock)
    geo = _Geometry(
        block,
        [
            (
                field_int(r.fields["offset"]),
                field_int(r.fields["offset"]) + field_int(r.fields["length"]),
            )
            for r in records
            if str(r.fields.get("type", "")) in DATA_TYPES
        ],
    )
    reasons = wire.names("ltp", "cancel_reasons")
    cps: dict[int, int] = {}
    rss: dict[int, int] = {}

    def serial(table: dict[int, int], wire_serial: object, fresh: bool) -> int:
        s = field_int(wire_serial)
        if s not in table:
            # A serial first seen where it is only referred to maps to a
            # number the model never uses (it is then, rightly, unknown).
            table[s] = len(table) + 1 if fresh else 100_000 + len(table)
        return table[s]

    # Serial numbers in the order the sending side first shows them.
    mine = set(index)
    sends = sorted((e for e in events if e.kind == "send" and e.record in mine), key=lambda e: e.t)
    pos = {r: k for k, r in enumerate(index)}
    for e in sends:
        f = records[pos[e.record]].fields
        if f.get("checkpoint") and e.dir == "forward":
            serial(cps, f.get("checkpoint_serial"), True)
        if f.get("type") == "RS" and e.dir == "return":
            serial(rss, f.get("report_serial"), True)

    units: dict[int, Record] = {}
    pieces: dict[int, list[Record]] = {}
    for k, rec in zip(index, records, strict=True):
        f = rec.fields
        t = str(f.get("type", ""))
        where = f"{rec.summary or t} (frame {rec.frame})"
        if t in DATA_TYPES:
            red = bool(f.get("red"))
            *inner, o = geo.data_pieces(field_int(f["offset"]), field_int(f["length"]), red)
            if inner:
                # the segment's flags (checkpoint, EORP, EOB) are its last
                # byte's: the pieces before the last are plain data
                pieces[k] = [_mk("RD" if red else "GD", i) for i in inner]
            if f.get("checkpoint"):
                units[k] = _mk(
                    t,
                    o,
                    cp=serial(cps, f.get("checkpoint_serial"), False),
                    rs=serial(rss, f.get("report_serial"), False)
                    if field_int(f.get("report_serial") or 0)
                    else 0,
                )
            else:
                units[k] = _mk(t, o)
            if k in pieces:
                pieces[k].append(units[k])
        elif t == "RS":
            lb, ub = field_int(f["lower_bound"]), field_int(f["upper_bound"])
            units[k] = _mk(
                "RS",
                cp=serial(cps, f.get("checkpoint_serial"), False),
                rs=serial(rss, f.get("report_serial"), False),
                lb=geo.bound(lb),
                ub=geo.bound(ub),
                claims=geo.claimed(lb, _ints(f.get("claim.offset")), _ints(f.get("claim.length"))),
            )
        elif t == "RA":
            units[k] = _mk("RA", rs=serial(rss, f.get("report_serial"), False))
        elif t in ("CS", "CR"):
            code = f.get("reason")
            name = reasons.get(code) if isinstance(code, int) else None
            # USR_CNCLD from a receiver whose declared profile cancels a
            # stalled session (ReceiverCancelIdleSession)
            idle = t == "CR" and name == "USR_CNCLD" and block.receiver_cancels_idle
            if name not in MODELLED_REASONS[t] and not idle:
                raise Unrepresentable(
                    f"{where} cancels with reason {name or code}; the model cancels only when a "
                    "retransmission limit is exceeded (RLEXC), or, at the receiver, when the "
                    "client service is unknown (UNREACH), a segment is miscolored (MISCOLORED) "
                    "or, under a declared profile (receiver_cancels_idle), a session stalls "
                    "(USR_CNCLD)"
                )
            units[k] = _mk(t, reason=str(name))
        elif t in ("CAS", "CAR"):
            units[k] = _mk(t)
        else:
            raise Unrepresentable(f"{where}: segment type {t or '?'} is not in the model")
    _one_gap_rs_per_report(units, events, geo.n_red, block.max_claims_per_rs)
    # a lost frame that carries several model segments loses each of them
    losses = sum(len(pieces.get(e.record, [0])) for e in events if e.kind == "lose")
    return TraceModel(
        module=TRACE_SPEC,
        constants={
            "NRed": geo.n_red,
            "NGreen": geo.n_green,
            "MaxRetx": block.retransmission_limit,
            "MaxLoss": losses,
            # duplicates in the trace are restored copies (TraceLTP), no budget
            "MaxLate": 0,
            "LinkCues": False,
            "MaxOutages": 0,
            "PrematureTimeouts": True,
            "FaultyReceiver": False,
            "MiscoloredSender": block.miscolored_sender,
            "MaxClaims": block.max_claims_per_rs,
            "ServiceKnown": block.service_at_receiver == block.client_service_id,
            "IdleCancels": block.receiver_cancels_idle,
            # the default reading of each question (tracecheck tries the others)
            **LTP.reading_constants(""),
        },
        units=units,
        pieces=pieces,
        actions=model_actions(MODEL, NEXT_BLOCKS),
        sections=action_sections(),
        overrides={
            "Arrivals": "TraceArrivals",
            "Losable": "TraceLosable",
            "OwesAfter": "RsOwes",
            "OwesMet": "RsMet",
            "OnTheWay": "AnyOnTheWay",
            "AsksFor": "NoneAsked",
            "OwnLineOnly": "NoneOwnLineOnly",
        },
        # TraceLTP's EndReport prints OutcomeLine, as MCLTPOutcomes' Report does
        end_outcomes=functools.partial(
            parse_outcomes, block=block, green_of=geo.green_bytes, green_at=geo.green_offsets
        ),
        # RFC 5326 6.19: on cancel, the session's queued segments "can be
        # deleted"; the actions that invoke it cite it
        purging=sorted(a for a, secs in action_sections().items() if "6.19" in secs),
        # an engine sends what a timer made when the timer fires: an expiry
        # is held to the actor's next sends (TraceCore's SentSoon), or the
        # model could fire a timer early and leave its copy waiting
        foreseeable=TIMER_ACTIONS,
    )
