"""CFDP's registry entry at work in generic code: the observed outcome takes
each entity's condition code from its own result, condition codes are
Table 5-5's names, a user's request an endpoint could not make leaves the
run unjudged, scenarios with impossible requests are refused, and a
corruption rule confined to a PDU's tail reaches the emulator's config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from conformance.channel import control as emulator
from conformance.core.classifiers import default_port
from conformance.core.types import (
    Channel,
    EndpointResult,
    Expectation,
    ExpectedOutcome,
    Impairment,
    RunResult,
    Scenario,
    SegmentCounts,
)
from conformance.judge import judge
from conformance.protocols.cfdp import SPEC, CfdpDelivery, CfdpRequest, CfdpTransfer, Trigger
from suts.registry import get

T = CfdpTransfer(file_len=2000, segment_size=1024)
DONE = CfdpDelivery(file_bytes_delivered=2000)


def _end(role: str, outcome: str, delivered: CfdpDelivery, **kw: object) -> EndpointResult:
    return EndpointResult(role=role, outcome=outcome, delivered=delivered, **kw)  # type: ignore[arg-type]


def _result(tx: EndpointResult, rx: EndpointResult) -> RunResult:
    return RunResult(
        scenario="s",
        protocol="cfdp",
        sut="x",
        started_at="2026-11-24T00:00:00+00:00",
        duration_s=1.0,
        sender=tx,
        receiver=rx,
        delivered_bytes=2000,
        goodput_bps=None,
        segments=SegmentCounts(),
        dropped=SegmentCounts(),
    )


def _scenario(outcomes: list[ExpectedOutcome], params: CfdpTransfer = T) -> Scenario:
    return Scenario(name="s", protocol="cfdp", params=params, expect=Expectation(outcomes=outcomes))


def test_the_observed_outcome_takes_each_entitys_condition() -> None:
    tx = _end("sender", "cancelled", CfdpDelivery(sender_condition="nak_limit_reached"))
    rx = _end("receiver", "cancelled", CfdpDelivery(receiver_condition="nak_limit_reached"))
    seen = _result(tx, rx).outcome()
    assert seen.delivered.parts() == {
        "file_bytes_delivered": 0,
        "sender_condition": "nak_limit_reached",
        "receiver_condition": "nak_limit_reached",
    }
    assert seen.sender_outcome == "cancelled"


def test_condition_codes_are_table_5_5_names() -> None:
    assert CfdpDelivery(receiver_condition="").receiver_condition == ""
    with pytest.raises(ValidationError, match="Table 5-5"):
        CfdpDelivery(sender_condition="nak_limit")


def _fd(i: int, offset: int, length: int, decision: str = "pass") -> dict[str, object]:
    fields = {"pdu_type": "file_data", "source_entity": 1, "seq_num": 1, "offset": offset,
              "length": length}  # fmt: skip
    return {"t_ns": i, "dir": "forward", "index": i, "len": 60 + length, "kind": "udp",
            "proto": "cfdp", "seg": i, "fields": fields, "decision": decision}  # fmt: skip


def test_the_segments_told_to_the_user_must_have_arrived(tmp_path: Path) -> None:
    """A receiver's harness that reports its implementation's
    File-Segment-Recv.indications (told_segments) is held to the File Data
    PDUs the channel passed to it (727.0-B-5 3.4.10): a mutant of cfdp-py
    whose indication gives no length was invisible on the wire."""
    completed = ExpectedOutcome(
        sender_outcome="completed", receiver_outcome="completed", delivered=DONE
    )
    log = tmp_path / "channel.jsonl"
    frames = [_fd(1, 0, 1024), _fd(2, 1024, 976, "drop"), _fd(3, 1024, 976)]
    log.write_text("".join(json.dumps(f) + "\n" for f in frames))

    def told(segs: list[list[int | None]] | None, tester: str | None = None) -> list[str]:
        rx = _end("receiver", "completed", DONE, told_segments=segs)
        res = _result(_end("sender", "completed", CfdpDelivery()), rx)
        res.tester = tester  # type: ignore[assignment]
        v = judge(SPEC, _scenario([completed]), res, log, [])
        return [f"{r.rule}: {r.message}" for r in v.reasons if r.code == "segment-told"]

    assert told(None) == [] and told([]) == []
    assert told([[0, 1024], [1024, 976], [1024, 976]]) == []
    (none,) = told([[0, 1024], [1024, None]])
    assert "length None (a parameter without its value)" in none and "§3.4.10" in none
    (wrong,) = told([[0, 1000]])
    assert "offset 0, length 1000 (no PDU it received)" in wrong
    # the tester's own receiver is not an implementation with a user
    assert told([[0, None]], tester="receiver") == []
    # a File Data the channel corrupted may arrive with any span: only the
    # values are held then
    frames.append(_fd(4, 0, 1024, "corrupt"))
    log.write_text("".join(json.dumps(f) + "\n" for f in frames))
    assert told([[0, 1000]]) == [] and len(told([[0, None]])) == 1
    # so may one the channel passed as IPv4 fragments, which it does not
    # classify (a resend of 2,048 octets over a 1,500-octet MTU)
    frag = {"t_ns": 5, "dir": "forward", "index": 5, "len": 1514, "kind": "fragment",
            "decision": "pass"}  # fmt: skip
    log.write_text("".join(json.dumps(f) + "\n" for f in [*frames[:3], frag]))
    assert told([[1024, 2048]]) == [] and len(told([[0, None]])) == 1
    # with no unit of the protocol in the channel's log, nothing is judged
    log.write_text("")
    assert told([[0, 1000], [0, None]]) == []
    # a harness's report that is no list of [offset, length] is its error
    adapter = get("licklider")
    adapter.protocol = "cfdp"
    for bad in ("[[0]]", "[[0, -1]]", "[0, 1]", '[["0", 1]]'):
        line = f'{{"outcome": "completed", "told_segments": {bad}}}'
        end = adapter.parse_result("receiver", line, "", 0)
        assert end.outcome == "error" and "bad told_segments" in end.detail, bad
    ok = adapter.parse_result(
        "receiver", '{"outcome": "open", "told_segments": [[0, null]]}', "", 0
    )
    assert ok.told_segments == [[0, None]] and ok.outcome == "open"


def test_an_unmade_request_leaves_the_run_unjudged(tmp_path: Path) -> None:
    # the harness prints "made": false for a request it could not make
    adapter = get("licklider")  # any adapter: parse_result is the base class's
    adapter.protocol = "cfdp"
    line = json.dumps({"outcome": "completed", "sender_condition": "no_error",
                       "requests": [{"request": "cancel", "made": False,
                                     "detail": "its trigger was never seen"}]})  # fmt: skip
    tx = adapter.parse_result("sender", line + "\n", "", 0)
    assert tx.requests_unmade == ["cancel: its trigger was never seen"]
    rx = _end("receiver", "completed", DONE)
    cancelled = ExpectedOutcome(
        sender_outcome="cancelled",
        receiver_outcome="cancelled",
        delivered=CfdpDelivery(
            sender_condition="cancel_request_received",
            receiver_condition="cancel_request_received",
        ),
    )
    log = tmp_path / "channel.jsonl"
    log.write_text("")
    v = judge(SPEC, _scenario([cancelled]), _result(tx, rx), log, [])
    assert v.status == "inconclusive"
    codes = [r.code for r in v.reasons]
    assert "request-unmade" in codes and not any(c.startswith("unexpected") for c in codes)
    # made, the same outcome is judged: it is not the one the set allows
    tx.requests_unmade = []
    v = judge(SPEC, _scenario([cancelled]), _result(tx, rx), log, [])
    assert v.status == "fail"
    why = {r.code: r.rule for r in v.reasons}
    # each part that differs, with the rule behind the value the set allows
    assert "§4.6.6, §4.11.2.2" in why["unexpected-sender-condition"]
    assert "§4.6.6, §4.11.2.2" in why["unexpected-receiver-condition"]
    assert "§4.6.1.2" in why["unexpected-file-bytes-delivered"]


def test_a_prompt_is_the_class_2_senders() -> None:
    after = Trigger(direction="forward", match={"directive": "eof"})
    ask = CfdpRequest(entity="receiver", request="prompt_nak", after=after)
    with pytest.raises(ValidationError, match="Prompt is the sending entity's"):
        _scenario(
            [
                ExpectedOutcome(
                    sender_outcome="completed", receiver_outcome="completed", delivered=DONE
                )
            ],  # fmt: skip
            T.model_copy(update={"requests": [ask]}),
        )
    with pytest.raises(ValueError, match="no fields"):
        CfdpTransfer.model_validate(
            {
                "file_len": 10,
                "requests": [
                    {
                        "entity": "sender",
                        "request": "cancel",
                        "after": {"direction": "forward", "match": {"kind": "eof"}},
                    }
                ],
            }  # fmt: skip
        ).check(
            _scenario(
                [
                    ExpectedOutcome(
                        sender_outcome="completed", receiver_outcome="completed", delivered=DONE
                    )
                ]
            )  # fmt: skip
        )


def test_cfdp_runs_use_the_convention_port() -> None:
    # no port is assigned (specs/cfdp/wire.json note); runs use 5111
    assert SPEC.run_port == 5111 and default_port("cfdp") == 5111
    assert default_port("ltp") == 1113  # an assigned one wins


def test_a_tail_corruption_reaches_the_emulator_config() -> None:
    imp = Impairment(
        direction="forward",
        match={"pdu_type": "file_data", "offset": 0},
        action="corrupt",
        checksum="recompute",
        tail_octets=1,
    )
    cfg = emulator.config(Channel(), if_a="a", if_b="b", protocol="cfdp", port=5111,
                          impairments=[imp])  # fmt: skip
    (rule,) = cfg["rules"]
    assert rule["tail_octets"] == 1 and rule["checksum"] == "recompute"
    plain = Impairment(direction="forward", match={"directive": "eof"})
    cfg = emulator.config(Channel(), if_a="a", if_b="b", protocol="cfdp", port=5111,
                          impairments=[plain])  # fmt: skip
    assert "tail_octets" not in cfg["rules"][0]
