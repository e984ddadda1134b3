"""The Lua dissectors' generated fact tables are what ``specs/<proto>/wire.json``
gives (``python -m dissectors.luagen``), and the check notices any difference."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.core import wire
from dissectors import luagen

REPO = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dissectors.luagen", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )


def test_ltp_has_a_generated_dissector() -> None:
    assert "ltp" in luagen.protocols_with_dissector()
    text = luagen.lua_path("ltp").read_text(encoding="utf-8")
    assert luagen.begin_marker("ltp") + "\n" in text
    assert (
        luagen.begin_marker("ltp")
        == "-- BEGIN GENERATED from specs/ltp/wire.json (python -m dissectors.luagen ltp); do not edit"
    )


@pytest.mark.parametrize("protocol", luagen.protocols_with_dissector())
def test_generated_block_is_current(protocol: str) -> None:
    """Fails when someone edits wire.json (or the block) without running
    ``python -m dissectors.luagen <proto>``."""
    assert luagen.check(protocol) == ""
    proc = run("--check", protocol)
    assert proc.returncode == 0, proc.stderr
    assert "up to date" in proc.stdout


def test_check_without_protocol_covers_every_dissector() -> None:
    proc = run("--check")
    assert proc.returncode == 0, proc.stderr
    for protocol in luagen.protocols_with_dissector():
        assert f"dissectors/{protocol}/{protocol}.lua" in proc.stdout


def _set(facts: dict[str, Any], path: list[str | int], value: Any) -> None:
    node: Any = facts
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


FACT_EDITS: list[tuple[list[str | int], Any]] = [
    (["udp_port"], 4556),
    (["udp_port_section"], "10.2"),
    (["version", "value"], 1),
    (["sdnv", "max_bytes"], 9),
    (["segment_types", "entries", 5, "defined"], True),
    (["segment_types", "entries", 12, "name"], "CX"),
    (["segment_types", "entries", 13, "kind"], "cancel"),
    (["segment_types", "section"], "3.1"),
    (["cancel_reasons", "entries", 2, "name"], "RLEXCEEDED"),
    (["cancel_reasons", "reserved_from"], 7),
    (["extension_tags", "entries", 1, "name"], "cookie"),
    (["kinds", "report", "section"], "3.2.5"),
]


@pytest.mark.parametrize(
    "path,value", FACT_EDITS, ids=[".".join(map(str, p)) for p, _ in FACT_EDITS]
)
def test_edited_fact_makes_check_fail(tmp_path: Path, path: list[str | int], value: Any) -> None:
    """An edited temp copy of wire.json against the real dissector: stale,
    exit 1, and the message names the file and the command to run."""
    facts = copy.deepcopy(wire.load("ltp"))
    _set(facts, path, value)
    edited = tmp_path / "wire.json"
    edited.write_text(json.dumps(facts, indent=1, ensure_ascii=False), encoding="utf-8")
    message = luagen.check("ltp", facts=facts)
    assert message.startswith("dissectors/ltp/ltp.lua is stale")
    proc = run("--check", "--wire", str(edited), "ltp")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "dissectors/ltp/ltp.lua is stale" in proc.stderr
    assert "run `python -m dissectors.luagen ltp`" in proc.stderr


def test_unedited_copy_of_wire_json_passes(tmp_path: Path) -> None:
    copy_ = tmp_path / "wire.json"
    copy_.write_text(wire.path("ltp").read_text(encoding="utf-8"), encoding="utf-8")
    proc = run("--check", "--wire", str(copy_), "ltp")
    assert proc.returncode == 0, proc.stderr


def test_write_rewrites_only_the_block(tmp_path: Path) -> None:
    real = luagen.lua_path("ltp").read_text(encoding="utf-8")
    lua = tmp_path / "ltp.lua"
    # a hand edit inside the block (reverted) and one outside it (kept)
    stale = real.replace('    [12] = "CS",\n', '    [12] = "CANCEL",\n', 1)
    stale = stale.replace("local ZERO = UInt64(0)", "local ZERO = UInt64(0) -- kept", 1)
    assert stale.count('"CANCEL"') == 1 and "-- kept" in stale
    lua.write_text(stale, encoding="utf-8")
    assert "is stale" in luagen.check("ltp", lua=lua)
    proc = run("--check", "--lua", str(lua), "ltp")
    assert proc.returncode == 1 and "is stale" in proc.stderr
    assert luagen.write("ltp", lua=lua) is True
    assert lua.read_text(encoding="utf-8") == real.replace(
        "local ZERO = UInt64(0)", "local ZERO = UInt64(0) -- kept", 1
    )
    assert luagen.check("ltp", lua=lua) == ""
    assert luagen.write("ltp", lua=lua) is False  # idempotent


def test_missing_block_is_an_error(tmp_path: Path) -> None:
    lua = tmp_path / "ltp.lua"
    lua.write_text("local x = 1\n", encoding="utf-8")
    with pytest.raises(luagen.LuagenError, match="expected one generated block"):
        luagen.check("ltp", lua=lua)
    proc = run("--check", "--lua", str(lua), "ltp")
    assert proc.returncode == 2
    assert "-- END GENERATED" in proc.stderr


def test_output_is_deterministic() -> None:
    """Key order and entry order of the JSON do not change the Lua."""
    facts = wire.load("ltp")
    shuffled = json.loads(json.dumps(facts))
    shuffled = dict(reversed(list(shuffled.items())))
    for table in ("segment_types", "cancel_reasons", "extension_tags"):
        shuffled[table]["entries"] = [
            dict(reversed(list(e.items()))) for e in facts[table]["entries"]
        ][::-1]
    assert luagen.generate(shuffled) == luagen.generate(facts)


def test_generated_tables_hold_the_facts() -> None:
    block = luagen.generate(wire.load("ltp"))
    assert block.startswith(luagen.begin_marker("ltp") + "\n")
    assert block.endswith(luagen.END + "\n")
    for line in (
        "local UDP_PORT = 1113",
        "local VERSION = 0",
        "local SDNV_MAX_BYTES = 10",
        "local CANCEL_REASONS_RESERVED_FROM = 6",
        '    [15] = "CAR",',
        '    [5] = "RXMTCYCEXC",',
        '    [1] = "LTP cookie extension (RFC 5327)",',
        '    cancel_reasons = "RFC 5326 §3.2.4",',
        '    segment_types = "RFC 5326 §3.1.2",',
        '    udp_port = "RFC 5326 §10.1",',
        '    report = { section = "RFC 5326 §3.2.2" },',
        '    [3] = { checkpoint = true, defined = true, eob = true, eorp = true, kind = "red_data", red = true },',
        "    [11] = { checkpoint = false, defined = false, eob = false, eorp = false, "
        'kind = "undefined", red = false },',
    ):
        assert line + "\n" in block, line
    # no prose and no emulator vocabulary
    assert "nature" not in block and "meaning" not in block and "client_service_id" not in block


def test_lua_string_escaping() -> None:
    facts = {
        "schema": wire.SCHEMA,
        "protocol": "x",
        "spec": "RFC 1",
        "codes": {"section": "1", "entries": [{"code": 0, "name": 'a "q" \\ b\n'}]},
        "end": 1,
    }
    block = luagen.generate(facts)
    assert '    [0] = "a \\"q\\" \\\\ b\\n",' in block
    assert "local END = 1" in block
    assert '    codes = "RFC 1 §1",' in block
