"""``python -m conformance.tester ROLE --scenario FILE ...``: play one role of
a scenario's protocol from its model; print one JSON result line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from conformance import protocols
from conformance.core.types import load_scenario
from conformance.tester.core import CannotPlay, Context, Limits, emit, open_socket, serve


def _addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m conformance.tester", description=__doc__)
    ap.add_argument("role")
    ap.add_argument("--scenario", required=True, type=Path)
    ap.add_argument("--listen", required=True, type=_addr)
    ap.add_argument("--peer", required=True, type=_addr)
    ap.add_argument("--engine", type=int, required=True)
    ap.add_argument("--peer-engine", type=int, required=True)
    ap.add_argument("--rtx-timeout-ms", type=float, required=True)
    ap.add_argument("--linger-ms", type=float, required=True)
    ap.add_argument("--close-wait-ms", type=float, required=True)
    ap.add_argument("--time-limit-ms", type=float, required=True)
    ap.add_argument("--log", type=Path, required=True, help="the action log (JSON lines)")
    a = ap.parse_args(argv)
    try:
        scn = load_scenario(a.scenario)
        spec = protocols.get(scn.protocol)
        module = spec.need("tester", spec.capabilities.tester)
        module.check(scn, a.role)
        cls = module.ROLES[a.role]
    except (CannotPlay, KeyError, ValueError) as exc:
        emit({"role": a.role, "outcome": "error", "detail": f"tester: {exc}"})
        return 2
    sock = open_socket(a.listen)
    with a.log.open("w") as log:
        ctx = Context(sock, a.peer, log)
        role = cls(
            ctx,
            scn,
            engine=a.engine,
            peer_engine=a.peer_engine,
            retransmission_s=a.rtx_timeout_ms / 1000,
            close_wait_s=a.close_wait_ms / 1000,
        )
        out = serve(role, sock, Limits(a.linger_ms / 1000, a.time_limit_ms / 1000))
    emit(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
