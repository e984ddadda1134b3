"""`dtnconform bench NAME`: human-readable lines, then ONE JSON object of all
figures on the last line (the convention every benchmark follows).

Figures that are compared are ratios measured in the same run: machines here
are noisy, absolute numbers are not.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from rich.console import Console

from conformance.bench_emulator import bench_emulator
from conformance.errors import InputError


def bench_codec(out: Console) -> dict[str, float]:
    """LTP Scapy layer: strict parse, build and classify rate of a mixed segment
    stream, and the cost of classify() relative to parse()."""
    from dissectors.ltp.layer import LTP, classify, parse

    segs = [
        LTP(type=0, session_originator=1, session_number=99, client_service_id=1,
            offset=i * 1000, data=bytes(1000))
        for i in range(8)
    ] + [
        LTP(type=8, session_originator=1, session_number=99, report_serial=7,
            checkpoint_serial=3, upper_bound=8000, lower_bound=0,
            claims=[(0, 3000), (4000, 4000)]),
        LTP(type=9, session_originator=1, session_number=99, report_serial=7),
    ]  # fmt: skip
    wire = [bytes(s) for s in segs]
    n = 20000

    def rate(fn: Callable[[], None]) -> float:
        t0 = time.perf_counter()
        for _ in range(n // len(wire)):
            fn()
        return n / (time.perf_counter() - t0)

    parse_rate = rate(lambda: [parse(w) for w in wire] and None)
    build_rate = rate(lambda: [bytes(s) for s in segs] and None)
    parsed = [parse(w) for w in wire]
    classify_rate = rate(lambda: [classify(p) for p in parsed] and None)
    out.print(f"parse    {parse_rate:12,.0f} segments/s")
    out.print(f"build    {build_rate:12,.0f} segments/s")
    out.print(f"classify {classify_rate:12,.0f} segments/s")
    return {
        "parse_per_s": round(parse_rate),
        "build_per_s": round(build_rate),
        "classify_per_s": round(classify_rate),
        "classify_over_parse_time": round(parse_rate / classify_rate, 3),
    }


def bench_tlc(out: Console) -> dict[str, float]:
    """TLC on the LTP model's CI bound: states, seconds, states per second."""
    from generators import ltp as gen

    res = gen.check("ci")
    rate = res.distinct_states / res.seconds if res.seconds else 0.0
    out.print(f"TLC {res.version}: {res.distinct_states:,} distinct states, depth {res.depth}, "
              f"{res.seconds:.1f} s ({rate:,.0f} distinct states/s)")  # fmt: skip
    return {
        "distinct_states": res.distinct_states,
        "states_generated": res.states_generated,
        "depth": res.depth,
        "seconds": round(res.seconds, 2),
        "distinct_states_per_s": round(rate),
        "ok": res.ok,
    }


BENCHES: dict[str, Callable[[Console], dict[str, float]]] = {
    "codec": bench_codec,
    "tlc": bench_tlc,
    "emulator": bench_emulator,
}


def run(name: str, out: Console) -> int:
    if name == "list":
        for key, fn in BENCHES.items():
            out.print(f"{key:8} {(fn.__doc__ or '').splitlines()[0]}")
        print(json.dumps({"benches": sorted(BENCHES)}))
        return 0
    if name not in BENCHES:
        raise InputError(f"unknown benchmark {name!r} (one of: {', '.join(sorted(BENCHES))}, list)")
    figures = BENCHES[name](out)
    print(json.dumps({"bench": name, **figures}, sort_keys=True))
    return 0
