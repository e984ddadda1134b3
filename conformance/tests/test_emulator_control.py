"""Bad input, missing privileges and the profiles, end to end through the
CLI and the emulator binary (no namespaces needed except where marked)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conformance import netns
from conformance.channel import control as emulator
from conformance.channel import profiles
from conformance.core.types import Channel, ChannelRecord, Impairment

DTNC = [sys.executable, "-m", "conformance.cli"]


def _scenario(tmp: Path, channel: dict[str, object]) -> Path:
    scn = {
        "schema": "dtnconform/scenario/1",
        "name": "bad-channel",
        "protocol": "ltp",
        "ltp": {"segment_size": 100, "red_segments": 1, "green_segments": 0},
        "channel": channel,
        "expect": {"red_bytes_delivered": 100, "green_bytes_delivered": 0,
                   "sender_outcome": "completed", "receiver_outcome": "completed"},
    }  # fmt: skip
    path = tmp / "scn.json"
    path.write_text(json.dumps(scn))
    return path


@pytest.mark.parametrize(
    ("channel", "field"),
    [
        ({"forward": {"link": {"loss": 1.5}}}, "channel.forward.link.loss"),
        ({"return": {"link": {"rate": 5}}}, "channel.return.link.rate"),
        ({"forward": {"outages": [{"start": 1, "duration": 0}]}},
         "channel.forward.outages.0.duration"),
        ({"forward": {"timeline": [{"t": 5, "set": {}}, {"t": 1, "set": {}}]}},
         "channel.forward"),
        ({"profile": "grc-1mbps-250ms"}, "channel.profile"),
        ({"time_scale": 0}, "channel.time_scale"),
    ],
)  # fmt: skip
def test_bad_channel_exits_2_naming_the_field(tmp_path: Path, channel: dict, field: str) -> None:
    path = _scenario(tmp_path, channel)
    out = subprocess.run([*DTNC, "run", str(path), "--sut", "licklider"],
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert field in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, "one plain line"


def test_unknown_profile_suggests_close_names(tmp_path: Path) -> None:
    path = _scenario(tmp_path, {"profile": "grc-1mbps-250ms-pe1e3"})
    out = subprocess.run([*DTNC, "run", str(path), "--sut", "licklider"],
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 2
    assert "grc-1mbps-250ms-pe1e-3" in out.stderr


def _emu_check(tmp: Path, cfg: dict[str, object]) -> subprocess.CompletedProcess[str]:
    path = tmp / "cfg.json"
    path.write_text(json.dumps(cfg))
    exe = str(emulator.binary())
    return subprocess.run([exe, "check", "--config", str(path)], capture_output=True, text=True)


def test_every_profile_is_accepted_by_the_emulator(tmp_path: Path) -> None:
    """The Python types and the Rust config agree on every profile (the
    emulator re-validates with its own parser)."""
    names = profiles.names()
    assert len(names) >= 50
    for fam in ("grc-", "nmsu-sgls-", "lamar-cislunar-", "acts-", "leo-pass", "earth-mars-"):
        assert any(n.startswith(fam) for n in names), fam
    for name in names:
        cfg = emulator.config(Channel(profile=name), if_a="am", if_b="bm", protocol="ltp",
                              port=1113)  # fmt: skip
        out = _emu_check(tmp_path, cfg)
        assert out.returncode == 0, (name, out.stderr)


def test_grc_matrix_is_complete() -> None:
    grc = [profiles.load(n) for n in profiles.names() if n.startswith("grc-")]
    combos = {(p.forward.link.rate_bps, p.forward.link.delay_ms, p.forward.link.packet_error)
              for p in grc}  # fmt: skip
    assert len(combos) == 2 * 3 * 6
    assert {c[0] for c in combos} == {1e6, 1e7}
    assert {c[1] for c in combos} == {25, 250, 1250}


def test_emulator_rejects_bad_config_naming_the_field(tmp_path: Path) -> None:
    cfg = emulator.config(Channel(), if_a="am", if_b="bm", protocol="ltp", port=1113)
    cfg["rules"] = [{"direction": "return", "protocol": "ltp", "match": {"segment": "RS"},
                     "action": "drop"}]  # fmt: skip
    out = _emu_check(tmp_path, cfg)
    assert out.returncode == 2
    assert "rules[0].match.segment: unknown ltp field" in out.stderr
    cfg["rules"] = []
    cfg["forward"]["link"]["reorder"]["max_displacement"] = 0
    out = _emu_check(tmp_path, cfg)
    assert out.returncode == 2 and "forward.link.reorder.max_displacement" in out.stderr


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root to drop to an unprivileged user")  # fmt: skip
def test_emulator_not_root_says_so(tmp_path: Path) -> None:
    cfg = emulator.config(Channel(), if_a="lo", if_b="lo2", protocol=None, port=None)
    # a directory the unprivileged user can read (pytest's tmp_path is not)
    shared = Path(tempfile.mkdtemp(prefix="dtnc-notroot-"))
    shared.chmod(0o755)
    path = shared / "cfg.json"
    path.write_text(json.dumps(cfg))
    path.chmod(0o644)
    exe = str(emulator.binary())
    out = subprocess.run(
        ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", exe, "run",
         "--config", str(path), "--no-log"],
        capture_output=True, text=True, timeout=10,
    )  # fmt: skip
    shutil.rmtree(shared)
    assert out.returncode == 2, out.stderr
    assert "run dtnc-emu as root" in out.stderr


def test_channel_record_declares_every_key_the_emulator_writes() -> None:
    """ChannelRecord (Python) and the decision log's writer (Rust, whose own
    test checks that the keys it writes are its KEYS) list the same keys in
    the same order."""
    src = (emulator.CRATE / "core" / "src" / "log.rs").read_text()
    m = re.search(r"pub const KEYS: \[&str; \d+\] = \[(.*?)\];", src, re.S)
    assert m, "KEYS not found in log.rs"
    assert re.findall(r'"(\w+)"', m.group(1)) == list(ChannelRecord.model_fields)


# An LTP report-acknowledgment segment (RFC 5326 §3.2.3): control byte 0x09,
# session originator 1, session number 77, no extensions, report serial 3.
RA_HEX = "09014d0003"


@pytest.mark.netns
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
def test_real_log_lines_validate_as_channel_records(tmp_path: Path) -> None:
    """Every line a real dtnc-emu run writes validates as a ChannelRecord,
    and the run exercises most of the optional keys."""
    ch = Channel.model_validate({
        "forward": {"link": {"delay_ms": 1, "loss": 0.02, "ber": 1e-4, "checksum": "recompute",
                             "duplicate": 0.05, "reorder": {"probability": 0.05}}},
        "seed": 4,
    })  # fmt: skip
    rule = Impairment.model_validate({"direction": "forward", "match": {"type": "RA"},
                                      "occurrence": 2})  # fmt: skip
    with netns.topology(static_arp=True) as topo:
        cfg = emulator.config(ch, if_a=topo.if_ma, if_b=topo.if_mb, protocol="ltp", port=1113,
                              impairments=[rule])  # fmt: skip
        run = emulator.start(topo, cfg, tmp_path)
        code = (
            "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            f"for _ in range(3): s.sendto(bytes.fromhex({RA_HEX!r}), ({topo.ip_b!r}, 1113))"
        )
        subprocess.run(["ip", "netns", "exec", topo.ns_a, sys.executable, "-c", code], check=True)
        emulator.traffic(topo, pps=2000, count=2000, size=300)
        run.stop()
    lines = (tmp_path / "channel.jsonl").read_text().splitlines()
    records = [ChannelRecord.model_validate_json(line) for line in lines]
    assert records == emulator.read_log(tmp_path / "channel.jsonl")
    seen = set().union(*(json.loads(line).keys() for line in lines))
    assert seen <= set(ChannelRecord.model_fields)
    expected = set(ChannelRecord.model_fields) - {"extra_delay_ns", "replayed", "mismatch"}
    assert seen == expected, sorted(expected - seen)
    ras = [r for r in records if r.proto == "ltp"]
    assert [(r.seg, r.fields["type"], r.decision, r.rule) for r in ras] == [
        (1, "RA", ras[0].decision, None),
        (2, "RA", "drop", 0),
        (3, "RA", ras[2].decision, None),
    ]
    assert ras[1].cause == "rule" and ras[1].release_ns is None
