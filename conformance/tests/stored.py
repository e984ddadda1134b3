"""A live run stored under conformance/tests/data/NAME (its captures,
scenario, decoded segments and result), validated again as
`dtnconform validate-trace` does: for tests of trace validation on real
captures."""

from __future__ import annotations

import shutil
from pathlib import Path

from conformance.core.contract import ProtocolSpec
from conformance.core.types import RunResult, Scenario, SegmentRecord, TraceCheck, load_model

DATA = Path(__file__).parent / "data"


def stored_run(
    spec: ProtocolSpec, name: str, tmp_path: Path
) -> tuple[Path, Scenario, list[SegmentRecord], TraceCheck]:
    """The run data/NAME copied into ``tmp_path`` and validated again: (its
    folder, scenario, segments, the check)."""
    from conformance.runner import PORTS, validate_trace

    run = tmp_path / "run"
    shutil.copytree(DATA / name, run)
    scn = Scenario.model_validate_json((run / "scenario.json").read_text())
    segments = [
        SegmentRecord.model_validate_json(ln)
        for ln in (run / "segments.jsonl").read_text().splitlines()
        if ln.strip()
    ]
    result = load_model(RunResult, run / "result.json")
    tc = validate_trace(spec, scn, segments, run, port=PORTS[spec.name], ip_a=None, result=result)
    return run, scn, segments, tc
