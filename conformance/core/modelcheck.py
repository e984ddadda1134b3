"""What model checking and generation report, for every protocol: TLC's
result and progress (generators/tlc.py fills them), a generation's purposes
and coverage (generators/traps.py), a catalogue's scenarios and coverage.
The capabilities (conformance/core/capabilities.py) return these."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from conformance.core.types import Scenario

# A TLA+ value as generators/tlaval.py parses it: int, str, bool, Record,
# tuple, frozenset, Function or ModelValue.
TlaValue = Any


@dataclass(frozen=True)
class TlcMessage:
    code: int
    severity: int
    text: str


@dataclass(frozen=True)
class TlcProgress:
    """One progress report: TLC's counts so far, and the wall-clock time."""

    states_generated: int
    distinct_states: int
    queue: int
    depth: int | None
    seconds: float


@dataclass(frozen=True)
class PropertyResult:
    name: str
    kind: Literal["invariant", "property", "deadlock"]
    status: Literal["ok", "violated", "not_checked"]


@dataclass(frozen=True)
class TraceState:
    """One state of an error trace: its 1-based index, the action that led to
    it (TLC's label: an operator name, "Initial predicate", "Stuttering" or
    "Back to state"), and the variables."""

    index: int
    action: str
    variables: dict[str, TlaValue]
    back_to: int | None = None


@dataclass
class TlcResult:
    ok: bool
    distinct_states: int | None
    states_generated: int | None
    depth: int | None
    seconds: float
    properties: list[PropertyResult]
    trace: list[TraceState]
    version: str
    log_path: Path
    exit_code: int
    errors: list[str] = field(default_factory=list)
    messages: list[TlcMessage] = field(default_factory=list, repr=False)

    @property
    def violated(self) -> list[str]:
        return [p.name for p in self.properties if p.status == "violated"]


@dataclass
class PurposeStatus:
    purpose: str
    status: Literal["reached", "unreachable", "error"]
    scenario: Path | None = None
    trace_length: int = 0
    detail: str = ""
    same_as: str = ""  # the purpose whose scenario this one's trace repeats


@dataclass
class GenerateReport:
    scenarios: list[Path]
    purposes: list[PurposeStatus]
    actions_covered: list[str]
    actions_total: list[str]
    tlc_seconds: float
    outdir: Path

    @property
    def coverage(self) -> float:
        return len(self.actions_covered) / len(self.actions_total) if self.actions_total else 0.0

    @property
    def actions_uncovered(self) -> list[str]:
        return [a for a in self.actions_total if a not in self.actions_covered]

    @property
    def reached(self) -> list[str]:
        return [p.purpose for p in self.purposes if p.status == "reached"]

    @property
    def unreachable(self) -> list[str]:
        return [p.purpose for p in self.purposes if p.status != "reached"]


@dataclass
class CatalogueReport:
    scenarios: list[Scenario]
    per_bound: dict[str, int]
    states: dict[str, int]
    actions_covered: list[str]
    actions_total: list[str]
    tlc_seconds: float

    @property
    def actions_uncovered(self) -> list[str]:
        return [a for a in self.actions_total if a not in self.actions_covered]
