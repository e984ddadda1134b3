"""Scenario files: what a user gets back for bad input (exit 2, file, field, reason)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.core.errors import InputError
from conformance.core.types import Scenario, json_schema, load_scenario
from conformance.protocols.ltp import LtpBlock

GOOD = {
    "schema": "dtnconform/scenario/1",
    "name": "ltp-rs-lost",
    "protocol": "ltp",
    "ltp": {"block_len": 3000, "red_len": 2000, "segment_size": 1000},
    "impairments": [{"direction": "return", "match": {"type": "RS"}, "occurrence": 1}],
    "expect": {
        "outcomes": [
            {
                "red_bytes_delivered": 2000,
                "green_bytes_delivered": 1000,
                "sender_outcome": "completed",
                "receiver_outcome": "completed",
            }
        ]
    },
}


def _write(tmp_path: Path, data: object) -> Path:
    p = tmp_path / "scn.json"
    p.write_text(json.dumps(data))
    return p


def _with(path: list[str | int], value: object) -> dict[str, object]:
    data = json.loads(json.dumps(GOOD))
    node = data
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


def test_good_scenario_loads(tmp_path: Path) -> None:
    scn = load_scenario(_write(tmp_path, GOOD))
    assert isinstance(scn.params, LtpBlock), scn.params
    assert scn.params.red_len == 2000 and scn.params.block_len == 3000
    assert scn.impairments[0].describe() == "drop 1st return segment [type=RS]"


@pytest.mark.parametrize(
    ("path", "value", "field", "reason"),
    [
        (
            ["impairments", 0, "match"],
            {"packet_index": 3},
            "impairments[0].match",
            "unknown LTP field",
        ),
        (
            ["impairments", 0, "occurrence"],
            0,
            "impairments.0.occurrence",
            "greater than or equal to 1",
        ),
        (
            ["impairments", 0, "direction"],
            "sideways",
            "impairments.0.direction",
            "'forward' or 'return'",
        ),
        (
            ["expect", "outcomes", 0, "red_bytes_delivered"],
            5000,
            "expect",
            "not a whole number of red parts",
        ),
        (["expect", "outcomes"], [], "expect.outcomes", "at least 1 item"),
        (["ltp", "red_len"], 4000, "ltp", "red_len 4000 exceeds block_len 3000"),
        (["ltp", "segment_size"], 1461, "ltp.segment_size", "over channel.mtu 1500"),
        (["ltp"], KeyError, "params", "Field required"),
        (["protocol"], "tcp", "protocol", "unknown protocol 'tcp' (registered: cfdp, ltp"),
        (["name"], "has spaces", "name", "pattern"),
        (
            ["expect", "outcomes", 0, "sender_outcome"],
            "fine",
            "expect.outcomes.0.sender_outcome",
            "'completed'",
        ),
        (["surprise"], 1, "surprise", "Extra inputs are not permitted"),
    ],
)
def test_invalid_scenario_names_file_field_reason(
    tmp_path: Path, path: list[str | int], value: object, field: str, reason: str
) -> None:
    p = _write(tmp_path, _with(path, value))
    with pytest.raises(InputError) as exc:
        load_scenario(p)
    msg = str(exc.value)
    assert msg.startswith(f"{p}: field {field}:"), msg
    assert reason in msg


def test_fragmented_runs_only_when_asked(tmp_path: Path) -> None:
    data = _with(["ltp", "segment_size"], 1461)
    ltp = data["ltp"]
    assert isinstance(ltp, dict), ltp
    ltp["block_len"] = 5000
    data["channel"] = {"fragment": True}
    assert load_scenario(_write(tmp_path, data)).channel.fragment
    data["channel"] = {"mtu": 1600}
    params = load_scenario(_write(tmp_path, data)).params
    assert isinstance(params, LtpBlock), params
    assert params.segment_size == 1461


def test_files_from_before_bytes_and_outcome_sets_still_load(tmp_path: Path) -> None:
    """Block geometry in whole segments and one flat expected outcome: the
    format of scenario files written before geometry in bytes."""
    old = json.loads(json.dumps(GOOD))
    old["ltp"] = {"segment_size": 1000, "red_segments": 2, "green_segments": 1}
    old["expect"] = old["expect"]["outcomes"][0]
    scn = load_scenario(_write(tmp_path, old))
    assert isinstance(scn.params, LtpBlock), scn.params
    assert (scn.params.red_len, scn.params.block_len) == (2000, 3000)
    assert scn.expect.allows(scn.expect.outcomes[0]) and len(scn.expect.outcomes) == 1


def test_cli_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = _write(tmp_path, _with(["impairments", 0, "occurrence"], -1))
    assert main(["run", str(p), "--sut", "licklider"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert str(p) in err and "impairments.0.occurrence" in err


def test_cli_bad_json_and_unknown_sut(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    assert main(["run", str(bad), "--sut", "licklider"]) == 2
    assert "not JSON" in capsys.readouterr().err
    good = _write(tmp_path, GOOD)
    assert main(["run", str(good), "--sut", "nosuch"]) == 2
    assert "unknown SUT 'nosuch'" in capsys.readouterr().err


def test_cli_not_root(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                      monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    assert main(["run", str(_write(tmp_path, GOOD)), "--sut", "licklider",
                 "--out", str(tmp_path / "run")]) == 2  # fmt: skip
    assert "needs root" in capsys.readouterr().err


def test_argparse_errors_exit_2() -> None:
    with pytest.raises(SystemExit) as exc:
        main(["check"])
    assert exc.value.code == 2


def _at(node: object, *keys: str) -> object:
    """The value at ``keys`` in nested JSON objects (each must be one)."""
    for key in keys:
        assert isinstance(node, dict), (key, node)
        node = node[key]
    return node


def test_schemas_export_and_accept_a_generated_file() -> None:
    assert _at(json_schema("scenario"), "properties", "schema", "const") == "dtnconform/scenario/1"
    statuses = _at(json_schema("verdict"), "properties", "status", "enum")
    assert isinstance(statuses, list), statuses
    assert set(statuses) == {"pass", "fail", "inconclusive", "error"}
    assert Scenario.model_validate(GOOD).name == "ltp-rs-lost"
