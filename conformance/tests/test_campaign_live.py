"""plans/smoke.yaml between namespaces, as `dtnconform campaign` runs it:
killed with SIGKILL while a run is going on, then resumed. Nothing it
finished is run again, the run it cut is redone from scratch, every run
ends with the model's verdict and its figures, and no namespace is left."""

from __future__ import annotations

import csv
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance import netns

pytestmark = [pytest.mark.netns, pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
PLAN = REPO / "plans" / "smoke.yaml"


def campaign(out: Path, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "conformance.cli", "campaign", str(PLAN), "--out", str(out), *extra],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def rows(db: Path) -> dict[int, tuple[str, int, float | None, str | None]]:
    with sqlite3.connect(db) as c:
        q = "SELECT seq, status, attempts, finished, verdict FROM runs"
        return {s: (st, a, f, v) for s, st, a, f, v in c.execute(q)}


def ours() -> set[str]:
    from pyroute2 import netns as ns

    return {n for n in ns.listnetns() if n.startswith(netns.PREFIX)}


def test_smoke_campaign_killed_mid_way_resumes_with_nothing_lost(tmp_path: Path) -> None:
    out = tmp_path / "smoke"
    db = out / "campaign.sqlite"
    before = ours()
    proc = campaign(out)
    # wait until two runs are done and a third is going on
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if db.is_file():
            try:
                now = rows(db)
            except sqlite3.OperationalError:
                now = {}
            states = [s for s, *_ in now.values()]
            if states.count("done") >= 2 and "running" in states:
                time.sleep(1.0)  # well into the run
                break
        assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("the campaign did not reach its third run in 240 s")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    cut = rows(db)
    done = {s: r for s, r in cut.items() if r[0] == "done"}
    (going,) = [s for s, r in cut.items() if r[0] == "running"]
    # the run it cut stops with it and takes its namespaces down
    assert netns.wait_for(lambda: ours() <= before, timeout=30), ours() - before

    res = campaign(out, "--resume")
    text = res.communicate(timeout=300)[0].decode()
    assert res.returncode == 0, text
    assert "resuming" in text and "1 cut short before, redone" in text
    end = rows(db)
    assert all(r[0] == "done" for r in end.values()), end
    for s, r in done.items():
        assert end[s] == r, f"run {s} was run again"  # same attempt, same finish time
    assert end[going][1] == 2  # started twice: cut, then redone whole
    assert {r[3] for r in end.values()} == {"pass"}
    with (out / "results.csv").open() as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == 8
    for row in table:
        assert row["trace"] == "accepted"
        assert float(row["goodput_bps"]) > 0 and int(row["units_forward"]) >= 5
        assert (Path(row["run_dir"]) / "verdict.json").is_file()
    assert "goodput.png" in (out / "report.html").read_text()
