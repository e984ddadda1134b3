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


def test_a_catalogue_sample_is_the_same_draw_every_time(tmp_path: Path) -> None:
    """``certify --sample N --seed S``: N catalogue scenarios drawn with the
    seed from their sorted names (so ``--resume`` finds the same cases),
    beside the generated ones, and the draw written down."""
    import pytest

    from conformance.certify import _scenarios
    from conformance.core.errors import NotRun

    out = tmp_path / "cert"
    _write(out / "scenarios" / "ltp-nominal.json", "ltp-nominal")
    with pytest.raises(NotRun, match="no catalogue to sample"):
        _scenarios(out, False, (3, 1))
    for i in range(20):
        _write(out / "scenarios" / "catalogue" / f"ltp-r2g0l1-{i:02}.json", f"ltp-r2g0l1-{i:02}")
    (out / "scenarios" / "catalogue" / "catalogue.json").write_text("{}")
    first = _scenarios(out, False, (5, 7))
    assert first == _scenarios(out, False, (5, 7))
    assert first[0].name == "ltp-nominal.json" and len(first) == 6
    drawn = [p.stem for p in first[1:]]
    assert json.loads((out / "scenarios" / "catalogue-sample.json").read_text()) == {
        "n": 5, "seed": 7, "scenarios": drawn,
    }  # fmt: skip
    # --resume finds the draw written down, and refuses another
    assert _scenarios(out, False, None) == first
    from conformance.core.errors import InputError

    with pytest.raises(InputError, match="drawn with --sample 5 --seed 7"):
        _scenarios(out, False, (5, 8))
    assert len(_scenarios(out, True, None)) == 21  # --catalogue: all of it
    (out / "scenarios" / "catalogue-sample.json").unlink()
    assert [p.stem for p in _scenarios(out, False, (5, 8))[1:]] != drawn  # another seed
    (out / "scenarios" / "catalogue-sample.json").unlink()
    assert len(_scenarios(out, False, (50, 7))) == 21  # no more than there are
