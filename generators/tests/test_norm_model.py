"""The NORM model (specs/norm/NORM.tla) under real TLC: every bound but the
deep one gives the numbers of its manifest, the three that fail on purpose
break their property with the counterexample their README tells, together
the bounds fire every action of the model, and `dtnconform check norm`
reaches it through the protocol registry."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conformance import cli, protocols
from conformance.core.errors import InputError, ToolMissing
from generators.norm import purposes as norm
from generators.tests.fired import assert_matches_manifest, check_bounds
from generators.tlc import TlcResult, find_jar

MANIFEST = json.loads((norm.SPEC_DIR / "manifest.json").read_text(encoding="utf-8"))
DEEP = os.environ.get("DTNC_DEEP") == "1"
BOUNDS = [b for b in norm.bounds() if b != "deep"]

pytestmark = [pytest.mark.integration]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[TlcResult, set[str]]]:
    """Each bound checked once, counting the actions that fired
    (generators/tests/fired.py)."""
    return check_bounds(norm.SPEC_DIR, "MCNORM", BOUNDS, norm.ONE_WORKER, tmp_path_factory)


@pytest.mark.parametrize("bound", BOUNDS)
def test_bound_matches_manifest(bound: str, runs: dict[str, tuple[TlcResult, set[str]]]) -> None:
    assert_matches_manifest(
        runs[bound][0],
        MANIFEST["models"][f"MCNORM_{bound}.cfg"],
        {"TypeOK", "Safety"},
        norm.FAILS.get(bound),
    )


def _events(r: TlcResult) -> list[dict[str, object]]:
    return [dict(s.variables["lastEvent"]) for s in r.trace[1:]]


def test_a_receiver_that_never_suppresses_nacks_what_it_heard(
    runs: dict[str, tuple[TlcResult, set[str]]],
) -> None:
    """FaultyReceiver: the last step is a NACK whose every item an overheard
    NACK of the other receiver asked for during the back-off (§5.3 (2))."""
    r, _ = runs["bug"]
    ev = _events(r)
    last = ev[-1]
    assert last["action"] == "ReceiverSendNack"
    nack = {tuple(i) for i in last["nack"]}  # type: ignore[attr-defined]
    assert nack and nack <= {tuple(i) for i in last["heard"]}  # type: ignore[attr-defined]
    heard_from = {
        str(m["src"])
        for e in ev
        if e["action"] == "ReceiverRecvRepairState"
        for m in e["rx"]  # type: ignore[attr-defined]
    }
    assert heard_from and last["actor"] not in heard_from


def test_a_back_off_factor_over_one_is_what_lets_a_nack_be_suppressed(
    runs: dict[str, tuple[TlcResult, set[str]]],
) -> None:
    """Back-off factor 2: a receiver suppresses its NACK, having heard the
    other's within its back-off. Factor 1 (§5.3: "K_sender MUST be greater
    than one"): no behaviour suppresses a NACK by what was heard, though
    receivers do NACK and do skip their back-off by §5.3's automatic rule."""
    r, _ = runs["backoff2"]
    last = _events(r)[-1]
    assert last["action"] == "ReceiverSuppressNack"
    assert {tuple(i) for i in last["nack"]} <= {tuple(i) for i in last["heard"]}  # type: ignore[attr-defined]
    assert any(
        e["action"] == "ReceiverSendNack" and e["actor"] != last["actor"] for e in _events(r)
    )
    k1, fired = runs["backoff1"]
    assert k1.ok and {"ReceiverSendNack", "ReceiverSkipBackoff"} <= fired


def test_with_robust_factor_one_a_lost_ack_fails_a_receiver_that_has_the_object(
    runs: dict[str, tuple[TlcResult, set[str]]],
) -> None:
    """Robust factor 1 with an acknowledged FLUSH: one message lost (the
    FLUSH that polls a receiver, or its ACK(FLUSH)) and the watermark is
    reported failed while both receivers delivered; with robust factor 2
    and the same loss budget it never is (robust2)."""
    r, _ = runs["robust1"]
    ev = _events(r)
    lost = [m for e in ev for m in e["lost"]]  # type: ignore[attr-defined]
    assert len(lost) == 1 and lost[0]["k"] in {"FLUSH", "ACK"}
    end = r.trace[-1].variables
    assert ev[-1]["action"] == "SenderEndWatermark" and end["snd"]["wm"] == "failed"
    assert all(v["out"] == "delivered" for v in end["rcv"].values())
    robust2, _ = runs["robust2"]
    assert robust2.ok


def test_the_bounds_fire_every_action(runs: dict[str, tuple[TlcResult, set[str]]]) -> None:
    fired = set().union(*(f for _, f in runs.values()))
    actions = norm.model_actions()
    assert len(actions) == 28
    assert set(actions) - fired == set()


def test_unknown_bound_names_the_bounds() -> None:
    with pytest.raises(InputError, match="the NORM bounds: backoff1, backoff2, bug, ci"):
        norm.check("nonesuch")


def test_check_norm_runs_from_the_cli_and_tells_what_is_not_built(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`dtnconform check norm` reaches the model through the registry; its
    counterexample is told in NORM's words; what NORM lacks yet says so."""
    try:
        find_jar()
    except ToolMissing as exc:
        pytest.skip(str(exc))
    assert cli.main(["check", "norm", "--bound", "robust1", "--out", str(tmp_path / "c")]) == 1
    out = capsys.readouterr().out
    assert "NoFalseFailure" in out and "SenderEndWatermark" in out and "✗ lost" in out
    assert cli.main(["generate", "norm", "--out", str(tmp_path / "g")]) == 2
    assert "norm: no generator: not built yet for NORM" in capsys.readouterr().err
    assert protocols.get("norm").capabilities.checker is norm


@pytest.mark.deep
@pytest.mark.skipif(not DEEP, reason="deep bound: set DTNC_DEEP=1")
def test_deep_bound_matches_manifest(tmp_path: Path) -> None:
    expected = MANIFEST["models"]["MCNORM_deep.cfg"]
    r = norm.check("deep", workdir=tmp_path)
    assert r.ok, r.properties
    assert (r.distinct_states, r.states_generated) == (
        expected["distinct_states"],
        expected["states_generated"],
    )
