"""A campaign run's figures, from its captures (``segments.jsonl``: each
unit's time on the sending side, size and whether the channel delivered it)
and its result, as the NASA Glenn study defines them:

- goodput: the bytes delivered to the receiving user, in bits per second
  over the time to close; throughput: the bytes put on the forward link
  (headers and retransmissions too) over the same time;
- units and bytes each way, as sent;
- retransmissions: data units (the protocol's ``data_span``) that carry
  data already sent once;
- time to last data (from the first unit sent to the arrival of the last
  data unit) and time to close (to the arrival of the last unit either side
  sent); an arrival is the sending time plus the direction's delay (the
  captures' sending side is the one whose clock both share);
- efficiency: the physical minimum over the time to close, where the
  physical minimum is size / rate + the one-way delay + the closing round
  trip (:func:`physical_minimum`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from conformance.channel import control as emulator
from conformance.core.contract import ProtocolSpec
from conformance.core.types import Channel


def physical_minimum(size: int, channel: Channel) -> float:
    """Seconds the link itself needs to move ``size`` bytes and close: the
    serialisation at the forward rate (unlimited: none), the forward delay,
    and a round trip for the closing exchange."""
    fwd, ret, _k = emulator.resolve(channel)
    rate = fwd.link.rate_bps
    serial = size * 8 / rate if rate else 0.0
    return serial + fwd.link.delay_ms / 1000 + (fwd.link.delay_ms + ret.link.delay_ms) / 1000


@dataclass
class Metrics:
    size: int
    delivered_bytes: int
    goodput_bps: float | None
    throughput_bps: float | None
    units_forward: int
    units_return: int
    bytes_forward: int
    bytes_return: int
    lost_forward: int
    lost_return: int
    data_units: int
    retransmissions: int
    time_to_last_data_s: float | None
    time_to_close_s: float | None
    physical_minimum_s: float
    efficiency: float | None
    duration_s: float | None  # the run's, set-up excluded (result.json)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def of_run(run_dir: Path, spec: ProtocolSpec, size: int, channel: Channel) -> Metrics:
    """The figures of one finished run (missing files: what can be told)."""
    phys_min_s = physical_minimum(size, channel)
    f_dir, r_dir, _k = emulator.resolve(channel)
    delay = {"forward": f_dir.link.delay_ms / 1000, "return": r_dir.link.delay_ms / 1000}
    segs = []
    path = run_dir / "segments.jsonl"
    if path.is_file():
        segs = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    result: dict[str, Any] = {}
    if (run_dir / "result.json").is_file():
        result = json.loads((run_dir / "result.json").read_text(encoding="utf-8"))
    fwd = [s for s in segs if s["direction"] == "forward"]
    ret = [s for s in segs if s["direction"] == "return"]
    seen: set[tuple[int, int]] = set()
    data_units = retx = 0
    last_data: float | None = None
    for s in sorted(fwd, key=lambda s: s["time"]):
        span = spec.data_span(s.get("fields", {}))
        if span is None:
            continue
        data_units += 1
        if span in seen:
            retx += 1
        seen.add(span)
        last_data = s["time"] + delay["forward"]
    times = [s["time"] for s in segs]
    ends = [s["time"] + delay[s["direction"]] for s in segs if not s.get("dropped")]
    t0 = min(times) if times else None
    close = (max(ends) - t0) if (t0 is not None and ends) else None
    to_last = (last_data - t0) if (last_data is not None and t0 is not None) else None
    delivered = int(result.get("delivered_bytes") or 0)
    sent_fwd = sum(int(s["length"]) for s in fwd)
    per_s = close if close and close > 0 else None
    return Metrics(
        size=size,
        delivered_bytes=delivered,
        goodput_bps=delivered * 8 / per_s if per_s else None,
        throughput_bps=sent_fwd * 8 / per_s if per_s else None,
        units_forward=len(fwd),
        units_return=len(ret),
        bytes_forward=sent_fwd,
        bytes_return=sum(int(s["length"]) for s in ret),
        lost_forward=sum(1 for s in fwd if s.get("dropped")),
        lost_return=sum(1 for s in ret if s.get("dropped")),
        data_units=data_units,
        retransmissions=retx,
        time_to_last_data_s=to_last,
        time_to_close_s=close,
        physical_minimum_s=phys_min_s,
        efficiency=(phys_min_s / close) if close else None,
        duration_s=result.get("duration_s"),
    )
