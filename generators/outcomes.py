"""Outcome planning for any protocol: expectations as the set of every
outcome the model allows.

For a scenario's impairments, TLC explores a protocol's outcome module with
the channel allowed to impair exactly the planned units, named as the live
channel names them (direction, wire key, occurrence), and prints every
terminal outcome it reaches. A run then passes with any of them: the
expectation is not one interleaving's end state.

This module holds what every protocol's outcome planning shares: a planned
impairment (:class:`PlannedLoss`) and its expansion from a scenario's rules
(:func:`expand`), what the model must know of the channel
(:func:`channel_shape`, :func:`stale`), and the cache of computed sets.
Each protocol's own half is ``generators/<proto>/outcomes.py``. Anything
without a model counterpart (a corruption the application sees, a field
the model abstracts away) is :class:`Unplannable`, which says which
impairment and why.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from conformance.core.errors import DtncError as DtncError  # re-exported: Unplannable's base
from conformance.core.types import (
    Direction,
    Expectation,
    ExpectedOutcome,
    Impairment,
    ImpairmentAction,
    Scenario,
)


class Unplannable(DtncError):
    """An impairment the model cannot express as a planned loss."""


# What the channel does to a planned segment, as the model and the emulator's
# rules name it ("outage": the link goes down as the segment crosses it).
ACTS = ("drop", "delay", "duplicate", "outage")

# The model's names (its strings) of a channel direction and an impairment
# action, as Impairment's fields take them.
_DIRECTIONS: dict[str, Direction] = {"forward": "forward", "return": "return"}
_ACTIONS: dict[str, ImpairmentAction] = {
    "drop": "drop", "corrupt": "corrupt", "delay": "delay", "duplicate": "duplicate",
    "outage": "outage",
}  # fmt: skip


def direction_of(name: str) -> Direction:
    """A direction the model (or a table) names, as Impairment.direction; a
    ValueError, as Impairment's own validation would give, for any other."""
    try:
        return _DIRECTIONS[name]
    except KeyError:
        raise ValueError(f"direction: {name!r} is neither 'forward' nor 'return'") from None


def action_of(name: str) -> ImpairmentAction:
    """An action the model names, as Impairment.action (a ValueError for any other)."""
    try:
        return _ACTIONS[name]
    except KeyError:
        raise ValueError(f"action: {name!r} is no impairment action") from None


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
    from conformance.channel.control import resolve

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
