"""What a protocol can provide, each capability declared once as a
:class:`typing.Protocol`, and :class:`Capabilities`, the set a protocol's
spec names (``conformance/protocols/<proto>.py``).

A capability a protocol lacks is ``None`` in its :class:`Capabilities`, with
the reason in ``missing``; ``ProtocolSpec.need`` raises that reason as
an :class:`~conformance.core.errors.InputError` (exit 2), which the CLI
prints. Generic code asks for a capability this way and never probes a
module for a name.

A protocol's capabilities are usually its modules (a module whose functions
have the members' signatures implements a Protocol), e.g. LTP's generator
is ``generators.ltp.purposes``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, SupportsBytes

if TYPE_CHECKING:
    from rich.table import Table

    from conformance.core.contract import TraceModel, WireEvent
    from conformance.core.modelcheck import (
        CatalogueReport,
        GenerateReport,
        TlcProgress,
        TlcResult,
        TraceState,
    )
    from conformance.core.types import Expectation, Scenario, SegmentRecord

Progress = Callable[["TlcProgress"], None]
Steps = Callable[[int, int, str], None]  # (done, total, what): a purpose or a bound


class ModelChecker(Protocol):
    """``dtnconform check``: the model under TLC at a named bound."""

    def check(
        self,
        bound: str,
        progress: Progress | None = None,
        workdir: Path | None = None,
        distributed: int = 0,
    ) -> TlcResult: ...

    def trace_table(self, trace: Iterable[TraceState], title: str = "") -> Table:
        """An error trace, one row per step, in the protocol's words."""
        ...


class Generator(Protocol):
    """``dtnconform generate``: test purposes -> TLC traps -> scenarios."""

    def generate(
        self, outdir: Path, progress: Progress | None = None, on_purpose: Steps | None = None
    ) -> GenerateReport: ...


class Catalogue(Protocol):
    """Every impairment pattern within the catalogue's bounds, beside the
    purposes' scenarios (``generate`` without ``--no-catalogue``)."""

    def catalogue(self, outdir: Path, on_bound: Steps | None = None) -> CatalogueReport: ...


class Robustness(Protocol):
    """Scenarios of the tester's robustness probes, one per tester role."""

    def robustness(self, outdir: Path, report: GenerateReport) -> list[Path]: ...


class OutcomeSets(Protocol):
    """Every outcome the model allows for a scenario (``dtnconform expect``,
    campaigns, interop). Whether a stored set still fits its scenario's
    channel is protocol-free (generators.outcomes.stale)."""

    def expectation_for(
        self,
        scn: Scenario,
        workdir: Path,
        *,
        progress: Progress | None = None,
        seen: set[str] | None = None,
    ) -> Expectation: ...


class TraceModels(Protocol):
    """Trace validation: a run's captures as a behaviour of the model."""

    def trace_model(
        self,
        scn: Scenario,
        records: Sequence[SegmentRecord],
        index: Sequence[int],
        events: Sequence[WireEvent],
    ) -> TraceModel: ...

    def session_of(self, fields: Mapping[str, object]) -> Hashable:
        """The session (transaction) a unit belongs to."""
        ...

    def blank_unit(self) -> Any:
        """The model's "no unit" value (a tlaval Record)."""
        ...


class Tester(Protocol):
    """The model-driven tester: each role a class whose steps are the
    model's actions (conformance/tester/core.py)."""

    @property
    def ROLES(self) -> Mapping[str, Callable[..., Any]]: ...  # noqa: N802

    def check(self, scn: Scenario, role: str) -> None:
        """Raise CannotPlay, naming the scenario field, when the tester
        cannot play ``role`` of this scenario."""
        ...


class Probe(Protocol):
    @property
    def role(self) -> str:
        """The tester role that sends the probe."""
        ...


class Probes(Protocol):
    """The tester's robustness probes, by kind (a scenario's ``probes``)."""

    @property
    def PROBES(self) -> Mapping[str, Probe]: ...  # noqa: N802


class RetxTable(Protocol):
    """``retx-table`` and ``certify --retx-table`` (conformance/retxtable.py):
    the retransmission table's scenarios, one row each, all of one geometry."""

    def retx_scenarios(self, workdir: Path) -> list[Scenario]: ...

    def retx_geometry(self, scn: Scenario) -> str:
        """The geometry a row's scenario has (every row's), for the table's title."""
        ...

    @property
    def RETX_GEOMETRIES(self) -> Mapping[str, Mapping[str, int]]:  # noqa: N802
        """Built-in geometries by name: retx_grid's keyword arguments."""
        ...

    def retx_grid(
        self, block_len: int, red_len: int, segment_size: int, max_losses: int
    ) -> list[Scenario]:
        """The rows of any geometry, judged at their traces' ends (no TLC)."""
        ...


class SearchSpace(Protocol):
    """``dtnconform search`` (conformance/search.py): what a plan's
    impairments are drawn from, and the transfer every example runs. A unit
    is named as the model names it; FORWARD and RETURN are what each
    channel direction can impair."""

    @property
    def FORWARD(self) -> Sequence[str]: ...  # noqa: N802

    @property
    def RETURN(self) -> Sequence[str]: ...  # noqa: N802

    def match_of(self, unit: str) -> dict[str, str | int]:
        """The impairment's match (protocol fields) for a unit of FORWARD or RETURN."""
        ...

    def short(self, unit: str) -> str:
        """The unit in a plan's scenario name."""
        ...

    def base_scenario(self, name: str, limit: int) -> Scenario:
        """The transfer every example runs, at retransmission limit ``limit``,
        before its impairments and outcome set."""
        ...


@dataclass(frozen=True)
class InteropConfig:
    """One interoperability configuration: scenario parameters both
    implementations are set up with, and the link MTU it needs."""

    name: str
    params: dict[str, object]
    mtu: int = 1500
    losses: bool = False  # also every loss scenario of its mode (else one)

    def describe(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.params.items())


class InteropConfigs(Protocol):
    """``dtnconform interop`` (conformance/interop.py): the configurations
    every pair of the protocol's implementations runs in, and each one's
    scenarios."""

    @property
    def CONFIGS(self) -> Sequence[InteropConfig]: ...  # noqa: N802

    def config_names(self, cfg: InteropConfig) -> list[str]:
        """The names of the configuration's scenarios, with no TLC run (the
        matrix's cells are chosen by name before any outcome set is computed)."""
        ...

    def config_scenarios(
        self, cfg: InteropConfig, workdir: Path, names: Collection[str] | None = None
    ) -> list[Scenario]:
        """The configuration's scenarios (``names``: those of them only),
        each with the outcome set the model computes for it."""
        ...


# One datagram of crafted traffic: (seconds from the start, direction, bytes).
Datagram = tuple[float, str, bytes]


@dataclass(frozen=True)
class CraftedTransfer:
    """A transfer made by hand: its scenario, its datagrams in the order
    sent, and when both ends are done (seconds from the start)."""

    scenario: Scenario
    datagrams: list[Datagram]
    end: float


class BenchTraffic(Protocol):
    """``dtnconform bench`` (conformance/bench.py): the protocol's side of
    the benchmarks, its codec and the traffic they time."""

    @property
    def BUILTIN_PROTO(self) -> str:  # noqa: N802
        """Wireshark's own dissector of the protocol, by its Proto name."""
        ...

    def mixed_units(self) -> Sequence[SupportsBytes]:
        """Units of each kind, as the codec builds them (``bytes(unit)``)."""
        ...

    def parse(self, payload: bytes) -> Any:
        """One unit, strictly parsed."""
        ...

    def classify(self, unit: Any) -> Mapping[str, object]:
        """A parsed unit's fields, as the channel's classifier names them."""
        ...

    def crafted_transfer(
        self, size: int, unit_size: int, block_len: int | None = None
    ) -> CraftedTransfer:
        """A transfer of ``size`` bytes in units of ``unit_size`` that
        completes with nothing lost: in transfers (blocks, files) of
        ``block_len`` bytes each, one session each (default: one)."""
        ...

    def capture_units(self, sessions: int, per: int) -> list[bytes]:
        """``sessions`` transfers of ``per`` data units each, forward, in order."""
        ...


@dataclass(frozen=True)
class Capabilities:
    """What one protocol provides; ``None`` where it provides nothing, with
    the reason in ``missing`` (capability name -> why)."""

    checker: ModelChecker | None = None
    generator: Generator | None = None
    catalogue: Catalogue | None = None
    robustness: Robustness | None = None
    outcomes: OutcomeSets | None = None
    trace: TraceModels | None = None
    tester: Tester | None = None
    probes: Probes | None = None
    retx_table: RetxTable | None = None
    search_space: SearchSpace | None = None
    interop: InteropConfigs | None = None
    bench: BenchTraffic | None = None
    missing: Mapping[str, str] = field(default_factory=dict)
