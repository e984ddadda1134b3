"""Bad input on the real command line: exit status 2, exactly one line on
stderr naming the file, the field and the reason, and never a traceback.

Every test runs the installed ``dtnconform`` (or ``python -m
conformance.cli``) in a subprocess. Also: a closed stdout (``| head``) ends
with 141 and no traceback, Ctrl-C with 130 (certify too, where Robot
Framework takes the signal), ``--version``, and ``validate --port`` with
several ports and ranges plus its count of skipped UDP traffic.

Tests run as root here, where permission bits stop nothing: an unwritable
output directory is made with a regular file as its parent, or under /proc.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.core import classifiers
from dissectors.tshark import (
    CaptureTruncated,
    capture_end,
    decode,
    decode_capture,
    port_list,
    port_ranges,
)

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".venv" / "bin" / "dtnconform"
CLI = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "conformance.cli"]
SCENARIO = ROOT / "reports" / "findings" / "ltp" / "scenarios" / "ltp-two-reports-lost.json"
FINDINGS = ROOT / "reports" / "findings"
LICKLIDER_PCAP = (
    FINDINGS / "ltp/captures/licklider-0.1.1-first-cs-not-acknowledged-sender-side.pcap"
)
NORM_PCAP = FINDINGS / "norm/captures/nrl-norm-1.5.9-repair-flag-never-set.pcap"
EMU = ROOT / "conformance" / "channel" / "emulator" / "target" / "release" / "dtnc-emu"
HARNESS = ROOT / "suts" / "ltp" / "licklider" / "harness" / "target" / "release" / "dtnc-licklider"
CLASSIFY_SRC = ROOT / "conformance" / "channel" / "emulator" / "core" / "src" / "classify"

IS_ROOT = os.geteuid() == 0
needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
needs_root = pytest.mark.skipif(not IS_ROOT, reason="the check comes after the root check")


class Done(subprocess.CompletedProcess[str]):
    pid: int = 0


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> Done:
    with subprocess.Popen(
        [*CLI, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    ) as proc:
        out, err = proc.communicate(timeout=timeout)
    done = Done(proc.args, proc.returncode, out, err)
    done.pid = proc.pid
    return done


def one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exit 2, one stderr line that names every needle, no traceback."""
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("dtnconform"), line
    for needle in needles:
        assert needle in line, (needle, line)
    return line


def scenario_with(tmp_path: Path, match: dict[str, object]) -> Path:
    data = json.loads(SCENARIO.read_text())
    data["impairments"][0]["match"] = match
    path = tmp_path / "scn.json"
    path.write_text(json.dumps(data))
    return path


def namespaces_of(pid: int) -> list[str]:
    """Namespaces left by process ``pid`` (their names carry the creator's
    pid; other tests may be building their own meanwhile)."""
    if shutil.which("ip") is None:
        return []
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    names = (ln.split()[0] for ln in out.stdout.splitlines() if ln.strip())
    return [n for n in names if n.startswith(f"dtnc{pid}x")]


# ---------------------------------------------------------------------------
# 1. Impairment match values
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("match", "field", "reason"),
    [
        ({"kind": "foo"}, "impairments[0].match.kind", "unknown LTP kind 'foo' (known: red_data"),
        ({"kind": "red_data", "offset": "1000"}, "match.offset", "not a string ('1000')"),
        ({"kind": "red_data", "offset": True}, "match.offset", "not a flag (true)"),
        ({"kind": "red_data", "offset": -1}, "match.offset", "-1 never occurs"),
        ({"kind": "red_data", "offset": 1.5}, "match.offset", "integer"),
        ({"type": "rs"}, "match.type", "did you mean 'RS'?"),
        ({"type": 16}, "match.type", "type_code is 0-15"),
        ({"red": 1}, "match.red", "a flag (true or false), not a number (1)"),
        ({"reason": "RLEXC"}, "match.reason", "not a string"),
        ({"packet_index": 3}, "impairments[0].match", "unknown LTP field 'packet_index'"),
    ],
)
def test_bad_match_value_is_one_line(
    tmp_path: Path, match: dict[str, object], field: str, reason: str
) -> None:
    path = scenario_with(tmp_path, match)
    one_line_error(cli("run", str(path), "--sut", "licklider"), str(path), field, reason)


@pytest.mark.parametrize(
    ("protocol", "key", "value"),
    [
        ("ltp", "type", "RS"),
        ("ltp", "type", 8),  # the type_code companion
        ("ltp", "kind", "red_data"),
        ("ltp", "offset", 0),
        ("ltp", "offset", 2**64 - 1),
        ("ltp", "eob", False),
        ("cfdp", "directive", "eof"),
        ("cfdp", "directive", 4),
        ("cfdp", "condition", "reserved_12"),
        ("norm", "flavor", "squelch"),
        ("saratoga", "descriptor", 64),
        ("saratoga", "status", 0x12),
    ],
)
def test_validate_match_accepts(protocol: str, key: str, value: object) -> None:
    classifiers.validate_match(protocol, key, value)


@pytest.mark.parametrize(
    ("protocol", "key", "value", "reason"),
    [
        ("ltp", "offset", True, "not a flag (true)"),  # bools are not ints
        ("ltp", "session_number", False, "not a flag (false)"),
        ("ltp", "type_code", True, "not a flag"),
        ("ltp", "offset", 2**64, "never occurs"),
        ("ltp", "kind", 0, "is a name"),
        ("ltp", "checkpoint", "yes", "is a flag"),
        ("cfdp", "directive", 3, "directive_code is one of 4, 5, 6, 7, 8, 9, 12"),
        ("cfdp", "condition", 1, "is a name"),  # no condition_code companion
        ("norm", "type", 2, "is a name"),
        ("norm", "version", 2, "version is one of 1"),
        ("saratoga", "descriptor", 8, "one of 16, 32, 64, 128"),
        ("ltp", "nonsense", 1, "unknown LTP field"),
    ],
)
def test_validate_match_rejects(protocol: str, key: str, value: object, reason: str) -> None:
    with pytest.raises(ValueError, match=re.escape(reason)):
        classifiers.validate_match(protocol, key, value)


def test_every_field_has_a_value_type() -> None:
    for proto in classifiers.protocols():
        fields = set(classifiers.vocabulary(proto))
        values = {k for k in fields if classifiers.value_spec(proto, k) is not None}
        assert values == fields, (proto, fields - values)
        for key in fields:
            spec = classifiers.value_spec(proto, key)
            if isinstance(spec, dict) and "code" in spec:
                assert spec["code"] == f"{key}_code" and spec["code"] in fields, (proto, key)


def _rust_samples(path: Path) -> list[bytes]:
    """The hex test vectors of a classifier's Rust source: ``pub const``
    strings (``concat!`` pieces joined) and ``("name", "hex")`` table rows."""
    text = path.read_text()
    out = []
    for m in re.finditer(r"pub const \w+: &str =\s*(concat!\((.*?)\)|\"[0-9a-f]*\");", text, re.S):
        out.append("".join(re.findall(r'"([0-9a-f]*)"', m.group(1))))
    out += re.findall(r'^\s*\("\w+", "([0-9a-f]+)"\),\s*$', text, re.MULTILINE)
    return [bytes.fromhex(h) for h in out if h and len(h) % 2 == 0]


@pytest.mark.skipif(not EMU.exists(), reason="dtnc-emu is not built")
@pytest.mark.parametrize("protocol", ["ltp", "cfdp", "norm", "saratoga"])
def test_classifier_output_passes_validate_match(protocol: str) -> None:
    """The value types in the wire.json files admit every value the Rust
    classifier really produces on its own test vectors."""
    from conformance.channel import control as emulator

    samples = _rust_samples(CLASSIFY_SRC / f"{protocol}.rs")
    classified = [f for f in emulator.classify(protocol, samples) if f]
    assert len(classified) >= 5, f"too few {protocol} samples classified"
    for fields in classified:
        for key, value in fields.items():
            classifiers.validate_match(protocol, key, value)


# ---------------------------------------------------------------------------
# 2. A directory as the scenario; other unreadable scenario files
# ---------------------------------------------------------------------------


def test_directory_as_scenario(tmp_path: Path) -> None:
    one_line_error(cli("run", str(tmp_path), "--sut", "licklider"), str(tmp_path), "is a directory")


def test_missing_and_binary_scenario(tmp_path: Path) -> None:
    one_line_error(cli("run", str(tmp_path / "nope.json"), "--sut", "licklider"), "no such")
    blob = tmp_path / "blob.json"
    blob.write_bytes(b"\xff\xfe\x00garbage")
    one_line_error(cli("run", str(blob), "--sut", "licklider"), str(blob))


def test_an_option_the_sut_does_not_offer_is_refused(tmp_path: Path) -> None:
    one_line_error(
        cli("run", str(SCENARIO), "--sut", "licklider", "--sut-option", "speed=fast"),
        "--sut-option speed",
        "report-upper-bound",
    )
    one_line_error(
        cli("run", str(SCENARIO), "--sut", "licklider", "--sut-option", "report-upper-bound"),
        "NAME=VALUE",
    )


def test_certify_resume_needs_a_certification_made_before(tmp_path: Path) -> None:
    one_line_error(
        cli("certify", "ltp", "--resume", str(tmp_path / "none")),
        "--resume: not a certification directory (no scenarios/)",
    )
    (tmp_path / "cert" / "scenarios").mkdir(parents=True)
    # a generation that finished, without the catalogue (one cut short is
    # generated again: test_untrusted_input)
    (tmp_path / "cert" / "scenarios" / ".generated").write_text("{}")
    one_line_error(
        cli("certify", "ltp", "--resume", str(tmp_path / "cert"), "--catalogue"),
        "its scenarios have no catalogue",
    )


def test_what_the_tester_cannot_play_is_refused_before_any_run(tmp_path: Path) -> None:
    data = json.loads(SCENARIO.read_text())
    data["impairments"] = []
    data["probes"] = [{"kind": "truncated-report"}]
    path = tmp_path / "probes.json"
    path.write_text(json.dumps(data))
    one_line_error(cli("run", str(path), "--sut", "licklider"), "probes:", "--tester")
    one_line_error(
        cli("run", str(path), "--sut", "licklider", "--tester", "sender"),
        "probes[0].kind: truncated-report is sent by the tester's receiver",
    )
    one_line_error(
        cli("certify", "ltp", "--sut-roles", "both,tester", "--out", str(tmp_path / "c")),
        "--sut-roles: tester",
    )
    # a miscolored sender (RFC 5326 §6.21 fault injection) is the tester's alone
    data = json.loads(SCENARIO.read_text())
    data["params"] = {**data.get("params", data.get("ltp", {})), "miscolored_sender": True}
    data.pop("ltp", None)
    path.write_text(json.dumps(data))
    one_line_error(
        cli("run", str(path), "--sut", "licklider"), "miscolored_sender", "--tester sender"
    )
    one_line_error(
        cli("run", str(path), "--sut", "licklider", "--tester", "receiver"),
        "params.miscolored_sender: only the tester's sender",
    )


@pytest.mark.parametrize(
    ("argv", "protocol", "capability"),
    [
        (["search", "cfdp", "--sut", "cfdp-py"], "cfdp", "search_space"),
        (["retx-table", "cfdp", "--sut", "cfdp-py"], "cfdp", "retx_table"),
    ],
)
def test_a_capability_the_protocol_lacks_is_named_with_its_reason(
    tmp_path: Path, argv: list[str], protocol: str, capability: str
) -> None:
    """Before any folder, root check or run: the protocol's own reason."""
    from conformance import protocols

    why = protocols.get(protocol).capabilities.missing[capability]
    out = tmp_path / "out"
    one_line_error(
        cli(*argv, "--out", str(out)), f"{protocol}: no {capability.replace('_', ' ')}: {why}"
    )
    assert not out.exists()


@pytest.mark.parametrize("command", ["search", "retx-table"])
def test_a_sut_of_another_protocol_is_refused(tmp_path: Path, command: str) -> None:
    out = tmp_path / "out"
    one_line_error(
        cli(command, "ltp", "--sut", "cfdp-py", "--out", str(out)),
        "--sut cfdp-py: it plays cfdp, not ltp",
    )
    assert not out.exists()


# ---------------------------------------------------------------------------
# 3. --out is a file, or a non-empty directory
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["generate", "ltp"],
        ["certify", "ltp"],
        ["run", str(SCENARIO), "--sut", "licklider"],
    ],
)
def test_out_is_a_file(tmp_path: Path, argv: list[str]) -> None:
    target = tmp_path / "a-file"
    target.write_text("keep me\n")
    for force in ([], ["--force"]):
        proc = cli(*argv, "--out", str(target), *force)
        one_line_error(proc, str(target), "--out", "is a file, not a directory")
    assert target.read_text() == "keep me\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["generate", "ltp"],
        ["certify", "ltp"],
        ["run", str(SCENARIO), "--sut", "licklider"],
    ],
)
def test_out_not_empty_needs_force(tmp_path: Path, argv: list[str]) -> None:
    (tmp_path / "old.txt").write_text("old\n")
    proc = cli(*argv, "--out", str(tmp_path))
    one_line_error(proc, str(tmp_path), "not empty", "--force")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.txt"]
    assert namespaces_of(proc.pid) == []


@needs_root
def test_run_force_passes_the_out_check(tmp_path: Path) -> None:
    """With --force a non-empty --out is accepted: the run gets as far as
    the next check (here a missing channel emulator), before any namespace."""
    (tmp_path / "old.txt").write_text("old\n")
    proc = cli(
        "run", str(SCENARIO), "--sut", "licklider", "--out", str(tmp_path), "--force",
        env={"DTNC_EMU": str(tmp_path / "no-dtnc-emu")},
    )  # fmt: skip
    if "not found" in proc.stderr and "dtnc-emu" not in proc.stderr:
        pytest.skip(f"a run tool is missing: {proc.stderr.strip()}")
    one_line_error(proc, "no-dtnc-emu", "dtnc-emu not found")


# ---------------------------------------------------------------------------
# 4. An output directory that cannot be created (as root too)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["generate", "ltp"],
        ["certify", "ltp"],
        ["run", str(SCENARIO), "--sut", "licklider"],
        ["schema"],
    ],
)
def test_out_under_a_regular_file(tmp_path: Path, argv: list[str]) -> None:
    """A parent that is a regular file stops root as well as anyone."""
    blocker = tmp_path / "runs"
    blocker.write_text("not a directory\n")
    out = blocker / "sub" / "dir"
    proc = cli(*argv, "--out", str(out))
    one_line_error(proc, str(out), "--out", "cannot create it", f"{blocker} is a file")


def test_out_under_proc(tmp_path: Path) -> None:
    """/proc refuses new directories even to root: mkdir's own error."""
    out = Path("/proc") / f"dtnconform-test-{os.getpid()}"
    one_line_error(cli("generate", "ltp", "--out", str(out)), str(out), "cannot create it")
    assert not out.exists()


@pytest.mark.skipif(IS_ROOT, reason="root writes through permission bits")
def test_out_in_read_only_directory(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    one_line_error(cli("generate", "ltp", "--out", str(ro / "x")), "not writable")


# ---------------------------------------------------------------------------
# 5. stdout closed early: status 141, no traceback
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["schema"],
        ["profiles"],
        ["--version"],
        ["--help"],
        ["dissect", str(LICKLIDER_PCAP), "--proto", "ltp"],
    ],
)
def test_closed_stdout(argv: list[str]) -> None:
    if argv[0] == "validate" and shutil.which("tshark") is None:
        pytest.skip("tshark not installed")
    r, w = os.pipe()
    os.close(r)  # nobody will read: the first write fails with EPIPE
    try:
        proc = subprocess.run(
            [*CLI, *argv], stdout=w, stderr=subprocess.PIPE, text=True, timeout=120, cwd=ROOT
        )
    finally:
        os.close(w)
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
    assert proc.returncode == 141, (proc.returncode, proc.stderr)


def test_schema_head_one() -> None:
    proc = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {' '.join(CLI)} schema | head -1"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert proc.stdout == "{\n"
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
    assert proc.returncode in (0, 141)  # 0 when the whole schema fit in the pipe


# ---------------------------------------------------------------------------
# 6. A truncated capture: decode what is there, say where it ends
# ---------------------------------------------------------------------------


def _pcap_records(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of every record of a little-endian classic pcap."""
    assert data[:4] == b"\xd4\xc3\xb2\xa1"
    out, pos = [], 24
    while pos < len(data):
        (incl,) = struct.unpack_from("<I", data, pos + 8)
        out.append((pos, pos + 16 + incl))
        pos += 16 + incl
    return out


@needs_tshark
def test_truncated_capture(tmp_path: Path) -> None:
    data = LICKLIDER_PCAP.read_bytes()
    records = _pcap_records(data)
    n = len(records)  # cut the capture inside its last frame
    assert n >= 4, "the capture is too short for this test"
    start, end = records[n - 1]
    cut = start + (end - start) // 2
    pcap = tmp_path / "cut.pcap"
    pcap.write_bytes(data[:cut])
    proc = cli("dissect", str(pcap), "--proto", "ltp", "--all")
    line = one_line_error(
        proc, str(pcap), f"capture ends inside frame {n} at byte {cut} (truncated",
        f"frame {n} starts at byte {start}", f"{n - 1} frames decoded",
    )  # fmt: skip
    assert "LTP segments" in line
    # what came before the cut is listed: the LTP frames among the whole ones
    whole = decode(LICKLIDER_PCAP, protocol="ltp")
    before = [f.number for f in whole if f.number < n]
    assert before, "the capture has LTP segments before its last frame"
    for k in before:
        assert re.search(rf"^\S*\s*{k}\s", proc.stdout, re.MULTILINE), (k, proc.stdout)
    # the library: decode() raises with the frames, decode_capture() returns them
    with pytest.raises(CaptureTruncated) as exc:
        decode(pcap, protocol="ltp")
    assert [f.number for f in exc.value.decoded.frames] == before
    result = decode_capture(pcap, protocol="ltp")
    assert [f.number for f in result.frames] == before
    assert result.truncation is not None and result.truncation.frames == n - 1


@needs_tshark
@pytest.mark.parametrize(
    ("cut", "where"), [(10, "inside its file header at byte 10"), (30, "inside frame 1 at byte 30")]
)
def test_truncated_before_any_frame(tmp_path: Path, cut: int, where: str) -> None:
    pcap = tmp_path / "cut.pcap"
    pcap.write_bytes(LICKLIDER_PCAP.read_bytes()[:cut])
    one_line_error(cli("dissect", str(pcap), "--proto", "ltp"), where, "0 frames decoded")


@needs_tshark
@pytest.mark.skipif(shutil.which("editcap") is None, reason="editcap not installed")
def test_truncated_pcapng(tmp_path: Path) -> None:
    full = tmp_path / "full.pcapng"
    subprocess.run(["editcap", "-F", "pcapng", str(LICKLIDER_PCAP), str(full)], check=True)
    data = full.read_bytes()
    pcap = tmp_path / "cut.pcapng"
    pcap.write_bytes(data[: len(data) - 10])  # inside the last block
    end = capture_end(pcap)
    assert end.truncated and end.frames == len(_pcap_records(LICKLIDER_PCAP.read_bytes())) - 1
    one_line_error(
        cli("dissect", str(pcap), "--proto", "ltp"),
        f"capture ends inside frame {end.frames + 1} at byte {len(data) - 10}",
    )
    assert not capture_end(full).truncated


@needs_tshark
def test_not_a_capture(tmp_path: Path) -> None:
    text = tmp_path / "notes.pcap"
    text.write_text("hello\n" * 50)
    one_line_error(cli("dissect", str(text), "--proto", "ltp"), str(text), "not a capture file")
    one_line_error(cli("dissect", str(tmp_path), "--proto", "ltp"), "is a directory")


# ---------------------------------------------------------------------------
# 7. Tools checked before any namespace
# ---------------------------------------------------------------------------


def _path_without_tshark(tmp_path: Path) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("ip", "tcpdump"):
        found = shutil.which(tool)
        if found is None:
            pytest.skip(f"{tool} not installed")
        (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


@pytest.mark.parametrize("command", ["run", "certify"])
def test_missing_tshark_before_namespaces(tmp_path: Path, command: str) -> None:
    out = tmp_path / "out"
    argv = ["run", str(SCENARIO), "--sut", "licklider"] if command == "run" else ["certify", "ltp"]
    proc = cli(*argv, "--out", str(out), env={"PATH": _path_without_tshark(tmp_path)})
    one_line_error(proc, "tshark not found")
    assert not out.exists(), "nothing is created before the checks pass"
    assert namespaces_of(proc.pid) == []


@needs_root
@pytest.mark.parametrize("command", ["run", "certify"])
def test_missing_emulator_before_namespaces(tmp_path: Path, command: str) -> None:
    out = tmp_path / "out"
    argv = ["run", str(SCENARIO), "--sut", "licklider"] if command == "run" else ["certify", "ltp"]
    proc = cli(*argv, "--out", str(out), env={"DTNC_EMU": str(tmp_path / "gone" / "dtnc-emu")})
    if "not found" in proc.stderr and "dtnc-emu" not in proc.stderr:
        pytest.skip(f"a run tool is missing: {proc.stderr.strip()}")
    one_line_error(proc, "dtnc-emu not found", "DTNC_EMU")
    assert not out.exists()
    assert namespaces_of(proc.pid) == []


# ---------------------------------------------------------------------------
# 8. Ctrl-C: 130
# ---------------------------------------------------------------------------


def _interrupt(proc: subprocess.Popen[str]) -> tuple[str, str]:
    proc.send_signal(signal.SIGINT)
    return proc.communicate(timeout=120)


def _tlc_of(out: Path) -> str:
    """The TLC processes that work under ``out``: their command lines, '' if
    none (the CLI's own command line names ``out`` too, so TLC's class)."""
    found = subprocess.run(["pgrep", "-af", str(out)], capture_output=True, text=True).stdout
    return "\n".join(ln for ln in found.splitlines() if "tlc2.TLC" in ln)


@contextlib.contextmanager
def _deep_check(out: Path) -> Iterator[subprocess.Popen[str]]:
    """``dtnconform check ltp --bound deep --out OUT``, yielded once its TLC
    runs (a signal that lands while Python is still starting up tests
    nothing); whatever the test does, nothing of it outlives the test."""
    proc = subprocess.Popen(
        [*CLI, "check", "ltp", "--bound", "deep", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not _tlc_of(out) and proc.poll() is None:
            assert time.monotonic() < deadline, "TLC never started"
            time.sleep(0.2)
        time.sleep(1)  # TLC under way: the CLI is in its run loop
        assert proc.poll() is None, proc.communicate()
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        subprocess.run(["pkill", "-f", str(out)], check=False)


@pytest.mark.skipif(not (ROOT / ".tools").is_dir(), reason="TLC is not set up (make setup)")
def test_ctrl_c_during_check(tmp_path: Path) -> None:
    out = tmp_path / "deep"
    with _deep_check(out) as proc:
        _out, err = _interrupt(proc)
        assert proc.returncode == 130, (proc.returncode, err)
        assert "Traceback" not in err and "interrupted" in err
        assert not _tlc_of(out), f"TLC still running: {_tlc_of(out)}"


@pytest.mark.skipif(not (ROOT / ".tools").is_dir(), reason="TLC is not set up (make setup)")
def test_sigterm_during_check_stops_tlc_too(tmp_path: Path) -> None:
    """``timeout`` or a CI job's end sends SIGTERM: dtnconform unwinds as for
    Ctrl-C (exit 143) and TLC's JVM, in a session of its own, goes too."""
    out = tmp_path / "deep"
    with _deep_check(out) as proc:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 143, (proc.returncode, err)
        assert "Traceback" not in err and "terminated" in err
        assert not _tlc_of(out), f"TLC still running: {_tlc_of(out)}"


CERTIFY_DRIVER = """
import shutil, sys, time
from collections.abc import Iterator
from pathlib import Path

from conformance import cli, runner

scenario, marker, teardown = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])


def generate(protocol, out, **_kw):  # one ready scenario instead of minutes of TLC
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(scenario, out / scenario.name)


def slow_run(scn, sut, run_dir, *, step=None, tester=None, receiver_sut=None):  # waits for Ctrl-C
    run_dir.mkdir(parents=True, exist_ok=True)
    marker.write_text("running")
    try:
        time.sleep(120)
    except Exception:  # Robot's ExecutionFailed: the first Ctrl-C
        marker.write_text("stopping")
        time.sleep(teardown)  # a slow teardown, where a second Ctrl-C may land
        raise
    raise AssertionError("not interrupted")


cli._generate = generate
runner.run_scenario = slow_run  # the Robot library imports it when the suite starts
sys.exit(cli.main(sys.argv[4:]))
"""


@needs_root
@pytest.mark.skipif(not (EMU.exists() and HARNESS.exists()), reason="binaries not built")
@pytest.mark.parametrize("signals", [1, 2])
def test_ctrl_c_during_certify(tmp_path: Path, signals: int) -> None:
    """Robot Framework takes SIGINT itself and stops the suite instead of
    raising KeyboardInterrupt (a second Ctrl-C, here during a slow teardown,
    stops it forcefully): certify still reports what ran and ends with 130."""
    driver = tmp_path / "driver.py"
    driver.write_text(CERTIFY_DRIVER)
    marker = tmp_path / "running"
    out = tmp_path / "cert"
    teardown = "0" if signals == 1 else "60"
    proc = subprocess.Popen(
        [sys.executable, str(driver), str(SCENARIO), str(marker), teardown,
         "certify", "ltp", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip

    def wait_for(state: str) -> None:
        deadline = time.monotonic() + 60
        while not (marker.exists() and marker.read_text() == state):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"certify never got to {state!r}: {proc.communicate()}")
            time.sleep(0.05)

    wait_for("running")
    proc.send_signal(signal.SIGINT)
    if signals == 2:  # the second while Robot still runs: it raises SystemExit
        wait_for("stopping")
        proc.send_signal(signal.SIGINT)
    out_text, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (proc.returncode, err, out_text[-2000:])
    assert "Traceback" not in err + out_text
    # Robot stops the suite (twice: "forcefully") and returns; what ran is reported
    assert f"interrupted; partial certification in {out}" in " ".join(err.split())
    assert "HTML report" in out_text


# ---------------------------------------------------------------------------
# 9. --version
# ---------------------------------------------------------------------------


def test_version() -> None:
    proc = cli("--version")
    assert proc.returncode == 0 and proc.stderr == ""
    want = importlib.metadata.version("dtnconform")
    m = re.fullmatch(
        r"dtnconform (\S+) \(([0-9a-f]{7,40}(\+dirty)?|unknown commit)\)\n", proc.stdout
    )
    assert m, proc.stdout
    assert m.group(1) == want
    # the package's version is the project's (pyproject.toml), and the
    # changelog records it
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert want == project, "reinstall: pip install -e . (make venv)"
    assert f"## {project} " in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


# ---------------------------------------------------------------------------
# 10. validate --port: several ports and ranges; skipped UDP traffic
# ---------------------------------------------------------------------------


def test_port_helpers() -> None:
    assert port_list(1113) == [1113]
    assert port_list([5002, 5000, 5001, 1113, 1113]) == [1113, 5000, 5001, 5002]
    assert port_list(None) is None
    assert port_ranges([1113, 4556, *range(5000, 5011)]) == "1113,4556,5000-5010"
    with pytest.raises(ValueError):
        port_list([True])
    with pytest.raises(ValueError):
        port_list([0])


@needs_tshark
def test_validate_several_ports() -> None:
    proc = cli("dissect", str(LICKLIDER_PCAP), "--proto", "ltp", "--port", "4556,5000-5010",
               "--port", "1113", "--all")  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr
    n = len(decode(LICKLIDER_PCAP, protocol="ltp"))
    assert f"{n} LTP segments on UDP 1113,4556,5000-5010" in " ".join(proc.stdout.split())
    assert "skipped" not in proc.stdout  # only LTP uses UDP in this capture
    # the library takes an int (segments.py) or any iterable of ports
    assert [f.number for f in decode(LICKLIDER_PCAP, protocol="ltp", port=1113)] == [
        f.number for f in decode(LICKLIDER_PCAP, protocol="ltp", port=range(1110, 1120))
    ]
    assert decode(LICKLIDER_PCAP, protocol="ltp", port=[4556, 5000]) == []


@needs_tshark
def test_validate_reports_skipped_udp(tmp_path: Path) -> None:
    proc = cli("dissect", str(NORM_PCAP), "--proto", "ltp")
    assert proc.returncode == 0, proc.stderr
    assert "skipped: 12 UDP datagrams on other ports (6003: 12)" in proc.stdout
    merged = tmp_path / "merged.pcap"
    if shutil.which("mergecap"):
        subprocess.run(
            ["mergecap", "-F", "pcap", "-w", str(merged), str(LICKLIDER_PCAP), str(NORM_PCAP)],
            check=True,
        )
        result = decode_capture(merged, protocol="ltp")
        assert len(result.frames) == len(decode(LICKLIDER_PCAP, protocol="ltp"))
        assert dict(result.skipped_udp) == {6003: 12}
        assert decode_capture(merged, protocol="ltp", port=[1113, 6003]).skipped_udp == {}


@pytest.mark.parametrize(
    ("spec", "reason"),
    [("70000", "UDP ports are 1-65535"), ("5010-5000", "runs backwards"), ("ltp", "not a port"),
     ("1113,,4556", "not a port"), ("0", "1-65535")],
)  # fmt: skip
def test_bad_port_spec(spec: str, reason: str) -> None:
    proc = cli("dissect", str(LICKLIDER_PCAP), "--proto", "ltp", "--port", spec)
    one_line_error(proc, "--port", reason)


def test_default_run_folders_never_collide(tmp_path: Path) -> None:
    """Two runs of one scenario started within the same second get two folders."""
    from conformance.cli import _run_dir

    first = _run_dir(tmp_path, "ltp-nominal")
    first.mkdir()
    (first / "verdict.json").write_text("{}")
    second = _run_dir(tmp_path, "ltp-nominal")
    assert second != first and not second.exists()


# ---------------------------------------------------------------------------
# renamed verbs: the old names work for one more release, and say so
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("old", "new"), [("validate", "dissect"), ("trace", "validate-trace")])
def test_renamed_verbs_still_work_and_say_their_new_name(old: str, new: str) -> None:
    top = cli("--help")
    assert new in top.stdout and f"{{{old}," not in top.stdout and f",{old}," not in top.stdout
    if old == "validate":
        before, after = (
            cli(old, str(LICKLIDER_PCAP), "--proto", "ltp"),
            cli(new, str(LICKLIDER_PCAP), "--proto", "ltp"),
        )
        assert before.returncode == after.returncode and before.stdout == after.stdout
    else:
        before, after = cli(old, "/nonexistent-run"), cli(new, "/nonexistent-run")
        assert before.returncode == after.returncode == 2
    notice = [ln for ln in before.stderr.splitlines() if "deprecated" in ln]
    assert len(notice) == 1 and f"it is now {new}" in notice[0], before.stderr
    assert "deprecated" not in after.stderr


def test_mutate_refuses_an_empty_catalogue_draw_and_an_unmutatable_sut(tmp_path: Path) -> None:
    """`mutate --catalogue 0` and an implementation with no [mutate] (Yamcs,
    a Java engine) are refused in one line, before any tool runs."""
    one_line_error(
        cli("mutate", "cfdp", "--sut", "librecube", "--catalogue", "0", "--out", str(tmp_path)),
        "--catalogue 0",
    )
    one_line_error(
        cli("mutate", "cfdp", "--sut", "yamcs", "--out", str(tmp_path / "y")), "yamcs", "[mutate]"
    )
    one_line_error(
        cli("mutate", "cfdp", "--sut", "cfdp-rs", "--added-only", "--out", str(tmp_path / "a")),
        "--added-only",
        "--add",
    )
