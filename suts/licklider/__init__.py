"""Adapter for licklider 0.1.1 (licklider-core + licklider-udp, Rust), through
our harness in suts/licklider/harness (see suts/licklider/README.md)."""

from __future__ import annotations

import os
import shutil
import subprocess

from conformance.errors import DtncError, ToolMissing
from conformance.types import Scenario
from suts.base import REPO, Endpoint, SutAdapter

HARNESS = REPO / "suts" / "licklider" / "harness"
BINARY = HARNESS / "target" / "release" / "dtnc-licklider"

# licklider has one retransmission timer for checkpoints, reports and cancels
# (owlt out + remote delay + owlt in + local delay, RFC 5325 §3.1.3); sized for
# a namespace link (sub-millisecond RTT) with headroom for a loaded CI machine,
# as RFC 5326 §6.2 asks for timers above the round-trip time.
RTX_TIMEOUT_MS = 300
# The receiver keeps answering for this long after its session closes (a
# resent checkpoint, a lost RA), and waits at most CLOSE_WAIT_MS for the close
# (licklider never closes a session whose green EOB segment was lost).
LINGER_MS = 500
CLOSE_WAIT_MS = 2000


class Licklider(SutAdapter):
    name = "licklider"
    protocol = "ltp"
    version = "0.1.1"

    def ensure_built(self) -> None:
        if BINARY.exists() and not os.environ.get("DTNC_REBUILD"):
            return
        if shutil.which("cargo") is None:
            raise ToolMissing(
                "cargo not found: install Rust with rustup (https://rustup.rs) or "
                "apt-get install cargo, then run `make setup`"
            )
        proc = subprocess.run(
            ["cargo", "build", "--release", "--locked", "--quiet"],
            cwd=HARNESS,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0 or not BINARY.exists():
            raise DtncError(f"building the licklider harness failed:\n{proc.stderr[-2000:]}")

    def _common(self, scn: Scenario, ep: Endpoint, engine: int, peer_engine: int) -> list[str]:
        assert scn.ltp is not None
        return [
            "--engine", str(engine),
            "--peer-engine", str(peer_engine),
            "--listen", f"{ep.ip}:{ep.port}",
            "--peer", f"{ep.peer_ip}:{ep.port}",
            "--segment-size", str(scn.ltp.segment_size),
            "--rtx-timeout-ms", str(RTX_TIMEOUT_MS),
            # The expectation assumes the model's retransmission limit.
            "--max-retransmissions", str(scn.ltp.retransmission_limit),
            "--cancel-rtx-limit", str(scn.ltp.retransmission_limit),
            "--time-limit-ms", str(int(scn.time_limit_s * 1000)),
            "--block-len", str(scn.ltp.block_len),
            "--red-len", str(scn.ltp.red_len),
        ]  # fmt: skip

    def sender_argv(self, scn: Scenario, ep: Endpoint) -> list[str]:
        assert scn.ltp is not None
        return [
            str(BINARY), "send", *self._common(scn, ep, 1, 2),
            "--client-service-id", str(scn.ltp.client_service_id),
            "--linger-ms", str(LINGER_MS),
        ]  # fmt: skip

    def receiver_argv(self, scn: Scenario, ep: Endpoint) -> list[str]:
        return [
            str(BINARY), "recv", *self._common(scn, ep, 2, 1),
            "--linger-ms", str(LINGER_MS), "--close-wait-ms", str(CLOSE_WAIT_MS),
        ]  # fmt: skip


__all__ = ["BINARY", "Licklider"]
