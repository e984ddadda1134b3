"""Adapter for Yamcs 5.13.2 (Java mission control, its CFDP service), run
headless by our harness suts/cfdp/yamcs/harness.py (a fresh Yamcs server per
role, driven over its HTTP API; suts/cfdp/yamcs/README.md). Its command line is
every CFDP harness's (suts/cfdp/common/adapter.py)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping

from conformance.core.errors import ToolMissing
from suts.base import REPO
from suts.cfdp.common.adapter import CfdpAdapter

HERE = REPO / "suts" / "cfdp" / "yamcs"
HARNESS = HERE / "harness.py"
CORE = HERE / "lib" / "yamcs-core-5.13.2.jar"


class Yamcs(CfdpAdapter):
    name = "yamcs"
    version = "5.13.2"
    # a JVM and a Yamcs server start before each role takes its first step
    startup_s = 8.0

    def supports(self, params: Mapping[str, object], role: str) -> str:
        # suts/cfdp/yamcs/README.md, with Yamcs's source lines
        if params.get("checksum_type") in ("crc32", "crc32c") and role == "receiver":
            # it answers Finished(unsupported checksum type, 11), which is right
            return "a receiver verifies the modular and null checksums only (it answers "
            "condition 11, unsupported checksum type: correct, and no interoperation)"
        if role == "receiver" and params.get("mode") == "class1":
            # the scenario's check timer and limit cannot be given to it, and
            # its own (10 s x 5) outlast the other timers: an inactivity
            # fault would stand in for the check limit the model expects
            return "a Class 1 receiver's check timer and limit are fixed at 10 s x 5 "
            "(checkAckTimeout/checkAckLimit are refused in the configuration)"
        if role == "sender":
            if params.get("checksum_type") in ("crc32", "crc32c"):
                return "a sender computes the modular and null checksums only (the transfer "
                "request is refused: CfdpOutgoingTransfer.java:163-167)"
            if params.get("pdu_crc"):
                return "a sender never sends a PDU CRC"
            if params.get("sequence_number_len") == 8:
                return "8-octet sequence numbers wrap to 0 (CfdpOutgoingTransfer.java:200)"
        return ""

    def ensure_built(self) -> None:
        if not CORE.exists():
            raise ToolMissing("Yamcs is not installed: run `make setup` (suts/cfdp/yamcs/setup.sh)")
        if shutil.which("java") is None:
            raise ToolMissing("java not found: apt-get install default-jdk-headless")

    def prefix(self) -> list[str]:
        return [sys.executable, str(HARNESS)]


__all__ = ["Yamcs"]
