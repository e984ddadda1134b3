"""Adapter for LibreCube cfdp 0.2.0 (Python CFDP, CCSDS 727.0-B-5), through
our harness suts/cfdp/librecube/harness.py, run in its own venv
(suts/cfdp/librecube/.venv: it conflicts with cfdp-py; suts/cfdp/librecube/setup.sh).
Its command line is every CFDP harness's (suts/cfdp/common/adapter.py)."""

from __future__ import annotations

from collections.abc import Mapping

from conformance.core.errors import ToolMissing
from suts.base import ENGINE_FOLDER, ENGINE_OPTION, REPO, Mutate
from suts.cfdp.common.adapter import CfdpAdapter

HERE = REPO / "suts" / "cfdp" / "librecube"
HARNESS = HERE / "harness.py"
PYTHON = HERE / ".venv" / "bin" / "python"


class LibreCube(CfdpAdapter):
    name = "librecube"
    version = "0.2.0"
    OPTIONS = {ENGINE_OPTION: ENGINE_FOLDER}
    # mutation testing (docs/mutation.md): the Class 1 and Class 2 sender and
    # receiver state machines, their shared base and timers, not the entity's
    # PDU routing, codec, filestore or transports
    mutate = Mutate(
        tool="mutmut",
        version=version,
        distribution="cfdp",
        module="cfdp",
        python=str(PYTHON),
        files=["machines/*.py"],
    )

    def supports(self, params: Mapping[str, object], role: str) -> str:
        # suts/cfdp/librecube/README.md, each with LibreCube's source line
        if params.get("pdu_crc"):
            return "no PDU CRC (cfdp/header.py:132-134)"
        if params.get("mode") == "class1-closure":
            return "no Class 1 with closure (cfdp/core.py:159)"
        if params.get("checksum_type", "modular") != "modular":
            return "the modular checksum only (cfdp/checksum: native.py:145-167)"
        if params.get("entity_id_len") != 1:
            return "entity IDs of the fewest octets they need: 1 for IDs 1 and 2 (header.py:53-56)"
        if role == "sender" and params.get("sequence_number_len") != 1:
            return "a sender's sequence numbers of 1 octet (header.py:81-85)"
        deferred = params.get("nak_mode", "immediate") == "deferred"
        if role == "receiver" and params.get("mode") == "class2" and not deferred:
            return "a Class 2 receiver has deferred NAKs only"
        return ""

    def ensure_built(self) -> None:
        if not PYTHON.exists():
            raise ToolMissing(
                "LibreCube cfdp's venv is missing: run `make setup` (suts/cfdp/librecube/setup.sh)"
            )

    def prefix(self) -> list[str]:
        return self.python_command(PYTHON, HARNESS)


__all__ = ["LibreCube"]
