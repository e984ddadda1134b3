"""A toy protocol with every capability, registered through the contract
(conformance/core/capabilities.py) as a new protocol would be: the CLI's
check, generate (with catalogue and robustness) and expect reach it with no
generic module knowing it, the search plans in its units, and its model
checking is real TLC on a small TLA+ module of its own.

The toy transfers ``file_len`` bytes in steps of 100; its model counts the
steps. Its parameter and delivery types are those of
test_protocol_registry.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest
from rich.table import Table

from conformance import cli, protocols, search
from conformance.core.capabilities import (
    BenchTraffic,
    Capabilities,
    Catalogue,
    CraftedTransfer,
    Generator,
    InteropConfig,
    InteropConfigs,
    ModelChecker,
    OutcomeSets,
    Probes,
    RetxTable,
    Robustness,
    SearchSpace,
    TraceModels,
)
from conformance.core.capabilities import (
    Tester as RoleTester,
)
from conformance.core.contract import ProtocolSpec, TraceModel, Unrepresentable, WireEvent
from conformance.core.modelcheck import (
    CatalogueReport,
    GenerateReport,
    PurposeStatus,
    TlcProgress,
    TlcResult,
    TraceState,
)
from conformance.core.types import Expectation, ExpectedOutcome, Scenario, SegmentRecord
from conformance.tests.test_protocol_registry import TOY, ToyDelivery
from generators.tlc import find_jar, run_tlc

STEP = 100  # bytes per model step

MODULE = """---- MODULE Toy ----
\\* The toy transfer: the sender sends one step of STEP bytes at a time
\\* until the file is across.
EXTENDS Naturals
CONSTANT Steps
VARIABLE sent
Init == sent = 0
SenderSendStep == sent < Steps /\\ sent' = sent + 1
Done == sent = Steps /\\ UNCHANGED sent
Next == SenderSendStep \\/ Done
TypeOK == sent \\in 0..Steps
NotAcross == sent < Steps
====
"""


class ToyModel:
    """Every capability of the toy protocol, in one object."""

    def __init__(self, spec_dir: Path) -> None:
        self.spec_dir = spec_dir
        spec_dir.mkdir(parents=True, exist_ok=True)
        (spec_dir / "Toy.tla").write_text(MODULE, encoding="utf-8")

    # -- checker -------------------------------------------------------------

    def _tlc(self, invariant: str, steps: int, workdir: Path | None) -> TlcResult:
        cfg = self.spec_dir / f"Toy_{invariant}.cfg"
        cfg.write_text(
            f"CONSTANT Steps = {steps}\nINIT Init\nNEXT Next\nINVARIANT TypeOK {invariant}\n",
            encoding="utf-8",
        )
        return run_tlc(self.spec_dir / "Toy.tla", cfg, workers=1, workdir=workdir)

    def check(
        self,
        bound: str,
        progress: Callable[[TlcProgress], None] | None = None,
        workdir: Path | None = None,
        distributed: int = 0,
    ) -> TlcResult:
        # "bug": the trap invariant as a property, so TLC finds a counterexample
        return self._tlc("NotAcross" if bound == "bug" else "TypeOK", 3, workdir)

    def trace_table(self, trace: Iterable[TraceState], title: str = "") -> Table:
        table = Table(title=title or "toy steps")
        table.add_column("step")
        table.add_column("sent")
        for s in trace:
            table.add_row(s.action, str(s.variables["sent"]))
        return table

    # -- generator, catalogue, robustness ------------------------------------

    def _scenario(self, name: str, steps: int) -> Scenario:
        return Scenario.model_validate(
            {
                "name": name,
                "protocol": "toy",
                "params": {"file_len": steps * STEP},
                "expect": self.expectation(steps * STEP).model_dump(mode="json"),
            }
        )

    def _write(self, outdir: Path, scn: Scenario) -> Path:
        outdir.mkdir(parents=True, exist_ok=True)
        path = outdir / f"{scn.name}.json"
        path.write_text(scn.model_dump_json(by_alias=True, indent=1), encoding="utf-8")
        return path

    def generate(
        self,
        outdir: Path,
        progress: Callable[[TlcProgress], None] | None = None,
        on_purpose: Callable[[int, int, str], None] | None = None,
    ) -> GenerateReport:
        """One purpose, "across": TLC's counterexample to NotAcross is the
        shortest transfer, and its length the scenario's file."""
        res = self._tlc("NotAcross", 2, outdir / "tlc")
        assert res.trace, "TLC refutes the trap"
        path = self._write(outdir, self._scenario("toy-across", len(res.trace) - 1))
        if on_purpose:
            on_purpose(1, 1, "across")
        return GenerateReport(
            scenarios=[path],
            purposes=[PurposeStatus("across", "reached", path, len(res.trace))],
            actions_covered=["SenderSendStep"],
            actions_total=["SenderSendStep", "Done"],
            tlc_seconds=res.seconds,
            outdir=outdir,
        )

    def catalogue(
        self, outdir: Path, on_bound: Callable[[int, int, str], None] | None = None
    ) -> CatalogueReport:
        scenarios = [self._scenario(f"toy-steps-{n}", n) for n in (1, 2)]
        for scn in scenarios:
            self._write(outdir, scn)
        return CatalogueReport(
            scenarios=scenarios,
            per_bound={"ci": len(scenarios)},
            states={"ci": 3},
            actions_covered=["SenderSendStep", "Done"],
            actions_total=["SenderSendStep", "Done"],
            tlc_seconds=0.0,
        )

    def robustness(self, outdir: Path, report: GenerateReport) -> list[Path]:
        return [self._write(outdir, self._scenario("toy-robustness", 1))]

    # -- outcomes, retransmission table --------------------------------------

    def expectation(self, file_len: int) -> Expectation:
        return Expectation(
            outcomes=[
                ExpectedOutcome(
                    sender_outcome="completed",
                    receiver_outcome="completed",
                    delivered=ToyDelivery(file_bytes=file_len),
                )
            ],
            source="the toy model: every step arrives",
        )

    def expectation_for(
        self,
        scn: Scenario,
        workdir: Path,
        *,
        progress: Callable[[TlcProgress], None] | None = None,
        seen: set[str] | None = None,
    ) -> Expectation:
        if seen is not None:
            seen.add("SenderSendStep")
        return self.expectation(int(getattr(scn.params, "file_len", 0)))

    def retx_scenarios(self, workdir: Path) -> list[Scenario]:
        return [self._scenario("toy-retx", 1)]

    def retx_geometry(self, scn: Scenario) -> str:
        return f"file {getattr(scn.params, 'file_len', 0)} B"

    RETX_GEOMETRIES: Mapping[str, Mapping[str, int]] = {
        "toy": {"block_len": STEP, "red_len": STEP, "segment_size": STEP, "max_losses": 1}
    }

    def retx_grid(
        self, block_len: int, red_len: int, segment_size: int, max_losses: int
    ) -> list[Scenario]:
        # one row per loss count: the toy's losses are not modelled
        return [self._scenario(f"toy-retx-{k}", 1) for k in range(max_losses + 1)]

    # -- search space, interop, bench ----------------------------------------

    FORWARD = ("step@0", "step@100")
    RETURN = ("ack",)

    def match_of(self, unit: str) -> dict[str, str | int]:
        kind, _, offset = unit.partition("@")
        return {"kind": kind, "offset": int(offset)} if offset else {"kind": kind}

    def short(self, unit: str) -> str:
        return unit.replace("@", "")

    def base_scenario(self, name: str, limit: int) -> Scenario:
        return self._scenario(name, 2)

    CONFIGS = (InteropConfig("two-steps", {"file_len": 2 * STEP}),)

    def config_names(self, cfg: InteropConfig) -> list[str]:
        return [f"toy-interop-{cfg.name}-nominal"]

    def config_scenarios(
        self, cfg: InteropConfig, workdir: Path, names: Collection[str] | None = None
    ) -> list[Scenario]:
        return [self._scenario(n, 2) for n in self.config_names(cfg) if not names or n in names]

    BUILTIN_PROTO = "toy"

    def mixed_units(self) -> list[bytes]:
        return [bytes(STEP), bytes(STEP // 2)]

    def parse(self, payload: bytes) -> bytes:
        return payload

    def classify(self, unit: Any) -> Mapping[str, object]:
        return {"len": len(unit)}

    def crafted_transfer(
        self, size: int, unit_size: int, block_len: int | None = None
    ) -> CraftedTransfer:
        steps = -(-size // unit_size)
        units = [(i * 0.001, "forward", bytes(unit_size)) for i in range(steps)]
        return CraftedTransfer(self._scenario("toy-crafted", steps), units, steps * 0.001)

    def capture_units(self, sessions: int, per: int) -> list[bytes]:
        return [bytes(STEP)] * (sessions * per)

    # -- trace model, tester, probes -----------------------------------------

    def trace_model(
        self,
        scn: Scenario,
        records: Sequence[SegmentRecord],
        index: Sequence[int],
        events: Sequence[WireEvent],
    ) -> TraceModel:
        raise Unrepresentable("the toy model has no trace module")

    def session_of(self, fields: Mapping[str, object]) -> Hashable:
        return 1

    def blank_unit(self) -> Any:
        return None

    PROBES: Mapping[str, Any] = {}


class ToyTester:
    """The tester capability (its ``check`` is a role check, not a model check)."""

    ROLES: Mapping[str, Callable[..., Any]] = {}

    def check(self, scn: Scenario, role: str) -> None:
        return None


def _capabilities(model: ToyModel) -> Capabilities:
    # each assignment is checked against its Protocol by mypy, and at run time below
    checker: ModelChecker = model
    generator: Generator = model
    catalogue: Catalogue = model
    robustness: Robustness = model
    outcomes: OutcomeSets = model
    trace: TraceModels = model
    tester: RoleTester = ToyTester()
    probes: Probes = model
    retx: RetxTable = model
    space: SearchSpace = model
    interop: InteropConfigs = model
    bench: BenchTraffic = model
    return Capabilities(
        checker=checker,
        generator=generator,
        catalogue=catalogue,
        robustness=robustness,
        outcomes=outcomes,
        trace=trace,
        tester=tester,
        probes=probes,
        retx_table=retx,
        search_space=space,
        interop=interop,
        bench=bench,
    )


@pytest.fixture
def toy_model(tmp_path: Path) -> Iterator[ToyModel]:
    try:
        find_jar()
    except Exception as exc:  # the TLC jar is part of make setup
        pytest.skip(f"TLC: {exc}")
    model = ToyModel(tmp_path / "specs" / "toy")
    spec: ProtocolSpec = replace(TOY, provides=lambda: _capabilities(model))
    protocols.register(spec)
    try:
        yield model
    finally:
        protocols.unregister("toy")


@pytest.mark.integration
def test_every_capability_is_reached_through_the_contract(
    toy_model: ToyModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = protocols.get("toy")
    caps = spec.capabilities
    for f in fields(Capabilities):  # every capability the contract declares
        if f.name != "missing":
            assert spec.need(f.name, getattr(caps, f.name)) is not None, f.name

    # check: real TLC on the toy's module, its table in the toy's words
    assert cli.main(["check", "toy", "--out", str(tmp_path / "check")]) == 0
    out = capsys.readouterr().out
    assert "distinct states" in out and "TypeOK" in out
    assert cli.main(["check", "toy", "--bound", "bug", "--out", str(tmp_path / "bug")]) == 1
    out = capsys.readouterr().out
    assert "NotAcross" in out and "SenderSendStep" in out  # the toy's trace_table

    # generate: the purpose's scenario, the catalogue, the robustness scenario
    gen = tmp_path / "gen"
    assert cli.main(["generate", "toy", "--out", str(gen)]) == 0
    out = capsys.readouterr().out
    across = json.loads((gen / "toy-across.json").read_text())
    assert across["params"]["file_len"] == 2 * STEP  # two steps get the file across
    assert sorted(p.name for p in (gen / "catalogue").glob("*.json")) == [
        "toy-steps-1.json",
        "toy-steps-2.json",
    ]
    assert (gen / "robustness" / "toy-robustness.json").is_file()
    assert "catalogue: 2 distinct scenarios" in out and "robustness: 1 scenarios" in out

    # expect: the toy's outcome set
    assert cli.main(["expect", str(gen / "toy-across.json")]) == 0
    assert "the toy model: every step arrives" in capsys.readouterr().out


def test_each_protocol_gives_its_reason_for_what_it_lacks() -> None:
    """A registered protocol's ``missing`` names exactly the capabilities it
    lacks, so the CLI never falls back to "not built yet" for them (a
    misspelt name would)."""
    names = {f.name for f in fields(Capabilities)} - {"missing"}
    for spec in protocols.all_specs():
        caps = spec.capabilities
        lacks = {n for n in names if getattr(caps, n) is None}
        assert set(caps.missing) == lacks, spec.name


def test_the_search_plans_in_the_protocols_units(toy_model: ToyModel) -> None:
    """A plan's scenario is made of the search space's parts: the toy's
    base transfer, its units' matches and short names; the first act
    planned for a unit occurrence stands."""
    spec = protocols.get("toy")
    space = spec.need("search_space", spec.capabilities.search_space)
    planned = [
        ("forward", "step@100", 2, "delay"),
        ("return", "ack", 1, "drop"),
        ("forward", "step@100", 2, "drop"),
    ]
    scn = search.plan_scenario(space, "none", 1, planned)
    assert scn.protocol == "toy"
    assert scn.params == toy_model.base_scenario("any", 1).params
    assert [
        (i.direction, i.match, i.occurrence, i.action, i.delay_ms) for i in scn.impairments
    ] == [
        ("forward", {"kind": "step", "offset": 100}, 2, "delay", search.DELAY_MS),
        ("return", {"kind": "ack"}, 1, "drop", 0.0),
    ]
    assert scn.name.startswith("search-l1-late-fstep100.2-rack.1-")


def test_what_the_toy_lacks_is_named_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = replace(
        TOY,
        provides=lambda: Capabilities(missing={"generator": "the toy has no test purposes"}),
    )
    protocols.register(spec)
    try:
        assert cli.main(["generate", "toy", "--out", str(tmp_path / "g")]) == 2
        assert "toy: no generator: the toy has no test purposes" in capsys.readouterr().err
        assert cli.main(["check", "toy"]) == 2
        assert "toy: no checker: not built yet" in capsys.readouterr().err
        # the live commands ask before any folder, root check or run
        for argv, name in (
            (["search", "toy"], "search space"),
            (["interop", "toy"], "interop"),
            (["retx-table", "toy"], "retx table"),
        ):
            assert cli.main([*argv, "--out", str(tmp_path / "live")]) == 2
            assert f"toy: no {name}: not built yet" in capsys.readouterr().err
        assert not (tmp_path / "live").exists()
    finally:
        protocols.unregister("toy")
