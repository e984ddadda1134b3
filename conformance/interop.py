"""Interoperability certification: every implementation of a protocol as
sender against every one as receiver (self-pairs included), in each of a
set of configurations, through the channel emulator, under Robot Framework;
the report renders the matrix (in the manner of the ACTS 118x TCP
interoperability matrix: sender rows, receiver columns, one mark per
configuration, each linking to its evidence).

A configuration fixes what the two implementations must agree on; the
configurations and each one's scenarios (the nominal transfer and loss
scenarios, their expectations computed by the model) are the protocol's
``interop`` capability (CFDP's: generators/cfdp/interop.py). A cell an
implementation cannot take (``supports`` of its adapter says why) is "not
supported", never "fail".
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from conformance.certify import CONSOLE, load_outcome, no_verdicts, run_robot
from conformance.core.capabilities import InteropConfig
from conformance.core.contract import ProtocolSpec
from conformance.core.errors import InputError, NotRun
from conformance.core.types import RunOutcome, dump_model
from conformance.robot import suitefile
from suts.base import SutAdapter
from suts.registry import get

RESOURCE = Path(__file__).resolve().parent / "robot" / "res_dtnconform.robot"


@dataclass(frozen=True)
class Cell:
    """One run of the matrix: a scenario of a configuration, sender and
    receiver implementations; ``unsupported`` says why it is not run."""

    config: InteropConfig
    scenario: Path
    sender: str
    receiver: str
    unsupported: str = ""
    # what suts.registry.get takes for each (an endpoint file's path)
    sender_ref: str = ""
    receiver_ref: str = ""

    @property
    def name(self) -> str:
        return f"{self.sender}--{self.receiver}--{self.scenario.stem}"


def cells(
    scenarios: Sequence[tuple[InteropConfig, Path]], suts: Sequence[SutAdapter]
) -> list[Cell]:
    """Every (configuration's scenario file, sender, receiver), with what
    either implementation cannot take."""
    out = []
    for cfg, path in scenarios:
        params = json.loads(path.read_text(encoding="utf-8"))["params"]
        for tx in suts:
            for rx in suts:
                why = [
                    f"{a.label}: {w}"
                    for a, role in ((tx, "sender"), (rx, "receiver"))
                    if (w := a.missing() or a.supports(params, role))
                ]
                out.append(Cell(cfg, path, tx.label, rx.label, "; ".join(why), tx.ref, rx.ref))
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
                c.name,
                str(c.scenario.resolve()),
                c.sender_ref or c.sender,
                c.receiver_ref or c.receiver,
                c.name,
                c.unsupported,
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


def write_scenarios(
    spec: ProtocolSpec,
    out: Path,
    configs: Sequence[InteropConfig] | None = None,
    wanted: Mapping[str, Collection[str]] | None = None,
    on_config: Callable[[int, int, str], None] | None = None,
) -> list[tuple[InteropConfig, Path]]:
    """The configurations' scenarios (every one the protocol has by
    default; ``wanted``: configuration -> the names of its scenarios to
    keep, none for a configuration not in it), each with the outcome set TLC
    computes for it (work in ``out/tlc``), written into ``out/scenarios``:
    (configuration, file), each configuration's sorted."""
    cap = spec.need("interop", spec.capabilities.interop)
    configs = cap.CONFIGS if configs is None else configs
    scn_dir = out / "scenarios"
    scn_dir.mkdir(parents=True, exist_ok=True)
    written: list[tuple[InteropConfig, Path]] = []
    for i, cfg in enumerate(configs):
        if on_config:
            on_config(i, len(configs), cfg.name)
        names = None if wanted is None else wanted.get(cfg.name, ())
        if names is not None and not names:
            continue
        paths = []
        for scn in cap.config_scenarios(cfg, out / "tlc", names):
            paths.append(scn_dir / f"{scn.name}.json")
            dump_model(scn, paths[-1])
        written += [(cfg, path) for path in sorted(paths)]
    return written


def interop(
    spec: ProtocolSpec,
    sut_names: Sequence[str],
    out: Path,
    *,
    configs: Sequence[InteropConfig] | None = None,
    only: str | None = None,
    on_test: Callable[[int, int, str], None] | None = None,
    lanes: int = 1,
) -> InteropOutcome:
    """Generate the configurations' scenarios (by default every one the
    protocol has) into ``out/scenarios``, run the matrix under Robot
    Framework (``out/robot``, run directories in ``out/runs``; ``lanes``
    cells at once under pabot) and render ``out/interop.html``."""
    from reports.html import render_interop

    protocol = spec.name
    cap = spec.need("interop", spec.capabilities.interop)
    configs = cap.CONFIGS if configs is None else configs
    suts = [get(n) for n in sut_names]
    # the cells' names are known before any TLC: --only is checked first,
    # and only the scenarios it keeps get their outcome sets
    wanted = {
        cfg.name: {
            scn
            for scn in cap.config_names(cfg)
            for tx in suts
            for rx in suts
            if not only or only in f"{tx.label}--{rx.label}--{scn}"
        }
        for cfg in configs
    }
    if not any(wanted.values()):
        first = cap.config_names(configs[0])[0]
        raise InputError(
            f"--only {only}: no cell's name (SENDER--RECEIVER--SCENARIO) holds it, e.g. "
            f"{suts[0].label}--{suts[-1].label}--{first}"
        )
    written = write_scenarios(spec, out, configs, wanted)
    every = cells(written, suts)
    if only:
        every = [c for c in every if only in c.name]
    if all(c.unsupported for c in every):
        raise NotRun(
            f"none of the {len(every)} cells can run: {every[0].name}: {every[0].unsupported}"
        )
    for a in suts:
        if not a.missing():
            a.ensure_built()
    suite = out / f"{protocol}_interop.robot"
    write_suite(protocol, every, suite)
    robot = run_robot(suite, out, [f"RUNS_DIR:{out / 'runs'}"], len(every), on_test, lanes)
    runnable = [c.name for c in every if not c.unsupported]
    unrun = {}
    if robot.rc != 253:  # stopped by the user: the caller reports the interrupt
        unrun = no_verdicts(runnable, out / "runs", robot, out / CONSOLE)
    # a cell a role refused at run time (exit 127) is "not supported" too
    every = [
        dataclasses.replace(c, unsupported=f.read_text(encoding="utf-8").strip())
        if (f := out / "runs" / c.name / "unsupported.txt").is_file()
        else c
        for c in every
    ]
    runs = {
        c.name: load_outcome(out / "runs" / c.name)
        for c in every
        if (out / "runs" / c.name / "verdict.json").exists()
    }
    report = render_interop(spec, suts, configs, every, runs, out, robot.log)
    return InteropOutcome(every, runs, report, robot.log, robot.rc, unrun)


__all__ = ["Cell", "cells", "interop", "write_scenarios"]
