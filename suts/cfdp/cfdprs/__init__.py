"""Adapter for cfdp-rs 0.3.0 (Rust CFDP, CCSDS 727.0-B-5), through our
harness, the crate in suts/cfdp/cfdprs/harness (binary dtnc-cfdprs; see
suts/cfdp/cfdprs/README.md)."""

from __future__ import annotations

from collections.abc import Mapping

from suts.base import REPO, cargo_build
from suts.cfdp.common.adapter import CfdpAdapter

HARNESS = REPO / "suts" / "cfdp" / "cfdprs" / "harness"
BINARY = HARNESS / "target" / "release" / "dtnc-cfdprs"


class CfdpRs(CfdpAdapter):
    name = "cfdp-rs"
    version = "0.3.0"

    def supports(self, params: Mapping[str, object], role: str) -> str:
        # suts/cfdp/cfdprs/README.md: IDs and sequence numbers of 1, 2, 4 or 8
        # octets (spacepackets util.rs); PDUs within its 4096-octet buffer
        for key in ("entity_id_len", "sequence_number_len"):
            if params.get(key) not in (1, 2, 4, 8):
                return f"{key.replace('_', ' ')}: 1, 2, 4 or 8 octets only"
        if int(params.get("segment_size", 0)) > 4080:  # type: ignore[call-overload]
            return "File Data segments of at most 4080 octets (its 4096-octet PDU buffer)"
        return ""

    def ensure_built(self) -> None:
        cargo_build(HARNESS, BINARY, "cfdp-rs")

    def prefix(self) -> list[str]:
        return [str(BINARY)]


__all__ = ["BINARY", "CfdpRs"]
