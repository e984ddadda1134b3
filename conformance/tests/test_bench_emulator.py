"""`dtnconform bench emulator --quick`, end to end as root: the last line is
one JSON object with every figure, and what must hold even on a noisy
machine holds. The performance targets themselves are the bench's to report,
not this test's to assert (short trials on a shared machine).

Nothing here bounds a wall-clock figure: how closely a delay or a rate was
kept (the measured error) depends on how promptly a loaded machine lets the
emulator run (a 1 Mb/s rate measured 28.5 % short, load average 5-12), and
is the bench's figure. What is asserted holds at any load: a datagram is
never early, nothing but the emulator's seeded draws loses one, and the
channel's own schedule (its decision log) holds each frame exactly its delay
and serializes back-to-back frames at exactly the rate."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

pytestmark = pytest.mark.netns

DELAYS = ("0ms", "250ms", "1250ms")
RATES = ("1mbps", "10mbps", "100mbps", "1000mbps")
SETUPS = ("bridge", "emulator_log", "emulator_nolog")


def _run_quick() -> tuple[str, dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "bench", "emulator", "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    lines = proc.stdout.strip().splitlines()
    figures = json.loads(lines[-1])
    assert isinstance(figures, dict)
    return proc.stdout, figures


@pytest.fixture(scope="module")
def quick() -> tuple[str, dict[str, Any]]:
    return _run_quick()


def test_last_line_carries_every_figure_and_a_boolean_per_target(
    quick: tuple[str, dict[str, Any]],
) -> None:
    text, f = quick
    assert f["bench"] == "emulator" and f["quick"] is True
    keys = {"logging_cost", "lossless_ratio_log_over_bridge", "lossless_ratio_nolog_over_bridge"}
    keys |= {f"lossless_{x}_{s}" for x in ("pps", "limit") for s in SETUPS}
    keys |= {f"delay_{d}_err_{x}_us" for d in DELAYS for x in ("mean", "p99", "min", "max")}
    keys |= {f"rate_{r}_{x}" for r in RATES for x in ("rel_err", "measured", "offered_bps")}
    keys |= {f"rate_{r}_scheduled_{x}" for r in RATES for x in ("bps", "rel_err", "frames")}
    keys |= {f"delay_{d}_scheduled_err_max_ns" for d in DELAYS}
    keys |= {f"loss_{p}_{x}" for p in ("1pct", "5pct") for x in ("measured", "z", "n")}
    keys |= {"ber_1e-5_measured", "ber_1e-5_z", "ber_1e-5_bits"}
    targets = {
        "target_lossless_log_ge_bridge",
        "target_lossless_nolog_ge_bridge",
        "target_logging_cost_le_10pct",
        "target_loss_1pct_z_le_4",
        "target_loss_5pct_z_le_4",
        "target_ber_1e-5_z_le_4",
    }
    for d in DELAYS[1:]:
        targets |= {f"target_delay_{d}_{t}" for t in ("mean_le_150us", "p99_le_250us")}
        targets.add(f"target_delay_{d}_never_early")
    targets |= {f"target_rate_{r}_within_1pct" for r in RATES}
    assert keys | targets <= set(f), sorted((keys | targets) - set(f))
    for t in targets:
        # a boolean, or null for a rate the sender could not saturate
        assert f[t] in (True, False) or (f[t] is None and t.startswith("target_rate_")), (t, f[t])
    assert isinstance(f["targets_met"], bool)
    # progress lines came before the JSON: one per trial of each part
    assert "kernel bridge" in text and "dtnc-emu log" in text and "1250 ms" in text


def test_invariants_that_hold_on_a_noisy_machine(quick: tuple[str, dict[str, Any]]) -> None:
    _, f = quick
    for s in SETUPS:
        assert f[f"lossless_pps_{s}"] > 0, s
    for d in DELAYS:
        assert f[f"delay_{d}_err_min_us"] >= 0, f"{d}: a datagram left before its delay"
        assert f[f"delay_{d}_lost"] == 0, d
        assert f[f"delay_{d}_count"] > 0 and f[f"delay_{d}_untimed"] == 0, d
        # the delay is applied: the channel scheduled each frame's release at
        # its arrival plus exactly the delay (how late the machine let it go
        # is err_mean_us, the bench's figure: 40 ms at 1250 ms under load)
        assert f[f"delay_{d}_scheduled_err_max_ns"] == 0, (d, f[f"delay_{d}_scheduled_err_max_ns"])
    for d in DELAYS[1:]:
        assert f[f"target_delay_{d}_never_early"] is True
    # fixed seeds: the emulator's draws repeat, and nothing else may lose
    for p in ("1pct", "5pct"):
        assert abs(f[f"loss_{p}_z"]) <= 4 and f[f"loss_{p}_other_losses"] == 0, p
        assert f[f"target_loss_{p}_z_le_4"] is True
    assert abs(f["ber_1e-5_z"]) <= 4 and f["ber_1e-5_lost"] == 0
    assert f["ber_1e-5_corrupted_datagrams"] == f["ber_1e-5_emulator_corrupted"] > 0
    # the rate limiter: at 110 % of 1 and 10 Mb/s the queue fills and drops
    # its tail whatever the load, and wherever it did, the channel scheduled
    # the frames that waited for the link back to back at exactly the rate
    # (the measured rate, rel_err, is the bench's figure: a transmitter kept
    # off the CPU sends late and the measured rate falls short)
    for r in ("1mbps", "10mbps"):
        assert f[f"rate_{r}_queue_drops"] > 0, (r, f[f"rate_{r}_queue_drops"])
    for r in RATES:
        if f[f"rate_{r}_queue_drops"]:
            assert f[f"rate_{r}_scheduled_frames"] >= 10, (r, f[f"rate_{r}_scheduled_frames"])
            assert abs(f[f"rate_{r}_scheduled_rel_err"]) < 1e-6, (r, f[f"rate_{r}_scheduled_bps"])
