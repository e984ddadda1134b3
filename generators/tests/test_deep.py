"""The deep bound (minutes): opt-in with DTNC_DEEP=1 (`make test-deep`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from generators import ltp

MANIFEST = json.loads((Path(ltp.SPEC_DIR) / "manifest.json").read_text())


@pytest.mark.deep
@pytest.mark.skipif(os.environ.get("DTNC_DEEP") != "1", reason="deep bound: set DTNC_DEEP=1")
def test_deep_bound_matches_manifest() -> None:
    expected = MANIFEST["models"]["MCLTP_deep.cfg"]
    r = ltp.check("deep")
    assert r.ok, r.properties
    assert r.distinct_states == expected["distinct_states"]
    assert r.states_generated == expected["states_generated"]
    assert r.depth == expected["depth"]


@pytest.mark.deep
@pytest.mark.skipif(os.environ.get("DTNC_DEEP") != "1", reason="deep bound: set DTNC_DEEP=1")
def test_deep_sessions_bound_matches_manifest() -> None:
    """Two sessions at once, one loss each, an outage under both."""
    expected = MANIFEST["models"]["MCLTP_sessions_deep.cfg"]
    r = ltp.check("sessions_deep")
    assert r.ok, r.properties
    assert r.distinct_states == expected["distinct_states"]
    assert r.states_generated == expected["states_generated"]
    assert r.depth == expected["depth"]


@pytest.mark.deep
@pytest.mark.skipif(os.environ.get("DTNC_DEEP") != "1", reason="deep bound: set DTNC_DEEP=1")
def test_outage_bound_matches_manifest() -> None:
    """One outage with no link state cues (licklider's case): safe and live."""
    expected = MANIFEST["models"]["MCLTP_outage.cfg"]
    r = ltp.check("outage")
    assert r.ok, r.properties
    assert (r.distinct_states, r.states_generated, r.depth) == (
        expected["distinct_states"],
        expected["states_generated"],
        expected["depth"],
    )
