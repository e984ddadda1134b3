"""plans/smoke.yaml between namespaces, as `dtnconform campaign` runs it:
killed with SIGKILL while a run is going on, then resumed on a Dask cluster
of two local workers. Nothing it finished is run again, the run it cut is
redone from scratch, both workers take runs and their results reach the
database, every run ends with the model's verdict and its figures, and no
namespace is left."""

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


def dask_cluster(tmp: Path) -> tuple[Path, list[subprocess.Popen[bytes]]]:
    """A Dask scheduler and two single-thread worker processes on this host."""
    from distributed import Client

    dask = Path(sys.executable).parent / "dask"
    sched = tmp / "scheduler.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    common = {"cwd": tmp, "env": env, "stdout": subprocess.DEVNULL, "stderr": subprocess.STDOUT}
    procs = [
        subprocess.Popen([str(dask), "scheduler", "--scheduler-file", str(sched), "--port", "0",
                          "--no-dashboard"], **common),  # type: ignore[call-overload]
    ]  # fmt: skip
    assert netns.wait_for(sched.is_file, timeout=60), "the Dask scheduler did not start"
    procs.append(
        subprocess.Popen([str(dask), "worker", "--scheduler-file", str(sched), "--nworkers", "2",
                          "--nthreads", "1", "--no-dashboard"], **common)  # type: ignore[call-overload]
    )  # fmt: skip
    with Client(scheduler_file=str(sched), timeout=60) as client:
        client.wait_for_workers(2, timeout=60)
    return sched, procs


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

    sched, cluster = dask_cluster(tmp_path)
    try:
        res = campaign(out, "--resume", "--dask", str(sched))
        text = res.communicate(timeout=300)[0].decode()
    finally:
        for p in reversed(cluster):
            p.terminate()
            p.wait(timeout=30)
    assert res.returncode == 0, text
    assert "resuming" in text and "1 cut short before, redone" in text
    assert "2 lanes on its workers" in text
    end = rows(db)
    assert all(r[0] == "done" for r in end.values()), end
    for s, r in done.items():
        assert end[s] == r, f"run {s} was run again"  # same attempt, same finish time
    assert end[going][1] == 2  # started twice: cut, then redone whole
    with sqlite3.connect(db) as c:
        lanes = dict(c.execute("SELECT seq, lane FROM runs"))
    # host:pid:thread; the runs after the kill ran on the two Dask workers
    resumed = {lane.split(":")[1] for s, lane in lanes.items() if s not in done}
    assert len(resumed) == 2, lanes
    assert {r[3] for r in end.values()} == {"pass"}
    with (out / "results.csv").open() as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == 8
    for row in table:
        assert row["trace"] == "accepted"
        assert float(row["goodput_bps"]) > 0 and int(row["units_forward"]) >= 5
        assert (Path(row["run_dir"]) / "verdict.json").is_file()
    assert "goodput.png" in (out / "report.html").read_text()
