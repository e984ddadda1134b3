"""LTP test generation: the trace -> Scenario compiler on counterexamples
captured from real TLC runs of the trap model (fixtures/tlc_trap_*.log), and,
marked integration, generate() end to end."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from conformance.errors import ToolMissing
from conformance.types import load_scenario
from generators import ltp
from generators.tlc import find_jar, parse_output

FIXTURES = Path(__file__).parent / "fixtures"


def _trace(name: str):
    with (FIXTURES / f"tlc_trap_{name}.log").open(encoding="utf-8") as f:
        r = parse_output(f, FIXTURES / f"trap_{name}.cfg")
    assert r.violated == ["Trap"]
    return r.trace


def test_report_lost_compiles_to_one_rs_drop():
    """RS lost: one drop of the 1st RS on the return channel, full delivery."""
    scen = ltp.compile_trace(_trace("report-lost"), ltp.Purpose("report-lost", "report_lost"))
    assert scen.name == "ltp-report-lost"
    assert [(i.direction, i.match, i.occurrence) for i in scen.impairments] == [
        ("return", {"type": "RS"}, 1)
    ]
    assert scen.expect.red_bytes_delivered == 3000
    assert scen.expect.green_bytes_delivered == 1000
    assert (scen.expect.sender_outcome, scen.expect.receiver_outcome) == ("completed", "completed")
    assert scen.ltp is not None and scen.ltp.red_segments == 3 and scen.ltp.segment_size == 1000
    assert scen.origin is not None and "ChannelLoseReturn" in scen.origin.actions
    # recovery by the receiver's RS timer (6.8) or the sender's checkpoint timer (6.7)
    assert {"ReceiverExpireReportTimer", "SenderExpireCheckpointTimer"} & set(scen.origin.actions)


def test_red_data_lost_is_keyed_on_kind_and_byte_offset():
    scen = ltp.compile_trace(_trace("red-data-0-lost"), "red-data-0-lost")
    assert [(i.direction, i.match, i.occurrence) for i in scen.impairments] == [
        ("forward", {"kind": "red_data", "offset": 0}, 1)
    ]
    assert scen.expect.red_bytes_delivered == 3000


def test_occurrence_counts_earlier_matching_transmissions():
    """A retransmitted segment that is lost is the 2nd occurrence."""
    trace = _trace("red-data-0-lost")
    steps = ltp.steps(trace)
    sent = [
        s
        for st in steps
        for d, s in st.sent
        if d == "forward" and s["type"].startswith("RD") and s["off"] == 0
    ]
    assert len(sent) == 2  # the original and its retransmission (a checkpoint)
    assert sent[1]["type"] == "RD-CP"


def test_match_fields():
    assert ltp.match_fields({"type": "RD-CP-EORP", "off": 2}) == {
        "kind": "red_data",
        "offset": 2000,
    }
    assert ltp.match_fields({"type": "GD-EOB", "off": 3}, 500) == {
        "kind": "green_data",
        "offset": 1500,
    }
    assert ltp.match_fields({"type": "RA", "off": 0}) == {"type": "RA"}


def test_model_actions_are_the_disjuncts_of_next():
    actions = ltp.model_actions()
    assert len(actions) == len(set(actions)) == 28
    assert {"SenderTxCheckpoint", "ChannelLoseReturn", "Terminating"} <= set(actions)


def test_trace_table_has_one_row_per_step():
    trace = _trace("report-lost")
    table = ltp.trace_table(trace)
    assert table.row_count == len(trace) - 1
    console = Console(width=160, record=True)
    console.print(table)
    text = console.export_text()
    assert "lost return: RS" in text and "SenderTxCheckpoint" in text


def test_trap_cfg_names_the_purpose():
    text = ltp.trap_cfg(ltp.Purpose("x", "data_lost", 1))
    assert 'PurposeKind = "data_lost"' in text and "PurposeOff = 1" in text
    assert "INVARIANT Trap" in text


@pytest.mark.integration
def test_generate_end_to_end(tmp_path):
    """generate() reaches every purpose and writes loadable scenarios."""
    try:
        find_jar()
    except ToolMissing as exc:
        pytest.skip(str(exc))
    report = ltp.generate(tmp_path)
    assert report.unreachable == []
    scenarios = {p.stem: load_scenario(p) for p in report.scenarios}
    assert len(scenarios) == len(ltp.PURPOSES)
    rs = scenarios["ltp-report-lost"]
    assert [(i.direction, i.match, i.occurrence) for i in rs.impairments] == [
        ("return", {"type": "RS"}, 1)
    ]
    assert rs.expect.red_bytes_delivered == rs.ltp.red_len  # type: ignore[union-attr]
    assert scenarios["ltp-nominal"].impairments == []
    assert report.coverage >= 0.8
    assert "Terminating" in report.actions_covered
