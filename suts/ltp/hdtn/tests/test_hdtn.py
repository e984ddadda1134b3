"""HDTN 1.3.1 through its endpoint file (suts/ltp/hdtn/endpoint.toml):
optional, like Apalache. Every test skips, saying why, where HDTN was not
built (`make peers HDTN_SRC=...`, docs/implementers.md); CI takes that path."""

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
def hdtn() -> SutAdapter:
    sut = get("hdtn")
    try:
        sut.ensure_built()
    except ToolMissing as exc:
        pytest.skip(f"HDTN is not built here: {exc}")
    return sut


def _nominal(name: str) -> Scenario:
    return load_scenario(NOMINAL).model_copy(update={"name": name})


def test_hdtn_refuses_what_it_cannot_take(hdtn: SutAdapter) -> None:
    hdtn.check_contract(_nominal("contract"))  # 127 for a feature nobody knows
    params = _nominal("x").params.model_dump(mode="json")
    assert hdtn.supports({**params, "receiver_client_service_id": 5}, "receiver") == ""
    assert hdtn.supports({**params, "retransmission_limit": 1}, "sender") == ""


@pytest.mark.parametrize("pair", ["hdtn>hdtn", "hdtn>licklider", "licklider>hdtn"])
def test_hdtn_interoperates_nominally(hdtn: SutAdapter, pair: str, tmp_path: Path) -> None:
    tx, rx = pair.split(">")
    out = run_scenario(_nominal(f"hdtn-{tx}-{rx}"), get(tx), tmp_path / "run", receiver_sut=get(rx))
    assert out.verdict.status == "pass", out.verdict.reasons
    assert out.verdict.trace is not None and out.verdict.trace.status == "accepted"
    assert out.result is not None
    assert out.result.receiver.delivered is not None
    assert out.result.receiver.delivered.total() == 4000


def test_hdtn_leaves_nothing_behind(hdtn: SutAdapter, tmp_path: Path) -> None:
    run_scenario(_nominal("hdtn-leftovers"), hdtn, tmp_path / "run")
    ps = subprocess.run(["ps", "-eo", "comm"], capture_output=True, text=True).stdout.split()
    assert "dtnc-hdtn-ltp" not in ps
