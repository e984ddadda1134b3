"""The CFDP model-driven tester against cfdp-py 0.7.0 between namespaces:
each entity played by the tester and the other by cfdp-py, through the
channel emulator, judged by the outcome set and by trace validation of both
captures (the tester's own PDUs included). The other implementations are
run the same way by ``dtnconform certify cfdp --sut NAME`` (README)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.core.types import Scenario
from conformance.runner import run_scenario
from generators.cfdp.outcomes import expectation_for
from suts.registry import get

pytestmark = [pytest.mark.netns, pytest.mark.integration]


def _scenario(name: str, impairments: list[dict[str, object]], **params: object) -> Scenario:
    return Scenario.model_validate(
        {
            "name": name,
            "protocol": "cfdp",
            "params": {"protocol": "cfdp", "file_len": 1948, "segment_size": 1024, **params},
            "impairments": impairments,
            # replaced by what TLC computes (expectation_for)
            "expect": {"outcomes": [{"sender_outcome": "completed",
                                     "receiver_outcome": "completed",
                                     "delivered": {"protocol": "cfdp"}}]},
            "time_limit_s": 20,
        }
    )  # fmt: skip


@pytest.mark.parametrize("tester", ["sender", "receiver"])
def test_tester_and_cfdp_py_recover_a_lost_segment(tester: str, tmp_path: Path) -> None:
    lost: dict[str, object] = {
        "direction": "forward",
        "match": {"pdu_type": "file_data", "offset": 0},
    }
    scn = _scenario(f"cfdp-tester-{tester}-fd0-lost", [lost], mode="class2")
    scn.expect = expectation_for(scn, tmp_path / "tlc")
    out = run_scenario(scn, get("cfdp-py"), tmp_path / "run", tester=tester)
    assert out.verdict.status == "pass", out.verdict.reasons
    assert out.verdict.trace is not None and out.verdict.trace.status == "accepted"
    assert out.result is not None and out.result.tester == tester
    log = [json.loads(x) for x in (tmp_path / "run" / f"tester-{tester}.jsonl").open()]
    # the recovery went through the tester's side: its retransmission, or
    # its immediate NAK as segment 1 arrived past the gap (4.6.4.3.1)
    if tester == "sender":
        assert any(x["action"] == "SenderTxRetransmittedData" for x in log)
    else:
        assert any(x["action"] == "ReceiverRxFileData" and "NAK" in x.get("tx", "") for x in log)
