"""Expectations as the set of every outcome the model allows.

For a scenario's impairments, TLC explores the LTP model
(specs/ltp/MCLTPOutcomes.tla) with the channel allowed to lose exactly the
planned segments, named as the live channel names them (direction, wire key,
occurrence), and prints every terminal outcome it reaches. A run then passes
with any of them: the expectation is not one interleaving's end state.

Drops, delays and duplicates keyed on what the model has (``kind`` +
``offset`` of data segments, ``type`` of control segments) are planned
impairments: a drop is a loss; a delay holds the segment back, to arrive
after segments sent later and after any timer that guards it; a duplicate
holds back a copy delivered after the original (LTP.tla's ChannelDelay...,
ChannelDuplicate...). Anything else (a corruption the application sees, a
field the model abstracts away) has no model counterpart, and
:class:`Unplannable` says which impairment and why.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from conformance.errors import DtncError
from conformance.protocols.ltp import SPEC as LTP
from conformance.protocols.ltp import LtpBlock, LtpDelivery
from conformance.types import (
    Expectation,
    ExpectedOutcome,
    FieldValue,
    Impairment,
    Outcome,
    Scenario,
)
from generators.tlc import REPO_ROOT, TlcProgress, cfg_text, printed, run_tlc

SPEC_DIR = REPO_ROOT / "specs" / "ltp"
MODULE = SPEC_DIR / "MCLTPOutcomes.tla"
CTRL_TYPES = ("RS", "RA", "CS", "CAS", "CR", "CAR")

_LINE = re.compile(
    r'"?dtnc-outcome sender=(\w+) receiver=(\w+) delivered=(\d+) green=\{([\d, ]*)\}"?'
)


class Unplannable(DtncError):
    """An impairment the model cannot express as a planned loss."""


# What the channel does to a planned segment, as the model and the emulator's
# rules name it ("outage": the link goes down as the segment crosses it).
ACTS = ("drop", "delay", "duplicate", "outage")


@dataclass(frozen=True)
class PlannedLoss:
    """One impairment the model may take: direction, wire key, model offset,
    occurrence, and what the channel does (``act``: drop, delay, duplicate,
    outage)."""

    dir: str
    key: str
    off: int
    occ: int
    act: str = "drop"

    @property
    def late(self) -> bool:
        """A delay or a duplicate (the model's MaxLate budget), not a loss."""
        return self.act in ("delay", "duplicate")

    @property
    def outage(self) -> bool:
        """The link goes down as this segment crosses it (MaxOutages)."""
        return self.act == "outage"

    def tla(self) -> str:
        return (
            f'[dir |-> "{self.dir}", key |-> "{self.key}", off |-> {self.off}, '
            f'occ |-> {self.occ}, act |-> "{self.act}"]'
        )

    def impairment(self, block: LtpBlock, note: str = "", delay_ms: float = 0.0) -> Impairment:
        """The channel rule that makes this impairment (the inverse of :func:`plan`);
        ``delay_ms``: a delay's or an outage's length."""
        match: dict[str, FieldValue] = (
            {"kind": self.key, "offset": self.off * block.segment_size}
            if self.key in ("red_data", "green_data")
            else {"type": self.key}
        )
        return Impairment(
            direction=self.dir,  # type: ignore[arg-type]
            match=match,
            occurrence=self.occ,
            action=self.act,  # type: ignore[arg-type]
            delay_ms=delay_ms if self.act in ("delay", "outage") else 0.0,
            note=note,
        )


@dataclass
class OutcomeSet:
    outcomes: list[ExpectedOutcome]
    distinct_states: int | None
    seconds: float
    log: Path
    # the model actions its behaviours took (MCLTPOutcomes' ActionSeen)
    actions: set[str] = field(default_factory=set)
    outages: int = 0  # the link outages it planned


def expand(
    impairments: Sequence[Impairment],
    key_of: Callable[[str, Impairment], tuple[str, int]],
    acts: Sequence[str] = ACTS,
) -> list[PlannedLoss]:
    """The planned impairments of a scenario, one per match acted on, for any
    protocol: ``key_of(where, imp)`` names the model key and segment of an
    impairment's match (raising Unplannable, ``where`` naming it)."""
    out: list[PlannedLoss] = []
    for i, imp in enumerate(impairments):
        where = f"impairments[{i}]"
        if imp.action not in acts:
            raise Unplannable(f"{where}: a {imp.action} has no counterpart in the model")
        key, off = key_of(where, imp)
        for n in range(imp.count):
            out.append(PlannedLoss(imp.direction, key, off, imp.occurrence + n, imp.action))
    return out


def plan(impairments: Sequence[Impairment], block: LtpBlock) -> list[PlannedLoss]:
    """The planned impairments of an LTP scenario (one per match acted on)."""

    def key_of(where: str, imp: Impairment) -> tuple[str, int]:
        m = dict(imp.match)
        if set(m) == {"type"} and m["type"] in CTRL_TYPES:
            return str(m["type"]), 0
        if set(m) == {"kind", "offset"} and m["kind"] in ("red_data", "green_data"):
            offset = int(m["offset"])
            if offset % block.segment_size:
                raise Unplannable(
                    f"{where}: offset {offset} is not at a segment boundary "
                    f"(segment_size {block.segment_size})"
                )
            return str(m["kind"]), offset // block.segment_size
        raise Unplannable(
            f"{where}: match {m} is not one the model names "
            "(type of a control segment, or kind + offset of a data segment)"
        )

    return expand(impairments, key_of)


def plan_module(losses: Sequence[PlannedLoss], in_order: bool) -> str:
    body = ",\n    ".join(p.tla() for p in losses)
    return (
        "---- MODULE MCLTPPlan ----\n"
        "\\* Generated by generators/outcomes.py: the planned losses of one scenario.\n"
        f"ThePlan == {{{body}}}\n"
        f"InOrder == {'TRUE' if in_order else 'FALSE'}\n"
        "====\n"
    )


def _segments(block: LtpBlock) -> tuple[int, int]:
    """Model segments of the block: (red, green)."""
    size = block.segment_size
    n_red = -(-block.red_len // size)
    n_green = -(-block.green_len // size)
    return n_red, n_green


def green_bytes(offsets: Sequence[int], block: LtpBlock) -> int:
    """Bytes of the green model segments at ``offsets`` (the last may be short)."""
    n_red, _ = _segments(block)
    size = block.segment_size
    total = 0
    for o in offsets:
        start = block.red_len + (o - n_red) * size
        total += max(0, min(size, block.block_len - start))
    return total


def outcome_of(
    sender: str,
    receiver: str,
    deliveries: int,
    green: Sequence[int],
    block: LtpBlock,
    readings: Sequence[str] = ("",),
) -> ExpectedOutcome:
    """One terminal state of the model as an outcome: each side's notice, the
    red part delivered or not, the green model segments that arrived, and
    the readings it was reached under."""
    return ExpectedOutcome(
        readings=list(readings),
        delivered=LtpDelivery(
            red_bytes_delivered=block.red_len if deliveries > 0 else 0,
            green_bytes_delivered=green_bytes(green, block),
        ),
        sender_outcome=outcome_name(sender),
        receiver_outcome=outcome_name(receiver),
    )


def parse_outcomes(text: str, block: LtpBlock, reading: str = "") -> list[ExpectedOutcome]:
    seen: dict[tuple[int | str, ...], ExpectedOutcome] = {}
    for m in _LINE.finditer(text):
        sender, receiver, delivered, green = m.groups()
        offs = [int(x) for x in green.replace(" ", "").split(",") if x]
        o = outcome_of(sender, receiver, int(delivered), offs, block, (reading,))
        seen.setdefault(o.key(), o)
    return list(seen.values())


def outcome_name(v: str) -> Outcome:
    # "none": the side never gave a notice; the model ends there for an
    # orphaned receiver or one the session never reached, which a live run
    # sees as its time limit passing. "closed": closed with no notice.
    return v if v in ("completed", "cancelled", "closed") else "timeout"  # type: ignore[return-value]


# Random losses (a lossy link, a profile's outage) can strike any segment any number of
# times; the set is enumerated with up to this many of them, on top of the
# planned ones. The outcome values (delivered or not, each side's notice)
# stop growing well before that for the short blocks scenarios use.
RANDOM_LOSS_BOUND = 3
# Likewise for a link that duplicates or reorders at random: segments it may
# duplicate or hold back, on top of the planned ones.
RANDOM_LATE_BOUND = 2


@dataclass(frozen=True)
class ChannelShape:
    """What of a scenario's channel the model must know: does it keep order,
    and can it lose segments the impairments do not name?"""

    in_order: bool
    random_loss: bool
    why: str
    random_late: bool = False  # can it duplicate or hold back segments the rules do not name?


def stale(scn: Scenario) -> str:
    """Why a scenario's stored expectation does not fit its channel ('' if
    it does): it was computed for in-order channels or planned losses only,
    and the channel now reorders or loses frames at random."""
    exp = scn.expect
    if exp.in_order is None:
        return ""
    shape = channel_shape(scn)
    if exp.in_order and not shape.in_order:
        return f"the outcome set assumes channels in order, but {shape.why}"
    if exp.random_losses == 0 and shape.random_loss:
        return f"the outcome set assumes only the planned losses, but {shape.why}"
    if exp.random_late == 0 and shape.random_late:
        return f"the outcome set assumes only the planned delays and duplicates, but {shape.why}"
    return ""


# Seconds the channel's clock may run ahead of the run's: it starts before
# the implementations do. A profile's change that comes later than the run's
# time limit plus this cannot reach the run.
HORIZON_GUARD_S = 5.0


def channel_shape(scn: Scenario) -> ChannelShape:
    """What the model must know of the scenario's channel, over the run's
    time: a profile's timeline change or outage that starts after the run's
    time limit (a LEO pass's loss of signal, ten minutes in) cannot reach
    it, and does not widen the set."""
    from conformance import timers
    from conformance.emulator import resolve

    fwd, ret, k = resolve(scn.channel)
    horizon = timers.derive(scn).time_limit_s + HORIZON_GUARD_S
    reasons_order, reasons_loss, late = [], [], False
    for name, d in (("forward", fwd), ("return", ret)):
        link = d.link
        timeline = [e for e in d.timeline if e.t / k < horizon]
        outages = [o for o in d.outages if o.start / k < horizon]
        if link.reorder.probability > 0 or link.duplicate > 0:
            reasons_order.append(f"{name} reorders or duplicates")
            late = True
        if any((e.set.duplicate or 0) > 0 for e in timeline):
            reasons_order.append(f"{name} duplicates in some periods")
            late = True
        if any(e.set.delay_ms is not None or e.set.reorder is not None for e in timeline):
            reasons_order.append(f"{name} delay changes over time")
        if link.loss > 0 or link.packet_error > 0 or link.ber > 0:
            reasons_loss.append(f"{name} loses frames at random")
        if outages or any(
            (e.set.loss or 0) > 0 or (e.set.ber or 0) > 0 or (e.set.packet_error or 0) > 0
            for e in timeline
        ):
            reasons_loss.append(f"{name} has outages or lossy periods")
        if link.queue_bytes < 64 * 1024 and link.rate_bps > 0:
            reasons_loss.append(f"{name} queue may overflow")
    # Outage rules, keyed on a segment, are planned: the model's link goes
    # down as that segment crosses it, swallows whatever it carries until it
    # comes back, and timers run on (the SUTs have no link state cues,
    # RFC 5326 6.5/6.6). A profile's clock-time outages are random losses.
    why = "; ".join(reasons_order + reasons_loss) or "in order, losses as planned"
    return ChannelShape(not reasons_order, bool(reasons_loss), why, late)


def block_constants(block: LtpBlock, max_retx: int | None = None) -> dict[str, int | bool]:
    """The model constants a block fixes, whatever the reading: one model
    segment per data segment, the retransmission limit (or ``max_retx``),
    the per-report claim limit, the sender's coloring and whether the
    receiver knows the client service."""
    n_red, n_green = _segments(block)
    return {
        "NRed": n_red,
        "NGreen": n_green,
        "MaxRetx": block.retransmission_limit if max_retx is None else max_retx,
        "PrematureTimeouts": False,
        "FaultyReceiver": False,
        "MiscoloredSender": block.miscolored_sender,
        "MaxClaims": block.max_claims_per_rs,
        "ServiceKnown": block.service_at_receiver == block.client_service_id,
    }


def outcome_set(
    block: LtpBlock,
    impairments: Sequence[Impairment],
    workdir: Path,
    *,
    max_retx: int | None = None,
    in_order: bool = True,
    random_losses: int = 0,
    random_late: int = 0,
    name: str = "outcomes",
    progress: Callable[[TlcProgress], None] | None = None,
    reading: str = "",
) -> OutcomeSet:
    """Every terminal outcome the model reaches with exactly these losses.

    The block geometry fixes the model's NRed/NGreen (one model segment per
    data segment) and the retransmission limit its MaxRetx. Raises
    Unplannable for impairments the model cannot express, DtncError when
    TLC finds a safety violation (a model bug) or no outcome at all.
    ``reading``: the model reading ('' the default, else a reading's id)."""
    n_red, n_green = _segments(block)
    if n_red == 0:
        raise Unplannable("the LTP model needs a red part (red_len > 0)")
    if n_red > 3 and block.max_claims_per_rs < n_red:
        raise Unplannable(
            f"max_claims_per_rs {block.max_claims_per_rs} with {n_red} red segments: the model "
            "splits reports into several RSs only for blocks of up to 3 red segments"
        )
    if block.miscolored_sender and n_red < 2:
        raise Unplannable(
            "miscolored_sender needs at least 2 red segments: the model's miscolored segment is "
            "green data at offset 0, exposed by red data above it (RFC 5326 §6.21)"
        )
    losses = plan(impairments, block)
    constants = {**block_constants(block, max_retx), **LTP.reading_constants(reading)}
    workdir.mkdir(parents=True, exist_ok=True)
    cfg = workdir / f"MCLTPOutcomes_{name}{'_reading' + reading if reading else ''}.cfg"
    if random_losses or random_late:
        # Any segment may be lost (or held back), the planned ones among them
        # (the planned ones are then not required: a set that is wider,
        # never narrower).
        constants["AnyLoss"] = True
    n_late = sum(1 for x in losses if x.late)
    n_outages = sum(1 for x in losses if x.outage)
    cfg.write_text(
        cfg_text(
            "Every terminal outcome under a planned set of losses, delays and duplicates.",
            {
                **constants,
                "MaxLoss": len(losses) - n_late - n_outages + random_losses,
                "MaxLate": n_late + random_late,
                # the implementations have no link state cues (6.5, 6.6)
                "LinkCues": False,
                "MaxOutages": n_outages,
            },
            spec="OutcomeSpec",
            view="OutcomeView",
            invariants=["TypeOK", "Safety", "Report", "ActionSeen"],
        ),
        encoding="utf-8",
    )
    res = run_tlc(
        MODULE,
        cfg,
        workers=1,
        progress=progress,
        workdir=workdir,
        extra_modules={"MCLTPPlan": plan_module(losses, in_order)},
        short=True,
    )
    if res.violated or res.errors:
        raise DtncError(
            f"TLC found {', '.join(res.violated) or 'errors'} while enumerating outcomes "
            f"for {name}: {'; '.join(res.errors)} (log: {res.log_path})"
        )
    text = res.log_path.read_text(encoding="utf-8")
    outcomes = parse_outcomes(text, block, reading)
    return OutcomeSet(
        outcomes,
        res.distinct_states,
        res.seconds,
        res.log_path,
        {str(v[0]) for v in printed(text, "dtnc-action")},
        n_outages,
    )


def expectation(
    block: LtpBlock,
    impairments: Sequence[Impairment],
    workdir: Path,
    *,
    name: str = "outcomes",
    must_include: ExpectedOutcome | None = None,
    progress: Callable[[TlcProgress], None] | None = None,
    shape: ChannelShape | None = None,
    seen: set[str] | None = None,
) -> Expectation:
    """The scenario's expectation: the outcome set, with where it came from.
    ``must_include`` is an outcome known to be reachable (a trap trace's end
    state); its absence means the model wrappers disagree, which is a bug."""
    shape = shape or ChannelShape(True, False, "in order, losses as planned")
    extra = RANDOM_LOSS_BOUND if shape.random_loss else 0
    small = sum(_segments(block)) <= 4 and block.retransmission_limit <= 2
    # (beyond small blocks and limits one: enough to judge most runs, and the
    # judge leaves a run with more unjudged, expectation-bound)
    extra_late = (RANDOM_LATE_BOUND if small else 1) if shape.random_late else 0
    # The default reading, then each alternative (specs/ltp/readings.json):
    # an outcome carries every reading it was reached under.
    n_red, n_green = _segments(block)
    rids = LTP.reading_ids(block_constants(block))
    runs = [
        outcome_set(
            block,
            impairments,
            workdir,
            name=name,
            progress=progress,
            in_order=shape.in_order,
            random_losses=extra,
            random_late=extra_late,
            reading=rid,
        )
        for rid in rids
    ]
    res = runs[0]
    if seen is not None:
        for x in runs:
            seen |= x.actions
    every = [o for x in runs for o in x.outcomes]
    if not every:
        raise DtncError(
            f"{name}: the model reaches no end with exactly these losses under any reading "
            f"(log: {res.log})"
        )
    if must_include is not None and not any(o.key() == must_include.key() for o in every):
        raise DtncError(
            f"{name}: the trace's end state ({must_include.describe()}) is not among the "
            f"{len(res.outcomes)} outcomes TLC enumerated (log: {res.log})"
        )
    alternatives = "; ".join(
        f"reading {r.id} ({r.constant}): {len(x.outcomes)} outcomes"
        for r, x in zip((LTP.reading(i) for i in rids[1:]), runs[1:], strict=True)
    )
    n_outages = res.outages
    return Expectation(
        outcomes=every,
        in_order=shape.in_order,
        random_losses=extra,
        random_late=extra_late,
        outages=n_outages,
        source=(
            "TLC, specs/ltp/MCLTPOutcomes.tla: every terminal state with "
            + (
                f"the planned impairments and up to {extra} more losses of any segment"
                if extra
                else "exactly the planned impairments"
            )
            + (f" and up to {extra_late} delays or duplicates of any segment" if extra_late else "")
            + (
                f", {n_outages} link outage(s) that swallow what they carry, timers running "
                "on (no link state cues)"
                if n_outages
                else ""
            )
            + (", channels in order" if shape.in_order else ", channels that may reorder")
            + f" (NRed={n_red}, NGreen={n_green}, MaxRetx={block.retransmission_limit}, "
            f"MaxClaims={block.max_claims_per_rs}; "
            f"{res.distinct_states:,} distinct states; channel: {shape.why})"
            + (f"; and under the alternative {alternatives}" if alternatives else "")
        ),
    )


def expectation_for(
    scn: Scenario,
    workdir: Path,
    *,
    progress: Callable[[TlcProgress], None] | None = None,
    seen: set[str] | None = None,
) -> Expectation:
    """A scenario's expectation from its geometry, impairments and channel:
    ``dtnconform expect`` writes it into hand-written scenarios. ``seen``
    gets the model actions the set's behaviours took."""
    if not isinstance(scn.params, LtpBlock):
        raise Unplannable(f"{scn.name}: this outcome set is for LTP scenarios only")
    block = scn.params
    shape = channel_shape(scn)
    # The set depends on the geometry, the impairments and the channel's
    # shape only: scenarios that differ in link figures share one TLC run.
    key = json.dumps(
        [
            block.model_dump(mode="json"),
            # (an outage's length is no model input: the model is untimed)
            [
                i.model_dump(
                    mode="json", exclude={"note", "delay_ms"} if i.action == "outage" else {"note"}
                )
                for i in scn.impairments
            ],
            shape.in_order,
            shape.random_loss,
            shape.random_late,
        ],
        sort_keys=True,
    )
    return cached(
        key,
        lambda took: expectation(
            block,
            scn.impairments,
            workdir,
            name=scn.name,
            progress=progress,
            shape=shape,
            seen=took,
        ),
        seen,
    )


def cached(
    key: str, compute: Callable[[set[str]], Expectation], seen: set[str] | None = None
) -> Expectation:
    """An expectation computed once per ``key`` (any protocol's: the key
    holds the parameters), a copy of it each time; ``seen`` gets the model
    actions its behaviours took (``compute`` fills the set it is given)."""
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
    if hit is None:
        took: set[str] = set()
        exp = compute(took)
        hit = (exp, frozenset(took))
        with _CACHE_LOCK:
            _CACHE[key] = hit
    if seen is not None:
        seen |= hit[1]
    return hit[0].model_copy(deep=True)


# (the expectation, and the model actions its behaviours took)
_CACHE: dict[str, tuple[Expectation, frozenset[str]]] = {}
_CACHE_LOCK = threading.Lock()
