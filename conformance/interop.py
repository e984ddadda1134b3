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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from conformance import protocols
from conformance.certify import load_outcome, run_robot
from conformance.runner import RunOutcome
from conformance.types import Channel, Expectation, ExpectedOutcome, Scenario, dump_model
from suts.base import SutAdapter, get

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
# transmission lost (generators.cfdpcat); a configuration without
# ``losses`` runs the first only.
LOSSES: dict[str, tuple[tuple[str, str, int], ...]] = {
    "class2": (("forward", "file_data", 0), ("forward", "metadata", 0), ("forward", "eof", 0),
               ("return", "ack_eof", 0), ("return", "finished", 0),
               ("forward", "ack_finished", 0)),
    "class1": (("forward", "file_data", 1),),
    "class1-closure": (("forward", "file_data", 0), ("return", "finished", 0)),
}  # fmt: skip


def config_scenarios(cfg: Config, workdir: Path) -> list[Scenario]:
    """The nominal transfer and the loss scenarios of one configuration,
    each with the outcome set the model computes for it."""
    from generators import cfdpcat
    from generators.outcomes import PlannedLoss

    seg = int(cfg.params["segment_size"])  # type: ignore[call-overload]
    t = cfdpcat.Bound(str(cfg.params["mode"]), 0).transfer()
    t = t.model_copy(update={**cfg.params, "file_len": 2 * seg - 100})
    losses = LOSSES[t.mode] if cfg.losses else LOSSES[t.mode][:1]
    plans: list[tuple[str, list[PlannedLoss]]] = [("nominal", [])]
    plans += [(cfdpcat._short(x), [x]) for x in (PlannedLoss(d, k, o, 1) for d, k, o in losses)]
    out = []
    for slug, plan in plans:
        placeholder = ExpectedOutcome(sender_outcome="completed", receiver_outcome="completed",
                                      delivered=protocols.get("cfdp").delivery())  # fmt: skip
        scn = Scenario(
            name=f"cfdp-interop-{cfg.name}-{slug}",
            protocol="cfdp",
            description=f"Interoperability, {cfg.describe()}: "
            + (", ".join(f"{x.key} {x.off} lost once ({x.dir})" for x in plan) or "no loss")
            + ".",
            params=t,
            impairments=[cfdpcat.impairment_of(x, t, note="interop loss") for x in plan],
            channel=Channel(mtu=cfg.mtu),
            expect=Expectation(outcomes=[placeholder]),
        )
        scn.expect = cfdpcat.expectation_for(scn, workdir)
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


def write_suite(protocol: str, every: list[Cell], suite: Path) -> None:
    lines = [
        "*** Settings ***",
        f"Documentation     Interoperability of {protocol.upper()} implementations: each as "
        "sender against each as receiver, per configuration and scenario.",
        f"Resource          {RESOURCE}",
        "Test Template     Interop Should Pass",
        f"Test Tags         {protocol}    interop",
        "",
        "*** Test Cases ***    SCENARIO    SENDER    RECEIVER    RUN    UNSUPPORTED",
    ]
    for c in every:
        why = c.unsupported.replace("    ", " ") or "${EMPTY}"
        lines.append(
            f"{c.name}    {c.scenario.resolve()}    {c.sender}    {c.receiver}    {c.name}    {why}"
        )
        lines.append(
            f"    [Tags]    sender:{c.sender}    receiver:{c.receiver}    config:{c.config.name}"
        )
    suite.write_text("\n".join(lines) + "\n", encoding="utf-8")


@dataclass
class InteropOutcome:
    cells: list[Cell]
    runs: dict[str, RunOutcome]
    report: Path
    robot_log: Path


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
        from conformance.errors import InputError

        raise InputError(f"interop: only cfdp has several implementations yet, not {protocol}")
    suts = [get(n) for n in sut_names]
    scn_dir = out / "scenarios"
    scn_dir.mkdir(parents=True, exist_ok=True)
    for cfg in configs:
        for scn in config_scenarios(cfg, out / "tlc"):
            dump_model(scn, scn_dir / f"{scn.name}.json")
    every = cells(configs, suts, scn_dir)
    if only:
        every = [c for c in every if only in c.name]
    for a in suts:
        a.ensure_built()
    suite = out / f"{protocol}_interop.robot"
    write_suite(protocol, every, suite)
    robot_dir = run_robot(suite, out, [f"RUNS_DIR:{out / 'runs'}"], len(every), on_test, lanes)
    runs = {
        c.name: load_outcome(out / "runs" / c.name)
        for c in every
        if (out / "runs" / c.name / "verdict.json").exists()
    }
    report = render_interop(protocol, suts, configs, every, runs, out, robot_dir / "log.html")
    return InteropOutcome(every, runs, report, robot_dir / "log.html")


__all__ = ["CFDP_CONFIGS", "Cell", "Config", "cells", "config_scenarios", "interop"]
