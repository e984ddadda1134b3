"""Bad input, missing privileges and the profiles, end to end through the
CLI and the emulator binary (no namespaces needed except where marked)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conformance import emulator, profiles
from conformance.types import Channel

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
    cfg["forward"]["link"]["reorder"]["max_displacement"] = 0  # type: ignore[index]
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
