"""Certification through Robot Framework: one generated test case per
scenario, Robot's outputs kept, verdicts and the HTML report written."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.certify import certify
from conformance.protocols.ltp import SPEC as LTP
from suts.registry import get

FINDINGS = Path(__file__).resolve().parents[2] / "reports" / "findings" / "ltp" / "scenarios"

pytestmark = [pytest.mark.netns, pytest.mark.integration]


def _scenario(name: str, green_expected: int) -> dict[str, object]:
    return {
        "schema": "dtnconform/scenario/1",
        "name": name,
        "protocol": "ltp",
        "ltp": {"segment_size": 1000, "red_segments": 2, "green_segments": 1},
        "impairments": [{"direction": "forward", "match": {"kind": "green_data"}}],
        "expect": {
            "red_bytes_delivered": 2000,
            "green_bytes_delivered": green_expected,
            "sender_outcome": "completed",
            "receiver_outcome": "completed",
        },
        "origin": {"model": "hand-written", "purpose": "green-lost", "actions": []},
        "time_limit_s": 20,
    }


def test_certify_runs_a_robot_suite_and_reports(tmp_path: Path) -> None:
    scen = tmp_path / "scenarios"
    scen.mkdir()
    (scen / "a.json").write_text(json.dumps(_scenario("green-lost-right", 0)))
    # a run that fails: licklider's receiver refuses an unknown client
    # service with a CR per data segment (RFC 5326 §6's preamble), and its
    # sender leaves one of those CRs unanswered (§6.17). Receiving from the
    # tester, its CRs are answered and, with none lost, its missing cancel
    # timer (reading 12's alternative, a deviation) is never needed: a pass.
    shutil.copy(FINDINGS / "ltp-unknown-service.json", scen / "b.json")
    seen: list[tuple[int, int, str]] = []
    out = certify(
        LTP,
        get("licklider"),
        tmp_path,
        on_test=lambda *a: seen.append(a),
        sut_roles=("both", "receiver"),
    )
    # each scenario twice: licklider against itself, and licklider receiving
    # from the model-driven tester
    status = {r.run_dir.name: r.verdict.status for r in out.runs}
    assert status == {
        "green-lost-right": "pass",
        "ltp-unknown-service": "fail",
        "green-lost-right--tester-sender": "pass",
        "ltp-unknown-service--tester-sender": "pass",
    }
    # Robot saw the same: one test per scenario, the failing one with
    # expected vs observed in its message.
    root = ET.parse(tmp_path / "robot" / "output.xml").getroot()
    tests = {t.get("name"): t.find("status") for t in root.iter("test")}
    passed = tests["green-lost-right"]
    assert passed is not None and passed.get("status") == "PASS"
    failed = tests["ltp-unknown-service"]
    assert failed is not None and failed.get("status") == "FAIL"
    assert "expected verdict pass, observed fail" in (failed.text or "")
    # each test is tagged with the verdict it got
    tags = {t.get("name"): {x.text for x in t.iter("tag")} for t in root.iter("test")}
    assert "verdict:pass" in tags["green-lost-right"]
    assert "verdict:fail" in tags["ltp-unknown-service"]
    assert (tmp_path / "robot" / "log.html").exists() and out.robot_log.exists()
    html = out.report.read_text()
    assert "ltp-unknown-service" in html and "sequence.svg" in html and "<svg" in html
    # Every run records where it comes from, and the report shows it.
    prov = out.runs[0].result.provenance if out.runs[0].result else None
    assert prov is not None and prov.sut == "licklider" and prov.knobs and prov.tshark
    assert prov.tool_commit in html and prov.tshark in html
    assert seen[-1][:2] == (4, 4)
    assert "tester → licklider" in html

    # Resumed after an interruption: the run cut short (no verdict yet) is
    # redone from scratch, the finished ones are kept as they are, and the
    # report still covers all four.
    cut = tmp_path / "runs" / "ltp-unknown-service--tester-sender"
    (cut / "verdict.json").write_text(json.dumps({"status": "error"}))  # cut by a signal
    (cut / "stale.txt").write_text("from the run that was cut")
    kept = tmp_path / "runs" / "green-lost-right" / "verdict.json"
    before = kept.stat().st_mtime_ns
    seen.clear()
    again = certify(
        LTP, get("licklider"), tmp_path, on_test=lambda *a: seen.append(a),
        sut_roles=("both", "receiver"), resume=True,
    )  # fmt: skip
    assert seen[-1][:2] == (1, 1) and seen[-1][2] == cut.name
    assert {r.run_dir.name: r.verdict.status for r in again.runs} == status
    assert kept.stat().st_mtime_ns == before and not (cut / "stale.txt").exists()
    assert all(name in again.report.read_text() for name in status)
