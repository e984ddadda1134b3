"""`dtnconform bench NAME`: human-readable lines, then ONE JSON object of all
figures on the last line (the convention every benchmark follows).

Figures that are compared are ratios measured in the same run: machines here
are noisy, absolute numbers are not.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from rich.console import Console

from conformance.channel.bench import bench_emulator
from conformance.core.errors import DtncError, InputError

# One figure of a benchmark's JSON line: a number, a status, a flag.
Figure = float | str | bool | None


def bench_codec(out: Console) -> dict[str, Figure]:
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

    def rate(fn: Callable[[], object]) -> float:
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


def bench_tlc(out: Console) -> dict[str, Figure]:
    """TLC on the LTP model's CI bound: states, seconds, states per second."""
    from generators.ltp import purposes as gen

    res = gen.check("ci")
    states = res.distinct_states
    if states is None:  # TLC ended before its statistics
        raise DtncError(f"TLC reported no distinct states (log: {res.log_path})")
    rate = states / res.seconds if res.seconds else 0.0
    out.print(f"TLC {res.version}: {states:,} distinct states, depth {res.depth}, "
              f"{res.seconds:.1f} s ({rate:,.0f} distinct states/s)")  # fmt: skip
    return {
        "distinct_states": states,
        "states_generated": res.states_generated,
        "depth": res.depth,
        "seconds": round(res.seconds, 2),
        "distinct_states_per_s": round(rate),
        "ok": res.ok,
    }


def bench_validate(out: Console) -> dict[str, Figure]:
    """Trace validation of a 10 MB all-red LTP transfer (about 7,000 segments):
    decode both captures, write the trace, TLC; target under 10 s."""
    import tempfile
    from pathlib import Path

    from conformance import pcapkit, protocols, tracecheck
    from conformance.core.types import Scenario
    from conformance.segments import records_from_captures
    from dissectors.ltp.layer import LTP

    spec = protocols.get("ltp")  # this benchmark's entry point
    size, seg = 10_000_000, 1400
    n = -(-size // seg)
    scn = Scenario.model_validate(
        {"name": "bench-validate", "protocol": "ltp",
         "params": {"block_len": size, "red_len": size, "segment_size": seg,
                    "retransmission_limit": 1},
         "timers": {"retransmission_ms": 1000.0},
         "expect": {"outcomes": [{"sender_outcome": "completed", "receiver_outcome": "completed",
                                  "delivered": {"protocol": "ltp", "red_bytes_delivered": size,
                                                "green_bytes_delivered": 0}}]}}
    )  # fmt: skip
    wire = pcapkit.Wire(port=1113, delay=0.010)
    t, gap = 0.0, seg * 8 / 100e6  # 100 Mb/s
    for i in range(n):
        off = i * seg
        last = i == n - 1
        body = bytes(min(seg, size - off))
        kind = "RD-CP-EORP-EOB" if last else "RD"
        # (scapy's Packet takes its fields as **Any)
        extra: dict[str, Any] = {"checkpoint_serial": 5, "report_serial": 0} if last else {}
        s = LTP(type=kind, session_originator=1, session_number=9, client_service_id=1,
                offset=off, data=body, **extra)  # fmt: skip
        wire.send(t, "forward", bytes(s))
        t += gap
    rs = LTP(type="RS", session_originator=1, session_number=9, report_serial=8,
             checkpoint_serial=5, upper_bound=size, lower_bound=0, claims=[(0, size)])  # fmt: skip
    wire.send(t + 0.011, "return", bytes(rs))
    wire.send(t + 0.022, "forward", bytes(LTP(type="RA", session_originator=1,
                                               session_number=9, report_serial=8)))  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="dtnc-bench-validate-") as tmp:
        folder = Path(tmp)
        a, b = wire.write(folder)
        t0 = time.perf_counter()
        records, _ = records_from_captures(spec, a, b, port=1113, ip_a=pcapkit.IP_A)
        t1 = time.perf_counter()
        exits = {"sender": wire.t0 + t + 0.05, "receiver": wire.t0 + t + 0.05}
        tc = tracecheck.check(
            spec, scn, records, a, b, port=1113, ip_a=pcapkit.IP_A, exits=exits,
            workdir=folder / "trace", out=folder / "trace.ndjson",
        )  # fmt: skip
        t2 = time.perf_counter()
    out.print(f"{len(records):,} segments, {tc.lines:,} trace lines: {tc.status}")
    out.print(f"decode {t1 - t0:.1f} s, trace validation {t2 - t1:.1f} s "
              f"(TLC {tc.seconds:.1f} s, {tc.states:,} states)")  # fmt: skip
    return {
        "segments": len(records),
        "trace_lines": tc.lines,
        "status": tc.status,
        "decode_s": round(t1 - t0, 2),
        "validate_s": round(t2 - t1, 2),
        "tlc_s": tc.seconds,
        "states": tc.states or 0,
        "target_validate_s": 10,
    }


def bench_dissect(out: Console) -> dict[str, Figure]:
    """Our Lua LTP dissector against Wireshark's built-in C one, whole tshark
    runs (-V) over the same 45,000-frame capture; target: ours at least half
    as fast as the built-in (decoding alone, as the built-in 4.0 does; the
    session analysis is timed too)."""
    import os
    import subprocess
    import tempfile
    from pathlib import Path

    from conformance import pcapkit
    from dissectors.ltp.layer import LTP
    from dissectors.tshark import dissector

    quick = os.environ.get("DTNC_BENCH_QUICK") == "1"
    sessions, per = (6, 500) if quick else (30, 1500)
    wire = pcapkit.Wire(port=1113)
    t = 0.0
    for n in range(sessions):
        for i in range(per):
            last = i == per - 1
            extra: dict[str, Any] = {"checkpoint_serial": 7 + n, "report_serial": 0} if last else {}
            seg = LTP(type="RD-CP-EORP-EOB" if last else "RD", session_originator=1,
                      session_number=1000 + n, client_service_id=1, offset=i * 1024,
                      data=bytes(1024), **extra)  # fmt: skip
            wire.send(t, "forward", bytes(seg), lost=True)
            t += 1e-4
    lua = dissector("ltp").lua
    ours = ["-X", f"lua_script:{lua}", "--disable-protocol", "ltp"]
    runs = {
        # decoding alone, as the built-in (4.0 has no session analysis)
        "ours": [*ours, "-o", "dtnltp.analysis:FALSE"],
        # with our session analysis, the preference's default
        "ours_analysis": ours,
        "builtin": ["-d", "udp.port==1113,ltp"],
        "plain_udp": ["--disable-protocol", "ltp"],
    }
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="dtnc-bench-dissect-") as tmp:
        a, _b = wire.write(Path(tmp))
        frames = sessions * per
        for _trial in range(2 if quick else 3):
            for name, args in runs.items():
                t0 = time.perf_counter()
                subprocess.run(
                    ["tshark", "-n", "-r", str(a), "-V", *args],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                )  # fmt: skip
                best[name] = min(best.get(name, 1e9), time.perf_counter() - t0)
    for name, secs in best.items():
        out.print(f"{name:14} {secs:6.2f} s  ({frames / secs:,.0f} frames/s)")
    ratio = best["builtin"] / best["ours"]
    with_analysis = best["builtin"] / best["ours_analysis"]
    out.print(
        f"ours decodes at {ratio:.2f}x the built-in's speed (target 0.5x); "
        f"{with_analysis:.2f}x with session analysis on"
    )
    return {
        "frames": frames,
        "ours_s": round(best["ours"], 2),
        "ours_analysis_s": round(best["ours_analysis"], 2),
        "ours_analysis_over_builtin_speed": round(with_analysis, 3),
        "builtin_s": round(best["builtin"], 2),
        "plain_udp_s": round(best["plain_udp"], 2),
        "ours_over_builtin_speed": round(ratio, 3),
        "target_speed_ratio": 0.5,
    }


BENCHES: dict[str, Callable[[Console], Mapping[str, Figure]]] = {
    "codec": bench_codec,
    "tlc": bench_tlc,
    "emulator": bench_emulator,
    "validate": bench_validate,
    "dissect": bench_dissect,
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
