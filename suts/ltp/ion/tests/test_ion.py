"""ION-DTN 4.1.3 through its endpoint file (suts/ltp/ion/endpoint.toml):
optional, like Apalache. Every test skips, saying why, where ION was not
built (`make peers ION_SRC=...`, docs/implementers.md); CI takes that path."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.runner import run_scenario
from suts.base import SutAdapter
from suts.ltp.tests.optional import built, interoperates, left_behind, nominal

pytestmark = [pytest.mark.netns, pytest.mark.integration]


@pytest.fixture(scope="module")
def ion() -> SutAdapter:
    return built("ion", "ION-DTN")


def test_ion_refuses_what_it_cannot_take(ion: SutAdapter) -> None:
    ion.check_contract(nominal("contract"))  # 127 for a feature nobody knows
    # its retransmission limit is never below 3 (libltpP.c:518-533): its
    # profile moves a scenario's 1 to 3, and a role given 1 refuses it
    params = nominal("x").params.model_dump(mode="json")
    moved = ion.profile_changes({**params, "retransmission_limit": 1})
    assert moved["retransmission_limit"][:2] == (1, 3)
    assert ion.supports({**params, "retransmission_limit": 1}, "sender") == ""
    assert ion.profile_changes(params) == {}


@pytest.mark.parametrize("pair", ["ion>ion", "ion>licklider", "licklider>ion"])
def test_ion_interoperates_nominally(ion: SutAdapter, pair: str, tmp_path: Path) -> None:
    # ION's segments are off the scenario's grid; the trace is judged all the same
    interoperates(pair, tmp_path)


def test_ion_leaves_no_node_behind(ion: SutAdapter, tmp_path: Path) -> None:
    # ionadmin, ltpclock, udplsi ... run in the role's workdir, under the run's
    run_scenario(nominal("ion-leftovers"), ion, tmp_path / "run")
    assert left_behind(tmp_path / "run") == []
