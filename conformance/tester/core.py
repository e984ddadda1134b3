"""The tester's protocol-free core: one UDP socket, named timers, an action
log, and the loop that runs a :class:`Role` until it is done.

A role is one side of a protocol played from its model: every step it takes
is one of the model's actions (``SenderTxCheckpoint``, ``ReceiverRxReportAck``
...) and is written, with the unit it sent or received, to the run's
``tester-<role>.jsonl``. The core knows nothing of the protocol: it delivers
datagrams and timer expiries to the role, and sends what the role sends.

The run ends, as a SUT harness's does, with one JSON object on stdout in the
shared result schema (:meth:`suts.base.SutAdapter.parse_result`): the role's
outcome and its delivery counters, plus the tester's own observations.

A role keeps serving after it closed (a resent report or cancel must still be
answered, RFC 5326 §6.13, §6.17), for ``linger_s`` of quiet; the time limit
ends everything with outcome ``open``.
"""

from __future__ import annotations

import heapq
import json
import select
import socket
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from suts.sockbuf import raise_receive_buffer


class CannotPlay(ValueError):
    """A scenario asks the tester for something it cannot play; the message
    starts with the scenario field (``params.receiver_client_service_id: ...``)."""


@dataclass
class Limits:
    """When a role's run ends: ``linger_s`` of quiet after the role closed,
    or ``time_limit_s`` after the start."""

    linger_s: float
    time_limit_s: float


@dataclass(order=True)
class _Timer:
    due: float
    seq: int
    name: str = field(compare=False)
    fire: Callable[[], None] = field(compare=False)
    live: bool = field(default=True, compare=False)


class Context:
    """What a role may do: send a datagram, arm and stop named timers, and
    log the model action it takes. Times are ``time.monotonic()``; the log
    also carries wall-clock seconds, the captures' clock."""

    def __init__(self, sock: socket.socket, peer: tuple[str, int], log: TextIO) -> None:
        self._sock = sock
        self._peer = peer
        self._log = log
        self._timers: list[_Timer] = []
        self._by_name: dict[str, _Timer] = {}
        self._seq = 0
        self.sent = 0
        self.received = 0
        self.last_activity = time.monotonic()

    # -- the wire ------------------------------------------------------------

    def send(self, data: bytes, action: str, **fields: Any) -> None:
        """Put one datagram on the wire as the effect of model action
        ``action``; ``fields`` go to the log (``tx``: the unit sent, ``rx``:
        the one it answers)."""
        self._sock.sendto(data, self._peer)
        self.sent += 1
        self.last_activity = time.monotonic()
        self.log(action, **fields, octets=len(data))

    # -- timers --------------------------------------------------------------

    def arm(self, name: str, delay_s: float, fire: Callable[[], None]) -> None:
        """(Re)start timer ``name``: ``fire`` runs once ``delay_s`` from now."""
        self.stop(name)
        self._seq += 1
        t = _Timer(time.monotonic() + delay_s, self._seq, name, fire)
        self._by_name[name] = t
        heapq.heappush(self._timers, t)

    def stop(self, name: str) -> None:
        t = self._by_name.pop(name, None)
        if t is not None:
            t.live = False

    def running(self, name: str) -> bool:
        return name in self._by_name

    def armed(self) -> list[str]:
        return sorted(self._by_name)

    def pause(self) -> dict[str, tuple[float, Callable[[], None]]]:
        """Stop every timer, returning each one's time left and action, for
        :meth:`resume` (a suspended role's timers stand still)."""
        now = time.monotonic()
        saved = {n: (max(0.0, t.due - now), t.fire) for n, t in self._by_name.items()}
        for name in saved:
            self.stop(name)
        return saved

    def resume(self, saved: dict[str, tuple[float, Callable[[], None]]]) -> None:
        """Restart the timers :meth:`pause` stopped, with the time they had left."""
        for name, (left, fire) in saved.items():
            self.arm(name, left, fire)

    def _next_due(self) -> float | None:
        while self._timers and not self._timers[0].live:
            heapq.heappop(self._timers)
        return self._timers[0].due if self._timers else None

    def _fire_due(self, now: float) -> None:
        while (due := self._next_due()) is not None and due <= now:
            t = heapq.heappop(self._timers)
            self._by_name.pop(t.name, None)
            t.fire()

    # -- the log -------------------------------------------------------------

    def log(self, action: str, **fields: Any) -> None:
        """One line of the action log: the model action and what it touched."""
        rec = {"t": round(time.time(), 6), "action": action, **fields}
        self._log.write(json.dumps(rec, default=str) + "\n")
        self._log.flush()


class Role(ABC):
    """One side of a protocol, played from its model."""

    name: str = ""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.started = time.monotonic()
        self.closed_at: float | None = None

    @abstractmethod
    def start(self) -> None:
        """The role's first steps (a sender starts transmitting)."""

    @abstractmethod
    def on_datagram(self, data: bytes) -> None:
        """One datagram from the peer."""

    @abstractmethod
    def result(self) -> dict[str, Any]:
        """The shared result object: ``outcome`` and the delivery counters."""

    @property
    def closed(self) -> bool:
        return self.closed_at is not None

    def close(self) -> None:
        if self.closed_at is None:
            self.closed_at = time.monotonic()

    def idle(self) -> bool:
        """Closed and owing nothing: the run may end after the linger."""
        return self.closed and not self.ctx.armed()


def serve(role: Role, sock: socket.socket, limits: Limits) -> dict[str, Any]:
    """Run ``role`` until it has been idle for ``limits.linger_s`` or the
    time limit passes; return its result object (outcome ``open`` if the
    limit cut it short)."""
    ctx = role.ctx
    deadline = role.started + limits.time_limit_s
    sock.setblocking(False)
    role.start()
    timed_out = False
    while True:
        now = time.monotonic()
        ctx._fire_due(now)
        if role.idle() and now - max(ctx.last_activity, role.closed_at or 0) >= limits.linger_s:
            break
        if now >= deadline:
            timed_out = True
            break
        waits = [deadline - now]
        if (due := ctx._next_due()) is not None:
            waits.append(due - now)
        if role.idle():
            waits.append(max(ctx.last_activity, role.closed_at or 0) + limits.linger_s - now)
        ready, _, _ = select.select([sock], [], [], max(0.0, min(waits)))
        if ready:
            while True:
                try:
                    data = sock.recv(65535)
                except BlockingIOError:
                    break
                ctx.received += 1
                ctx.last_activity = time.monotonic()
                role.on_datagram(data)
    # From here on the role takes no step: what reaches it later is not
    # its to answer (the trace's "exit" is this moment, not the process's
    # end, which comes later on a loaded machine).
    stopped_at = time.time()
    out = role.result()
    if out.get("outcome") in (None, "none"):
        # No notice to the client: the model's "none" (a session refused or
        # never reached), which a live side shows as its time limit passing
        # (generators.ltp.outcomes.outcome_name).
        out["outcome"] = "open"
        out["detail"] = (
            f"no outcome within the time limit of {limits.time_limit_s:g} s"
            if timed_out
            else "the session ended with no notice to the client (the model's 'none')"
        )
    out.setdefault("role", role.name)
    out["stopped_at"] = stopped_at  # suts/base.parse_result: the trace's exit
    out["tester"] = {"sent": ctx.sent, "received": ctx.received, "timed_out": timed_out}
    return out


def emit(obj: dict[str, Any], stream: TextIO = sys.stdout) -> None:
    """The last line of a role's stdout: its result object."""
    stream.write(json.dumps(obj, default=str) + "\n")
    stream.flush()


def open_socket(listen: tuple[str, int]) -> socket.socket:
    """The role's UDP socket on ``listen``, its receive buffer 16 MiB (past
    net.core.rmem_max with CAP_NET_ADMIN, which a run's namespaces give
    it): the tester reads between its steps, and a burst it has not read
    yet must wait in the kernel, not be dropped there (a drop makes the run
    an error: conformance/runner.py ``socket_overflowed``; suts/sockbuf.py)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    raise_receive_buffer(sock)
    sock.bind(listen)
    return sock


def log_path(run_dir: Path, role: str) -> Path:
    return run_dir / f"tester-{role}.jsonl"
