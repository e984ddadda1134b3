"""Robot Framework keyword library: run dtnconform scenarios, assert verdicts.

Failures name the expected and the observed value, the scenario and the run
directory, so a Robot log line alone says where to look.
"""

from __future__ import annotations

from pathlib import Path

from robot.api import logger
from robot.api.deco import keyword, library
from robot.api.exceptions import SkipExecution
from robot.libraries.BuiltIn import BuiltIn

from conformance import adapt
from conformance.core.errors import NotSupported
from conformance.core.types import RunOutcome, load_scenario
from conformance.runner import error_outcome, run_scenario
from suts.registry import get


class VerdictMismatch(AssertionError):
    """Raised when a scenario's verdict is not the expected one."""


@library(scope="SUITE", auto_keywords=False)
class DtnConformance:
    def __init__(self, runs_dir: str = "runs") -> None:
        self.runs_dir = Path(runs_dir)
        self.last: RunOutcome | None = None

    @keyword("Run Scenario")
    def run_scenario(
        self,
        scenario: str,
        sut: str,
        tester: str = "none",
        run: str = "",
        options: str = "",
        receiver: str = "",
    ) -> str:
        """Replay ``scenario`` (a scenario JSON file) against ``sut`` between
        network namespaces, the model-driven tester playing ``tester``
        (sender, receiver; none: the SUT plays both sides); return the
        verdict status (pass, fail, inconclusive, error). The run's files go
        to RUNS_DIR/``run`` (default: the scenario's name). ``options``: the
        SUT's configuration choices, ``NAME=VALUE`` separated by commas.
        ``receiver``: another implementation plays the receiver (``sut``
        sends): an interoperability run."""
        scn = load_scenario(Path(scenario))
        adapter = get(sut)
        adapter.set_options([o for o in options.split(",") if o])
        peer = get(receiver) if receiver else None
        role = None if tester in ("", "none") else tester
        run_dir = self.runs_dir / (run or scn.name)
        try:
            # each implementation's declared profile, on the sides it plays
            # (an interop cell's pair; certify's scenarios come adapted)
            scn, said = adapt.adapt_run(scn, adapt.plays(adapter, role, peer))
            for line in said:
                logger.info(f"adapted to the implementation's profile: {line}")
            self.last = run_scenario(scn, adapter, run_dir, tester=role, receiver_sut=peer)
        except NotSupported as exc:  # a role exited 127: no verdict, no fail
            raise SkipExecution(f"not supported: {exc}") from None
        except Exception as exc:  # set-up failure: still leave a verdict behind
            self.last = error_outcome(scn, adapter, run_dir, exc, tester=role, receiver_sut=peer)
        v = self.last.verdict
        logger.info(f"verdict {v.mark} for {scn.name}; run directory {run_dir}")
        # the verdict as a tag (a pass under an alternative reading says
        # which, "verdict:pass (reading 5)"), and each such reading
        BuiltIn().set_tags(f"verdict:{v.mark}", *(f"reading:{r}" for r in v.readings))
        for reason in v.reasons:
            logger.info(f"{reason.code}: {reason.message} {reason.rule}".strip())
        return v.status

    @keyword("Verdict Should Be")
    def verdict_should_be(self, expected: str) -> None:
        """Fail unless the last run's verdict status is ``expected``."""
        if self.last is None:
            raise VerdictMismatch("no scenario has run yet")
        v = self.last.verdict
        if v.status != expected:
            why = "; ".join(f"{r.code}: {r.message}" for r in v.reasons) or "no reasons"
            raise VerdictMismatch(
                f"{v.scenario}: expected verdict {expected}, observed {v.status} ({why}) "
                f"[run directory {self.last.run_dir}]"
            )

    @keyword("Delivered Should Be")
    def delivered_should_be(self, **counters: str) -> None:
        """Fail unless the receiver delivered what the named counters say,
        e.g. ``red_bytes_delivered=3000    green_bytes_delivered=1000`` (the
        protocol's delivery counters)."""
        if self.last is None or self.last.result is None:
            raise VerdictMismatch("the last run produced no result")
        rx = self.last.result.receiver
        have = rx.delivered.parts() if rx.delivered is not None else {}
        unknown = sorted(set(counters) - set(have))
        if unknown:
            raise VerdictMismatch(
                f"no delivery counter {', '.join(unknown)} (have: {sorted(have)})"
            )
        wrong = {k: (int(v), have[k]) for k, v in counters.items() if have[k] != int(v)}
        if wrong:
            raise VerdictMismatch(
                f"{self.last.verdict.scenario}: "
                + ", ".join(f"{k} expected {w}, observed {h}" for k, (w, h) in wrong.items())
            )
