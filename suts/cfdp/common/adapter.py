"""What every CFDP implementation's adapter shares: the one command line of
dtnconform's CFDP harnesses (suts/cfdp/cfdppy/README.md), built from a
scenario, and the adapter around it."""

from __future__ import annotations

import shutil
import tempfile

from conformance.core import registry as protocols
from conformance.core.classifiers import default_port
from conformance.core.types import Scenario
from suts.base import Endpoint, SutAdapter, merge_knobs


def cfdp_flags(scn: Scenario, role: str) -> dict[str, int | str]:
    """Every behaviour knob of one CFDP entity, by harness flag: the
    protocol's endpoint knobs (conformance/protocols/cfdp.py), the users'
    requests aside (``--request``, one per request)."""
    knobs = protocols.get("cfdp").endpoint_knobs(scn, role)
    return {k: v for k, v in knobs.items() if not isinstance(v, list)}


def cfdp_argv(prefix: list[str], scn: Scenario, ep: Endpoint, role: str, workdir: str) -> list[str]:
    """The shared CFDP harness command line of one role."""
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
    for flag, value in protocols.get("cfdp").endpoint_knobs(scn, role).items():
        for one in value if isinstance(value, list) else [value]:
            argv += [f"--{flag}", str(one)]
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
