"""The protocol seam: a toy protocol registered through the same registry as
LTP gets scenarios, expectations, endpoint results, verdicts with its own
rules and tags, and the CLI, without any generic module knowing it; and no
generic module names LTP.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Literal

import pytest
from pydantic import Field

from conformance import cli, protocols
from conformance.core.types import (
    EndpointResult,
    RunResult,
    Scenario,
    SegmentCounts,
    json_schema,
    load_scenario,
)
from conformance.judge import judge
from conformance.protocols import Delivery, Dissector, ProtocolParams, ProtocolSpec, Rule
from suts.base import SutAdapter

ROOT = Path(__file__).resolve().parents[2]


class ToyParams(ProtocolParams):
    """One file of ``file_len`` bytes."""

    protocol: Literal["toy"] = "toy"
    file_len: Annotated[int, Field(gt=0)]

    def check(self, scn: Scenario) -> None:
        for o in scn.expect.outcomes:
            assert isinstance(o.delivered, ToyDelivery)
            if o.delivered.file_bytes > self.file_len:
                raise ValueError("expect: file_bytes exceeds the file")


class ToyDelivery(Delivery):
    protocol: Literal["toy"] = "toy"
    file_bytes: Annotated[int, Field(ge=0)] = 0


TOY = ProtocolSpec(
    name="toy",
    title="Toy File Transfer",
    spec="TOY 1",
    params=ToyParams,
    delivery=ToyDelivery,
    dissector=Dissector(lua=ROOT / "nowhere.lua", proto="dtntoy", label="Toy"),
    unit="PDU",
    rules={
        "file_bytes": {"": Rule("4.2", "the whole file is delivered", ("ReceiverDeliverFile",))},
        "receiver_outcome": {
            "completed": Rule("4.3, 5.1", "the receiver completes", ("ReceiverRxEof",))
        },
    },
)


@pytest.fixture
def toy() -> Iterator[ProtocolSpec]:
    protocols.register(TOY)
    try:
        yield TOY
    finally:
        protocols.unregister("toy")


def _toy_scenario(**extra: object) -> dict[str, object]:
    return {
        "name": "toy-nominal",
        "protocol": "toy",
        "params": {"file_len": 500},
        "expect": {
            "outcomes": [
                {
                    "sender_outcome": "completed",
                    "receiver_outcome": "completed",
                    "delivered": {"file_bytes": 500},
                }
            ]
        },
        **extra,
    }


def test_toy_scenarios_validate_with_their_own_types(toy: ProtocolSpec, tmp_path: Path) -> None:
    scn = Scenario.model_validate(_toy_scenario())
    assert isinstance(scn.params, ToyParams) and scn.params.file_len == 500
    assert isinstance(scn.expect.outcomes[0].delivered, ToyDelivery)
    # the protocol's own check runs
    bad = _toy_scenario()
    bad["expect"]["outcomes"][0]["delivered"]["file_bytes"] = 900  # type: ignore[index]
    with pytest.raises(ValueError, match="file_bytes exceeds the file"):
        Scenario.model_validate(bad)
    # LTP parameters in a toy scenario are rejected by the discriminated union
    wrong = _toy_scenario(params={"block_len": 10, "red_len": 0, "segment_size": 10})
    with pytest.raises(ValueError, match="file_len"):
        Scenario.model_validate(wrong)
    # LTP scenarios still load while two protocols are registered
    ltp = load_scenario(ROOT / "reports/findings/ltp/scenarios/ltp-two-reports-lost.json")
    assert ltp.params.protocol == "ltp"
    # and a toy file round-trips through JSON
    path = tmp_path / "toy.json"
    path.write_text(scn.model_dump_json(by_alias=True))
    assert load_scenario(path) == scn


def test_unregistered_protocols_are_refused(toy: ProtocolSpec) -> None:
    protocols.unregister("toy")
    with pytest.raises(ValueError, match=r"unknown protocol 'toy' \(registered: cfdp, ltp"):
        Scenario.model_validate(_toy_scenario())
    protocols.register(TOY)


def test_schema_lists_every_registered_protocol(toy: ProtocolSpec) -> None:
    text = json.dumps(json_schema("scenario"))
    assert "ToyParams" in text and "LtpBlock" in text


def _result(tx: str, rx: str, file_bytes: int) -> RunResult:
    return RunResult.model_validate(
        {
            "scenario": "toy-nominal",
            "protocol": "toy",
            "sut": "toyimpl 1",
            "started_at": "2026-11-22T00:00:00+00:00",
            "duration_s": 1.0,
            "sender": {"role": "sender", "outcome": tx},
            "receiver": {"role": "receiver", "outcome": rx, "file_bytes": file_bytes},
            "delivered_bytes": file_bytes,
            "goodput_bps": None,
            "segments": SegmentCounts().model_dump(by_alias=True),
            "dropped": SegmentCounts().model_dump(by_alias=True),
        }
    )


def test_toy_verdicts_cite_the_toy_rules(toy: ProtocolSpec, tmp_path: Path) -> None:
    scn = Scenario.model_validate(_toy_scenario())
    log = tmp_path / "channel.jsonl"
    log.write_text("")
    ok = judge(toy, scn, _result("completed", "completed", 500), log, [])
    assert ok.status == "pass", ok.reasons
    bad = judge(toy, scn, _result("completed", "completed", 200), log, [])
    assert bad.status == "fail"
    part = next(r for r in bad.reasons if r.code == "unexpected-file-bytes")
    assert part.rule == "TOY 1 §4.2 (the whole file is delivered)"
    assert part.tags == ["TOY1-4.2"] and part.actions == ["ReceiverDeliverFile"]
    head = bad.reasons[0]
    assert head.code == "outcome-not-allowed" and "file_bytes 200" in head.message


class _ToyAdapter(SutAdapter):
    name, protocol, version = "toyimpl", "toy", "1"

    def ensure_built(self) -> None: ...

    def sender_argv(self, scn: Scenario, ep: object) -> list[str]:
        return []

    def receiver_argv(self, scn: Scenario, ep: object) -> list[str]:
        return []


def test_harness_results_use_the_protocols_counters(toy: ProtocolSpec) -> None:
    end = _ToyAdapter().parse_result(
        "receiver", '{"outcome": "completed", "file_bytes": 77, "payload_ok": true}\n', "", 0
    )
    assert isinstance(end.delivered, ToyDelivery) and end.delivered.file_bytes == 77
    bad = _ToyAdapter().parse_result(
        "receiver", '{"outcome": "completed", "file_bytes": -1}', "", 0
    )
    assert bad.outcome == "error" and "file_bytes" in bad.detail
    assert isinstance(EndpointResult.model_validate({"role": "sender", "outcome": "open"}),
                      EndpointResult)  # fmt: skip
    # a role that says when it stopped taking steps: that is its exit
    # (the runner keeps the earlier of it and its process's end)
    stopped = _ToyAdapter().parse_result(
        "sender", '{"outcome": "open", "stopped_at": 1800000000.25}', "", 0
    )
    assert stopped.exited_at == 1800000000.25
    assert _ToyAdapter().parse_result("sender", '{"outcome": "open"}', "", 0).exited_at is None
    # the session ID the sender told its user: a list of IDs, else the
    # harness's own error (untrusted input)
    told = _ToyAdapter().parse_result(
        "sender", '{"outcome": "open", "told_session": [1, 9]}', "", 0
    )
    assert told.told_session == [1, 9] and told.outcome == "open"
    for bad_told in ('"1"', "[1, true]", "[-1]", "{}"):
        line = f'{{"outcome": "open", "told_session": {bad_told}}}'
        end = _ToyAdapter().parse_result("sender", line, "", 0)
        assert end.outcome == "error" and "bad told_session" in end.detail, bad_told


def test_cli_lists_and_dispatches_registered_protocols(
    toy: ProtocolSpec, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["check", "toy"]) == 2
    assert "toy: no checker: not built yet" in capsys.readouterr().err
    # every registered protocol is listed, the toy among them; the list is
    # the registry's, so a new protocol needs no change here
    listed = ", ".join(protocols.names())
    assert "toy" in protocols.names() and {"cfdp", "ltp"} <= set(protocols.names())
    assert cli.main(["check", "nonesuch"]) == 2
    assert f"registered: {listed}" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["check", "--help"])
    assert f"protocol: {listed}" in " ".join(capsys.readouterr().out.split())
