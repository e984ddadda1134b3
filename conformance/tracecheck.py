"""Trace validation: a run's captures, as a trace, checked by TLC against the
protocol's model. Protocol-free; a protocol takes part through its
generator module's ``trace_model`` (how its segments read as the model's
units, which TLA+ module checks them) and ``session_of``.

The method is that of Cirstea, Kuppe, Merz et al. (2024), as in
tlaplus/Examples EWD998ChanTrace.tla: the trace is written as NDJSON, one
line per wire event, and as a TLA+ module of the same lines; TLC explores the
model constrained line by line (specs/trace/TraceCore.tla says how), with the
cursor in the state. A trace is accepted when TLC reaches a state past the
last line. Otherwise the furthest line any behaviour reached is the
deviation; a second TLC pass prints what the model could do there.

Events, from the two captures (A: the sender's side, B: the receiver's) and
the channel's decisions (conformance.segments):
    send    a segment the capture of its sending side shows leaving
    arrive  the same bytes in the other side's capture
    lose    the channel dropped it (or corrupted it past its checksum)
    exit    an endpoint's process ended (the runner records when)
    end     the captures end
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from conformance import protocols, timers
from conformance.core.contract import TlaConstant, TraceModel, Unrepresentable, WireEvent
from conformance.core.errors import DtncError
from conformance.core.types import ExpectedOutcome, Scenario, SegmentRecord, TraceCheck
from conformance.segments import Datagram, datagrams, sender_address

if TYPE_CHECKING:
    from conformance.core.capabilities import TraceModels

REPO_ROOT = Path(__file__).resolve().parent.parent
CORE = REPO_ROOT / "specs" / "trace" / "TraceCore.tla"

# The reaction window: an endpoint processes what reached it, and puts its
# answer on the wire, within its declared processing time (its profile's
# processing-ms; this where it declares none) stretched by the machine's
# load during the run (conformance.loadprobe). It stays below half the
# scenario's smallest retransmission timer, so that a late answer is never
# taken for a timer's retransmission or the other way round (windows_ms).
DEFAULT_PROCESSING_MS = 250.0

# TLC time one run's trace validation may take, in seconds
# (DTNC_TRACE_BUDGET_S overrides). The first pass runs whole; a later one
# is stopped at the budget, and none starts past it: the trace is then
# "unchecked", with the passes run and the furthest line. A typical trace takes seconds; a
# 98-PDU CFDP file with 16 losses took 100 s per pass, and a campaign's
# run has its own timeout.
TRACE_BUDGET_S = 300.0


class _OverBudget(Exception):
    """The budget ran out with passes still to run."""

    def __init__(self, passes: int, furthest: int) -> None:
        super().__init__(passes, furthest)
        self.passes, self.furthest = passes, furthest


class _Clock:
    """The validation's TLC time against its budget."""

    def __init__(self, budget_s: float) -> None:
        import time

        self.budget_s = budget_s
        self.start = time.monotonic()
        self.passes, self.furthest = 0, 0

    def run(self, res: _Pass) -> _Pass:
        """Count a pass that ran."""
        self.passes += 1
        self.furthest = max(self.furthest, res.furthest)
        return res

    def left(self) -> float | None:
        """Seconds the pass about to start may take (None: the first pass,
        which always runs whole, or no budget); _OverBudget once spent."""
        import math
        import time

        if not self.passes or math.isinf(self.budget_s):
            return None
        left = self.budget_s - (time.monotonic() - self.start)
        if left <= 0:
            raise _OverBudget(self.passes, self.furthest)
        return left


_RANK = {"send": 0, "lose": 1, "arrive": 2, "exit": 3, "end": 4}


def _frames(pcap: Path, port: int) -> list[Datagram]:
    """The capture's datagrams on ``port`` (conformance.segments.datagrams);
    a frame cut short makes the trace unrepresentable."""
    out = datagrams(pcap, port)
    cut = next(((d.number, d.cut) for d in out if d.cut), None)
    if cut is not None:
        number, (have, whole) = cut
        raise Unrepresentable(
            f"{pcap.name} is truncated: frame {number} has {have} of its {whole} bytes"
        )
    return out


# A segment the channel corrupted: (its record's index, the record, the
# datagram sent, the sending side, the other side, the sending actor)
_Corrupted = tuple[int, SegmentRecord, Datagram, str, str, str]


def wire_events(
    records: Sequence[SegmentRecord],
    a_pcap: Path,
    b_pcap: Path,
    *,
    port: int,
    ip_a: str | None,
    exits: Mapping[str, float | None],
    window_s: float,
    skip: frozenset[bytes] = frozenset(),
) -> list[WireEvent]:
    """The run's events in time order. Raises Unrepresentable for a capture
    that cannot be read as sends, arrivals and losses (an arrival no send
    explains, a delivered segment the other side never captured)."""
    frames = {
        side: [f for f in _frames(pcap, port) if f.payload not in skip]
        for side, pcap in (("a", a_pcap), ("b", b_pcap))
    }
    by_number = {side: {f.number: f for f in fs} for side, fs in frames.items()}
    if ip_a is None:
        ip_a = _sender_address(records, by_number["a"])
    # Arrivals at each side, by payload, oldest first (sent by the other side).
    arrivals: dict[str, dict[bytes, list[Datagram]]] = {
        "a": defaultdict(list),
        "b": defaultdict(list),
    }
    for side, fs in frames.items():
        for f in fs:
            if (f.src == ip_a) == (side == "b"):
                arrivals[side][f.payload].append(f)
    events: list[WireEvent] = []
    corrupted: list[_Corrupted] = []
    lost: list[tuple[Datagram, str]] = []
    for i, rec in enumerate(records):
        side = "a" if rec.direction == "forward" else "b"
        other = "b" if side == "a" else "a"
        actor = "sender" if side == "a" else "receiver"
        sent = by_number[side].get(rec.frame)
        if sent is None:
            raise Unrepresentable(f"frame {rec.frame} of {side}.pcap is not in the capture")
        events.append(WireEvent("send", sent.t, rec.direction, actor, i, side, rec.frame))
        if rec.dropped:
            events.append(WireEvent("lose", sent.t, rec.direction, "channel", i, side, rec.frame))
            lost.append((sent, other))
        elif rec.corrupted:
            corrupted.append((i, rec, sent, side, other, actor))
        else:
            events += _arrivals_of(i, rec, sent, side, other, actor, arrivals[other][sent.payload])
    events += _corrupted_arrivals(corrupted, arrivals)
    # A segment the channel corrupted and left with a wrong UDP checksum is
    # lost (the receiving stack discards it), yet the other side's capture,
    # taken before that check, shows it: a datagram left over there, no
    # earlier than a lost segment was sent, of its length and a few flipped
    # bits from it, is that segment, and no arrival.
    for sent, other in lost:
        _flipped_copy(arrivals[other], sent)
    extra = [f for side in arrivals for q in arrivals[side].values() for f in q]
    if extra:
        f = min(extra, key=lambda x: x.t)
        raise Unrepresentable(
            f"{len(extra)} arriving datagram(s) match no sent segment, the first frame "
            f"{f.number} (injected, or duplicated where the channel's log says not; the "
            "model's channel invents no segments)"
        )
    return _ended(events, exits, window_s)


def _sender_address(records: Sequence[SegmentRecord], sent_at_a: Mapping[int, Datagram]) -> str:
    """A stored run's sender address (:func:`conformance.segments.sender_address`)."""
    src = sender_address(records, sent_at_a)
    if src is None:
        raise Unrepresentable("a.pcap shows no segment the sender sent")
    return src


def _arrivals_of(
    i: int,
    rec: SegmentRecord,
    sent: Datagram,
    side: str,
    other: str,
    actor: str,
    queue: list[Datagram],
) -> list[WireEvent]:
    """The arrivals of a segment the channel delivered, taken from ``queue``
    (the other side's datagrams of its payload, oldest first)."""
    events = []
    # a duplicated segment arrives twice (TraceLTP restores the copy)
    for _copy in range(rec.copies):
        k = next((j for j, f in enumerate(queue) if f.t >= sent.t - 1e-3), None)
        if k is None:
            raise Unrepresentable(
                f"{rec.summary or 'segment'} (frame {rec.frame} of {side}.pcap) was not "
                f"dropped by the channel, yet {other}.pcap never shows "
                + ("its copy arriving" if _copy else "it arriving")
            )
        got = queue.pop(k)
        events.append(WireEvent("arrive", got.t, rec.direction, actor, i, other, got.number))
    return events


def _corrupted_arrivals(
    corrupted: Sequence[_Corrupted], arrivals: Mapping[str, dict[bytes, list[Datagram]]]
) -> list[WireEvent]:
    """A corrupted segment arrives changed: the first datagram left over at
    the other side, no earlier than it was sent, of its length and a few
    flipped bits from it."""
    events = []
    for i, rec, sent, side, other, actor in corrupted:
        got = _flipped_copy(arrivals[other], sent)
        if got is None:
            raise Unrepresentable(
                f"{rec.summary or 'segment'} (frame {rec.frame} of {side}.pcap) was corrupted "
                f"by the channel, yet {other}.pcap never shows it arriving"
            )
        events.append(
            WireEvent("arrive", got.t, rec.direction, actor, i, other, got.number, corrupt=True)
        )
    return events


def _ended(
    events: list[WireEvent], exits: Mapping[str, float | None], window_s: float
) -> list[WireEvent]:
    """The events with each endpoint's exit and the captures' end, sorted."""
    last = max((e.t for e in events), default=0.0)
    for actor in ("sender", "receiver"):
        t = exits.get(actor)
        if t is None:
            # Unknown exit: the process may have ended once it last sent.
            mine = [e.t for e in events if e.kind == "send" and e.actor == actor]
            t = (max(mine) + window_s) if mine else None
        if t is not None:
            events.append(WireEvent("exit", t, actor=actor))
    events.append(WireEvent("end", max([last, *(e.t for e in events)]) + window_s))
    events.sort(key=lambda e: (e.t, _RANK[e.kind]))
    return events


def _flipped_copy(arrivals: dict[bytes, list[Datagram]], sent: Datagram) -> Datagram | None:
    """Take from ``arrivals`` (payload -> datagrams left over at the other
    side) the first that arrived no earlier than ``sent`` was sent, of its
    length and a few flipped bits from it; None if there is none."""
    like = [
        f
        for q in arrivals.values()
        for f in q
        if f.t >= sent.t - 1e-3
        and len(f.payload) == len(sent.payload)
        and _bits_apart(f.payload, sent.payload) <= 64
    ]
    if not like:
        return None
    got = min(like, key=lambda f: f.t)
    arrivals[got.payload].remove(got)
    return got


def _bits_apart(a: bytes, b: bytes) -> int:
    return sum(bin(x ^ y).count("1") for x, y in zip(a, b, strict=True))


def _as_modelled(
    events: Sequence[WireEvent], tm: TraceModel, records: Sequence[SegmentRecord]
) -> list[WireEvent]:
    """The events as the model reads them: a corrupted arrival the model
    takes as a loss (``tm.arrived`` None) becomes a "lose" line; one the
    trace model does not say how to read is unrepresentable."""
    out: list[WireEvent] = []
    for e in events:
        if e.corrupt:
            if e.record not in tm.arrived:
                rec = records[e.record]
                raise Unrepresentable(
                    f"{rec.summary or 'a segment'} (frame {rec.frame}) arrived corrupted, "
                    "which the model cannot express"
                )
            if tm.arrived[e.record] is None:
                e = replace(e, kind="lose", actor="channel", corrupt=False)
        out.append(e)
    out.sort(key=lambda e: (e.t, _RANK[e.kind]))
    return out


def _ndjson_line(e: WireEvent, t0: float, unit: Any) -> dict[str, Any]:
    from generators.tlaval import to_json

    line: dict[str, Any] = {"kind": e.kind, "t_us": round((e.t - t0) * 1e6)}
    if e.dir:
        line["dir"] = e.dir
    if e.actor:
        line["actor"] = e.actor
    if e.side:
        line |= {"side": e.side, "frame": e.frame}
    if unit is not None:
        line["unit"] = to_json(unit)
    return line


class _Unit(NamedTuple):
    """A distinct unit of a trace: its shape's number (0: not a record),
    its values, and their TLA+ texts."""

    shape: int
    values: tuple[Any, ...]
    texts: tuple[str, ...]

    @staticmethod
    def of(unit: Any, shapes: dict[tuple[str, ...], int]) -> _Unit:
        from generators.tlaval import Function

        if isinstance(unit, Mapping) and not isinstance(unit, Function) and unit:
            values = tuple(unit.values())
            shape = shapes.setdefault(tuple(unit), len(shapes) + 1)
        else:
            values, shape = (unit,), 0
        return _Unit(shape, values, tuple(_value_text(v) for v in values))

    def text(self, texts: Sequence[str] | None = None) -> str:
        """As TLA+ text. A record is written as its shape's constructor
        applied to a tuple of its values (``U1(<<"RD", 0, ...>>)``), so that
        its field names are not repeated on every unit."""
        texts = self.texts if texts is None else texts
        return f"U{self.shape}(<<" + ", ".join(texts) + ">>)" if self.shape else texts[0]


def _value_text(v: Any) -> str:
    """A unit's value as TLA+ text; a set of consecutive integers, such as
    an RS's claims of a whole block, as an interval (a..b)."""
    from generators.tlaval import format_value

    if isinstance(v, frozenset | set) and len(v) >= 4 and all(type(x) is int for x in v):
        lo, hi = min(v), max(v)
        if hi - lo + 1 == len(v) and lo >= 0:
            return f"{lo}..{hi}"
    return format_value(v)


def _stepping(a: _Unit, b: _Unit) -> int | None:
    """The field in which record unit b is a's value plus one, all others
    the same; None if there is no such field."""
    if not a.shape or a.shape != b.shape:
        return None
    diff = [i for i, (x, y) in enumerate(zip(a.texts, b.texts, strict=True)) if x != y]
    if len(diff) != 1:
        return None
    x, y = a.values[diff[0]], b.values[diff[0]]
    return diff[0] if type(x) is int and type(y) is int and y == x + 1 else None


_RUN = 4  # the shortest run of units written as a function


def _units_text(units: Sequence[_Unit]) -> str:
    """The trace's distinct units, in order, as one TLA+ sequence.  A run of
    units of one shape that differ only in one integer field, one more each
    time (the segments of a block, offset by offset), is written as a
    function of i; the rest as tuple literals, joined with \\o.  A long
    trace is mostly such runs, and SANY parses a function once where it
    would parse thousands of records: about half of TLC's start-up on a
    10 MB block."""
    pieces: list[str] = []
    literal: list[str] = []
    j = 0
    while j < len(units):
        field = _stepping(units[j], units[j + 1]) if j + 1 < len(units) else None
        k = 2
        while field is not None and j + k < len(units):
            if _stepping(units[j + k - 1], units[j + k]) != field:
                break
            k += 1
        if field is None or k < _RUN:
            literal.append(units[j].text())
            j += 1
            continue
        if literal:
            pieces.append("<<" + ", ".join(literal) + ">>")
            literal = []
        u = units[j]
        first = u.values[field] - 1
        index = "i" if first == 0 else f"i + {first}" if first > 0 else f"i - {-first}"
        texts = [index if n == field else x for n, x in enumerate(u.texts)]
        pieces.append(f"[i \\in 1..{k} |-> {u.text(texts)}]")
        j += k
    if literal or not pieces:
        pieces.append("<<" + ", ".join(literal) + ">>")
    return " \\o\n    ".join(pieces)


def _data_module(
    lines: Sequence[dict[str, Any]],
    units: Sequence[Any],
    window_us: int,
    actions: Sequence[str],
    blank: Any,
    purging: Sequence[str] = (),
    hold_us: Mapping[str, int] | None = None,
    foreseeable: Sequence[str] = (),
    on_demand: Sequence[str] = (),
    lazy_arrivals: bool = False,
    *,
    sends_after: int = 0,
    hold_ends_us: Mapping[str, tuple[int, int]] | None = None,
) -> str:
    """The TLA+ module of the trace (TraceCore's Units, LineKinds,
    TraceKind, TraceUnit, TraceTime, Window, Hold, HoldEnds, SendsLeft, Foreseeable,
    OnDemand, LazyArrivals, NextSend: written only where Foreseeable has
    actions) and the diagnosis
    constants, but for the two that change from one TLC pass to the next
    (DiagLine, Eager: _Session.data) and the module's end.

    What SANY parses and TLC evaluates at start-up is most of a long trace's
    cost, so the text is compact: each distinct unit is written once
    (Units, with runs as functions: _units_text), each distinct
    kind/direction/actor once (LineKinds), and the lines as three sequences
    of numbers: their kinds, units and times.

    ``sends_after``: the trace is a prefix, cut before what the model
    cannot express (_modelled), and the run sent that many segments after
    it: a step may leave as many more waiting to be sent (SendsLeft)."""
    shapes: dict[tuple[str, ...], int] = {}
    ids: dict[str, int] = {}
    distinct: list[_Unit] = []
    kinds: dict[tuple[str, str, str], int] = {}
    row_kinds, row_units, row_times = [], [], []
    for line, unit in zip(lines, units, strict=True):
        u = _Unit.of(blank if unit is None else unit, shapes)
        key = u.text()
        if key not in ids:
            ids[key] = len(ids) + 1
            distinct.append(u)
        k = kinds.setdefault(
            (line["kind"], line.get("dir", ""), line.get("actor", "")), len(kinds) + 1
        )
        row_kinds.append(str(k))
        row_units.append(str(ids[key]))
        row_times.append(str(line["t_us"]))
    left = [sends_after]
    for line in reversed(lines):
        left.append(left[-1] + (line["kind"] == "send"))
    sends_left = ", ".join(map(str, reversed(left)))
    next_send = {"forward": "", "return": ""}
    if foreseeable:
        for d in next_send:
            nxt = [len(lines) + 1]
            for i in range(len(lines), 0, -1):
                line = lines[i - 1]
                nxt.append(i if line["kind"] == "send" and line.get("dir") == d else nxt[-1])
            next_send[d] = ", ".join(map(str, reversed(nxt[1:])))
    names = ", ".join(f'"{a}"' for a in actions)
    ctors = [
        f"U{n}(v) == [" + ", ".join(f"{f} |-> v[{i}]" for i, f in enumerate(fs, 1)) + "]"
        for fs, n in shapes.items()
    ]
    line_kinds = ", ".join(f'[k |-> "{k}", d |-> "{d}", a |-> "{a}"]' for k, d, a in kinds)
    return "\n".join(
        [
            "---- MODULE TraceData ----",
            "\\* Written by conformance/tracecheck.py for one run: the trace as TLA+.",
            "EXTENDS Naturals, Sequences, TLC",
            *ctors,
            "Units ==\n    " + _units_text(distinct),
            f"LineKinds == <<{line_kinds}>>",
            f"TraceKind == <<{', '.join(row_kinds)}>>",
            f"TraceUnit == <<{', '.join(row_units)}>>",
            f"TraceTime == <<{', '.join(row_times)}>>",
            f"Window == {window_us}",
            "Hold == ["
            + ", ".join(f"{a} |-> {int((hold_us or {}).get(a, 0))}" for a in ("sender", "receiver"))
            + "]",
            "HoldEnds == ["
            + ", ".join(
                f"{a} |-> <<{', '.join(map(str, (hold_ends_us or {}).get(a, (0, _NEVER))))}>>"
                for a in ("sender", "receiver")
            )
            + "]",
            f"SendsLeft == <<{sends_left}>>",
            f"ActionNames == {{{names}}}",
            "Purging == {" + ", ".join(f'"{a}"' for a in purging) + "}",
            "Foreseeable == {" + ", ".join(f'"{a}"' for a in foreseeable) + "}",
            "OnDemand == {" + ", ".join(f'"{a}"' for a in on_demand) + "}",
            f"LazyArrivals == {'TRUE' if lazy_arrivals else 'FALSE'}",
            "NextSend == [" + ", ".join(f"{d} |-> <<{v}>>" for d, v in next_send.items()) + "]",
        ]
    )


def _cfg(
    constants: Mapping[str, TlaConstant],
    invariants: Sequence[str],
    overrides: Mapping[str, str],
) -> str:
    from generators.tlc import tla_value

    lines = ["\\* Trace validation (conformance/tracecheck.py).", "CONSTANTS"]
    lines += [f"    {k} = {tla_value(v)}" for k, v in constants.items()]
    lines += [f"    {k} <- {v}" for k, v in overrides.items()]
    lines += ["SPECIFICATION TraceSpec", "VIEW TraceView", f"INVARIANTS {' '.join(invariants)}"]
    return "\n".join([*lines, ""])


_FURTHEST = re.compile(r'<<"dtnc-trace-line", (\d+)>>')


@dataclass
class _Pass:
    accepted: bool
    furthest: int
    states: int | None
    seconds: float
    diag: list[Any] = field(default_factory=list)
    # some state's next line was held back by a deadline (TraceCore's Hurried)
    hurried: bool = False
    # the outcomes at the trace's end (a pass that explored to it)
    ends: list[ExpectedOutcome] = field(default_factory=list)


def _run(
    tm: TraceModel,
    data: str,
    workdir: Path,
    invariants: Sequence[str],
    tag: str,
    clock: _Clock | None = None,
) -> _Pass:
    """One TLC pass; under ``clock``, counted, and cut at its budget
    (_OverBudget) unless it is the first."""
    from generators.tlc import TlcTimeout, printed, run_tlc

    timeout = clock.left() if clock is not None else None
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / f"TraceData_{tag}.tla").write_text(data, encoding="utf-8")
    cfg = workdir / f"{tm.module.stem}_{tag}.cfg"
    cfg.write_text(_cfg(tm.constants, invariants, tm.overrides), encoding="utf-8")
    try:
        res = run_tlc(
            tm.module,
            cfg,
            workers=1,
            workdir=workdir,
            extra_args=["-deadlock"],
            extra_modules={"TraceData": data, "TraceCore": CORE.read_text(encoding="utf-8")},
            short=True,
            timeout_s=timeout,
        )
    except TlcTimeout as cut:
        assert clock is not None
        # the line the cut pass had reached counts too
        if cut.log_path is not None and cut.log_path.exists():
            got = _FURTHEST.findall(cut.log_path.read_text(encoding="utf-8", errors="replace"))
            clock.furthest = max([clock.furthest, *map(int, got)])
        raise _OverBudget(clock.passes, clock.furthest) from None
    if res.errors and not res.violated:
        first = "; ".join(res.errors).splitlines()
        raise DtncError(f"TLC failed on the trace: {' '.join(first[:3])} (log: {res.log_path})")
    text = res.log_path.read_text(encoding="utf-8")
    furthest = max((int(m) for m in _FURTHEST.findall(text)), default=1)
    diag = printed(text, "dtnc-trace-diag")
    accepted = '"dtnc-trace-accepted"' in text
    hurried = '"dtnc-trace-deadline"' in text
    ends = (
        tm.end_outcomes(text) if accepted and tm.end_outcomes and "EndReport" in invariants else []
    )
    out = _Pass(accepted, furthest, res.distinct_states, res.seconds, diag, hurried, ends)
    return clock.run(out) if clock is not None else out


def _ms(t_us: int) -> str:
    return f"{t_us / 1000:.1f} ms"


def _describe_unit(unit: Any) -> str:
    if isinstance(unit, Mapping):
        return str(unit.get("type", "?"))
    return str(unit)


def _pend(d: Any) -> Mapping[Any, Any]:
    """The emissions waiting in diagnosis state ``d`` (<<>> when none)."""
    return d[2] if isinstance(d[2], Mapping) else {}


def _owes(d: Any) -> Mapping[Any, Any]:
    """The obligations open in diagnosis state ``d`` (TraceCore's owes:
    <<dir, unit>> -> [due, at, ...]; <<>> when none)."""
    return d[6] if len(d) > 6 and isinstance(d[6], Mapping) else {}


# TraceCore's Never: an obligation not timed yet
_NEVER = 2147483647


def _lapsed(
    d: Any, t: int, window_us: int, hold: Mapping[str, int], exiting: str | None = None
) -> list[tuple[tuple[str, Any], Mapping[str, int]]]:
    """The obligations lapsed in diagnosis state ``d`` at a line at ``t``:
    due before ``t``, or, at an exit (``exiting``: the actor; "" at the
    trace's end, every actor), fallen due more than Window before it
    (TraceCore's OwesAtExit)."""
    out = []
    for (d_, u), o in _owes(d).items():
        who = _owing(d_)
        at_exit = (
            exiting is not None
            and exiting in ("", who)
            and o["due"] != _NEVER
            and o["due"] - hold.get(who, 0) < t
        )
        if o["due"] < t or at_exit:
            out.append(((d_, u), o))
    return out


def _owed(
    d: Any, t: int, window_us: int, hold_us: Mapping[str, int], exiting: str | None = None
) -> int:
    """Overdue answers in diagnosis state ``d`` at time ``t``: arrivals left
    unprocessed past the actor's window, emissions due before ``t``,
    obligations lapsed there."""
    inq, pend = d[1], _pend(d)
    late = sum(1 for who, q in inq.items() if q and q[0]["t"] + window_us + hold_us.get(who, 0) < t)
    lapsed = len(_lapsed(d, t, window_us, hold_us, exiting))
    unsent = sum(len(_unsent_at_exit(d_, dues, exiting)) for (d_, _u), dues in pend.items())
    return late + lapsed + unsent + sum(1 for dues in pend.values() for x in dues if x < t)


def _owing(d_: str) -> str:
    """The actor that sends in direction ``d_`` (TraceCore's Owing)."""
    return "sender" if d_ == "forward" else "receiver"


def _unsent_at_exit(d_: str, dues: Sequence[int], exiting: str | None) -> list[int]:
    """The emissions in direction ``d_`` with no deadline (TraceCore's
    Never) that an actor exiting there (``exiting``: the actor; "" at the
    trace's end, every actor) made and can no longer send (TraceCore's
    exit and end lines)."""
    if exiting is None or exiting not in ("", _owing(d_)):
        return []
    return [x for x in dues if x == _NEVER]


def _made_by(d: Any) -> Mapping[Any, Any]:
    """<<dir, unit>> -> <<action, answer?>> in diagnosis state ``d``: the
    model's action that made each waiting emission (TraceCore's madeBy)."""
    return d[5] if isinstance(d[5], Mapping) else {}


def _queued(d: Any) -> int:
    """Arrivals not processed yet in diagnosis state ``d``."""
    return sum(len(q) for q in d[1].values())


def _diagnose(
    tm: TraceModel,
    lines: Sequence[dict[str, Any]],
    bad: int,
    diag: Sequence[Any],
    window_us: int,
    label: Callable[[int], str],
    spec: str,
    tester: str | None = None,
    hold_ends_us: Mapping[str, tuple[int, int]] | None = None,
) -> tuple[str, list[str], list[str], str, list[str], bool]:
    """Message, enabled actions, blamed actions, rule, tags for line
    ``bad`` (1-based), and whether the rejection is something owed and not
    sent in time (an answer, an emission, a request's obligation).

    Each diagnosis state (one that reached the line) gives the model's
    enabled actions, the arrivals not processed yet, the emissions not yet on
    the wire and its last step. The blame goes, in this order, to: an arrival
    left unanswered past the window (the actions that could process it), an
    emission that never appeared (the action that made it), or, for a
    segment the implementation sent, what the model's same actor did last
    instead; the rule is those actions' sections. The role our
    model-driven ``tester`` played takes the model's steps, so its actions
    are blamed only when nothing of the implementation's role is (then the
    judge makes the run our error, not the implementation's fail)."""
    describe: Callable[[Any], str] = (
        (lambda u: tm.describe(u) if isinstance(u, Mapping) else str(u))  # type: ignore[misc]
        if tm.describe
        else _describe_unit
    )
    line = lines[bad - 1]
    t = line["t_us"]
    actor = line.get("actor", "")
    kind = line["kind"]
    exiting = actor if kind == "exit" else "" if kind == "end" else None
    diag = _best_states(diag, t, window_us, tm.hold_us, exiting)
    enabled: list[str] = sorted({a for d in diag for a in d[0]})

    def request(at: int, who: str) -> str:
        """The line (and frame) of the request that reached ``who`` at ``at``."""
        toward = "forward" if who == "receiver" else "return"
        for i, ln in enumerate(lines, 1):
            if ln["t_us"] == at and ln["kind"] == "arrive" and ln.get("dir") == toward:
                return f"line {i}, {label(i)}"
        return f"at {_ms(at)}"

    overdue, blame = _overdue(diag, t, window_us, tm.hold_us, describe, request, exiting)
    if kind == "end":
        where = f"the trace's end ({_ms(t)})"
    elif kind == "exit":
        where = f"the {actor}'s exit ({_ms(t)})"
    else:
        where = f"line {bad}, {label(bad)} at {_ms(t)}"
    stopped = _stopped_after_resume(tm, lines, t, enabled, window_us, hold_ends_us or {})
    if overdue:
        why = "; ".join(dict.fromkeys(overdue))
    elif stopped:
        why, blamed = stopped
        blame += blamed
    elif kind == "send":
        why, blamed = _unexplained_send(line, actor, diag, describe)
        blame += blamed
    elif kind == "arrive":
        why = "no behaviour of the model lets this arrive here"
    elif kind in ("exit", "end"):
        who = [actor] if kind == "exit" else ["sender", "receiver"]
        steps = sorted({a for a in enabled if any(a.lower().startswith(w) for w in who)})
        named = [w for w in who if any(a.lower().startswith(w) for a in steps)] or who
        why = (
            f"the model's {' or '.join(named)} still had a step to take at once from what it "
            "held (a prompt step: its trace module lists them), so it cannot stop here"
            + (f"; its steps there: {', '.join(steps)}" if steps else "")
        )
        blame += steps
    if not blame:
        blame = [a for a in enabled if not a.startswith("Channel")]
    if tester:
        theirs = [a for a in blame if not a.lower().startswith(tester)]
        blame = theirs or blame
    rule, tags = _rule_of(tm, spec, blame)
    if stopped and not rule:
        # the model's resume rule (TraceModel.carries_on): no section to cite
        rule = f"{spec}: a resumed transaction carries on (the model cites no § for suspension)"
    message = (
        f"the model cannot take {where}: {why}. Actions the model could take there: "
        f"{', '.join(enabled) or 'none'}"
    )
    return message, enabled, list(dict.fromkeys(blame)), rule, tags, bool(overdue or stopped)


def _stopped_after_resume(
    tm: TraceModel,
    lines: Sequence[dict[str, Any]],
    t: int,
    enabled: Sequence[str],
    window_us: int,
    hold_ends_us: Mapping[str, tuple[int, int]],
) -> tuple[str, list[str]] | None:
    """Why a line at ``t`` is not taken, where an actor whose user resumed
    it (TraceModel.hold_ends) could still carry on (``tm.carries_on``
    enabled) and the trace shows no send of its between the resume's
    earliest time and its window after the latest (TraceCFDP's
    SenderCarriesOn), with the actions blamed; None otherwise."""
    for who, (lo, hi) in hold_ends_us.items():
        steps = sorted(a for a in enabled if a in tm.carries_on and a.lower().startswith(who))
        due = hi + window_us + tm.hold_us.get(who, 0)
        if not steps or t <= due:
            continue
        d = "forward" if who == "sender" else "return"
        if any(x["kind"] == "send" and x.get("dir") == d and lo <= x["t_us"] <= due for x in lines):
            continue
        return (
            f"its user's Resume.request reached the {who} by {_ms(hi)} at the latest (the "
            f"suspend request's trigger, then resume_after_ms and the harness's margin), and "
            f"the {who}, with {', '.join(steps)} still to take, sent nothing from {_ms(lo)} "
            f"to {_ms(due)}, its window after that: it did not carry on once resumed",
            steps,
        )
    return None


def _best_states(
    diag: Sequence[Any],
    t: int,
    window_us: int,
    hold: Mapping[str, int],
    exiting: str | None = None,
) -> list[Any]:
    """The model's best explanations: the states that reached the line with
    the fewest overdue answers. A state that left an arrival unprocessed
    where another processed it in time says nothing about who deviated. Of
    those, the ones that processed the most arrivals: in one that left an
    arrival waiting, the actor's answer to it is still to come."""
    fewest = min((_owed(x, t, window_us, hold, exiting) for x in diag), default=0)
    best = [d for d in diag if _owed(d, t, window_us, hold, exiting) == fewest]
    least = min((_queued(x) for x in best), default=0)
    return [d for d in best if _queued(d) == least]


def _overdue(
    diag: Sequence[Any],
    t: int,
    window_us: int,
    hold: Mapping[str, int],
    describe: Callable[[Any], str],
    request: Callable[[int, str], str] = lambda at, who: f"at {_ms(at)}",
    exiting: str | None = None,
) -> tuple[list[str], list[str]]:
    """(what was overdue at ``t``, the actions blamed for it) over the
    diagnosis states: an arrival left unanswered past its actor's window
    (the model's answers to it, else what the actor could do), an emission
    the wire never showed (the action that made it, else the actor's last),
    an obligation lapsed (what the actor could do to send it: its
    retransmissions, else its enabled actions), naming the request
    (``request``: its line and frame)."""
    overdue: list[str] = []
    blame: list[str] = []
    lapse_blame: list[str] = []  # what the owing actor could do, in any state
    for d in diag:
        for (d_, u), o in _lapsed(d, t, window_us, hold, exiting):
            who = _owing(d_)
            when = f"by {_ms(o['due'])}" if o["due"] < t else "before its exit"
            overdue.append(
                f"the request that reached the {who} at {_ms(o['at'])} ({request(o['at'], who)}) "
                f"obliged it to send the {describe(u)} {when}, and the wire shows none"
                + (" by then" if o["due"] < t else "")
            )
            lapse_blame += [a for a in d[0] if a.lower().startswith(who)]
        en, inq, pend, last, answers = d[0], d[1], _pend(d), d[3], d[4]
        for who, queue in inq.items():
            mine = window_us + hold.get(who, 0)
            if queue and queue[0]["t"] + mine < t:
                overdue.append(
                    f"the {who} had not answered the {describe(queue[0]['seg'])} that "
                    f"reached it at {_ms(queue[0]['t'])} within {_ms(mine)} in any way the "
                    "rest of the trace shows"
                )
                # the model's answers to that arrival, else what the actor could do
                blame += sorted(answers[who]) or sorted(a for a in en if a.lower().startswith(who))
        by = _made_by(d)
        for (d_, u), dues in pend.items():
            late = [x for x in dues if x < t]
            who = _owing(d_)
            if late:
                overdue.append(
                    f"the model's {who} had to send a {describe(u)} by {_ms(min(late))}, "
                    "and the wire shows none"
                )
            elif _unsent_at_exit(d_, dues, exiting):
                made = f" ({by[(d_, u)][0]})" if (d_, u) in by else ""
                gone = "the trace has ended" if exiting == "" else "it has exited"
                overdue.append(
                    f"the model's {who} had made a {describe(u)}{made} that the wire never "
                    f"shows, and it cannot send it once {gone}"
                )
            else:
                continue
            if (d_, u) in by:
                blame.append(str(by[(d_, u)][0]))
            elif last["actor"] == who:
                blame.append(str(last["action"]))
    # a lapsed obligation: its retransmissions, where the model has such
    # actions, else whatever the owing actor could do
    blame += sorted(
        {a for a in lapse_blame if "Retransmit" in a or "Retx" in a} or set(lapse_blame)
    )
    return overdue, blame


def _unexplained_send(
    line: Mapping[str, Any], actor: str, diag: Sequence[Any], describe: Callable[[Any], str]
) -> tuple[str, list[str]]:
    """Why no behaviour explains a segment ``actor`` sent, and the actions
    blamed: the model's answer to the arrival the actor had to process,
    else what the model's actor had made and was still to send instead."""
    why = (
        f"no behaviour of the model has the {actor} send this "
        + describe(line.get("unit"))
        + " here"
    )
    waiting = [(d[1][actor][0], d[4][actor]) for d in diag if d[1][actor]]
    if waiting:
        first, _answers = waiting[0]
        names = sorted({a for _u, ans in waiting for a in ans})
        why += (
            f"; the {actor} had the {describe(first['seg'])} that reached it at "
            f"{_ms(first['t'])} to process, and the model's answer to it is "
            f"{', '.join(names) or 'none'}"
        )
        return why, names
    own = "forward" if actor == "sender" else "return"
    made: dict[str, tuple[Any, bool]] = {}
    for d in diag:
        by = _made_by(d)
        for d_, u in _pend(d):
            if d_ == own and (d_, u) in by:
                action, answer = by[(d_, u)]
                made.setdefault(str(action), (u, bool(answer)))
    # the closest alternatives: a segment of the same type, made in
    # answer to an arrival rather than by a timer, if there are such
    seen = describe(line.get("unit"))
    for keep in (lambda u, rx: describe(u) == seen, lambda u, rx: rx):
        closer = {a: m for a, m in made.items() if keep(*m)}
        made = closer or made
    if made:
        why += "; the model's " + "; or ".join(
            f"{a} had it send the {describe(u)} instead" for a, (u, _) in made.items()
        )
        return why, sorted(made)
    return why, sorted({a for d in diag for a in d[0] if a.lower().startswith(actor)})


def _rule_of(tm: TraceModel, spec: str, blame: Sequence[str]) -> tuple[str, list[str]]:
    """The rule (the spec's sections of the blamed actions) and its tags."""
    sections: list[str] = []
    for a in dict.fromkeys(blame):
        for s in tm.sections.get(a, []):
            if s not in sections:
                sections.append(s)
    rule = f"{spec} " + ", ".join(f"§{s}" for s in sections) if sections else ""
    head = spec.replace(" ", "")
    tags = list(dict.fromkeys(f"{head}-{s.split(' ')[0]}" for s in sections))
    return rule, tags


def windows_ms(
    scn: Scenario, processing_ms: Mapping[str, float | None] | None = None, slowdown: float = 1.0
) -> dict[str, float]:
    """Each actor's reaction window, in milliseconds: its declared processing
    time (DEFAULT_PROCESSING_MS where it declares none) times the run's
    slowdown (at least 1), at most half the scenario's retransmission
    interval."""
    cap = timers.derive(scn).retransmission_ms / 2
    declared = processing_ms or {}
    out: dict[str, float] = {}
    for actor in ("sender", "receiver"):
        p = declared.get(actor)
        p = DEFAULT_PROCESSING_MS if p is None else p
        out[actor] = round(min(cap, p * max(1.0, slowdown)), 3)
    return out


def _windows_text(windows: Mapping[str, float], slowdown: float) -> str:
    """The windows in words: "a reaction window of 250 ms", or each
    actor's where they differ, with the load that stretched them."""
    vals = set(windows.values())
    text = (
        f"a reaction window of {vals.pop():g} ms"
        if len(vals) == 1
        else "reaction windows of " + " and ".join(f"{w:g} ms ({a})" for a, w in windows.items())
    )
    return text + (f" (load: slowdown {slowdown:g})" if slowdown > 1 else "")


@dataclass
class _Session:
    """One session's trace, ready for TLC."""

    tm: TraceModel
    events: list[WireEvent]
    lines: list[dict[str, Any]]
    units: list[Any]  # each line's unit (a tlaval value; None for none)
    blank: Any  # the unit of a line without one
    window_us: int
    late_us: int = 0  # the late pass's longer reaction window (timers.LATE_SHARE)
    cut: str = ""  # why only the trace before something the model cannot express is here
    sends_after: int = 0  # sends the run made after that cut
    # actor -> the earliest and latest trace time its user's resume comes
    # (TraceCore's HoldEnds; TraceModel.hold_ends, from the first event on)
    hold_ends_us: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    def unmoved(self, kinds: frozenset[str] | None, line: int) -> bool:
        """Whether no unit of ``kinds`` arrives up to ``line`` (1-based):
        a reading whose alternative acts only on such arrivals then
        explores what the default does up to there (Reading.acts_on)."""
        kind = self.tm.unit_kind
        if kinds is None or kind is None:
            return False
        return not any(
            e.kind == "arrive" and u is not None and kind(u) in kinds
            for e, u in zip(self.events[:line], self.units[:line], strict=True)
        )

    @functools.cached_property
    def _body(self) -> str:
        # written once: a long trace's text is the same in every pass
        return _data_module(
            self.lines,
            self.units,
            self.window_us,
            self.tm.actions,
            self.blank,
            self.tm.purging,
            self.tm.hold_us,
            self.tm.foreseeable,
            self.tm.on_demand,
            self.tm.lazy_arrivals,
            sends_after=self.sends_after,
            hold_ends_us=self.hold_ends_us,
        )

    def data(self, diag: int, eager: bool, ends: bool = False) -> str:
        """The module for one pass; ``ends``: explore every behaviour that
        takes the trace to its end (TraceCore's StopAtEnd FALSE)."""
        eager_text = "TRUE" if eager else "FALSE"
        stop = "FALSE" if ends else "TRUE"
        return (
            f"{self._body}\nDiagLine == {diag}\nEager == {eager_text}\nStopAtEnd == {stop}\n"
            f"LateWindow == {self.window_us + self.late_us}\n====\n"
        )


def _tries(
    readings: Sequence[tuple[str, Mapping[str, int | bool | str]]],
    matters: Sequence[str] | None,
) -> list[tuple[str, dict[str, int | bool | str]]]:
    """Each reading (its id and model constants) in order, those that
    cannot matter for the trace (``matters``: under the constants the
    scenario fixes, its mode say) left out when the default is among them,
    then every combination of two or more of the alternatives that can
    matter, fewest first: the questions are independent, and an
    implementation may answer several of them the alternative way (a
    protocol has a handful). Combinations follow the default ('')."""
    by_id = dict(readings)
    if "" not in by_id:
        return [(rid, dict(consts)) for rid, consts in readings]
    # an alternative that cannot matter explores what the default does
    # (Reading.matters_when): its pass would add nothing
    out = [(r, dict(c)) for r, c in readings if not r or matters is None or r in matters]
    alts = [r for r, _c in out if r]
    for n in range(2, len(alts) + 1):
        for combo in itertools.combinations(alts, n):
            consts = dict(by_id[""])
            for x in combo:
                consts |= {k: v for k, v in by_id[x].items() if by_id[""].get(k) != v}
            # named in the readings' own order ("2+13", whichever came first)
            out.append(("+".join(sorted(combo, key=lambda r: (len(r), r))), consts))
    return out


def _tag(rid: str) -> str:
    return "_reading" + rid.replace("+", "_") if rid else ""


def _validate(
    sess: _Session,
    records: Sequence[SegmentRecord],
    workdir: Path,
    spec: str,
    tries: Sequence[tuple[str, Mapping[str, int | bool | str]]] = (("", {}),),
    tester: str | None = None,
    clock: _Clock | None = None,
    observed: ExpectedOutcome | None = None,
    acts_on: Callable[[str], frozenset[str] | None] = lambda rid: None,
    widening: frozenset[str] = frozenset(),
    families: dict[str, list[str]] | None = None,
) -> tuple[
    int,
    float,
    dict[str, Any] | None,
    str,
    list[tuple[str, Mapping[str, Any]]],
    list[ExpectedOutcome],
]:
    """(states, seconds, None, reading, [], ends) for an accepted session,
    else the rejection's TraceCheck fields, the tries in which a deadline
    held some line back (only there can a longer window take the trace
    further) and no ends.

    ``ends``: where the protocol's trace module reports them
    (TraceModel.end_outcomes), the outcomes the model holds at the trace's
    end under the reading that accepted it. With ``observed`` (the outcome
    the harnesses reported), a try is taken when it accepts the trace with
    that outcome among its ends; an eager pass that reaches other ends only
    is followed by the full pass, whose ends are every behaviour's. If no
    try reaches the observed outcome, the first that accepted the trace is
    returned with its ends, against which the outcome is then judged.
    Under each try in turn (``_tries``: its id and model constants): the
    eager pass first (the first try only: once the full pass has rejected
    the trace under one reading, it is most likely a deviation, and the
    cheaper pass would rarely spare the others theirs); if it rejects, the
    full one. If every try rejects, the diagnosis pass runs under the one
    that took the trace furthest (the first of those tied): what an
    alternative reading explains is not held against the implementation.
    Once the default (the first try, '') has rejected the trace at line
    L, a try whose alternatives act only on arrivals (``acts_on``: the
    unit kinds, Reading.acts_on) of which none comes up to L is not run:
    its behaviours up to L are the default's, so it stops at L too.
    ``widening``: the readings whose alternatives only add behaviours
    (Reading.widens): a family of tries that differ only in those is
    judged first by its union, and not run if the union rejects; where a
    deadline held the union back, its members are among the hurried tries
    and ``families`` gets union -> members, for :func:`_late`.
    ``clock``: the budget, checked before each pass (_OverBudget)."""
    clock = clock or _Clock(float("inf"))
    states, seconds = 0, 0.0
    reached: list[tuple[int, str, TraceModel]] = []
    hurried: list[tuple[str, Mapping[str, Any]]] = []
    with_ends = sess.tm.end_outcomes is not None
    first: tuple[str, list[ExpectedOutcome]] | None = None
    # Widening alternatives (Reading.widens): a try's family is the tries
    # that differ from it only in those; its union, the family's largest
    # try, runs first, and if it rejects the trace so does every member
    # (each behaviour of a member is one of the union's): the family is not
    # run (where a deadline held the union back, the late pass takes the
    # family up, union first). Its result is kept for its own turn if it
    # accepts.
    screened: set[frozenset[str]] = set()
    skipped: set[str] = set()
    if families is None:
        families = {}  # a hurried union -> its members
    unions: dict[str, int] = {}  # union -> how many tries it stood for
    ahead: dict[str, _Pass] = {}

    def parts(rid: str) -> frozenset[str]:
        return frozenset(filter(None, rid.split("+")))

    def out_of_budget(exc: _OverBudget) -> tuple[int, float, None, str, list[Any], list[Any]]:
        # out of budget while looking for a reading whose ends hold the
        # reported outcome: the trace is accepted all the same, and its
        # outcome judged against the first reading's ends
        if first is None:
            raise exc
        return states, seconds, None, first[0], [], first[1]

    def full(rid: str, tm: TraceModel) -> _Pass:
        nonlocal states, seconds
        res = ahead.pop(rid, None)
        if res is None:
            inv = ["Furthest", "Hurried"] + ["EndReport"] * with_ends
            data = sess.data(0, False, ends=with_ends)
            res = _run(tm, data, workdir, inv, "trace" + _tag(rid), clock)
            states += res.states or 0
            seconds += res.seconds
        return res

    for n, (rid, consts) in enumerate(tries):
        if rid in skipped:
            continue
        tm = replace(sess.tm, constants={**sess.tm.constants, **consts})
        if n > 0 and reached and reached[0][1] == "" and sess.unmoved(acts_on(rid), reached[0][0]):
            reached.append((reached[0][0], rid, tm))
            if hurried and hurried[0][0] == "":
                hurried.append((rid, consts))
            continue
        key = parts(rid) - widening
        if n > 0 and widening and key not in screened:
            screened.add(key)
            family = [(r, c) for r, c in tries[n:] if parts(r) - widening == key]
            top, top_consts = max(family, key=lambda t: len(parts(t[0])))
            moved = not (
                reached and reached[0][1] == "" and sess.unmoved(acts_on(top), reached[0][0])
            )
            if moved and len(family) > 1 and all(parts(r) <= parts(top) for r, _c in family):
                top_tm = replace(sess.tm, constants={**sess.tm.constants, **top_consts})
                try:
                    res = full(top, top_tm)
                except _OverBudget as exc:
                    return out_of_budget(exc)
                if not res.accepted:
                    reached.append((res.furthest, top, top_tm))
                    unions[top] = len(family)
                    skipped |= {r for r, _c in family}
                    if res.hurried:
                        # a longer window may take the union further: the
                        # late pass tries it first, and its members only
                        # if it accepts (_late)
                        hurried.extend(family)
                        families[top] = [r for r, _c in family]
                    continue
                ahead[top] = res
        for eager in (True, False) if n == 0 else (False,):
            try:
                if eager:
                    res = _run(
                        tm,
                        sess.data(0, eager, ends=with_ends),
                        workdir,
                        ["Furthest"] + ["EndReport"] * with_ends,
                        "eager" + _tag(rid),
                        clock,
                    )
                    states += res.states or 0
                    seconds += res.seconds
                else:
                    res = full(rid, tm)
            except _OverBudget as exc:
                return out_of_budget(exc)
            ends, taken = _taken(res, rid, observed)
            if taken:
                return states, seconds, None, rid, [], ends
            if res.accepted and not eager:
                first = first or (rid, ends)
        if not res.accepted:
            reached.append((res.furthest, rid, tm))
            if res.hurried:
                hurried.append((rid, consts))
    default_rejects = any(r == "" for _n, r, _tm in reached)
    if first is not None and not (first[0] and default_rejects):
        # the wire is the model's, the outcome reported none of its ends
        return states, seconds, None, first[0], [], first[1]
    # An alternative reading that takes the wire but none of whose ends is
    # what the harnesses reported explains nothing the default does not:
    # the default's rejection is the reason (HDTN ignoring a redundant
    # checkpoint looks, on the wire, like reading 13's closed receiver, but
    # its session was open: it reported the cancel)
    outcome_only = (
        ""
        if first is None
        else (
            f" (reading {first[0]}'s alternative takes the wire, but none of its ends is the "
            "outcome the harnesses reported: " + "; ".join(e.describe() for e in first[1]) + ")"
        )
    )
    observing = (
        f"with each side ending as its harness reported (sender {observed.sender_outcome}, "
        f"receiver {observed.receiver_outcome}): "
        if observed is not None and sess.tm.observe is not None
        else ""
    )
    rank = {r: i for i, (r, _c) in enumerate(tries)}
    hurried.sort(key=lambda t: rank[t[0]])  # a family's members came at its union's turn
    bad, diag_rid, diag_tm = max(reached, key=lambda x: x[0])
    diag = _run(diag_tm, sess.data(bad, False), workdir, ["Diag"], "diag")
    seconds += diag.seconds

    def label(k: int) -> str:
        e = sess.events[k - 1]
        what = records[e.record].summary if e.record >= 0 else e.kind
        return f"{e.kind} {what} (frame {e.frame} of {e.side}.pcap)"

    message, enabled, blamed, rule, tags, overdue = _diagnose(
        sess.tm,
        sess.lines,
        bad,
        diag.diag,
        sess.window_us,
        label,
        spec,
        tester,
        sess.hold_ends_us,
    )
    if (
        first is not None
        and tester
        and blamed
        and all(a.lower().startswith(tester) for a in blamed)
    ):
        # the rejection (of the reading that took the trace furthest) falls
        # on our own tester's steps: no reason against the implementation;
        # the alternative that takes the wire stands, and its ends judge the
        # outcome (HDTN's CR on a miscolored segment at the red part's own
        # offset, reading 14)
        return states, seconds, None, first[0], [], first[1]

    def stops(n: int, r: str) -> str:
        who = f"reading {r}" if r else "the default reading"
        if r in unions:  # a union: its parts stop no later (Reading.widens)
            who += f" (with its {unions[r] - 1} narrower combinations)"
        return f"{who} stops at line {n}"

    others = [stops(n, r) for n, r, _tm in reached if r != diag_rid]
    message = observing + message
    if diag_rid:
        message = f"under reading {diag_rid}'s alternative, which takes the trace furthest: " + (
            message
        )
    if others:
        message += f" (no other reading explains the trace either: {'; '.join(others)})"
    message += outcome_only
    bad_ev = sess.events[bad - 1]
    return (
        states,
        seconds,
        {
            "message": message,
            "line": bad,
            "frame": bad_ev.frame or None,
            "side": bad_ev.side,
            # who sent the line, or exited there ('' for an arrival or the
            # end): the judge blames our tester only for its own lines
            "actor": sess.lines[bad - 1].get("actor", "")
            if sess.lines[bad - 1]["kind"] in ("send", "exit")
            else "",
            "enabled": enabled,
            "actions": blamed,
            "rule": rule,
            "tags": tags,
            "overdue": overdue,
        },
        "",
        hurried,
        [],
    )


def _taken(
    res: _Pass, rid: str, observed: ExpectedOutcome | None
) -> tuple[list[ExpectedOutcome], bool]:
    """A pass's ends (under reading ``rid``), and whether its try is taken:
    it accepted the trace and, where it reports ends and the harnesses'
    outcome is known, that outcome is among them."""
    ends = [e.model_copy(update={"readings": [rid]}) for e in res.ends]
    reached = not res.ends or observed is None or any(e.matches(observed) for e in ends)
    return ends, res.accepted and reached


def _late(
    sess: _Session,
    workdir: Path,
    tries: Sequence[tuple[str, Mapping[str, Any]]],
    late_us: int,
    clock: _Clock,
    observed: ExpectedOutcome | None = None,
    acts_on: Callable[[str], frozenset[str] | None] = lambda rid: None,
    families: Mapping[str, Sequence[str]] | None = None,
) -> tuple[int, float, str | None, list[ExpectedOutcome]]:
    """The full pass again under ``tries``, with each actor's reaction
    window lengthened to ``late_us`` (a suspension's hold is kept if
    longer): (states, seconds, the first try that accepts, else None, and
    its ends; with ``observed``, the first whose ends reach it, as in
    :func:`_validate`; a try is skipped as there, after the default's
    rejection). ``families``: a union of widening alternatives -> the
    tries it stands for (_validate): the union goes first, and its members
    are not run if it rejects the trace (each member's behaviours are
    among the union's)."""
    hold = {a: max(late_us, sess.tm.hold_us.get(a, 0)) for a in ("sender", "receiver")}
    slow = replace(sess, tm=replace(sess.tm, hold_us=hold))
    with_ends = sess.tm.end_outcomes is not None
    states, seconds = 0, 0.0
    first: tuple[str, list[ExpectedOutcome]] | None = None
    stop: int | None = None  # where the default's late pass stopped
    done: dict[str, _Pass] = {}
    by_id = dict(tries)

    def late_pass(rid: str) -> _Pass:
        nonlocal states, seconds
        if rid not in done:
            tm = replace(slow.tm, constants={**slow.tm.constants, **by_id[rid]})
            inv = ["Furthest"] + ["EndReport"] * with_ends
            data = slow.data(0, False, ends=with_ends)
            done[rid] = _run(tm, data, workdir, inv, "late" + _tag(rid), clock)
            states += done[rid].states or 0
            seconds += done[rid].seconds
        return done[rid]

    dropped: set[str] = set()
    screened: set[str] = set()
    for n, (rid, _consts) in enumerate(tries):
        if rid in dropped or (stop is not None and slow.unmoved(acts_on(rid), stop)):
            continue
        union = next((u for u, members in (families or {}).items() if rid in members), None)
        try:
            if union is not None and union not in screened and union in by_id:
                screened.add(union)
                if not late_pass(union).accepted:
                    dropped |= set((families or {})[union])
                    continue
            res = late_pass(rid)
        except _OverBudget:
            if first is None:
                raise
            break  # as in _validate: the first accepting reading's ends judge
        ends, taken = _taken(res, rid, observed)
        if taken:
            return states, seconds, rid, ends
        if res.accepted:
            first = first or (rid, ends)
        elif n == 0 and rid == "":
            stop = res.furthest
    if first is not None:
        return states, seconds, first[0], first[1]
    return states, seconds, None, []


def check(
    spec: protocols.ProtocolSpec,
    scn: Scenario,
    records: Sequence[SegmentRecord],
    a_pcap: Path,
    b_pcap: Path,
    *,
    port: int,
    ip_a: str | None,
    exits: Mapping[str, float | None],
    workdir: Path,
    out: Path | None = None,
    skip: frozenset[bytes] = frozenset(),
    readings: Sequence[str] | None = None,
    tester: str | None = None,
    observed: ExpectedOutcome | None = None,
    processing_ms: Mapping[str, float | None] | None = None,
    slowdown: float = 1.0,
) -> TraceCheck:
    """Validate the run's trace, session by session; never raises for what
    the trace holds (that is 'rejected' or 'unchecked'), only when TLC
    itself fails. ``out`` receives the NDJSON trace. ``readings``: the
    model readings to try, in order ('' the default; None: the default,
    then each alternative the protocol declares); the first that accepts
    is the TraceCheck's ``reading``. ``tester``: the role our model-driven
    tester played, whose actions a rejection blames only if it must.
    ``observed``: the outcome the harnesses reported; where the protocol's
    trace module reports the outcomes at the trace's end, a reading that
    explains both the trace and that outcome is looked for, and the
    TraceCheck's ``ends`` are what the run's outcome is judged against.
    ``spec``: the scenario's protocol, as the caller resolved it.
    ``processing_ms``: each role's declared processing time (None: it
    declares none), and ``slowdown`` the load the run met
    (conformance.loadprobe): together each actor's reaction window
    (windows_ms)."""
    gen = spec.capabilities.trace
    if gen is None:
        why = spec.capabilities.missing.get("trace", "not built yet")
        return TraceCheck(status="unchecked", message=f"{scn.protocol} has no trace model: {why}")
    windows = windows_ms(scn, processing_ms, slowdown)
    # the shortest window is TraceCore's Window, each actor's more its Hold
    w_ms = min(windows.values())
    longer = {a: round((w - w_ms) * 1000) for a, w in windows.items()}
    common: dict[str, Any] = {
        "window_ms": w_ms,
        "windows_ms": windows,
        "slowdown": round(max(1.0, slowdown), 3),
        "trace_file": out.name if out else "",
    }
    try:
        events = wire_events(
            records,
            a_pcap,
            b_pcap,
            port=port,
            ip_a=ip_a,
            exits=exits,
            window_s=max(windows.values()) / 1000,
            skip=skip,
        )
    except Unrepresentable as exc:
        return TraceCheck(status="unchecked", message=str(exc), **common)
    if not any(e.kind == "send" for e in events):
        return TraceCheck(status="unchecked", message="the captures hold no segment", **common)
    sessions = _sessions(scn, gen, records, events, w_ms, common)
    if isinstance(sessions, TraceCheck):
        return sessions
    if any(longer.values()):
        # a slower actor's window is TraceCore's Window and its Hold, added
        # to a suspension's (CFDP)
        sessions = [
            replace(
                ss,
                tm=replace(
                    ss.tm,
                    hold_us={a: ss.tm.hold_us.get(a, 0) + longer[a] for a in longer},
                ),
            )
            for ss in sessions
        ]
    if out is not None:
        _write(out, [{"session": n, **ln} for n, ss in enumerate(sessions, 1) for ln in ss.lines])
    common["lines"] = sum(len(ss.lines) for ss in sessions)
    order = list(readings) if readings is not None else spec.reading_ids()
    import os

    clock = _Clock(float(os.environ.get("DTNC_TRACE_BUDGET_S", TRACE_BUDGET_S)))
    try:
        return _with_cuts(
            _check_sessions(
                sessions, records, workdir, spec, order, tester, clock, scn, w_ms, common, observed
            ),
            sessions,
        )
    except _OverBudget as over:
        return TraceCheck(
            status="unchecked",
            message=f"trace validation stopped at its budget of {clock.budget_s:g} s of TLC "
            f"(DTNC_TRACE_BUDGET_S) after {over.passes} pass(es), none of which took the whole "
            f"trace (the furthest reached line {over.furthest}); the model's verdict on it is "
            "unknown",
            **common,
        )


def _with_cuts(tc: TraceCheck, sessions: Sequence[_Session]) -> TraceCheck:
    """A check of traces some of which were cut before what the model
    cannot express (_modelled): a deviation before the cut is still a
    rejection; an accepted prefix leaves the run unchecked, with no ends
    (the session's end is past the cut)."""
    cuts = [
        (f"session {n}: " if len(sessions) > 1 else "") + ss.cut
        for n, ss in enumerate(sessions, 1)
        if ss.cut
    ]
    if not cuts:
        return tc
    why = "; ".join(cuts)
    if tc.status == "rejected":
        msg = f"{tc.message} (the trace validated only up to what the model cannot express: {why})"
        return tc.model_copy(update={"message": msg})
    if tc.status == "accepted":
        msg = f"{why}; the trace up to there is accepted ({tc.message})"
        return tc.model_copy(
            update={
                "status": "unchecked",
                "message": msg,
                "ends": [],
                "reading": "",
                "late": False,
                "default_rejected": False,
            }
        )
    return tc.model_copy(update={"message": f"{tc.message} ({why})"})


def _sessions(
    scn: Scenario,
    gen: TraceModels,
    records: Sequence[SegmentRecord],
    events: Sequence[WireEvent],
    w_ms: float,
    common: dict[str, Any],
) -> list[_Session] | TraceCheck:
    """The trace cut into its sessions (``gen.session_of``), each read as the
    model's units and lines; an unchecked TraceCheck instead if a session
    cannot be (``common`` gets the number of sessions)."""
    by_session: dict[Hashable, list[int]] = defaultdict(list)
    for i, rec in enumerate(records):
        by_session[gen.session_of(rec.fields)].append(i)
    common["sessions"] = len(by_session)
    t0 = min(e.t for e in events)
    sessions: list[_Session] = []
    for n, idx in enumerate(by_session.values(), start=1):
        mine = set(idx)
        evs = [e for e in events if e.record in mine or e.kind in ("exit", "end")]
        where = f"session {n}: " if len(by_session) > 1 else ""
        try:
            tm, evs, cut, after = _modelled(scn, gen, records, idx, evs)
        except Unrepresentable as exc:
            return TraceCheck(status="unchecked", message=f"{where}{exc}", **common)
        units = [tm.arrived[e.record] if e.corrupt else tm.units.get(e.record) for e in evs]
        if tm.pieces:  # a frame that carries several of the model's units
            pairs = [
                (e, p)
                for e, u in zip(evs, units, strict=True)
                for p in (tm.pieces.get(e.record, [u]) if not e.corrupt else [u])
            ]
            evs, units = [e for e, _ in pairs], [u for _, u in pairs]
        sessions.append(
            _Session(
                tm,
                evs,
                [_ndjson_line(e, t0, u) for e, u in zip(evs, units, strict=True)],
                units,
                gen.blank_unit(),
                round(w_ms * 1000),
                _late_us(scn, w_ms),
                cut,
                after,
                {
                    a: (max(0, round((lo - t0) * 1e6)), max(0, round((hi - t0) * 1e6)))
                    for a, (lo, hi) in tm.hold_ends.items()
                },
            )
        )
    return sessions


# How many times a session's trace is cut shorter, each time before an
# earlier thing the model cannot express.
MAX_CUTS = 8


def _modelled(
    scn: Scenario,
    gen: TraceModels,
    records: Sequence[SegmentRecord],
    idx: list[int],
    evs: list[WireEvent],
) -> tuple[TraceModel, list[WireEvent], str, int]:
    """One session's trace model and its events as the model reads them.
    Where the trace holds something the model cannot express from a known
    time on (Unrepresentable.at), the trace before that time, with no exit
    and no end (the run goes on past it, so nothing is owed at its last
    line), why it stops there, and how many segments the run sent after it;
    raises Unrepresentable where no such prefix holds a segment."""
    cut, sends = "", sum(e.kind == "send" for e in evs)
    for _ in range(MAX_CUTS):
        try:
            tm = gen.trace_model(scn, [records[i] for i in idx], idx, evs)
            return (
                tm,
                _as_modelled(evs, tm, records),
                cut,
                sends - sum(e.kind == "send" for e in evs),
            )
        except Unrepresentable as exc:
            at = exc.at
            if at is None:
                raise
            evs = [e for e in evs if e.t < at and e.kind not in ("exit", "end")]
            kept = {e.record for e in evs}
            idx = [i for i in idx if i in kept]
            cut = str(exc)
            if not any(e.kind == "send" for e in evs):
                raise
    raise Unrepresentable(cut)


def _late_us(scn: Scenario, w_ms: float) -> int:
    """How much longer than the window ``w_ms`` the late pass lets an
    endpoint take: up to timers.LATE_SHARE of the retransmission interval."""
    slow_ms = timers.LATE_SHARE * timers.derive(scn).retransmission_ms
    return max(0, round(slow_ms * 1000) - round(w_ms * 1000))


class _Judged(NamedTuple):
    """One session's TLC passes: states, seconds, the rejection (None:
    accepted), the reading that accepted, the message of a window it needed
    the late pass for, whether the default reading was tried and rejected
    first, and the outcomes at its end."""

    states: int
    seconds: float
    rejected: dict[str, Any] | None
    reading: str
    late: str
    default_rejected: bool
    ends: list[ExpectedOutcome]


def _check_sessions(
    sessions: Sequence[_Session],
    records: Sequence[SegmentRecord],
    workdir: Path,
    spec: Any,
    order: Sequence[str],
    tester: str | None,
    clock: _Clock,
    scn: Scenario,
    w_ms: float,
    common: dict[str, Any],
    observed: ExpectedOutcome | None = None,
) -> TraceCheck:
    """check()'s TLC passes, session by session, under ``clock``. The
    outcomes at the trace's end are kept for a run of one session (the
    harnesses report one outcome per run)."""
    late_us = _late_us(scn, w_ms)
    slow_ms = (late_us + round(w_ms * 1000)) / 1000

    def one(n: int, sess: _Session) -> _Judged:
        seen = observed if len(sessions) == 1 and not sess.cut else None
        if sess.cut:
            # a prefix: its end is not the run's, so neither the outcome
            # the harnesses reported at the run's end nor the model's state
            # at the prefix's end says anything about the other
            sess = replace(sess, tm=replace(sess.tm, end_outcomes=None))
        # Where the trace's end judges the outcome, the default reading goes
        # first: an alternative is needed only where the default cannot
        # explain both the trace and the reported outcome (the caller's
        # order follows the scenario's outcome set, which then judges nothing).
        mine = sorted(order, key=lambda r: r != "") if sess.tm.end_outcomes else list(order)
        tries = _tries(
            [(r, spec.reading_constants(r)) for r in mine],
            spec.reading_ids(sess.tm.constants, sess.tm.unbounding),
        )
        if seen is not None and sess.tm.observe is not None:
            # Only the behaviours in which each side ends as its harness
            # reported are the run's (the implementation said how it
            # ended): a rejection is then diagnosed where the model and
            # the implementation's own account part (TraceCFDP Consistent).
            confined = {**sess.tm.constants, **sess.tm.observe(seen)}
            sess = replace(sess, tm=replace(sess.tm, constants=confined))
        families: dict[str, list[str]] = {}
        st, sec, rejected, rid, hurried, ends = _validate(
            sess,
            records,
            workdir / f"session-{n}",
            spec.spec,
            tries,
            tester,
            clock,
            seen,
            spec.acts_on,
            spec.widening,
            families,
        )
        late = ""
        if rejected is not None and late_us > 0 and hurried:
            # Late only? The same trace with reaction times of up to
            # timers.LATE_SHARE of the retransmission interval: accepted there,
            # every unit the model owes was sent, later than the window but
            # before a timer could have asked for it again (a loaded
            # machine, a slow implementation): the model is untimed, so that
            # is no deviation. Only the readings under which a deadline held
            # a line back can go further with a longer window.
            st2, sec2, late_rid, ends = _late(
                sess,
                workdir / f"session-{n}-late",
                hurried,
                late_us,
                clock,
                seen,
                spec.acts_on,
                families,
            )
            st, sec = st + st2, sec + sec2
            if late_rid is not None:
                late, rejected, rid = rejected["message"], None, late_rid
        # tried before the reading that accepted (every combination follows
        # the default)
        default_rejected = bool(
            rid and "" in mine and ("+" in rid or mine.index("") < mine.index(rid))
        )
        return _Judged(st, sec, rejected, rid, late, default_rejected, ends)

    # Sessions are independent traces: one TLC at a time per core.
    lanes = min(len(sessions), os.cpu_count() or 1)
    numbered = list(enumerate(sessions, start=1))
    if lanes > 1:
        with ThreadPoolExecutor(lanes) as pool:
            judged = list(pool.map(lambda ns: one(*ns), numbered))
    else:
        judged = [one(n, sess) for n, sess in numbered]
    states = sum(j.states for j in judged)
    seconds = sum(j.seconds for j in judged)
    needed = next((j.reading for j in judged if j.reading), "")
    default_rejected = any(j.default_rejected for j in judged)
    late = [j.late for j in judged if j.late]
    ends = judged[-1].ends if judged else []
    for n, j in enumerate(judged, start=1):
        if j.rejected is not None:
            rejected = j.rejected
            if len(sessions) > 1:
                rejected["message"] = f"session {n}: {rejected['message']}"
            return TraceCheck(
                status="rejected", states=states, seconds=round(seconds, 3), **common, **rejected
            )
    under = ""
    if needed:
        parts = [spec.reading(x) for x in needed.split("+")]
        under = ", under " + " and ".join(
            f"{r.label(spec.spec)}'s alternative ({r.alternative_text})" for r in parts
        )
    within = (
        f"with reaction times of up to {slow_ms:g} ms ({timers.LATE_SHARE:g} of the retransmission "
        "interval; with "
        + _windows_text(common["windows_ms"], common["slowdown"])
        + " it stopped: "
        + "; ".join(late)
        + ")"
        if late
        else "with " + _windows_text(common["windows_ms"], common["slowdown"])
    )
    return TraceCheck(
        status="accepted",
        reading=needed,
        default_rejected=default_rejected,
        late=bool(late),
        message=f"TLC took all {common['lines']} lines of {len(sessions)} session(s) "
        f"{within}{under}",
        states=states,
        seconds=round(seconds, 3),
        ends=ends if len(sessions) == 1 else [],
        **common,
    )


def _write(path: Path, lines: Sequence[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(json.dumps(line, separators=(",", ":")) + "\n")
