"""Adapter for cfdp-py 0.7.0 (Python CFDP, CCSDS 727.0-B-5), through our
harness suts/cfdppy/harness.py (see suts/cfdppy/README.md)."""

from __future__ import annotations

import importlib.util
import math
import sys
import tempfile
from collections.abc import Mapping

from conformance import timers
from conformance.classifiers import default_port
from conformance.errors import ToolMissing
from conformance.protocols.cfdp import CfdpTransfer
from conformance.types import Scenario
from suts.base import ENGINES, REPO, Endpoint, SutAdapter

HARNESS = REPO / "suts" / "cfdppy" / "harness.py"


def _ms(value: float) -> int:
    return math.ceil(value)


def cfdp_flags(scn: Scenario, role: str) -> dict[str, int | str]:
    """Every behaviour knob of one CFDP entity, by harness flag: the command
    line every CFDP harness of dtnconform shares (suts/cfdppy/README.md)."""
    t = scn.params
    assert isinstance(t, CfdpTransfer)
    tm = timers.derive(scn)
    entity, peer = ENGINES[role]
    rtx = _ms(tm.retransmission_ms)
    out: dict[str, int | str] = {
        "entity-id": entity,
        "peer-entity-id": peer,
        "entity-id-len": t.entity_id_len,
        "seq-len": t.sequence_number_len,
        "mode": t.mode,
        "checksum": t.checksum_type,
        "pdu-crc": int(t.pdu_crc),
        "segment-size": t.segment_size,
        "nak-mode": t.nak_mode,
        "ack-limit": t.ack_limit,
        "nak-limit": t.nak_limit,
        "check-limit": t.check_limit,
        # one period for every timer, sized from the channel (conformance.timers)
        "ack-timer-ms": rtx,
        "nak-timer-ms": rtx,
        "check-timer-ms": rtx,
        # inactivity: past every retransmission the limits allow, so that it
        # does not overtake them (the model lets it fire only on a silent peer)
        "inactivity-ms": (max(t.ack_limit, t.nak_limit, t.check_limit) + 2) * 2 * rtx,
        "linger-ms": _ms(tm.linger_ms),
        "time-limit-ms": _ms(tm.time_limit_s * 1000),
    }
    if role == "sender":
        out["file-len"] = t.file_len
    return out


def cfdp_argv(prefix: list[str], scn: Scenario, ep: Endpoint, role: str, workdir: str) -> list[str]:
    """The shared CFDP harness command line of one role."""
    t = scn.params
    assert isinstance(t, CfdpTransfer)
    argv = [
        *prefix,
        "send" if role == "sender" else "recv",
        "--listen",
        f"{ep.ip}:{ep.port}",
        "--peer",
        f"{ep.peer_ip}:{ep.port}",
        "--workdir",
        workdir,
    ]
    for flag, value in cfdp_flags(scn, role).items():
        argv += [f"--{flag}", str(value)]
    for r in t.requests:
        if r.entity == role:
            argv += ["--request", r.model_dump_json()]
    return argv


def cfdp_knobs(scn: Scenario) -> dict[str, int | str]:
    """Both roles' knobs: a flag both give one value named once, else
    ``sender.FLAG`` and ``receiver.FLAG``; and the UDP port."""
    snd, rcv = cfdp_flags(scn, "sender"), cfdp_flags(scn, "receiver")
    out: dict[str, int | str] = {}
    for key in [*snd, *(k for k in rcv if k not in snd)]:
        if key in snd and key in rcv and snd[key] == rcv[key]:
            out[key] = snd[key]
            continue
        if key in snd:
            out[f"sender.{key}"] = snd[key]
        if key in rcv:
            out[f"receiver.{key}"] = rcv[key]
    out["udp-port"] = default_port("cfdp") or 0
    return out


class CfdpPy(SutAdapter):
    name = "cfdp-py"
    protocol = "cfdp"
    version = "0.7.0"

    def ensure_built(self) -> None:
        if importlib.util.find_spec("cfdppy") is None:
            raise ToolMissing(
                "cfdp-py is not installed in dtnconform's venv: run `make setup` (it installs "
                "cfdp-py==0.7.0 with fastcrc==0.3.6)"
            )

    def supports(self, params: Mapping[str, object], role: str) -> str:
        # suts/cfdppy/README.md: IDs of 1, 2, 4 or 8 octets; a sender's
        # sequence numbers of 1, 2 or 4 (cfdppy/handler/source.py:938-941)
        if params.get("entity_id_len") not in (1, 2, 4, 8):
            return "entity IDs of 1, 2, 4 or 8 octets only"
        seq = (1, 2, 4) if role == "sender" else (1, 2, 4, 8)
        if params.get("sequence_number_len") not in seq:
            return f"{role}: sequence numbers of {', '.join(map(str, seq))} octets only"
        return ""

    def _argv(self, scn: Scenario, ep: Endpoint, role: str) -> list[str]:
        # each role's files in a folder of its own, never shared by two runs
        workdir = tempfile.mkdtemp(prefix=f"dtnc-cfdppy-{role}-")
        return cfdp_argv([sys.executable, str(HARNESS)], scn, ep, role, workdir)

    def sender_argv(self, scn: Scenario, ep: Endpoint) -> list[str]:
        return self._argv(scn, ep, "sender")

    def receiver_argv(self, scn: Scenario, ep: Endpoint) -> list[str]:
        return self._argv(scn, ep, "receiver")

    def knobs(self, scn: Scenario) -> dict[str, int | str]:
        return cfdp_knobs(scn)


__all__ = ["CfdpPy", "cfdp_argv", "cfdp_flags", "cfdp_knobs"]
