"""CFDP's generators (CCSDS 727.0-B-5): model checking and generation
(:mod:`.purposes`), the scenario catalogue (:mod:`.catalogue`), outcome sets
(:mod:`.outcomes`) and the trace model (:mod:`.trace`). The model's files
are in specs/cfdp/."""

from pathlib import Path

SPEC_DIR = Path(__file__).resolve().parents[2] / "specs" / "cfdp"
