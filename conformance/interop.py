"""Interoperability certification: every implementation of a protocol as
sender against every one as receiver (self-pairs included), in each of a
set of configurations, through the channel emulator, under Robot Framework;
the report renders the matrix (in the manner of the ACTS 118x TCP
interoperability matrix: sender rows, receiver columns, one mark per
configuration, each linking to its evidence).

A configuration fixes what the two implementations must agree on (CFDP:
entity-ID and sequence-number widths, checksum type, PDU CRC, segment size,
transmission mode); each runs the nominal transfer and the loss scenarios of
:data:`LOSSES` for its mode, their expectations computed by the model
(``expectation_for``). A cell an implementation cannot take (``supports``
of its adapter says why) is "not supported", never "fail".
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from conformance import protocols
from conformance.certify import CONSOLE, load_outcome, no_verdicts, run_robot
from conformance.core.contract import field_int
from conformance.core.errors import InputError, NotRun
from conformance.core.types import (
    Channel,
    Expectation,
    ExpectedOutcome,
    RunOutcome,
    Scenario,
    dump_model,
)
from conformance.robot import suitefile
from generators.outcomes import PlannedLoss
from suts.base import SutAdapter
from suts.registry import get

RESOURCE = Path(__file__).resolve().parent / "robot" / "res_dtnconform.robot"


@dataclass(frozen=True)
class Config:
    """One interoperability configuration: scenario parameters both
    implementations are set up with, and the link MTU it needs."""

    name: str
    params: dict[str, object]
    mtu: int = 1500
    losses: bool = False  # also every loss scenario of its mode (else one)

    def describe(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.params.items())


# CFDP: each width, checksum, CRC setting, segment size and class at least
# once; the first configuration runs every loss scenario of its mode.
CFDP_CONFIGS = (
    Config("c2-e2-s32-modular", {"mode": "class2", "entity_id_len": 2, "sequence_number_len": 4,
           "checksum_type": "modular", "pdu_crc": False, "segment_size": 1024}, losses=True),
    Config("c1-e1-s8-null", {"mode": "class1", "entity_id_len": 1, "sequence_number_len": 1,
           "checksum_type": "null", "pdu_crc": False, "segment_size": 512}),
    Config("c2-e4-s16-crc32-crc", {"mode": "class2", "entity_id_len": 4,
           "sequence_number_len": 2, "checksum_type": "crc32", "pdu_crc": True,
           "segment_size": 2048}, mtu=9000),
    Config("c1c-e2-s32-crc32c-crc", {"mode": "class1-closure", "entity_id_len": 2,
           "sequence_number_len": 4, "checksum_type": "crc32c", "pdu_crc": True,
           "segment_size": 4096}, mtu=9000),
    Config("c2-e1-s8-crc32c", {"mode": "class2", "entity_id_len": 1, "sequence_number_len": 1,
           "checksum_type": "crc32c", "pdu_crc": False, "segment_size": 4096}, mtu=9000),
    # what every implementation can take (LibreCube's narrow range among them)
    Config("c2-e1-s8-modular-deferred", {"mode": "class2", "entity_id_len": 1,
           "sequence_number_len": 1, "checksum_type": "modular", "pdu_crc": False,
           "segment_size": 1024, "nak_mode": "deferred"}),
)  # fmt: skip

# The loss scenarios of each mode, as (wire key, segment) of the first
# transmission lost (generators.cfdp.outcomes); a configuration without
# ``losses`` runs the first only.
LOSSES: dict[str, tuple[tuple[str, str, int], ...]] = {
    "class2": (("forward", "file_data", 0), ("forward", "metadata", 0), ("forward", "eof", 0),
               ("return", "ack_eof", 0), ("return", "finished", 0),
               ("forward", "ack_finished", 0)),
    "class1": (("forward", "file_data", 1),),
    "class1-closure": (("forward", "file_data", 0), ("return", "finished", 0)),
}  # fmt: skip


def config_plans(cfg: Config) -> dict[str, list[PlannedLoss]]:
    """A configuration's scenarios by name (no TLC): the nominal transfer
    and its loss scenarios, each with its planned losses."""
    from generators.cfdp import catalogue

    losses = LOSSES[str(cfg.params["mode"])]
    losses = losses if cfg.losses else losses[:1]
    plans: dict[str, list[PlannedLoss]] = {f"cfdp-interop-{cfg.name}-nominal": []}
    for x in (PlannedLoss(d, k, o, 1) for d, k, o in losses):
        plans[f"cfdp-interop-{cfg.name}-{catalogue._short(x)}"] = [x]
    return plans


def config_scenarios(
    cfg: Config, workdir: Path, names: Collection[str] | None = None
) -> list[Scenario]:
    """The nominal transfer and the loss scenarios of one configuration
    (``names``: those of them only), each with the outcome set the model
    computes for it."""
    from generators.cfdp import catalogue, outcomes

    seg = field_int(cfg.params["segment_size"])
    t = catalogue.Bound(str(cfg.params["mode"]), 0).transfer()
    t = t.model_copy(update={**cfg.params, "file_len": 2 * seg - 100})
    out = []
    for name, plan in config_plans(cfg).items():
        if names is not None and name not in names:
            continue
        placeholder = ExpectedOutcome(sender_outcome="completed", receiver_outcome="completed",
                                      delivered=protocols.get("cfdp").delivery(protocol="cfdp"))  # fmt: skip
        scn = Scenario(
            name=name,
            protocol="cfdp",
            description=f"Interoperability, {cfg.describe()}: "
            + (", ".join(f"{x.key} {x.off} lost once ({x.dir})" for x in plan) or "no loss")
            + ".",
            params=t,
            impairments=[outcomes.impairment_of(x, t, note="interop loss") for x in plan],
            channel=Channel(mtu=cfg.mtu),
            expect=Expectation(outcomes=[placeholder]),
        )
        scn.expect = outcomes.expectation_for(scn, workdir)
        out.append(scn)
    return out


@dataclass(frozen=True)
class Cell:
    """One run of the matrix: a scenario of a configuration, sender and
    receiver implementations; ``unsupported`` says why it is not run."""

    config: Config
    scenario: Path
    sender: str
    receiver: str
    unsupported: str = ""

    @property
    def name(self) -> str:
        return f"{self.sender}--{self.receiver}--{self.scenario.stem}"


def cells(configs: Sequence[Config], suts: Sequence[SutAdapter], scn_dir: Path) -> list[Cell]:
    """Every (configuration scenario, sender, receiver), with what either
    implementation cannot take."""
    out = []
    for cfg in configs:
        for path in sorted(scn_dir.glob(f"cfdp-interop-{cfg.name}-*.json")):
            params = json.loads(path.read_text(encoding="utf-8"))["params"]
            for tx in suts:
                for rx in suts:
                    why = [
                        f"{a.name}: {w}"
                        for a, role in ((tx, "sender"), (rx, "receiver"))
                        if (w := a.supports(params, role))
                    ]
                    out.append(Cell(cfg, path, tx.name, rx.name, "; ".join(why)))
    return out


def write_suite(
    protocol: str, every: list[Cell], suite: Path, *, resource: Path = RESOURCE
) -> None:
    """The Robot suite of the cells, every value through
    :func:`suitefile.cell` (see certify.write_suite)."""
    lines = [
        "*** Settings ***",
        f"Documentation     Interoperability of {protocol.upper()} implementations: each as "
        "sender against each as receiver, per configuration and scenario.",
        suitefile.row("Resource", str(resource)),
        "Test Template     Interop Should Pass",
        suitefile.row("Test Tags", protocol, "interop"),
        "",
        "*** Test Cases ***    SCENARIO    SENDER    RECEIVER    RUN    UNSUPPORTED",
    ]
    for c in every:
        lines.append(
            suitefile.row(
                c.name, str(c.scenario.resolve()), c.sender, c.receiver, c.name, c.unsupported
            )
        )
        tags = [f"sender:{c.sender}", f"receiver:{c.receiver}", f"config:{c.config.name}"]
        lines.append(suitefile.setting("Tags", tags))
    suite.write_text("\n".join(lines) + "\n", encoding="utf-8")


@dataclass
class InteropOutcome:
    cells: list[Cell]
    runs: dict[str, RunOutcome]
    report: Path
    robot_log: Path
    robot_rc: int = 0
    # cells Robot ran to no verdict, with its message (certify.no_verdicts)
    unrun: dict[str, str] = field(default_factory=dict)


def interop(
    protocol: str,
    sut_names: Sequence[str],
    out: Path,
    *,
    configs: Sequence[Config] = CFDP_CONFIGS,
    only: str | None = None,
    on_test: Callable[[int, int, str], None] | None = None,
    lanes: int = 1,
) -> InteropOutcome:
    """Generate the configurations' scenarios into ``out/scenarios``, run the
    matrix under Robot Framework (``out/robot``, run directories in
    ``out/runs``; ``lanes`` cells at once under pabot) and render
    ``out/interop.html``."""
    from reports.html import render_interop

    if protocol != "cfdp":
        raise InputError(f"interop: only cfdp has several implementations yet, not {protocol}")
    suts = [get(n) for n in sut_names]
    # the cells' names are known before any TLC: --only is checked first,
    # and only the scenarios it keeps get their outcome sets
    wanted = {
        cfg.name: {
            scn
            for scn in config_plans(cfg)
            for tx in suts
            for rx in suts
            if not only or only in f"{tx.name}--{rx.name}--{scn}"
        }
        for cfg in configs
    }
    if not any(wanted.values()):
        first = next(iter(config_plans(configs[0])))
        raise InputError(
            f"--only {only}: no cell's name (SENDER--RECEIVER--SCENARIO) holds it, e.g. "
            f"{suts[0].name}--{suts[-1].name}--{first}"
        )
    scn_dir = out / "scenarios"
    scn_dir.mkdir(parents=True, exist_ok=True)
    for cfg in configs:
        if wanted[cfg.name]:
            for scn in config_scenarios(cfg, out / "tlc", wanted[cfg.name]):
                dump_model(scn, scn_dir / f"{scn.name}.json")
    every = cells(configs, suts, scn_dir)
    if only:
        every = [c for c in every if only in c.name]
    if all(c.unsupported for c in every):
        raise NotRun(
            f"none of the {len(every)} cells can run: {every[0].name}: {every[0].unsupported}"
        )
    for a in suts:
        a.ensure_built()
    suite = out / f"{protocol}_interop.robot"
    write_suite(protocol, every, suite)
    robot = run_robot(suite, out, [f"RUNS_DIR:{out / 'runs'}"], len(every), on_test, lanes)
    runnable = [c.name for c in every if not c.unsupported]
    unrun = {}
    if robot.rc != 253:  # stopped by the user: the caller reports the interrupt
        unrun = no_verdicts(runnable, out / "runs", robot, out / CONSOLE)
    runs = {
        c.name: load_outcome(out / "runs" / c.name)
        for c in every
        if (out / "runs" / c.name / "verdict.json").exists()
    }
    report = render_interop(protocols.get(protocol), suts, configs, every, runs, out, robot.log)
    return InteropOutcome(every, runs, report, robot.log, robot.rc, unrun)


__all__ = ["CFDP_CONFIGS", "Cell", "Config", "cells", "config_scenarios", "interop"]
