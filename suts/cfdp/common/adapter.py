"""What every CFDP implementation's adapter shares: the one command line of
dtnconform's CFDP harnesses (suts/cfdp/cfdppy/README.md), built from a
scenario, and the adapter around it."""

from __future__ import annotations

import math
import shutil
import tempfile

from conformance import timers
from conformance.core.classifiers import default_port
from conformance.core.types import Scenario
from conformance.protocols.cfdp import CfdpTransfer
from suts.base import ENGINES, Endpoint, SutAdapter, merge_knobs


def _ms(value: float) -> int:
    return math.ceil(value)


def cfdp_flags(scn: Scenario, role: str) -> dict[str, int | str]:
    """Every behaviour knob of one CFDP entity, by harness flag: the command
    line every CFDP harness of dtnconform shares (suts/cfdp/cfdppy/README.md)."""
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
    """Both roles' knobs (merge_knobs) and the UDP port."""
    out = merge_knobs(cfdp_flags(scn, "sender"), cfdp_flags(scn, "receiver"))
    out["udp-port"] = default_port("cfdp") or 0
    return out


class CfdpAdapter(SutAdapter):
    """An implementation run by a harness with the CFDP command line: a
    subclass names the command (``prefix``) and what it cannot take."""

    protocol = "cfdp"

    def __init__(self) -> None:
        super().__init__()
        self._workdirs: list[str] = []  # the roles' folders of the run under way

    def prefix(self) -> list[str]:
        """The harness command before its role (``send``/``recv``)."""
        raise NotImplementedError

    def _argv(self, scn: Scenario, ep: Endpoint, role: str) -> list[str]:
        # each role's files in a folder of its own, never shared by two runs
        workdir = tempfile.mkdtemp(prefix=f"dtnc-{self.name}-{role}-")
        self._workdirs.append(workdir)
        return cfdp_argv(self.prefix(), scn, ep, role, workdir)

    def cleanup(self) -> None:
        """The roles' folders (the delivered file, Yamcs's configuration and
        data): the result has reported on them."""
        while self._workdirs:
            shutil.rmtree(self._workdirs.pop(), ignore_errors=True)

    def sender_argv(self, scn: Scenario, ep: Endpoint) -> list[str]:
        return self._argv(scn, ep, "sender")

    def receiver_argv(self, scn: Scenario, ep: Endpoint) -> list[str]:
        return self._argv(scn, ep, "receiver")

    def knobs(self, scn: Scenario) -> dict[str, int | str]:
        return cfdp_knobs(scn)


__all__ = ["CfdpAdapter", "cfdp_argv", "cfdp_flags", "cfdp_knobs"]
