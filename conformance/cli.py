"""The `dtnconform` command line.

Every subcommand has --help; bad input ends with exit 2 and one line naming
what is wrong; long work shows a progress bar.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
from pathlib import Path
from typing import NoReturn

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from conformance.errors import DtncError, InputError

REPO = Path(__file__).resolve().parent.parent
PROTOCOLS_READY = ("ltp",)
console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, highlight=False)

STATUS_STYLE = {"pass": "green", "fail": "red", "inconclusive": "yellow", "error": "magenta"}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _progress() -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    )


def _protocol(name: str) -> str:
    if name not in PROTOCOLS_READY:
        known = ("ltp", "cfdp", "norm", "saratoga")
        if name in known:
            raise InputError(
                f"protocol {name!r} has no model yet (ready: {', '.join(PROTOCOLS_READY)})"
            )
        raise InputError(f"unknown protocol {name!r} (one of: {', '.join(known)})")
    return name


# ---------------------------------------------------------------------------
# check
# ---------------------------------------------------------------------------


def cmd_check(args: argparse.Namespace) -> int:
    _protocol(args.protocol)
    from generators import ltp as gen

    with _progress() as prog:
        task = prog.add_task(f"TLC {args.protocol} ({args.bound})", total=None, info="starting")

        def on_progress(p: object) -> None:
            distinct = getattr(p, "distinct_states", None)
            queue = getattr(p, "queue", None)
            prog.update(task, info=f"{distinct or 0:,} distinct states, queue {queue or 0:,}")

        res = gen.check(args.bound, progress=on_progress)
    table = Table(title=f"{res.version}: specs/{args.protocol}, {args.bound} bound")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_row("distinct states", f"{res.distinct_states:,}")
    table.add_row("states generated", f"{res.states_generated:,}")
    table.add_row("depth", str(res.depth))
    table.add_row("time", f"{res.seconds:.1f} s")
    console.print(table)
    props = Table(title="invariants and properties")
    props.add_column("name")
    props.add_column("kind")
    props.add_column("result")
    for p in res.properties:
        style = "green" if p.status == "ok" else "red"
        props.add_row(p.name, p.kind, f"[{style}]{p.status}[/]")
    console.print(props)
    if res.trace:
        console.print(gen.trace_table(res.trace))
    console.print(f"TLC log: {res.log_path}")
    return 0 if res.ok else 1


# ---------------------------------------------------------------------------
# generate
# ---------------------------------------------------------------------------


def cmd_generate(args: argparse.Namespace) -> int:
    _protocol(args.protocol)
    report = _generate(args.protocol, Path(args.out))
    return 0 if report.scenarios else 1


def _generate(protocol: str, out: Path) -> object:
    from generators import ltp as gen

    out.mkdir(parents=True, exist_ok=True)
    with _progress() as prog:
        task = prog.add_task(f"test purposes ({protocol})", total=None, info="")

        def on_purpose(done: int, total: int, name: str) -> None:
            prog.update(task, completed=done, total=total, info=name)

        report = gen.generate(out, on_purpose=on_purpose)
    table = Table(title=f"scenarios generated into {out}")
    table.add_column("purpose")
    table.add_column("status")
    table.add_column("trace states", justify="right")
    table.add_column("scenario")
    for p in report.purposes:
        style = "green" if p.status == "reached" else "yellow"
        table.add_row(p.purpose, f"[{style}]{p.status}[/]", str(p.trace_length or "-"),
                      p.scenario.name if p.scenario else p.detail)  # fmt: skip
    console.print(table)
    uncovered = report.actions_uncovered
    console.print(
        f"{len(report.scenarios)} scenarios from {len(report.purposes)} test purposes "
        f"({len(report.reached)} reached) in {report.tlc_seconds:.1f} s of TLC; "
        f"model action coverage {len(report.actions_covered)}/{len(report.actions_total)} "
        f"({100 * report.coverage:.0f} %)"
        + (f"; not covered: {', '.join(uncovered)}" if uncovered else "")
    )
    return report


# ---------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------


def _run_dir(base: Path | None, name: str) -> Path:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return (base or REPO / "runs") / f"{stamp}-{name}"


def cmd_run(args: argparse.Namespace) -> int:
    from conformance.runner import error_outcome, run_scenario
    from conformance.types import load_scenario
    from suts.base import get

    scn = load_scenario(Path(args.scenario))
    sut = get(args.sut)
    if scn.protocol != sut.protocol:
        raise InputError(f"{args.scenario}: a {scn.protocol} scenario cannot run on {sut.name}")
    run_dir = Path(args.out) if args.out else _run_dir(None, scn.name)
    with _progress() as prog:
        task = prog.add_task(f"{scn.name} on {sut.name}", total=None, info="")
        try:
            outcome = run_scenario(scn, sut, run_dir, step=lambda m: prog.update(task, info=m))
        except KeyboardInterrupt:
            error_outcome(scn, sut, run_dir, KeyboardInterrupt())
            err_console.print(f"interrupted; namespaces removed; partial run in {run_dir}")
            return 130
    print_verdicts([outcome])
    console.print(f"run directory: {run_dir}")
    return 0 if outcome.verdict.status == "pass" else 1


def print_verdicts(outcomes: list[object]) -> None:
    table = Table(title="verdicts")
    for col in ("scenario", "expected (red/green, tx/rx)", "observed", "segs fwd/ret", "verdict"):
        table.add_column(col)
    for o in outcomes:
        v = o.verdict  # type: ignore[attr-defined]
        r = o.result  # type: ignore[attr-defined]
        scn_file = o.run_dir / "scenario.json"  # type: ignore[attr-defined]
        exp = json.loads(scn_file.read_text())["expect"] if scn_file.exists() else {}
        expected = (
            f"{exp.get('red_bytes_delivered')}/{exp.get('green_bytes_delivered')}, "
            f"{exp.get('sender_outcome')}/{exp.get('receiver_outcome')}"
            if exp
            else "-"
        )
        observed = (
            f"{r.receiver.red_bytes_delivered}/{r.receiver.green_bytes_delivered}, "
            f"{r.sender.outcome}/{r.receiver.outcome}"
            if r
            else "-"
        )
        segs = (
            f"{r.segments.forward}/{r.segments.ret} ({r.dropped.forward}/{r.dropped.ret} dropped)"
            if r
            else "-"
        )
        style = STATUS_STYLE[v.status]
        table.add_row(v.scenario, expected, observed, segs, f"[{style}]{v.status}[/]")
    console.print(table)
    for o in outcomes:
        v = o.verdict  # type: ignore[attr-defined]
        for reason in v.reasons:
            if v.status != "pass":
                rule = f" [{reason.rule}]" if reason.rule else ""
                console.print(
                    f"  {v.scenario}: {reason.code}: {reason.message}{rule}", markup=False
                )


# ---------------------------------------------------------------------------
# certify
# ---------------------------------------------------------------------------


def cmd_certify(args: argparse.Namespace) -> int:
    _protocol(args.protocol)
    from conformance import certify
    from conformance.netns import require_root
    from suts.base import get

    require_root()
    sut = get(args.sut)
    out = Path(args.out) if args.out else _run_dir(None, f"certify-{args.protocol}-{sut.name}")
    out.mkdir(parents=True, exist_ok=True)
    _generate(args.protocol, out / "scenarios")
    with _progress() as prog:
        task = prog.add_task(f"certify {args.protocol} on {sut.name}", total=None, info="")

        def on_test(done: int, total: int, name: str) -> None:
            prog.update(task, completed=done, total=total, info=name)

        outcome = certify.certify(args.protocol, sut, out, on_test=on_test, only=args.only)
    print_verdicts(outcome.runs)
    console.print(f"Robot Framework log: {outcome.robot_log}")
    console.print(f"HTML report: {outcome.report}")
    return 0 if all(r.verdict.status == "pass" for r in outcome.runs) else 1


# ---------------------------------------------------------------------------
# validate, install-dissectors, schema, cleanup, bench
# ---------------------------------------------------------------------------


def cmd_validate(args: argparse.Namespace) -> int:
    _protocol(args.proto)
    from dissectors.tshark import decode

    cap = Path(args.capture)
    if not cap.is_file():
        raise InputError(f"{cap}: no such capture file")
    frames = decode(cap, port=args.port)
    table = Table(title=f"{cap}: {len(frames)} LTP segments")
    table.add_column("frame", justify="right")
    table.add_column("segment")
    table.add_column("findings")
    n_findings = 0
    for f in frames:
        notes = "; ".join(
            f"[{_sev_style(e)}]{e.get('name')}[/]: {e.get('message')}" for e in f.experts
        )
        n_findings += len(f.experts)
        if f.experts or args.all:
            table.add_row(str(f.number), f.summary, notes)
    console.print(table)
    console.print(f"{n_findings} conformance findings in {len(frames)} segments")
    return (
        1 if any(e.get("severity", "").lower() == "error" for f in frames for e in f.experts) else 0
    )


def _sev_style(exp: dict[str, object]) -> str:
    return {"error": "red", "warn": "yellow", "warning": "yellow"}.get(
        str(exp.get("severity", "")).lower(), "cyan"
    )


def cmd_install_dissectors(args: argparse.Namespace) -> int:
    dest = (
        Path(args.dest).expanduser() if args.dest else Path.home() / ".local/lib/wireshark/plugins"
    )
    dest.mkdir(parents=True, exist_ok=True)
    lua = sorted((REPO / "dissectors").glob("*.lua"))
    for f in lua:
        shutil.copy2(f, dest / f.name)
        console.print(f"installed {f.name} -> {dest / f.name}")
    console.print("Restart Wireshark (or Analyze > Reload Lua Plugins) to load them.")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from conformance.types import SCHEMAS, json_schema

    names = [args.name] if args.name else list(SCHEMAS)
    for name in names:
        if name not in SCHEMAS:
            raise InputError(f"unknown schema {name!r} (one of: {', '.join(SCHEMAS)})")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for name in names:
            (out / f"{name}.schema.json").write_text(json.dumps(json_schema(name), indent=2) + "\n")
            console.print(f"wrote {out / f'{name}.schema.json'}")
    else:
        for name in names:
            print(json.dumps(json_schema(name), indent=2))
    return 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    from conformance import netns

    netns.require_root()
    removed = netns.sweep_stale()
    console.print(
        f"removed {len(removed)} stale namespaces" + (f": {', '.join(removed)}" if removed else "")
    )
    return 0


def _fmt_rate(bps: float) -> str:
    if not bps:
        return "unlimited"
    for unit, scale in (("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)):
        if bps >= scale:
            return f"{bps / scale:g} {unit}"
    return f"{bps:g} b/s"


def _fmt_delay(ms: float) -> str:
    if ms < 1000:
        return f"{ms:g} ms"
    if ms < 60_000:
        return f"{ms / 1000:g} s"
    if ms < 3_600_000:
        return f"{ms / 60_000:.1f} min"
    return f"{ms / 3_600_000:.2f} h"


def cmd_profiles(args: argparse.Namespace) -> int:
    from conformance import profiles

    if args.name:
        prof = profiles.load(args.name)
        console.print(f"[bold]{prof.name}[/]: {prof.description}")
        console.print(f"source: {prof.source}", markup=False)
        print(prof.model_dump_json(indent=2, by_alias=True, exclude={"description", "source"}))
        return 0
    table = Table(title='link profiles (scenario: "channel": {"profile": NAME})')
    for col in ("name", "forward", "return", "timeline / outages"):
        table.add_column(col)
    for prof in profiles.all_profiles():
        cells = []
        for d in (prof.forward, prof.ret):
            link = d.link
            rate = _fmt_rate(link.rate_bps)
            errs = "".join(
                f", {k} {getattr(link, k):g}" for k in ("loss", "ber", "packet_error")
                if getattr(link, k)
            )  # fmt: skip
            cells.append(f"{rate}, {_fmt_delay(link.delay_ms)}{errs}")
        extra = f"{len(prof.forward.timeline)} events, {len(prof.forward.outages)} outages"
        table.add_row(prof.name, *cells, extra)
    console.print(table)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from conformance import bench

    if args.quick:
        import os

        os.environ["DTNC_BENCH_QUICK"] = "1"
    return bench.run(args.name, console)


# ---------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="dtnconform",
        description="Spec-driven conformance and interoperability testing for LTP, Saratoga, "
        "CFDP and NORM.",
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    s = sub.add_parser("check", help="model-check a protocol's TLA+ model with TLC")
    s.add_argument("protocol", help="ltp")
    s.add_argument("--bound", choices=("ci", "deep", "bug"), default="ci",
                   help="ci: small, under a minute; deep: minutes; bug: a model that fails on purpose")  # fmt: skip
    s.set_defaults(func=cmd_check)

    s = sub.add_parser("generate", help="derive scenario files from TLC traces of test purposes")
    s.add_argument("protocol", help="ltp")
    s.add_argument("--out", required=True, help="directory for the scenario files")
    s.set_defaults(func=cmd_generate)

    s = sub.add_parser("run", help="replay one scenario against a live implementation (root)")
    s.add_argument("scenario", help="scenario JSON file")
    s.add_argument("--sut", required=True, help="implementation under test: licklider")
    s.add_argument("--out", help="run directory (default runs/<time>-<scenario>)")
    s.set_defaults(func=cmd_run)

    s = sub.add_parser("certify", help="generate, run every scenario under Robot Framework, report")
    s.add_argument("protocol", help="ltp")
    s.add_argument(
        "--sut", default="licklider", help="implementation under test (default licklider)"
    )
    s.add_argument("--out", help="certification directory (default runs/<time>-certify-...)")
    s.add_argument("--only", help="run only scenarios whose name contains this text")
    s.set_defaults(func=cmd_certify)

    s = sub.add_parser("validate", help="decode a capture with our dissector and list findings")
    s.add_argument("capture", help="pcap or pcapng file")
    s.add_argument("--proto", required=True, help="ltp")
    s.add_argument("--port", type=int, default=None, help="UDP port (default 1113)")
    s.add_argument(
        "--all", action="store_true", help="list every segment, not just those with findings"
    )
    s.set_defaults(func=cmd_validate)

    s = sub.add_parser(
        "install-dissectors", help="copy our Lua dissectors into Wireshark's plugin folder"
    )
    s.add_argument("--dest", help="plugin folder (default ~/.local/lib/wireshark/plugins)")
    s.set_defaults(func=cmd_install_dissectors)

    s = sub.add_parser("bench", help="run a benchmark: human lines, then one JSON line of figures")
    s.add_argument("name", help="benchmark name (see `dtnconform bench list`)")
    s.add_argument("--quick", action="store_true", help="short trials (sets DTNC_BENCH_QUICK=1)")
    s.set_defaults(func=cmd_bench)

    s = sub.add_parser("profiles", help="list the link profiles, or show one")
    s.add_argument("name", nargs="?", help="profile to show in full")
    s.set_defaults(func=cmd_profiles)

    s = sub.add_parser("schema", help="print or write the JSON schemas of our file types")
    s.add_argument("name", nargs="?", help="scenario, segment-record, run-result or verdict")
    s.add_argument("--out", help="write <name>.schema.json files into this directory")
    s.set_defaults(func=cmd_schema)

    s = sub.add_parser("cleanup", help="remove namespaces left by a killed run (root)")
    s.set_defaults(func=cmd_cleanup)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except DtncError as exc:
        print(f"dtnconform: {exc}", file=sys.stderr)  # plain: one unwrapped line
        return exc.exit_code
    except KeyboardInterrupt:
        err_console.print("dtnconform: interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
