"""The endpoints' timers and the run's time limit, derived from the channel.

RFC 5326 §6.2 (and §6.3, §6.15) starts a retransmission timer when a
checkpoint, report or cancel segment is de-queued for transmission, set to
the expected arrival time of its acknowledgment. RFC 5325 §3.1.3 spells out
what that round trip holds: the round-trip light time, the radiation
(serialization) time of the original segment and of the acknowledging one,
outbound queuing, and "an arbitrary margin for any additional anticipated
latency"; a late timer only costs a little delay, an early one costs
needless retransmission. In our set-up the endpoints' socket is the point of
de-queuing, but the channel emulator holds its own FIFO rate queue after it:
a checkpoint (or an RA) sent at the end of a block waits there behind every
data segment sent before it. So, with the resolved channel's worst figures
(its link settings and every timeline event)::

    retransmission = delay(forward) + delay(return)
                   + serialization at the forward rate of the whole block's
                     data segments (payload, protocol header, UDP/IPv4/Ethernet)
                   + serialization at the return rate of one report segment
                   + margin

    linger     = max(2 × (delay(forward) + delay(return)) + margin, 2 × retransmission)
    close wait = retransmission
    time limit = (retransmission limit + 2) × 2 × retransmission
                 + block serialization + linger + extra rule delays + 5 s,
                 at most 24 h

Field-keyed ``delay`` and ``outage`` impairments are left out of the timers on
purpose: a scenario that delays one segment, or takes the link down, usually
does so to make a timer expire. They lengthen the time limit instead. Outages are left out too: licklider has no
link-state cues (§6.5, §6.6), its timers run on through an outage, so the
retransmission limits bound a session's life whatever the outages.

Everything here is protocol-free except :func:`queued_bytes`, which says how
many bytes one transfer can put in the channel's queues ahead of an
acknowledged segment.

A scenario's ``timers.retransmission_ms``, ``timers.linger_ms`` and
``time_limit_s`` override the derived values; :func:`warnings` says when an
explicit value is below what the channel needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from conformance.core.types import DirectionChannel, Scenario

# A late answer, told from a deviation: the reaction time trace validation
# tries a rejected trace again with (conformance/tracecheck.py's late pass),
# as a share of the retransmission interval. An answer later than the
# reaction window but earlier than any timer could have made the peer send
# again is only slow (a loaded machine); one later than that may answer the
# retransmission, not the first unit, and stays a deviation.
LATE_SHARE = 0.9

# The slack on top of the worst session path: start-up of the endpoints and
# scheduling on a loaded machine.
SLACK_S = 5.0
# The longest a run may be allowed (the scenario schema's own bound).
TIME_LIMIT_CAP_S = 86_400.0

_NAMES = ("retransmission_ms", "linger_ms", "close_wait_ms", "time_limit_s")


@dataclass(frozen=True)
class PathFigures:
    """The worst figures of the resolved channel, each direction: the
    longest one-way delay and the slowest rate (0 = unlimited) over the link
    settings and every timeline event."""

    fwd_delay_ms: float
    ret_delay_ms: float
    fwd_rate_bps: float
    ret_rate_bps: float

    @property
    def round_trip_ms(self) -> float:
        return self.fwd_delay_ms + self.ret_delay_ms


@dataclass(frozen=True)
class DerivedTimers:
    """Every timer value for one scenario, and where each came from."""

    retransmission_ms: float
    """Retransmission timer of checkpoints, reports and cancels."""
    linger_ms: float
    """How long each endpoint keeps serving after its session ended."""
    close_wait_ms: float
    """Receiver: how long, once nothing of its own is outstanding, it waits
    for a session that delivered its red part to close (licklider never
    closes one whose green EOB was lost)."""
    time_limit_s: float
    """The longest the run may take; open sessions then count as 'open'."""
    margin_ms: float
    path: PathFigures
    serialization_ms: float
    """Forward serialization of the block plus return serialization of one
    report: the part of the timer that is not propagation."""
    block_serialization_ms: float
    capped: bool = False
    """The derived time limit hit TIME_LIMIT_CAP_S."""
    explicit: frozenset[str] = field(default_factory=frozenset)
    """Names of the values the scenario set itself; the others are derived."""

    @property
    def derived(self) -> frozenset[str]:
        return frozenset(_NAMES) - self.explicit

    @property
    def round_trip_ms(self) -> float:
        return self.path.round_trip_ms

    @property
    def needed_ms(self) -> float:
        """The least a retransmission timer may be: the round trip and the
        serialization, with no margin."""
        return self.path.round_trip_ms + self.serialization_ms

    def as_dict(self) -> dict[str, float | str]:
        """Flat, JSON-ready figures, each value tagged derived or explicit."""
        out: dict[str, float | str] = {
            name: round(float(getattr(self, name)), 3) for name in _NAMES
        }
        out |= {f"{name}.source": "explicit" if name in self.explicit else "derived"
                for name in _NAMES}  # fmt: skip
        out |= {
            "margin_ms": self.margin_ms,
            "round_trip_ms": round(self.round_trip_ms, 3),
            "serialization_ms": round(self.serialization_ms, 3),
        }
        return out


def _worst(d: DirectionChannel) -> tuple[float, float]:
    """(longest delay ms, slowest positive rate b/s or 0) of one direction."""
    delays = [d.link.delay_ms, *(e.set.delay_ms for e in d.timeline if e.set.delay_ms is not None)]
    rates = [d.link.rate_bps, *(e.set.rate_bps for e in d.timeline if e.set.rate_bps is not None)]
    limited = [r for r in rates if r > 0]
    return max(delays), min(limited) if limited else 0.0


def path_figures(scn: Scenario) -> PathFigures:
    """The scenario's channel, profile merged in, reduced to its worst figures."""
    from conformance.channel.control import resolve

    fwd, ret, _k = resolve(scn.channel)
    fd, fr = _worst(fwd)
    rd, rr = _worst(ret)
    return PathFigures(fwd_delay_ms=fd, ret_delay_ms=rd, fwd_rate_bps=fr, ret_rate_bps=rr)


def queued_bytes(scn: Scenario) -> tuple[int, int]:
    """(forward, return) frame bytes one transfer may have queued ahead of
    an acknowledged unit (the protocol's parameters know their sizes)."""
    return scn.params.queued_bytes(scn.channel.mtu)


def _ser_ms(nbytes: int, rate_bps: float) -> float:
    return 0.0 if rate_bps <= 0 else nbytes * 8 * 1000.0 / rate_bps


def _retransmission_limit(scn: Scenario) -> int:
    return scn.params.retx_limit()


def derive(scn: Scenario) -> DerivedTimers:
    """Every timer of ``scn``: the scenario's own values where it gives
    them, the rest derived from its channel (module docstring)."""
    path = path_figures(scn)
    fwd_bytes, ret_bytes = queued_bytes(scn)
    block_ser = _ser_ms(fwd_bytes, path.fwd_rate_bps)
    ser = block_ser + _ser_ms(ret_bytes, path.ret_rate_bps)
    margin = scn.timers.margin_ms
    explicit: set[str] = set()

    if scn.timers.retransmission_ms is not None:
        rtx = scn.timers.retransmission_ms
        explicit.add("retransmission_ms")
    else:
        rtx = float(math.ceil(path.round_trip_ms + ser + margin))

    if scn.timers.linger_ms is not None:
        linger = scn.timers.linger_ms
        explicit.add("linger_ms")
    else:
        # Two round trips, and at least two timer periods: a peer that lost
        # our last segment's answer retransmits one timer period later (RFC
        # 5326 §6.7, §6.8, §6.16), and must still meet an engine, not an
        # ICMP port-unreachable.
        linger = float(math.ceil(max(2 * path.round_trip_ms + margin, 2 * rtx)))

    close_wait = rtx

    capped = False
    if scn.time_limit_s is not None:
        limit = scn.time_limit_s
        explicit.add("time_limit_s")
    else:
        extra_ms = sum(
            i.delay_ms * i.count for i in scn.impairments if i.action in ("delay", "outage")
        )
        worst_ms = (_retransmission_limit(scn) + 2) * 2 * rtx + block_ser + linger + extra_ms
        limit = math.ceil(worst_ms / 1000.0 + SLACK_S)
        if limit > TIME_LIMIT_CAP_S:
            limit, capped = TIME_LIMIT_CAP_S, True
        limit = float(limit)

    return DerivedTimers(
        retransmission_ms=rtx,
        linger_ms=linger,
        close_wait_ms=close_wait,
        time_limit_s=limit,
        margin_ms=margin,
        path=path,
        serialization_ms=ser,
        block_serialization_ms=block_ser,
        capped=capped,
        explicit=frozenset(explicit),
    )


def warnings(scn: Scenario, timers: DerivedTimers | None = None) -> list[str]:
    """Sentences about explicit values the channel cannot honour, for the
    user to read before the run: a retransmission timer below the round trip
    plus serialization (every acknowledgment arrives after its timer has
    expired, RFC 5326 §6.2, RFC 5325 §3.1.3), a time limit shorter than one
    round trip, a derived time limit cut at its cap."""
    t = timers or derive(scn)
    out: list[str] = []
    if "retransmission_ms" in t.explicit and t.retransmission_ms < t.needed_ms:
        out.append(
            f"timers.retransmission_ms {t.retransmission_ms:g} ms is below the channel's round "
            f"trip {t.round_trip_ms:g} ms + serialization {t.serialization_ms:.1f} ms "
            f"= {t.needed_ms:.1f} ms: every timer will expire before its acknowledgment can "
            f"arrive (RFC 5326 §6.2; the derived value would be "
            f"{math.ceil(t.needed_ms + t.margin_ms)} ms)"
        )
    tester = scn.timers.tester_retransmission_ms
    if tester is not None and tester < t.needed_ms:
        out.append(
            f"timers.tester_retransmission_ms {tester:g} ms is below the channel's round trip "
            f"with serialization ({t.needed_ms:.1f} ms): the tester's timers would expire "
            "before their answers could arrive, which the model excludes (a tester-deviation "
            "error, RFC 5326 §6.2)"
        )
    if "time_limit_s" in t.explicit and t.time_limit_s * 1000 < t.needed_ms:
        out.append(
            f"time_limit_s {t.time_limit_s:g} s is shorter than one round trip with "
            f"serialization ({t.needed_ms / 1000:.1f} s): no session can complete"
        )
    if t.capped:
        out.append(
            f"the derived time limit was cut to {TIME_LIMIT_CAP_S:g} s; the worst path the "
            f"retransmission limits allow may take longer"
        )
    if scn.channel.fragment and scn.impairments:
        out.append(
            "channel.fragment: datagrams over the MTU cross as IP fragments, which the channel "
            "does not classify; impairments cannot see those segments"
        )
    return out
