"""LTP's generators (RFC 5326): test purposes and the trap search
(:mod:`.purposes`), the scenario catalogue (:mod:`.catalogue`), outcome sets
(:mod:`.outcomes`) and the trace model (:mod:`.trace`). The model's files
are in specs/ltp/."""

from pathlib import Path

SPEC_DIR = Path(__file__).resolve().parents[2] / "specs" / "ltp"
