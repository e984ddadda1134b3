"""The CFDP model (specs/cfdp/CFDP.tla) under real TLC: every bound but the
deep one gives the numbers of its manifest, the bug bound its
counterexample, and together the bounds fire every action of the model."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from conformance import protocols
from conformance.core import wire
from conformance.core.errors import InputError
from conformance.protocols.cfdp import MODEL_CONDITIONS, MODEL_MODES
from generators.cfdp import outcomes as cfdp_outcomes
from generators.cfdp import purposes as cfdp
from generators.cfdp import trace as cfdp_trace
from generators.tests.fired import assert_matches_manifest, check_bounds
from generators.tlc import TlcResult

MANIFEST = json.loads((cfdp.SPEC_DIR / "manifest.json").read_text(encoding="utf-8"))
DEEP = os.environ.get("DTNC_DEEP") == "1"
# The bounds of over 50,000 states but ci run with DTNC_DEEP=1 only (`make
# test-deep`), as LTP's do (test_deep.py): their minutes kept the suite over
# its 30. Every action they fire is fired in make test by the catalogue's
# scenarios too (test_cfdp_generate.py, test_catalogue_meets_the_targets).
BIG = frozenset(
    b
    for b in cfdp.bounds()
    if b != "ci" and MANIFEST["models"][f"MCCFDP_{b}.cfg"]["distinct_states"] > 50_000
)
BOUNDS = [b for b in cfdp.bounds() if b != "deep" and (DEEP or b not in BIG)]

# every bound but the deep one: minutes (conftest.py)
pytestmark = [pytest.mark.integration, pytest.mark.first(1)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[TlcResult, set[str]]]:
    """Each bound checked once, counting the actions that fired
    (generators/tests/fired.py)."""
    return check_bounds(cfdp.SPEC_DIR, "MCCFDP", BOUNDS, cfdp.ONE_WORKER, tmp_path_factory)


@pytest.mark.parametrize("bound", BOUNDS)
def test_bound_matches_manifest(bound: str, runs: dict[str, tuple[TlcResult, set[str]]]) -> None:
    assert_matches_manifest(
        runs[bound][0],
        MANIFEST["models"][f"MCCFDP_{bound}.cfg"],
        {"TypeOK", "Safety", "EventuallyEnded"},
    )


def test_the_bug_bound_delivers_a_corrupted_file(
    runs: dict[str, tuple[TlcResult, set[str]]],
) -> None:
    """FaultyReceiver skips the checksum: the counterexample's last step is
    a Finished(no error) over a segment the channel corrupted."""
    r, _ = runs["bug"]
    actions = [str(s.variables["lastEvent"]["action"]) for s in r.trace[1:]]
    assert "ChannelCorruptFileData" in actions and actions[-1] == "ReceiverTxFinished"
    last = r.trace[-1].variables["rcv"][0]
    assert last["bad"] is True and last["kept"] is True


@pytest.mark.skipif(not DEEP, reason="with the bounds of over 50,000 states: set DTNC_DEEP=1")
def test_the_bounds_fire_every_action(runs: dict[str, tuple[TlcResult, set[str]]]) -> None:
    fired = set().union(*(f for _, f in runs.values()))
    assert set(cfdp.model_actions()) - fired == set()
    assert len(cfdp.model_actions()) >= 45


def test_model_names_match_the_wire_tables() -> None:
    """The model's condition codes and modes, named once in the registry,
    are the model's own (CFDP.tla) and the wire table's (wire.json)."""
    text = cfdp.SPEC.read_text(encoding="utf-8")
    conditions = set(re.findall(r'"([A-Za-z]+)"', text.split("Conditions ==")[1].split("\n")[0]))
    faults = set(re.findall(r'"([A-Za-z]+)"', text.split("Faults ==")[1].split("\n")[0]))
    assert conditions | faults == set(MODEL_CONDITIONS)
    names = set(wire.names("cfdp", "condition_codes").values())
    assert set(MODEL_CONDITIONS.values()) <= names
    assert set(MODEL_MODES.values()) == {"c1", "c1c", "c2"}
    assert all(f'"{m}"' in text for m in MODEL_MODES.values())


def test_unknown_bound_names_the_bounds() -> None:
    with pytest.raises(InputError, match="the CFDP bounds: abandon, bug"):
        cfdp.check("nonesuch")


def test_what_is_not_built_yet_says_so() -> None:
    spec = protocols.get("cfdp")
    caps = spec.capabilities
    assert caps.checker is cfdp and caps.generator is cfdp
    assert caps.outcomes is cfdp_outcomes and caps.trace is cfdp_trace
    # what CFDP lacks is None, with its reason, which the CLI prints
    assert caps.retx_table is None and caps.catalogue is None
    with pytest.raises(InputError, match="cfdp: no retx table: the retransmission table is LTP's"):
        spec.need("retx_table", caps.retx_table)


@pytest.mark.deep
@pytest.mark.skipif(os.environ.get("DTNC_DEEP") != "1", reason="deep bound: set DTNC_DEEP=1")
def test_deep_bound_matches_manifest(tmp_path: Path) -> None:
    expected = MANIFEST["models"]["MCCFDP_deep.cfg"]
    r = cfdp.check("deep", workdir=tmp_path)
    assert r.ok, r.properties
    assert (r.distinct_states, r.states_generated) == (
        expected["distinct_states"],
        expected["states_generated"],
    )
