"""`dtnconform bench NAME`: human-readable lines, then ONE JSON object of all
figures on the last line (the convention every benchmark follows).

Figures that are compared are ratios measured in the same run: machines here
are noisy, absolute numbers are not.

The benchmarks are LTP's (:data:`PROTOCOL`): what is protocol-specific in
them, the codec and the traffic they time, is the protocol's ``bench``
capability (LTP's: dissectors/ltp/bench.py), its model the ``checker``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping

from rich.console import Console

from conformance import protocols
from conformance.channel.bench import bench_emulator
from conformance.core.capabilities import BenchTraffic
from conformance.core.contract import ProtocolSpec
from conformance.core.errors import DtncError, InputError

# One figure of a benchmark's JSON line: a number, a status, a flag.
Figure = float | str | bool | None

# The protocol every benchmark but the emulator's runs on: their figures,
# recorded in docs/measurements.md, are LTP's.
PROTOCOL = "ltp"


def _spec() -> ProtocolSpec:
    """The benchmarked protocol: this command's one registry lookup."""
    return protocols.get(PROTOCOL)


def _traffic() -> tuple[ProtocolSpec, BenchTraffic]:
    spec = _spec()
    return spec, spec.need("bench", spec.capabilities.bench)


def bench_codec(out: Console) -> dict[str, Figure]:
    """LTP Scapy layer: strict parse, build and classify rate of a mixed segment
    stream, and the cost of classify() relative to parse()."""
    spec, traffic = _traffic()
    parse, classify = traffic.parse, traffic.classify
    segs = traffic.mixed_units()
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
    out.print(f"parse    {parse_rate:12,.0f} {spec.unit}s/s")
    out.print(f"build    {build_rate:12,.0f} {spec.unit}s/s")
    out.print(f"classify {classify_rate:12,.0f} {spec.unit}s/s")
    return {
        "parse_per_s": round(parse_rate),
        "build_per_s": round(build_rate),
        "classify_per_s": round(classify_rate),
        "classify_over_parse_time": round(parse_rate / classify_rate, 3),
    }


def bench_tlc(out: Console) -> dict[str, Figure]:
    """TLC on the LTP model's CI bound: states, seconds, states per second."""
    spec = _spec()
    res = spec.need("checker", spec.capabilities.checker).check("ci")
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


# bench validate: the transfer's blocks are at most this long (one session
# each), a block size LTP deployments use; 10 MB is one block
VALIDATE_BLOCK = 10_000_000


def bench_validate(out: Console, size: int = 10_000_000) -> dict[str, Figure]:
    """Trace validation of an all-red LTP transfer (10 MB: about 7,000
    segments): decode both captures, write the trace, TLC with the
    obligations on; target 10 s per 10 MB. ``size``: larger transfers go in
    blocks of VALIDATE_BLOCK bytes, one session each."""
    import tempfile
    from pathlib import Path

    from conformance import pcapkit, tracecheck
    from conformance.runner import PORTS
    from conformance.segments import records_from_captures

    spec, traffic = _traffic()
    port = PORTS[spec.name]
    block = min(size, VALIDATE_BLOCK)
    if size % block:
        raise InputError(f"--size {size:,} bytes: above {block:,}, a whole number of such blocks")
    out.print(f"crafting {size:,} bytes in {size // block} block(s) of {block:,} (not timed)")
    transfer = traffic.crafted_transfer(size, 1400, block)
    wire = pcapkit.Wire(port=port, delay=0.010)
    for t, direction, payload in transfer.datagrams:
        wire.send(t, direction, payload)
    with tempfile.TemporaryDirectory(prefix="dtnc-bench-validate-") as tmp:
        folder = Path(tmp)
        a, b = wire.write(folder)
        t0 = time.perf_counter()
        records = records_from_captures(spec, a, b, port=port, ip_a=pcapkit.IP_A)
        t1 = time.perf_counter()
        exits = {"sender": wire.t0 + transfer.end, "receiver": wire.t0 + transfer.end}
        tc = tracecheck.check(
            spec, transfer.scenario, records, a, b, port=port, ip_a=pcapkit.IP_A, exits=exits,
            workdir=folder / "trace", out=folder / "trace.ndjson",
        )  # fmt: skip
        t2 = time.perf_counter()
    target = 10 * size / 10_000_000
    out.print(f"{len(records):,} {spec.unit}s, {tc.lines:,} trace lines, "
              f"{tc.sessions} session(s): {tc.status}")  # fmt: skip
    out.print(f"decode {t1 - t0:.1f} s, trace validation {t2 - t1:.1f} s "
              f"(TLC {tc.seconds:.1f} s, {tc.states:,} states); together {t2 - t0:.1f} s, "
              f"target {target:g} s")  # fmt: skip
    return {
        "bytes": size,
        "blocks": size // block,
        "segments": len(records),
        "trace_lines": tc.lines,
        "status": tc.status,
        "decode_s": round(t1 - t0, 2),
        "validate_s": round(t2 - t1, 2),
        "total_s": round(t2 - t0, 2),
        "tlc_s": tc.seconds,
        "states": tc.states or 0,
        "target_total_s": target,
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
    from conformance.runner import PORTS

    spec, traffic = _traffic()
    port, ours_proto, builtin = PORTS[spec.name], spec.dissector, traffic.BUILTIN_PROTO
    quick = os.environ.get("DTNC_BENCH_QUICK") == "1"
    sessions, per = (6, 500) if quick else (30, 1500)
    wire = pcapkit.Wire(port=port)
    t = 0.0
    for payload in traffic.capture_units(sessions, per):
        wire.send(t, "forward", payload, lost=True)
        t += 1e-4
    ours = ["-X", f"lua_script:{ours_proto.lua}", "--disable-protocol", builtin]
    runs = {
        # decoding alone, as the built-in (4.0 has no session analysis)
        "ours": [*ours, "-o", f"{ours_proto.proto}.{ours_proto.analysis_pref}:FALSE"],
        # with our session analysis, the preference's default
        "ours_analysis": ours,
        "builtin": ["-d", f"udp.port=={port},{builtin}"],
        "plain_udp": ["--disable-protocol", builtin],
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


def bench_mutate(out: Console) -> dict[str, Figure]:
    """The mutation score of LTP's suite on licklider-core (docs/mutation.md)"""
    import os
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    # issue 31's budget: a --sample 40 run under two hours on two cores
    n = 4 if os.environ.get("DTNC_BENCH_QUICK") else 40
    seed, lanes = 31, min(2, os.cpu_count() or 1)
    with tempfile.TemporaryDirectory(prefix="dtnc-bench-mutate-") as tmp:
        where = Path(tmp) / "mutate"
        cmd = [sys.executable, "-m", "conformance.cli", "mutate", PROTOCOL, "--sut", "licklider",
               "--sample", str(n), "--seed", str(seed), "--lanes", str(lanes), "--out", str(where)]  # fmt: skip
        out.print(f"dtnconform mutate {PROTOCOL} --sut licklider --sample {n} --seed {seed}")
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        seconds = time.perf_counter() - t0
        result = where / "mutation.json"
        if proc.returncode not in (0, 1) or not result.is_file():
            raise DtncError(f"mutate failed (exit {proc.returncode}): {proc.stderr[-600:]}")
        m = json.loads(result.read_text(encoding="utf-8"))
    out.print(
        f"score {m['score']}: {m['killed']} killed, {m['survived']} survived "
        f"({m['equivalent']} equivalent), {m['trivially_killed']} trivially killed, "
        f"in {seconds / 60:.1f} min (budget 120 min)"
    )
    return {
        "sut": "licklider",
        "sample": n,
        "seed": seed,
        "lanes": lanes,
        "score": m["score"],
        "killed": m["killed"],
        "survived": m["survived"],
        "equivalent": m["equivalent"],
        "trivially_killed": m["trivially_killed"],
        "gaps_open": len(m.get("gaps_open", [])),
        "judges": json.dumps(m["judges"], sort_keys=True),
        "seconds": round(seconds, 1),
        "budget_s": 7200.0,
    }


BENCHES: dict[str, Callable[[Console], Mapping[str, Figure]]] = {
    "codec": bench_codec,
    "tlc": bench_tlc,
    "emulator": bench_emulator,
    "validate": bench_validate,
    "dissect": bench_dissect,
    "mutate": bench_mutate,
}


def run(name: str, out: Console, size: int | None = None) -> int:
    if name == "list":
        for key, fn in BENCHES.items():
            out.print(f"{key:8} {(fn.__doc__ or '').splitlines()[0]}")
        print(json.dumps({"benches": sorted(BENCHES)}))
        return 0
    if name not in BENCHES:
        raise InputError(f"unknown benchmark {name!r} (one of: {', '.join(sorted(BENCHES))}, list)")
    if size is not None and name != "validate":
        raise InputError(f"--size is for `bench validate`, not {name!r}")
    figures = bench_validate(out, size) if size is not None else BENCHES[name](out)
    print(json.dumps({"bench": name, **figures}, sort_keys=True))
    return 0
