"""Adapter for cfdp-rs 0.3.0 (Rust CFDP, CCSDS 727.0-B-5), through our
harness, the crate in suts/cfdprs/harness (binary dtnc-cfdprs; see
suts/cfdprs/README.md). Its command line is every CFDP harness's
(suts/cfdppy: cfdp_argv)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping

from conformance.errors import DtncError, ToolMissing
from conformance.types import Scenario
from suts.base import REPO, Endpoint, SutAdapter
from suts.cfdppy import cfdp_argv, cfdp_knobs

HARNESS = REPO / "suts" / "cfdprs" / "harness"
BINARY = HARNESS / "target" / "release" / "dtnc-cfdprs"


class CfdpRs(SutAdapter):
    name = "cfdp-rs"
    protocol = "cfdp"
    version = "0.3.0"

    def ensure_built(self) -> None:
        if BINARY.exists() and not os.environ.get("DTNC_REBUILD"):
            return
        if shutil.which("cargo") is None:
            raise ToolMissing(
                "cargo not found: install Rust with rustup (https://rustup.rs), then run "
                "`make setup`"
            )
        proc = subprocess.run(
            ["cargo", "build", "--release", "--locked", "--quiet"],
            cwd=HARNESS,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0 or not BINARY.exists():
            raise DtncError(f"building the cfdp-rs harness failed:\n{proc.stderr[-2000:]}")

    def supports(self, params: Mapping[str, object], role: str) -> str:
        # suts/cfdprs/README.md: IDs and sequence numbers of 1, 2, 4 or 8
        # octets (spacepackets util.rs); PDUs within its 4096-octet buffer
        for key in ("entity_id_len", "sequence_number_len"):
            if params.get(key) not in (1, 2, 4, 8):
                return f"{key.replace('_', ' ')}: 1, 2, 4 or 8 octets only"
        if int(params.get("segment_size", 0)) > 4080:  # type: ignore[call-overload]
            return "File Data segments of at most 4080 octets (its 4096-octet PDU buffer)"
        return ""

    def _argv(self, scn: Scenario, ep: Endpoint, role: str) -> list[str]:
        workdir = tempfile.mkdtemp(prefix=f"dtnc-cfdprs-{role}-")
        return cfdp_argv([str(BINARY)], scn, ep, role, workdir)

    def sender_argv(self, scn: Scenario, ep: Endpoint) -> list[str]:
        return self._argv(scn, ep, "sender")

    def receiver_argv(self, scn: Scenario, ep: Endpoint) -> list[str]:
        return self._argv(scn, ep, "receiver")

    def knobs(self, scn: Scenario) -> dict[str, int | str]:
        return cfdp_knobs(scn)


__all__ = ["BINARY", "CfdpRs"]
