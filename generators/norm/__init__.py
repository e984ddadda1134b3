"""NORM's generators (RFC 5740): model checking (:mod:`.purposes`). The
model's files are in specs/norm/. Test purposes, outcome sets and the trace
model come with the next increments of issue 32 (specs/norm/README.md,
"Not built yet")."""

from pathlib import Path

SPEC_DIR = Path(__file__).resolve().parents[2] / "specs" / "norm"
