"""What the tests of an optional LTP implementation (ION-DTN, HDTN: built
from a source tree the user gives, like Apalache) share: the skip where it
was not built, the nominal block they run, and its check."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from conformance.core.errors import ToolMissing
from conformance.core.types import Scenario, load_scenario
from conformance.runner import run_scenario
from suts.base import REPO, SutAdapter
from suts.registry import get

# 3,000 red and 1,000 green bytes in 1,000-byte segments, limit 3 (ION's least)
NOMINAL = REPO / "conformance" / "tests" / "data" / "ltp-ion-offgrid-nominal" / "scenario.json"


def built(name: str, what: str) -> SutAdapter:
    """The implementation, or the test skipped saying why (CI's path)."""
    sut = get(name)
    try:
        sut.ensure_built()
    except ToolMissing as exc:
        pytest.skip(f"{what} is not built here: {exc}")
    return sut


def nominal(name: str) -> Scenario:
    return load_scenario(NOMINAL).model_copy(update={"name": name})


def interoperates(pair: str, tmp_path: Path) -> None:
    """``"tx>rx"``: the nominal block passes, its trace validated (whatever
    the sender's segmentation), and the receiver has all of it."""
    tx, rx = pair.split(">")
    out = run_scenario(nominal(f"{tx}-{rx}"), get(tx), tmp_path / "run", receiver_sut=get(rx))
    assert out.verdict.status == "pass", out.verdict.reasons
    assert out.verdict.trace is not None and out.verdict.trace.status == "accepted"
    assert out.result is not None
    assert out.result.receiver.delivered is not None
    assert out.result.receiver.delivered.total() == 4000


def left_behind(run_dir: Path) -> list[str]:
    """The processes still alive of the roles of the run in ``run_dir``:
    those whose environment names the ``DTNC_WORKDIR`` a role of that run
    was started with (its ``sender.cmd`` and ``receiver.cmd`` say which; a
    daemon a role starts inherits it). Other runs' processes, on a machine
    running several at once, are not counted."""
    mine = {
        m.group(1).encode()
        for cmd in run_dir.glob("*.cmd")
        if (m := re.search(r"DTNC_WORKDIR=(\S+)", cmd.read_text()))
    }
    assert mine, f"{run_dir}: no role's command names its DTNC_WORKDIR"
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            env = (proc / "environ").read_bytes().split(b"\0")
            comm = (proc / "comm").read_text().strip()
        except OSError:
            continue
        if any(v.startswith(b"DTNC_WORKDIR=") and v.split(b"=", 1)[1] in mine for v in env):
            out.append(f"{proc.name} {comm}")
    return out
