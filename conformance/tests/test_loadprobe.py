"""The load probe (conformance/loadprobe.py): the slowdown it reads from
the kernel's count of runnable tasks, on an idle machine and with a busy
loop on every core."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance import loadprobe


def test_the_slowdown_is_a_high_quantile_of_runnable_per_core() -> None:
    # 1 runnable of 2 cores: no slowdown; 3 of 2: 1.5; the quantile, not the
    # peak, so that one reading in twenty does not stretch the window
    assert loadprobe.slowdown_of([1] * 20, 2) == 1.0
    assert loadprobe.slowdown_of([3] * 20, 2) == 1.5
    assert loadprobe.slowdown_of([1] * 19 + [9], 2) == 1.0
    assert loadprobe.slowdown_of([1] * 5 + [4] * 15, 2) == 2.0
    assert loadprobe.slowdown_of([], 2) == 1.0
    assert loadprobe.slowdown_of([500] * 10, 2) == loadprobe.MAX_SLOWDOWN


def test_a_kernel_that_does_not_say_reads_as_no_load(tmp_path: Path) -> None:
    odd = tmp_path / "loadavg"
    odd.write_text("0.00 0.01\n")
    assert loadprobe.runnable(odd) is None
    probe = loadprobe.LoadProbe(odd).start()
    assert probe.stop() == 1.0 and probe.counts == []


@pytest.mark.skipif(not loadprobe.LOADAVG.exists(), reason="no /proc/loadavg here")
def test_a_busy_loop_on_every_core_is_measured() -> None:
    """With a busy loop on each core, something that becomes runnable shares
    a core with at least one of them: the slowdown is at least (C + 1) / C."""
    cores = os.cpu_count() or 1
    if cores > 16:
        pytest.skip(f"{cores} cores: one busy loop each is too much for a test")
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cores)]
    try:
        time.sleep(0.3)  # the loops running
        probe = loadprobe.LoadProbe().start()
        # its readings, however slowly a loaded machine lets the probe run:
        # at least a second, and until it has read more than 20 times
        deadline = time.monotonic() + 10.0
        time.sleep(1.0)
        while len(probe.counts) <= 20 and time.monotonic() < deadline:
            time.sleep(0.1)
        loaded = probe.stop()
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    assert len(probe.counts) > 20
    assert loaded >= (cores + 1) / cores, probe.counts
