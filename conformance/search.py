"""Hypothesis search: random impairment plans against a live implementation,
with the model as the oracle, shrunk to a minimal regression scenario.

A ``RuleBasedStateMachine`` builds one scenario per example. Its rules are
the model's channel actions, named as LTP's model names them
(specs/ltp/LTP.tla): ``ChannelLose…`` loses the n-th unit of a kind in one
direction, ``ChannelDelay…`` holds it back past the retransmission timers
(``DELAY_MS``), ``ChannelDuplicate…`` delivers it twice, ``ChannelLinkDown``
takes the link down both ways as that unit crosses it, for as long (at most
one outage per plan; the model's link swallows what it carries then and the
timers run on); each is named by protocol fields as every impairment is.
The units each direction can impair and the transfer every example runs are
the protocol's search space (its ``search_space`` capability: LTP's is
generators/ltp/search.py), the protocol the one the implementation plays.
Its initialize rule (``Init``) picks the retransmission limit and who plays
which side: the implementation on both, or the model-driven tester on one
(conformance.tester), whose steps are the model's sender or receiver
actions. At the end of the example (teardown) TLC computes every outcome the
model allows under exactly those losses (the protocol's ``outcomes``
capability), the scenario runs between namespaces, and the verdict is the
oracle: ``fail`` (an outcome or a trace the model does not allow) fails the
example. Hypothesis then shrinks the plan (fewer losses, earlier
occurrences, the simplest roles), re-running each candidate live, and the
smallest plan that still fails is saved as a regression scenario.

A plan the model cannot express is skipped before anything runs (logged as
rejected); a run whose verdict is
``error`` or ``inconclusive`` says nothing about the implementation and does
not fail the example.

``dtnconform search ltp --sut licklider`` runs it; the regression scenarios
go to ``OUT/regressions/``, every run to ``OUT/runs/``, and ``OUT/search.jsonl``
has one line per example (plan, verdict, reasons).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance.core.contract import ProtocolSpec
from conformance.core.errors import DtncError, InputError, NotSupported
from conformance.core.types import Impairment, Scenario, Verdict, dump_model, load_scenario

if TYPE_CHECKING:
    from conformance.core.capabilities import OutcomeSets, SearchSpace
    from suts.base import SutAdapter

ROLES = ("none", "sender", "receiver")  # the tester's role; none: the SUT on both sides
MAX_LOSSES = 3  # impairments per plan: losses, delays, duplicates and an outage together
# A delayed segment arrives this much later: past the examples' 1 s
# retransmission timers (conformance/timers.py), so that it is overtaken
# and its timer expires first (the model's release may come at any time).
DELAY_MS = 1500.0
# (direction, unit, occurrence, act): act is the emulator rule's action
Planned = tuple[str, str, int, str]


@dataclass
class SearchLog:
    """What a search did, example by example."""

    out: Path
    examples: int = 0
    rejected: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    failures: list[Path] = field(default_factory=list)
    messages: dict[Path, str] = field(default_factory=dict)  # failure -> its reasons
    on_example: Callable[[int, str], None] | None = None

    def write(self, line: dict[str, Any]) -> None:
        with (self.out / "search.jsonl").open("a") as fh:
            fh.write(json.dumps(line, sort_keys=True) + "\n")


_ACT = {"drop": "", "delay": "late-", "duplicate": "dup-", "outage": "down-"}


def plan_name(space: SearchSpace, tester: str, limit: int, losses: list[Planned]) -> str:
    parts = [f"{_ACT[a]}{d[0]}{space.short(t)}.{k}" for d, t, k, a in losses] or ["nominal"]
    who = "" if tester == "none" else f"-tester-{tester}"
    key = hashlib.sha1(repr((tester, limit, losses)).encode()).hexdigest()[:6]
    return f"search-l{limit}{who}-" + "-".join(parts)[:60] + f"-{key}"


def fail(message: str) -> None:
    """The one place an example fails: Hypothesis tells failures apart by
    where they are raised, so a replayed plan must fail from here too."""
    raise AssertionError(message)


def plan_scenario(space: SearchSpace, tester: str, limit: int, planned: list[Planned]) -> Scenario:
    """The scenario of a plan: the space's base transfer, one impairment per
    unit occurrence (the emulator acts once on it; the first act planned for
    it stands), in a fixed order."""
    first: dict[tuple[str, str, int], str] = {}
    for d, t, k, a in planned:
        first.setdefault((d, t, k), a)
    losses = sorted((d, t, k, a) for (d, t, k), a in first.items())
    scn = space.base_scenario(plan_name(space, tester, limit, losses), limit)
    scn.impairments = [
        Impairment(
            direction=d,  # type: ignore[arg-type]
            match=space.match_of(t),
            occurrence=k,
            action=a,  # type: ignore[arg-type]
            delay_ms=DELAY_MS if a in ("delay", "outage") else 0.0,
        )
        for d, t, k, a in losses
    ]
    return scn


@dataclass
class _Search:
    """What every example of one search shares: the implementation, the
    log, the budget of live runs, the protocol's search space and outcome
    sets, and each plan's failure (None: it did not fail), so that a plan
    drawn again is not run again."""

    sut: SutAdapter
    log: SearchLog
    budget: int
    space: SearchSpace
    outcomes: OutcomeSets
    seen: dict[str, str | None] = field(default_factory=dict)

    @classmethod
    def of(cls, spec: ProtocolSpec, sut_name: str, log: SearchLog, budget: int) -> _Search:
        """A search of ``sut_name`` in ``spec``, the protocol it plays (an
        InputError naming the reason when that protocol has no search space
        or the implementation plays another)."""
        from suts.registry import get

        sut = get(sut_name)
        if sut.protocol != spec.name:
            raise InputError(f"--sut {sut.name}: it plays {sut.protocol}, not {spec.name}")
        space = spec.need("search_space", spec.capabilities.search_space)
        outcomes = spec.need("outcomes", spec.capabilities.outcomes)
        return cls(sut, log, budget, space, outcomes)


def run_plan(search: _Search, tester: str, limit: int, planned: list[Planned]) -> None:
    """One example's end: its outcome set from TLC, then its live run, the
    verdict the oracle; a fail is saved as a regression scenario and fails
    the example (:func:`fail`)."""
    from conformance.runner import error_outcome, run_scenario

    log, seen, sut = search.log, search.seen, search.sut
    scn = plan_scenario(search.space, tester, limit, planned)
    if scn.name in seen:
        # the same plan again (Hypothesis drew other choices that
        # give it): its verdict stands, nothing is run twice
        if (failure := seen[scn.name]) is not None:
            fail(failure)
        return
    if log.examples >= search.budget * (3 if log.failures else 1):
        return
    work = log.out / "tlc" / scn.name
    try:
        scn.expect = search.outcomes.expectation_for(scn, work)
    except DtncError as exc:  # Unplannable, or no end with exactly these losses
        # (teardown cannot reject an example: it is skipped, as a pass)
        log.rejected += 1
        seen[scn.name] = None
        log.write({"scenario": scn.name, "rejected": str(exc)})
        return
    log.examples += 1
    role = None if tester == "none" else tester
    run_dir = log.out / "runs" / f"{log.examples:04d}-{scn.name}"
    if log.on_example:
        log.on_example(log.examples, scn.name)
    try:
        verdict = run_scenario(scn, sut, run_dir, tester=role).verdict
    except NotSupported as exc:  # a role exited 127: no verdict, no finding
        log.write({"scenario": scn.name, "unsupported": str(exc)})
        return
    except Exception as exc:  # set-up failure: an error, not a finding
        verdict = error_outcome(scn, sut, run_dir, exc, tester=role).verdict
    log.verdicts[verdict.status] = log.verdicts.get(verdict.status, 0) + 1
    log.write(
        {
            "scenario": scn.name,
            "tester": tester,
            "limit": limit,
            "losses": [list(x) for x in sorted(set(planned))],
            "impairments": [i.describe() for i in scn.impairments],
            "verdict": verdict.status,
            "reasons": [r.code for r in verdict.reasons],
            "run": str(run_dir),
            "t": time.time(),
        }
    )
    seen[scn.name] = None
    if verdict.status == "fail":
        seen[scn.name] = failure = _keep_failure(search, scn, tester, verdict, run_dir)
        fail(failure)


def _keep_failure(
    search: _Search, scn: Scenario, tester: str, verdict: Verdict, run_dir: Path
) -> str:
    """A failing plan saved as a regression scenario (its description the
    verdict's reasons); the example's failure text."""
    log, sut = search.log, search.sut
    path = log.out / "regressions" / f"{scn.name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    scn.description = (
        f"found by Hypothesis search (conformance/search.py) against {sut.name} "
        f"{sut.version}, tester {tester}: "
        + "; ".join(f"{r.code}: {r.message}" for r in verdict.reasons)[:600]
    )
    dump_model(scn, path)
    log.failures.append(path)
    log.messages[path] = "; ".join(f"{r.code}: {r.message}" for r in verdict.reasons)
    return (
        f"{scn.name}: verdict fail ("
        + "; ".join(r.code for r in verdict.reasons)
        + f"); run {run_dir}; regression scenario {path}"
    )


# machine() keeps its state machine class inside (about 80 lines together):
# Hypothesis takes a rule-based state machine as one class whose methods are
# the rules, one per channel action of the model, and the class is made per
# search, not at module level, so that Hypothesis is imported only when a
# search runs and each search's class holds its own implementation, log and
# plans. What an example does at its end is run_plan's.
def machine(spec: ProtocolSpec, sut_name: str, log: SearchLog, budget: int) -> type:
    """The state machine class for one search (its runs go under log.out):
    ``budget`` live runs of new plans, and twice as many more to shrink a
    failure once one is found."""
    from hypothesis import strategies as st
    from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

    search = _Search.of(spec, sut_name, log, budget)
    forward, back = search.space.FORWARD, search.space.RETURN

    class ChannelMachine(RuleBasedStateMachine):
        """Rules: the model's channel actions. Teardown: the live run."""

        def __init__(self) -> None:
            super().__init__()
            self.tester = "none"
            self.limit = 1
            self.losses: list[Planned] = []

        @initialize(
            tester=st.sampled_from(ROLES),
            limit=st.integers(1, 2),
            first=st.one_of(
                st.tuples(
                    st.just("forward"), st.sampled_from(forward), st.integers(1, 3), st.just("drop")
                ),
                st.tuples(
                    st.just("return"), st.sampled_from(back), st.integers(1, 3), st.just("drop")
                ),
            ),
        )
        def Init(self, tester: str, limit: int, first: Planned) -> None:  # noqa: N802
            """Who plays which side, the retransmission limit, and the plan's
            first loss (a plan without one is the nominal scenario, run by
            every certification already)."""
            self.tester, self.limit = tester, limit
            self.losses.append(first)

        @rule(segment=st.sampled_from(forward), occurrence=st.integers(1, 3))
        def ChannelLoseForward(self, segment: str, occurrence: int) -> None:  # noqa: N802
            self.losses.append(("forward", segment, occurrence, "drop"))

        @rule(segment=st.sampled_from(back), occurrence=st.integers(1, 3))
        def ChannelLoseReturn(self, segment: str, occurrence: int) -> None:  # noqa: N802
            self.losses.append(("return", segment, occurrence, "drop"))

        @rule(segment=st.sampled_from(forward), occurrence=st.integers(1, 2))
        def ChannelDelayForward(self, segment: str, occurrence: int) -> None:  # noqa: N802
            self.losses.append(("forward", segment, occurrence, "delay"))

        @rule(segment=st.sampled_from(back), occurrence=st.integers(1, 2))
        def ChannelDelayReturn(self, segment: str, occurrence: int) -> None:  # noqa: N802
            self.losses.append(("return", segment, occurrence, "delay"))

        @rule(segment=st.sampled_from(forward), occurrence=st.integers(1, 2))
        def ChannelDuplicateForward(self, segment: str, occurrence: int) -> None:  # noqa: N802
            self.losses.append(("forward", segment, occurrence, "duplicate"))

        @rule(segment=st.sampled_from(back), occurrence=st.integers(1, 2))
        def ChannelDuplicateReturn(self, segment: str, occurrence: int) -> None:  # noqa: N802
            self.losses.append(("return", segment, occurrence, "duplicate"))

        @precondition(lambda self: all(a != "outage" for *_, a in self.losses))
        @rule(
            segment=st.sampled_from(
                [("forward", x) for x in forward] + [("return", x) for x in back]
            ),
            occurrence=st.integers(1, 2),
        )
        def ChannelLinkDown(self, segment: tuple[str, str], occurrence: int) -> None:  # noqa: N802
            self.losses.append((segment[0], segment[1], occurrence, "outage"))

        def scenario(self) -> Scenario:
            return plan_scenario(search.space, self.tester, self.limit, self.losses)

        def teardown(self) -> None:
            run_plan(search, self.tester, self.limit, self.losses)

    # Hypothesis prints a failing example as steps of this class by its
    # name, the protocol's ("LtpChannelMachine"); its qualified name stays,
    # by which Hypothesis finds its source for the example database's key
    ChannelMachine.__name__ = f"{search.sut.protocol.capitalize()}ChannelMachine"
    return ChannelMachine


def search(
    spec: ProtocolSpec,
    sut_name: str,
    out: Path,
    *,
    examples: int = 20,
    deterministic: bool = False,
    on_example: Callable[[int, str], None] | None = None,
) -> tuple[SearchLog, Path | None, str]:
    """Run the search; return its log, the minimal regression scenario (the
    last failing plan Hypothesis ran: its shrunk example) or None, and the
    failure's text. ``deterministic``: Hypothesis's derandomized mode (the
    same plans every time)."""
    from hypothesis import HealthCheck, Phase, settings
    from hypothesis.database import DirectoryBasedExampleDatabase
    from hypothesis.stateful import run_state_machine_as_test

    out.mkdir(parents=True, exist_ok=True)
    log = SearchLog(out, on_example=on_example)
    cls = machine(spec, sut_name, log, budget=examples)
    config = settings(
        # plans the model cannot realize (a cancel that never happens) are
        # skipped without a run: draw more than the runs asked for
        max_examples=5 * examples,
        # Init's loss and at most two more: plans of up to three losses
        stateful_step_count=MAX_LOSSES - 1,
        deadline=None,
        derandomize=deterministic,
        # derandomized runs keep no database (Hypothesis's rule); the others
        # remember failing plans and try them first next time
        database=None
        if deterministic
        else DirectoryBasedExampleDatabase(str(out.parent / ".hypothesis-search")),
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
        report_multiple_bugs=False,
        print_blob=False,
    )
    try:
        run_state_machine_as_test(cls, settings=config)
    except Exception as exc:  # the failure, or Hypothesis's Flaky when a replay passed
        if not log.failures:
            raise
        minimal = log.failures[-1]
        dump_model(load_scenario(minimal), out / "regressions" / "minimal.json")
        text = f"{minimal.stem}: {log.messages[minimal]}"
        if not isinstance(exc, AssertionError):
            text = (
                f"({type(exc).__name__}: a failing plan passed when replayed, timers that "
                f"race; the smallest failing plan is kept) {text}"
            )
        return log, minimal, text
    return log, None, ""
