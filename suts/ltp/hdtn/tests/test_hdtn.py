"""HDTN 1.3.1 through its endpoint file (suts/ltp/hdtn/endpoint.toml):
optional, like Apalache. Every test skips, saying why, where HDTN was not
built (`make peers HDTN_SRC=...`, docs/implementers.md); CI takes that path."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.runner import run_scenario
from suts.base import SutAdapter
from suts.ltp.tests.optional import built, interoperates, left_behind, nominal

pytestmark = [pytest.mark.netns, pytest.mark.integration]


@pytest.fixture(scope="module")
def hdtn() -> SutAdapter:
    return built("hdtn", "HDTN")


def test_hdtn_refuses_what_it_cannot_take(hdtn: SutAdapter) -> None:
    hdtn.check_contract(nominal("contract"))  # 127 for a feature nobody knows
    params = nominal("x").params.model_dump(mode="json")
    # its one client service refuses a session for another (CR UNREACH)
    assert hdtn.supports({**params, "receiver_client_service_id": 5}, "receiver") == ""
    assert hdtn.supports({**params, "retransmission_limit": 1}, "sender") == ""


@pytest.mark.parametrize("pair", ["hdtn>hdtn", "hdtn>licklider", "licklider>hdtn"])
def test_hdtn_interoperates_nominally(hdtn: SutAdapter, pair: str, tmp_path: Path) -> None:
    interoperates(pair, tmp_path)


def test_hdtn_leaves_nothing_behind(hdtn: SutAdapter, tmp_path: Path) -> None:
    run_scenario(nominal("hdtn-leftovers"), hdtn, tmp_path / "run")
    assert left_behind(tmp_path / "run") == []
