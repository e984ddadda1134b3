"""LTP test generation: the trace -> Scenario compiler on counterexamples
captured from real TLC runs of the trap model (fixtures/tlc_trap_*.log), and,
marked integration, generate() end to end."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from conformance.core.contract import Delivery
from conformance.core.errors import ToolMissing
from conformance.core.types import ExpectedOutcome, load_scenario
from conformance.protocols.ltp import LtpBlock, LtpDelivery
from generators.ltp import purposes as ltp
from generators.tlc import find_jar, parse_output

# LTP's purposes, generated twice at once: minutes (conftest.py)
pytestmark = pytest.mark.first(5)

FIXTURES = Path(__file__).parent / "fixtures"


def _ltp_delivery(d: Delivery) -> LtpDelivery:
    """An LTP outcome's delivery, with its counters' type."""
    assert isinstance(d, LtpDelivery), d
    return d


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
    # compile_trace gives the trace's end state; generate() widens it to the set
    [end] = scen.expect.outcomes
    assert end.key() == (3000, 1000, "completed", "completed")
    assert isinstance(scen.params, LtpBlock) and scen.params.segment_size == 1000
    assert (scen.params.red_len, scen.params.block_len) == (3000, 4000)
    assert scen.origin is not None and "ChannelLoseReturn" in scen.origin.actions
    # recovery by the receiver's RS timer (6.8) or the sender's checkpoint timer (6.7)
    assert {"ReceiverExpireReportTimer", "SenderExpireCheckpointTimer"} & set(scen.origin.actions)


def test_red_data_lost_is_keyed_on_kind_and_the_byte_it_holds():
    # "the red data segment holding byte 0": the same segment in any
    # segmentation, where an offset would assume the scenario's grid
    scen = ltp.compile_trace(_trace("red-data-0-lost"), "red-data-0-lost")
    assert [(i.direction, i.match, i.occurrence) for i in scen.impairments] == [
        ("forward", {"kind": "red_data", "holds": 0}, 1)
    ]
    assert scen.expect.outcomes[0].delivered.red_bytes_delivered == 3000


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
    """A data segment is named by a byte it holds: the part's last segment
    (the checkpoint with EORP, the EOB) by the part's last byte, which only
    the piece carrying those flags holds in any segmentation; any other by
    its first byte; every copy of a segment alike, whatever its flags."""
    assert ltp.match_fields({"type": "RD-CP-EORP", "off": 2}) == {
        "kind": "red_data",
        "holds": 2999,
    }
    # its retransmission, a checkpoint without EORP: the same segment
    assert ltp.match_fields({"type": "RD-CP", "off": 2}) == {"kind": "red_data", "holds": 2999}
    assert ltp.match_fields({"type": "RD", "off": 1}) == {"kind": "red_data", "holds": 1000}
    block = ltp.LtpBlock(segment_size=500, red_len=1500, block_len=2000)
    assert ltp.match_fields({"type": "GD-EOB", "off": 3}, block) == {
        "kind": "green_data",
        "holds": 1999,
    }
    assert ltp.match_fields({"type": "RA", "off": 0}) == {"type": "RA"}


# The four things a checkpoint's arrival can do at the receiver (RFC 5326),
# each its own action so that coverage tells them apart.
CHECKPOINT_ACTIONS = {
    "ReceiverRxCheckpoint",  # new serial, session open: RS queued (6.11 a)
    "ReceiverDiscardCheckpoint",  # session cancelling or closed: discarded
    "ReceiverRxRedundantCheckpoint",  # serial answered before: RS resent (6.8 b)
    "ReceiverCancelOnRedundantCheckpoint",  # ... beyond the limit: CR RLEXC (6.8 b, 6.19)
}


def test_model_actions_are_the_disjuncts_of_next():
    actions = ltp.model_actions()
    assert len(actions) == len(set(actions)) == 54
    assert {
        "SenderTxCheckpoint",
        "ChannelLoseReturn",
        "ChannelReleaseReturn",
        "ChannelLinkDown",
        "ChannelSwallowForward",
        "Terminating",
    } <= set(actions)
    for a in sorted(CHECKPOINT_ACTIONS):
        assert a in actions, a
    # every action writes its own name into lastEvent.action, in its own
    # definition (traces and coverage read the name from there)
    spec = ltp.SPEC.read_text(encoding="utf-8")
    for a in set(actions) - {"Terminating"}:
        body = re.search(rf"^{a}(?:\(\w+\))? ==\n((?:    .*\n)+)", spec, re.MULTILINE)
        assert body and f'"{a}"' in body.group(1), a


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
    assert "INVARIANTS Trap" in text and "SPECIFICATION TrapSpec" in text


@pytest.mark.integration
def test_two_generate_runs_at_once_both_succeed(tmp_path: Path) -> None:
    """generate() end to end, twice at once in one checkout (each run keeps
    its TLC files in its own folder): every purpose reached, distinct
    scenarios only, each with the outcome set the model allows. (The
    catalogue, which the command line adds unless told not to, is
    test_catalogue's.)"""
    try:
        find_jar()
    except ToolMissing as exc:
        pytest.skip(str(exc))
    # b: the command line, in a process of its own; a: the library, at once
    args = ["generate", "ltp", "--no-catalogue", "--out", str(tmp_path / "b")]
    cli = subprocess.Popen(
        [sys.executable, "-m", "conformance.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    a = ltp.generate(tmp_path / "a")
    out, _ = cli.communicate(timeout=600)
    assert cli.returncode == 0, out
    assert "distinct scenarios" in out
    assert a.unreachable == []
    assert sorted(p.name for p in a.scenarios) == sorted(
        p.name for p in (tmp_path / "b").glob("ltp-*.json")
    )
    for p in a.scenarios:
        assert p.read_text() == (tmp_path / "b" / p.name).read_text()

    scenarios = {p.stem: load_scenario(p) for p in a.scenarios}
    keys = [ltp.impairment_key(s) for s in scenarios.values()]
    assert len(keys) == len(set(keys)), "two scenarios ask the same of the channel"
    assert len(scenarios) < len(ltp.PURPOSES)  # some purposes give the same test
    by_purpose = {st.purpose: st for st in a.purposes}
    assert by_purpose["receiver-cancels"].same_as == "two-reports-lost"
    assert by_purpose["sender-cancels"].same_as == "checkpoint-lost-twice"
    origin = scenarios["ltp-two-reports-lost"].origin
    assert origin is not None
    assert "receiver-cancels" in origin.purposes

    rs = scenarios["ltp-report-lost"]
    assert [(i.direction, i.match, i.occurrence) for i in rs.impairments] == [
        ("return", {"type": "RS"}, 1)
    ]
    # One RS lost: recovered, so both sides may complete. With a limit of 1,
    # the RS timer's resend and then the sender's redundant checkpoint make
    # the queue count exceed the limit, and RFC 5326 §6.8(b) cancels: the
    # model allows that too. A receiver that completes has the whole red part.
    rs_set = {o.key() for o in rs.expect.outcomes}
    assert (3000, 1000, "completed", "completed") in rs_set
    assert any(o.receiver_outcome == "cancelled" for o in rs.expect.outcomes)
    assert all(
        _ltp_delivery(o.delivered).red_bytes_delivered == 3000
        for o in rs.expect.outcomes
        if o.receiver_outcome == "completed"
    )
    # Two RSs lost: the receiver cancels at its report limit (6.8); whether the
    # red part was delivered first (6.9) depends on the interleaving, so both
    # are in the set, and nothing else is under the default reading. Under
    # reading 13's alternative a receiver with the red part and the EOB may
    # close first (8.2), leaving the sender to cancel alone.
    two = scenarios["ltp-two-reports-lost"].expect.outcomes

    def parts(o: ExpectedOutcome) -> tuple[int, str, str]:
        d = _ltp_delivery(o.delivered).red_bytes_delivered
        return d, o.sender_outcome, o.receiver_outcome

    assert {parts(o) for o in two if "" in o.readings} == {
        (3000, "cancelled", "cancelled"),
        (0, "cancelled", "cancelled"),
    }
    assert {parts(o): o.readings for o in two if "" not in o.readings} == {
        (3000, "cancelled", "completed"): ["13"]
    }
    nominal = scenarios["ltp-nominal"]
    assert nominal.impairments == []
    assert {(o.sender_outcome, o.receiver_outcome) for o in nominal.expect.outcomes} == {
        ("completed", "completed")
    }
    # Not reached with two losses: the cancel timers (a third loss), and a
    # segment meeting a receiver or sender that is no longer open; nor, under
    # the default reading and known service the traps use, readings 4's and
    # 5's alternatives and a refused session; nor the channel's delays and
    # duplicates (the traps' budget of late segments is 0: the catalogue's
    # late bounds cover them), nor a miscolored sender's (the catalogue's
    # r2g1l1mis bound does), nor the link's outages (the catalogue's outage
    # scenarios do), nor a receiver that cancels a stalled session (a declared
    # profile: the catalogue's r1g1l1i bound).
    assert set(a.actions_uncovered) <= {
        "ChannelLinkDown",
        "ChannelLinkUp",
        "ChannelSwallowForward",
        "ChannelSwallowReturn",
        "SenderTxMiscoloredData",
        "ReceiverCancelOnMiscolored",
        "ChannelDelayForward",
        "ChannelDelayReturn",
        "ChannelDuplicateForward",
        "ChannelDuplicateReturn",
        "ChannelReleaseForward",
        "ChannelReleaseReturn",
        "ReceiverCloseOnGreenEob",
        "ReceiverCloseOnRedPart",
        "ReceiverCancelIdleSession",
        "ReceiverReopenSession",
        "ReceiverRefuseSession",
        "ReceiverRefuseData",
        "SenderRxRedundantCancel",
        "SenderExpireCancelTimer",
        "SenderAbandonCancel",
        "ReceiverDiscardRedData",
        "ReceiverDiscardCheckpoint",
        "ReceiverDiscardGreenData",
        "ReceiverRxRedundantCancel",
        "ReceiverExpireCancelTimer",
        "ReceiverAbandonCancel",
    }
    assert len(a.actions_covered) >= 27  # of 54; the catalogue covers all
    assert {"Terminating", "SenderRxRedundantReport"} <= set(a.actions_covered)
    assert CHECKPOINT_ACTIONS - {"ReceiverDiscardCheckpoint"} <= set(a.actions_covered)
    cov = json.loads((tmp_path / "a" / "coverage.json").read_text())
    assert cov["uncovered"] == a.actions_uncovered
    assert list((tmp_path / "a" / "tlc").glob("*.tlc.log"))
    # The command line also wrote the robustness scenarios: the nominal
    # transfer with every probe of one tester role, its outcome set unchanged.
    from conformance.tester.ltp import PROBES

    robust = {p.stem: load_scenario(p) for p in (tmp_path / "b" / "robustness").glob("*.json")}
    assert set(robust) == {"ltp-robustness-sender", "ltp-robustness-receiver"}
    for role in ("sender", "receiver"):
        scn = robust[f"ltp-robustness-{role}"]
        assert [p.kind for p in scn.probes] == [k for k, p in PROBES.items() if p.role == role]
        assert scn.impairments == []
        assert scn.expect == nominal.expect


# The offset sets' two operators under real TLC, over every subset of a
# small range: WithOffset (LTP.tla) is S \cup {o}, whatever shape it keeps
# S in, and OffsetsView (MCLTP.tla) tells any two different sets apart, so
# the views built on it merge no states. Init is FALSE: TLC checks the
# ASSUMEs, and no initial state satisfies NoInit.
OFFSETS_MODULE = """---- MODULE MCLTPOffsets ----
EXTENDS MCLTP
Sets == SUBSET (0 .. 5)
ASSUME \\A S \\in Sets, o \\in 0 .. 6 : WithOffset(S, o) = S \\cup {o}
ASSUME \\A S \\in Sets, o \\in 0 .. 6 :
    LET W == WithOffset(WithOffset(S, o), o + 1) IN W = S \\cup {o, o + 1}
ASSUME \\A S, T \\in Sets, f \\in 0 .. 2 : OffsetsView(S, f) = OffsetsView(T, f) => S = T
ASSUME OffsetsView(0 .. 3, 0) = <<"run", 4, {}>> /\\ OffsetsView(2 .. 3, 2) = <<"run", 2, {}>>
ASSUME OffsetsView({}, 1) = <<"run", 0, {}>> /\\ OffsetsView({0, 2}, 0) = <<"set", 0, {0, 2}>>
NoInit == Init /\\ sState # sState
====
"""


def test_offset_sets_keep_their_value_and_their_view_tells_them_apart(tmp_path: Path) -> None:
    from generators.tlc import run_tlc

    try:
        find_jar()
    except ToolMissing as exc:
        pytest.skip(str(exc))
    model = tmp_path / "model"
    model.mkdir()
    for module in ltp.SPEC_DIR.glob("*.tla"):
        (model / module.name).write_text(module.read_text(encoding="utf-8"), encoding="utf-8")
    (model / "MCLTPOffsets.tla").write_text(OFFSETS_MODULE, encoding="utf-8")
    ci = (ltp.SPEC_DIR / "MCLTP_ci.cfg").read_text(encoding="utf-8")
    constants = ci[ci.index("CONSTANTS") : ci.index("SPECIFICATION")]
    cfg = model / "MCLTPOffsets.cfg"
    cfg.write_text(constants + "INIT NoInit\nNEXT Next\n", encoding="utf-8")
    res = run_tlc(model / "MCLTPOffsets.tla", cfg, workers=1, workdir=tmp_path, short=True)
    text = res.log_path.read_text(encoding="utf-8")
    assert not res.errors, text[-2000:]
    assert "Model checking completed" in text and res.distinct_states == 0, text[-2000:]


def test_the_protocol_state_holds_every_variable_but_the_history() -> None:
    """ProtocolState (MCLTP.tla), on which every VIEW of the LTP models is
    built, lists the receiver's variables itself (two of them through
    OffsetsView): a variable it left out would merge states that differ."""
    spec = ltp.SPEC.read_text(encoding="utf-8")
    block = spec[spec.index("\nVARIABLES\n") : spec.index("\nsenderVars ==")]
    declared = set(re.findall(r"^    (\w+),?\s*(?:\\\*.*)?$", block, re.MULTILINE))
    mc = (ltp.SPEC_DIR / "MCLTP.tla").read_text(encoding="utf-8")
    view = mc[mc.index("ProtocolState ==") : mc.index("CheckView ==")]
    listed = set(re.findall(r"\b([a-z]\w*)\b", view))
    sender = re.search(r"senderVars == <<([^>]*)>>", spec)
    assert sender and "senderVars" in listed
    listed |= {v.strip() for v in sender.group(1).split(",")}
    assert len(declared) > 20
    assert declared - listed == {"lostLog", "lastEvent"}
