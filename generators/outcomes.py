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
(:func:`channel_shape`, :func:`stale`), the runs under each model reading
(:func:`under_readings`), and the cache of computed sets. The catalogue's
TLC runs are here too (:func:`catalogue_run`, :func:`merge_readings`): a
catalogue module enumerates every pattern of planned impairments within a
budget, each with the outcomes the model reaches with exactly that pattern.
Each protocol's own half is ``generators/<proto>/outcomes.py`` (and
``generators/<proto>/catalogue.py``). Anything
without a model counterpart (a corruption the application sees, a field
the model abstracts away) is :class:`Unplannable`, which says which
impairment and why.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from conformance.core.capabilities import InteropConfig
from conformance.core.contract import ProtocolParams
from conformance.core.errors import DtncError as DtncError  # re-exported: Unplannable's base
from conformance.core.types import (
    Channel,
    Direction,
    Expectation,
    ExpectedOutcome,
    Impairment,
    ImpairmentAction,
    Scenario,
)
from generators.tlaval import TlaValue
from generators.tlc import TlaConstant, TlcProgress, cfg_text, printed, run_tlc


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
    # the model actions its behaviours took (the outcome module's ActionSeen)
    actions: set[str] = field(default_factory=set)
    outages: int = 0  # the link outages it planned


def under_readings(
    readings: Sequence[str],
    outcome_set: Callable[[str], OutcomeSet],
    seen: set[str] | None = None,
) -> tuple[list[OutcomeSet], list[ExpectedOutcome]]:
    """The runs of one expectation, ``outcome_set(reading)`` for each of
    ``readings`` in order (the default reading, '', first, then each
    alternative that can make a difference), and every outcome they reached,
    each with the reading it was reached under (an Expectation made of them
    merges one reached under several readings into one with all of them).
    ``seen`` gets the model actions of every run."""
    runs = [outcome_set(r) for r in readings]
    if seen is not None:
        for x in runs:
            seen |= x.actions
    return runs, [o for x in runs for o in x.outcomes]


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
    actions its behaviours took (``compute`` fills the set it is given).
    Callers of one key at once (a catalogue's threads) compute it once: the
    others wait for its result."""
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        busy = _KEY_LOCKS.setdefault(key, threading.Lock())
    if hit is None:
        with busy:
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
# one lock per key, held while the key's expectation is computed
_KEY_LOCKS: dict[str, threading.Lock] = {}


# ---------------------------------------------------------------------------
# The catalogue: every pattern of planned impairments within a bound's budgets
# ---------------------------------------------------------------------------


class CatalogueBound(Protocol):
    """What a catalogue run reads of a protocol's bound (its own dataclass,
    which also gives the run's constants)."""

    @property
    def tag(self) -> str:
        """The bound's name in files, scenario names and errors."""
        ...

    @property
    def max_late(self) -> int:
        """The delays and duplicates the bound allows (0: none)."""
        ...


B = TypeVar("B", bound=CatalogueBound)
# A terminal outcome as the catalogue module printed it, in a form fit for a
# dict key; each protocol makes its own from the printed values.
K = TypeVar("K", bound=Hashable)


@dataclass
class Pattern(Generic[B, K]):
    """One pattern of a catalogue bound: the planned impairments, and each
    outcome the model reaches with exactly them, with the readings that
    reach it."""

    bound: B
    losses: frozenset[PlannedLoss]
    outcomes: dict[K, set[str]] = field(default_factory=dict)


@dataclass
class CatalogueRun(Generic[B, K]):
    """The patterns of one bound, the model actions their behaviours took,
    the distinct states and the seconds of TLC."""

    patterns: list[Pattern[B, K]]
    actions: set[str]
    states: int
    seconds: float


@dataclass(frozen=True)
class CatalogueModule(Generic[K]):
    """A protocol's catalogue module (specs/<proto>/MC<P>Catalogue.tla). It
    has ``CatalogueSpec``, ``OutcomeView`` and two invariants that print:
    ``CatalogueReport``, ``<<"dtnc-pattern", planHit, outcome...>>`` at each
    terminal state, and ``ActionSeen``, ``<<"dtnc-action", name>>``."""

    path: Path
    # the action constraint that keeps only impairments a live run can make
    # (none of a segment the receiver already holds)
    action_constraint: str
    # the printed outcome (the values after planHit) as the key of Pattern.outcomes
    outcome_key: Callable[[Sequence[TlaValue]], K]


def catalogue_run(
    module: CatalogueModule[K],
    bound: B,
    reading: str,
    workdir: Path,
    *,
    cfg_name: str,
    comment: str,
    constants: Mapping[str, TlaConstant],
    progress: Callable[[TlcProgress], None] | None = None,
) -> CatalogueRun[B, K]:
    """One TLC run of a catalogue module with ``constants`` (the bound's,
    under ``reading``): its patterns, each outcome tagged with ``reading``.
    A bound that allows late segments keeps only the patterns with one (the
    others are those of the bound without), and a pattern with two acts on
    one transmission (say, duplicated and then lost) is left out: the live
    channel applies one rule per segment."""
    workdir.mkdir(parents=True, exist_ok=True)
    cfg = workdir / cfg_name
    cfg.write_text(
        cfg_text(
            comment,
            constants,
            spec="CatalogueSpec",
            view="OutcomeView",
            invariants=["CatalogueReport", "ActionSeen"],
            action_constraint=module.action_constraint,
        ),
        encoding="utf-8",
    )
    # (runs of seconds, two at once: the JVM's quick compiler serves them best)
    res = run_tlc(module.path, cfg, workers=1, workdir=workdir, progress=progress, short=True)
    if res.violated or res.errors:
        raise DtncError(f"TLC failed on the catalogue ({bound.tag}): {res.errors} ({res.log_path})")
    text = res.log_path.read_text(encoding="utf-8")
    found: dict[frozenset[PlannedLoss], Pattern[B, K]] = {}
    for records, *outcome in printed(text, "dtnc-pattern"):
        losses = frozenset(
            PlannedLoss(str(x["dir"]), str(x["key"]), int(x["off"]), int(x["occ"]), str(x["act"]))
            for x in records
        )
        if bound.max_late and not any(x.late for x in losses):
            continue
        if len({(x.dir, x.key, x.off, x.occ) for x in losses}) < len(losses):
            continue
        p = found.setdefault(losses, Pattern(bound, losses))
        p.outcomes.setdefault(module.outcome_key(outcome), set()).add(reading)
    actions = {str(v[0]) for v in printed(text, "dtnc-action")}
    return CatalogueRun(list(found.values()), actions, res.distinct_states or 0, res.seconds)


def merge_readings(runs: Sequence[CatalogueRun[B, K]], bound: B) -> CatalogueRun[B, K]:
    """One bound's runs under each reading (the default first) as one: a
    pattern reached under several readings is one pattern of ``bound``, each
    outcome tagged with every reading that reaches it; the actions of all
    runs, the default reading's states and the seconds of all."""
    found: dict[frozenset[PlannedLoss], Pattern[B, K]] = {}
    actions: set[str] = set()
    for run in runs:
        actions |= run.actions
        for p in run.patterns:
            have = found.setdefault(p.losses, Pattern(bound, p.losses))
            for o, rs in p.outcomes.items():
                have.outcomes.setdefault(o, set()).update(rs)
    return CatalogueRun(list(found.values()), actions, runs[0].states, sum(r.seconds for r in runs))


def interop_scenarios(
    cfg: InteropConfig,
    plans: Mapping[str, Sequence[PlannedLoss]],
    params: ProtocolParams,
    impairment: Callable[[PlannedLoss], Impairment],
    expectation: Callable[[Scenario, Path], Expectation],
    workdir: Path,
    names: Collection[str] | None = None,
) -> list[Scenario]:
    """An interoperability configuration's scenarios (conformance/interop.py):
    one per plan (``names``: those of them only), with ``params``, the
    plan's impairments and the outcome set the model computes for it."""
    from conformance.core import registry as protocols

    delivery = protocols.get(params.protocol).delivery
    out = []
    for name, plan in plans.items():
        if names is not None and name not in names:
            continue
        placeholder = ExpectedOutcome(
            sender_outcome="completed",
            receiver_outcome="completed",
            delivered=delivery(protocol=params.protocol),
        )
        scn = Scenario(
            name=name,
            protocol=params.protocol,
            description=f"Interoperability, {cfg.describe()}: "
            + (", ".join(f"{x.key} {x.off} lost once ({x.dir})" for x in plan) or "no loss")
            + ".",
            params=params,
            impairments=[impairment(x) for x in plan],
            channel=Channel(mtu=cfg.mtu),
            expect=Expectation(outcomes=[placeholder]),
        )
        scn.expect = expectation(scn, workdir)
        out.append(scn)
    return out
