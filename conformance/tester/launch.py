"""Starting the tester as one side of a live run (conformance.runner)."""

from __future__ import annotations

import sys
from pathlib import Path

from conformance import timers
from conformance.core.capabilities import Tester
from conformance.core.contract import ProtocolSpec
from conformance.core.errors import InputError
from conformance.core.types import Scenario
from conformance.tester.core import CannotPlay, log_path
from suts.base import ENGINES, Endpoint

ROLES = ("sender", "receiver")


def module(spec: ProtocolSpec) -> Tester:
    """The protocol's model-driven tester (InputError when it has none)."""
    return spec.need("tester", spec.capabilities.tester)


def check(spec: ProtocolSpec, scn: Scenario, role: str | None) -> None:
    """InputError (exit 2), naming the scenario field, when the tester cannot
    play ``role`` of this scenario (None: no tester, which probes need);
    ``spec``: the scenario's protocol, as the caller resolved it."""
    if role is None:
        raise InputError(
            f"{scn.name}: probes: robustness probes are sent by the model-driven tester; run "
            "with --tester sender or --tester receiver"
        )
    if scn.probes and scn.impairments:
        raise InputError(
            f"{scn.name}: probes: robustness probes run on a channel without impairments, so "
            "that every answer can be told apart from the transfer's; drop the impairments or "
            "the probes"
        )
    if role not in ROLES:
        raise InputError(f"--tester: {role!r} is not a role (one of: {', '.join(ROLES)})")
    try:
        module(spec).check(scn, role)
    except CannotPlay as exc:
        raise InputError(f"{scn.name}: {exc}") from None


def argv(scn: Scenario, ep: Endpoint, role: str, run_dir: Path) -> list[str]:
    """The command that plays ``role`` in its namespace; the scenario is the
    run directory's ``scenario.json``."""
    t = timers.derive(scn)
    engine, peer_engine = ENGINES[role]
    return [
        sys.executable,
        "-m",
        "conformance.tester",
        role,
        "--scenario",
        str(run_dir / "scenario.json"),
        "--listen",
        f"{ep.ip}:{ep.port}",
        "--peer",
        f"{ep.peer_ip}:{ep.port}",
        "--engine",
        str(engine),
        "--peer-engine",
        str(peer_engine),
        "--rtx-timeout-ms",
        f"{scn.timers.tester_retransmission_ms or t.retransmission_ms:g}",
        "--linger-ms",
        f"{t.linger_ms:g}",
        "--close-wait-ms",
        f"{t.close_wait_ms:g}",
        "--time-limit-ms",
        f"{t.time_limit_s * 1000:g}",
        "--log",
        str(log_path(run_dir, role)),
    ]
