"""ION-DTN 4.1.3 through its endpoint file (suts/ltp/ion/endpoint.toml):
optional, like Apalache. Every test skips, saying why, where ION was not
built (`make peers ION_SRC=...`, docs/implementers.md); CI takes that path."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conformance.core.errors import ToolMissing
from conformance.core.types import Scenario, load_scenario
from conformance.runner import run_scenario
from suts.base import REPO, SutAdapter
from suts.registry import get

pytestmark = [pytest.mark.netns, pytest.mark.integration]

NOMINAL = REPO / "conformance" / "tests" / "data" / "ltp-ion-offgrid-nominal" / "scenario.json"


@pytest.fixture(scope="module")
def ion() -> SutAdapter:
    sut = get("ion")
    try:
        sut.ensure_built()
    except ToolMissing as exc:
        pytest.skip(f"ION-DTN is not built here: {exc}")
    return sut


def _nominal(name: str) -> Scenario:
    return load_scenario(NOMINAL).model_copy(update={"name": name})


def test_ion_refuses_what_it_cannot_take(ion: SutAdapter) -> None:
    ion.check_contract(_nominal("contract"))  # 127 for a feature nobody knows
    # its retransmission limit is never below 3 (libltpP.c:518-533): its
    # profile moves a scenario's 1 to 3, and a role given 1 refuses it
    params = _nominal("x").params.model_dump(mode="json")
    moved = ion.profile_changes({**params, "retransmission_limit": 1})
    assert moved["retransmission_limit"][:2] == (1, 3)
    assert ion.supports({**params, "retransmission_limit": 1}, "sender") == ""
    assert ion.profile_changes(params) == {}


@pytest.mark.parametrize("pair", ["ion>ion", "ion>licklider", "licklider>ion"])
def test_ion_interoperates_nominally(ion: SutAdapter, pair: str, tmp_path: Path) -> None:
    tx, rx = pair.split(">")
    out = run_scenario(_nominal(f"ion-{tx}-{rx}"), get(tx), tmp_path / "run", receiver_sut=get(rx))
    assert out.verdict.status == "pass", out.verdict.reasons
    # ION's segments are off the scenario's grid; the trace is judged all the same
    assert out.verdict.trace is not None and out.verdict.trace.status == "accepted"
    assert out.result is not None
    assert out.result.receiver.delivered is not None
    assert out.result.receiver.delivered.total() == 4000


def test_ion_leaves_no_node_behind(ion: SutAdapter, tmp_path: Path) -> None:
    run_scenario(_nominal("ion-leftovers"), ion, tmp_path / "run")
    ps = subprocess.run(["ps", "-eo", "comm"], capture_output=True, text=True).stdout.split()
    assert not {"ionadmin", "ltpclock", "ltpmeter", "udplsi", "udplso", "rfxclock"} & set(ps)
