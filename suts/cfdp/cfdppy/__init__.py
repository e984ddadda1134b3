"""Adapter for cfdp-py 0.7.0 (Python CFDP, CCSDS 727.0-B-5), through our
harness suts/cfdp/cfdppy/harness.py (see suts/cfdp/cfdppy/README.md)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping

from conformance.core.errors import ToolMissing
from suts.base import ENGINE_FOLDER, ENGINE_OPTION, REPO, Mutate
from suts.cfdp.common.adapter import CfdpAdapter

HARNESS = REPO / "suts" / "cfdp" / "cfdppy" / "harness.py"


class CfdpPy(CfdpAdapter):
    name = "cfdp-py"
    version = "0.7.0"
    OPTIONS = {ENGINE_OPTION: ENGINE_FOLDER}
    # mutation testing (docs/mutation.md): the source and destination state
    # machines, not the filestore, MIB, request and user plumbing; its PDU
    # codec is another package (spacepackets)
    mutate = Mutate(
        tool="mutmut",
        version=version,
        distribution="cfdp-py",
        module="cfdppy",
        python=sys.executable,
        files=["handler/source.py", "handler/dest.py"],
    )

    def supports(self, params: Mapping[str, object], role: str) -> str:
        # suts/cfdp/cfdppy/README.md: IDs of 1, 2, 4 or 8 octets; a sender's
        # sequence numbers of 1, 2 or 4 (cfdppy/handler/source.py:938-941)
        if params.get("entity_id_len") not in (1, 2, 4, 8):
            return "entity IDs of 1, 2, 4 or 8 octets only"
        seq = (1, 2, 4) if role == "sender" else (1, 2, 4, 8)
        if params.get("sequence_number_len") not in seq:
            return f"{role}: sequence numbers of {', '.join(map(str, seq))} octets only"
        return ""

    def ensure_built(self) -> None:
        if importlib.util.find_spec("cfdppy") is None:
            raise ToolMissing(
                "cfdp-py is not installed in dtnconform's venv: run `make setup` (it installs "
                "cfdp-py==0.7.0 with fastcrc==0.3.6)"
            )

    def prefix(self) -> list[str]:
        return self.python_command(sys.executable, HARNESS)


__all__ = ["CfdpPy"]
