"""Which runs a certification makes: each scenario once per SUT role, the
catalogue's when asked for, each robustness scenario in its tester role only
(no namespaces needed)."""

from __future__ import annotations

import json
from pathlib import Path

from conformance.certify import cases
from conformance.protocols.ltp import SPEC as LTP


def _write(
    path: Path, name: str, probes: list[str] | None = None, *, miscolored: bool = False
) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "name": name,
                "protocol": "ltp",
                "params": {
                    "block_len": 2000,
                    "red_len": 2000,
                    "segment_size": 1000,
                    "miscolored_sender": miscolored,
                },  # fmt: skip
                "probes": [{"kind": k} for k in probes or []],
                "expect": {
                    "red_bytes_delivered": 2000,
                    "green_bytes_delivered": 0,
                    "sender_outcome": "completed",
                    "receiver_outcome": "completed",
                },
            }
        )
    )
    return path


def test_cases_per_role_with_catalogue_and_robustness(tmp_path: Path) -> None:
    top = tmp_path / "scenarios"
    a = _write(top / "a.json", "a")
    cat = _write(top / "catalogue" / "c.json", "ltp-r1g0l1-RS.1")
    _write(top / "robustness" / "r.json", "rob-sender", ["truncated-checkpoint"])
    _write(top / "robustness" / "q.json", "rob-receiver", ["truncated-report"])
    every = cases(LTP, [a, cat], ["both", "sender", "receiver"])
    assert [c.name for c in every] == [
        "a",
        "a--tester-receiver",
        "a--tester-sender",
        "ltp-r1g0l1-RS.1",
        "ltp-r1g0l1-RS.1--tester-receiver",
        "ltp-r1g0l1-RS.1--tester-sender",
        "rob-receiver--tester-receiver",
        "rob-sender--tester-sender",
    ]
    # the SUT as receiver only: the tester sends, so only its sender's probes
    only = cases(LTP, [a], ["receiver"])
    assert [c.name for c in only] == ["a--tester-sender", "rob-sender--tester-sender"]


def test_a_miscolored_sender_runs_with_the_tester_sending_only(tmp_path: Path) -> None:
    """Only the model-driven tester plays a sender that miscolors (RFC 5326
    §6.21 fault injection): the scenario runs with the SUT as receiver, in
    no other role, whichever roles are asked for."""
    top = tmp_path / "scenarios"
    m = _write(top / "catalogue" / "m.json", "ltp-r2g1l1mis-nominal", miscolored=True)
    every = cases(LTP, [m], ["both", "sender", "receiver"])
    assert [c.name for c in every] == ["ltp-r2g1l1mis-nominal--tester-sender"]
    assert cases(LTP, [m], ["both", "sender"]) == []
