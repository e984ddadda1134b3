"""Adapter for LibreCube cfdp 0.2.0 (Python CFDP, CCSDS 727.0-B-5), through
our harness suts/cfdp/librecube/harness.py, run in its own venv
(suts/cfdp/librecube/.venv: it conflicts with cfdp-py; suts/cfdp/librecube/setup.sh).
Its command line is every CFDP harness's (suts/cfdp/common/adapter.py)."""

from __future__ import annotations

from collections.abc import Collection, Mapping

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

    def profile_changes(
        self, params: Mapping[str, object], roles: Collection[str] = ("sender", "receiver")
    ) -> dict[str, tuple[object, object, str]]:
        """What LibreCube fixes where a scenario asks otherwise: settings the
        entity chooses, not rules, so a scenario that asks for others runs
        with LibreCube's (conformance/adapt.py; each adapted run says so).
        Without them no test purpose's scenario (2-octet entity IDs, 4-octet
        sequence numbers, immediate NAKs) could run on it, and its suite
        would be the interop cells alone."""
        out: dict[str, tuple[object, object, str]] = {}
        ids = params.get("entity_id_len")
        if ids is not None and ids != 1:
            out["entity_id_len"] = (
                ids, 1, "it writes entity IDs in the fewest octets they need, 1 for IDs 1 and 2 "
                "(cfdp/pdu/header.py, PduHeader.encode)",
            )  # fmt: skip
        seq = params.get("sequence_number_len")
        if "sender" in roles and seq is not None and seq != 1:
            out["sequence_number_len"] = (
                seq, 1, "its sender numbers transactions in 1 octet (suts/cfdp/librecube/README.md)"
            )  # fmt: skip
        nak = params.get("nak_mode", "immediate")
        if "receiver" in roles and params.get("mode") == "class2" and nak != "deferred":
            out["nak_mode"] = (
                nak, "deferred", "its Class 2 receiver asks for gaps at the EOF only (deferred "
                "NAKs; the NAK mode is the entity's choice)",
            )  # fmt: skip
        return out

    def ensure_built(self) -> None:
        if not PYTHON.exists():
            raise ToolMissing(
                "LibreCube cfdp's venv is missing: run `make setup` (suts/cfdp/librecube/setup.sh)"
            )

    def prefix(self) -> list[str]:
        return self.python_command(PYTHON, HARNESS)


__all__ = ["LibreCube"]
