"""Running a campaign: its scenarios, its lanes, its progress and ETA, and
its database row by row (conformance.campaign.store).

Each run is ``dtnconform run`` in a child process of its own (its own
namespace triple, capture and channel), which dies with the campaign
(PR_SET_PDEATHSIG): a campaign killed outright leaves no run going on
behind its back, and the namespaces of a run cut short are swept by the
next one (conformance.netns.sweep_stale). Up to ``lanes`` runs go at once.

The ETA counts each remaining run as its physical minimum plus the set-up
and tear-down the finished runs of this campaign took beyond theirs (a
first guess of 10 s before any has finished), over the lanes.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance import protocols
from conformance.campaign import metrics as mx
from conformance.campaign.plan import TESTER, Plan, RunSpec, link_of, params_of
from conformance.campaign.store import Row, Store
from conformance.core.errors import DtncError, InputError, NotRun, first_error
from conformance.core.types import (
    Channel,
    Expectation,
    ExpectedOutcome,
    Scenario,
    dump_model,
    verdict_mark,
)
from generators.outcomes import Unplannable

# The set-up and tear-down a run costs beyond its physical minimum, until
# the campaign has measured its own.
FIRST_OVERHEAD_S = 10.0

# The runs' child processes going on, stopped if the campaign is interrupted.
_LIVE: set[subprocess.Popen[bytes]] = set()
_LIVE_LOCK = threading.Lock()


def channel_of(plan: Plan, spec: RunSpec, *, real_time: bool = False) -> Channel:
    """The run's channel: the plan's link, with a seed of its own for each
    replicate (random errors differ from one replicate to the next)."""
    link = link_of(plan, spec.link)
    update: dict[str, Any] = {"seed": (link.seed + plan.seed * 7919 + spec.replicate) % (2**63)}
    if real_time:
        update["time_scale"] = 1.0
    return link.channel().model_copy(update=update)


def bare_scenario(plan: Plan, spec: RunSpec, *, real_time: bool = False) -> Scenario:
    """The run's scenario with a placeholder outcome set (no TLC): its
    parameters checked against its channel, MTU included (a ValueError,
    or pydantic's ValidationError, otherwise)."""
    proto = plan.specs[spec.protocol]
    params = proto.params.model_validate(params_of(plan, spec))
    placeholder = ExpectedOutcome(
        sender_outcome="completed",
        receiver_outcome="completed",
        delivered=proto.delivery(protocol=spec.protocol),
    )
    return Scenario(
        name=f"{plan.name}-{spec.slug}"[:120],
        protocol=spec.protocol,
        description=f"campaign {plan.name}: {spec.key}",
        params=params,
        channel=channel_of(plan, spec, real_time=real_time),
        expect=Expectation(outcomes=[placeholder]),
    )


def validate(plan: Plan, *, real_time: bool = False, source: str = "") -> None:
    """Every run the plan can have, checked as a scenario before anything
    is made (InputError naming ``source``, the plan's entry, link and
    size): a segment over a link's MTU, a parameter the protocol does not
    have, ..."""
    from pydantic import ValidationError

    from conformance.campaign.plan import expand

    seen: set[tuple[int, str, int]] = set()
    for spec in expand(plan.model_copy(update={"replicates": 1, "order": "given"})):
        if (spec.entry, spec.link, spec.size) in seen:
            continue
        seen.add((spec.entry, spec.link, spec.size))
        try:
            bare_scenario(plan, spec, real_time=real_time)
        except ValidationError as exc:
            why = first_error(exc).removeprefix("(top): ")
        except ValueError as exc:
            why = str(exc)
        else:
            continue
        raise InputError(
            f"{source}protocols[{spec.entry}] ({spec.protocol}), link {spec.link}, "
            f"size {spec.size}: {why}"
        )


def scenario_of(plan: Plan, spec: RunSpec, workdir: Path, *, real_time: bool = False) -> Scenario:
    """The run's scenario, with the outcome set the model gives for its
    transfer and channel. A channel the protocol's outcome sets cannot take
    yet (CFDP's random losses): the set of the clean link, which the judge
    flags as computed for another channel; a transfer past the model's
    bounds (an LTP block of many segments): no set, the outcome unjudged
    (Expectation.unjudged), the trace still validated."""
    proto = plan.specs[spec.protocol]
    scn = bare_scenario(plan, spec, real_time=real_time)
    placeholder = scn.expect.outcomes[0]
    channel = scn.channel
    gen = proto.need("outcomes", proto.capabilities.outcomes)
    try:
        scn.expect = gen.expectation_for(scn, workdir)
    except Unplannable:
        try:
            # the clean link's set: the judge says it was computed for
            # another channel (expectation-stale) for an outcome outside it
            clean = scn.model_copy(update={"channel": Channel(mtu=channel.mtu)})
            scn.expect = gen.expectation_for(clean, workdir)
        except Unplannable as exc:
            scn.expect = Expectation(outcomes=[placeholder], unjudged=str(exc))
    return scn


def unsupported(plan: Plan, scn: Scenario, spec: RunSpec) -> str:
    """Why the pair cannot run the scenario ('' if it can)."""
    from conformance.tester import launch
    from suts.registry import get

    params = scn.params.model_dump(mode="json")
    why = []
    for name, role in ((spec.sender, "sender"), (spec.receiver, "receiver")):
        if name == TESTER:
            try:
                launch.check(plan.specs[scn.protocol], scn, role)
            except DtncError as exc:
                why.append(f"tester: {exc}")
            except ValueError as exc:  # CannotPlay
                why.append(f"tester: {exc}")
            continue
        adapter = get(name)
        w = adapter.missing() or adapter.supports(params, role)
        if w:
            why.append(f"{name}: {w}")
    return "; ".join(why)


def command(spec: RunSpec, scn_path: Path, run_dir: Path) -> list[str]:
    """``dtnconform run`` for the run's pair."""
    cmd = [sys.executable, "-m", "conformance.cli", "run", str(scn_path)]
    if spec.sender == TESTER:
        cmd += ["--sut", spec.receiver, "--tester", "sender"]
    elif spec.receiver == TESTER:
        cmd += ["--sut", spec.sender, "--tester", "receiver"]
    else:
        cmd += ["--sut", spec.sender]
        if spec.receiver != spec.sender:
            cmd += ["--receiver-sut", spec.receiver]
    return [*cmd, "--out", str(run_dir), "--force"]


def _die_with_parent() -> None:
    """In the child: SIGTERM when the campaign process dies (Linux prctl)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    os.setsid()


@dataclass
class Done:
    verdict: str
    trace: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)
    detail: str = ""
    where: str = ""  # host:pid:thread that ran it


def execute(
    spec: RunSpec, scn_text: str, run_dir: Path, channel: Channel, timeout_s: float
) -> Done:
    """One run in a child process, where this is called (the campaign's own
    lanes, or a worker of the distributed engine): its verdict and figures.
    The run's folder is on this host."""
    done = execute_command(
        lambda scn_path: command(spec, scn_path, run_dir), scn_text, run_dir, timeout_s
    )
    if (run_dir / "verdict.json").is_file() and not (run_dir / "unsupported.txt").is_file():
        # a worker's entry point (it may be another host's): the protocol resolved here
        fig = mx.of_run(run_dir, protocols.get(spec.protocol), spec.size, channel)
        done.metrics = fig.as_dict()
    return done


def execute_command(
    cmd: Callable[[Path], list[str]], scn_text: str, run_dir: Path, timeout_s: float
) -> Done:
    """``cmd(scenario file)``, a ``dtnconform run`` into ``run_dir``, in a
    child process that dies with this one: its verdict as shown (a pass
    under an alternative reading says so), the trace's status, and the
    reasons; ``error`` for a run that left no verdict or took longer than
    ``timeout_s``, ``unsupported`` for one a role refused (exit 127).
    The scenario is written beside the run's folder, as its log."""
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    scn_path = run_dir.parent / f"{run_dir.name}.scenario.json"
    scn_path.write_text(scn_text, encoding="utf-8")
    log = run_dir.parent / f"{run_dir.name}.log"
    where = f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident() % 10000}"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd(scn_path),
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 (no threads start in the child)
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        )
        with _LIVE_LOCK:
            _LIVE.add(proc)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _stop(proc)
            return Done(
                "error", detail=f"the run took longer than the plan's {timeout_s:g} s", where=where
            )
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(proc)
    vfile = run_dir / "verdict.json"
    if (no := run_dir / "unsupported.txt").is_file():  # a role exited 127
        return Done("unsupported", detail=no.read_text(encoding="utf-8").strip(), where=where)
    if not vfile.is_file():
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:]
        return Done(
            "error", detail=f"no verdict (exit {proc.returncode}): {' '.join(tail)}", where=where
        )
    v = json.loads(vfile.read_text(encoding="utf-8"))
    trace = (v.get("trace") or {}).get("status", "")
    reasons = "; ".join(
        f"{r['code']}: {r['message']}"
        for r in v.get("reasons", [])
        if r.get("code") != "observed-outcome"
    )
    # the verdict as shown: a pass under an alternative reading says so
    mark = verdict_mark(v["status"], v.get("readings") or [])
    return Done(mark, trace, {}, reasons[:2000], where)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the run's process group (it tears its namespaces down), then
    SIGKILL what is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


class Eta:
    """Seconds left, over the lanes: each remaining run at a + b x its
    physical minimum, a line fitted (least squares) to the runs finished so
    far, b at least 1 and a at least 0. Retransmissions stretch a run with
    its round trips, which a fixed overhead misses: in the NASA Glenn
    campaigns, replayed run by run, the fixed median overhead was off by a
    median 9 % and 18 % over the campaign, the line by 3 % and 5 %. Before
    three runs of different minima: the minimum plus the median overhead
    (FIRST_OVERHEAD_S before any run)."""

    def __init__(self, lanes: int) -> None:
        self.lanes = lanes
        self.points: list[tuple[float, float]] = []  # (physical minimum, wall)
        self._line: tuple[float, float] | None = None

    def learn(self, row: Row) -> None:
        if row.wall_s is not None and row.phys_min_s is not None and row.verdict != "unsupported":
            self.points.append((row.phys_min_s, row.wall_s))
            self._line = None

    @property
    def overhead(self) -> float:
        if not self.points:
            return FIRST_OVERHEAD_S
        return statistics.median(max(0.0, w - x) for x, w in self.points)

    def line(self) -> tuple[float, float] | None:
        """(a, b), or None while the points cannot place a line."""
        xs = [x for x, _w in self.points]
        if len(xs) < 3 or max(xs) - min(xs) < 1e-3:
            return None
        if self._line is None:
            import numpy as np

            x = np.array(xs)
            w = np.array([w for _x, w in self.points])
            b, a = (float(v) for v in np.polyfit(x, w, 1))
            if b < 1.0:  # no run takes less than its physical minimum
                b, a = 1.0, float(np.mean(w - x))
            self._line = (max(a, 0.0), b)
        return self._line

    def left(self, rows: list[Row]) -> float:
        fit = self.line()
        if fit is None:
            return sum((r.phys_min_s or 0.0) + self.overhead for r in rows) / self.lanes
        a, b = fit
        return sum(a + b * (r.phys_min_s or 0.0) for r in rows) / self.lanes


def run(
    st: Store,
    out: Path,
    *,
    lanes: int = 1,
    on_progress: Callable[[int, int, float, str], None] | None = None,
    pool: Executor | None = None,
) -> None:
    """Run every pending run of the campaign in ``st``, ``lanes`` at a time,
    on the campaign's own threads or on ``pool`` (a distributed engine's
    executor, conformance.campaign.cluster); ``on_progress(done, total,
    eta_s, last)`` after each. A run's folder is ``runs/<slug>``, and
    ``runs/<slug>.<attempt>`` for a run cut before and redone (the cut
    attempt may still be ending on a worker whose client was killed)."""
    plan = st.plan()
    real_time = st.get("real_time") == "1"
    scn_dir = out / "scenarios"
    eta = Eta(lanes)
    for r in st.rows("done"):
        eta.learn(r)
    pending = [r for r in st.rows("pending")]
    total = len(st.rows())
    done = total - len(pending)
    history: list[list[float]] = json.loads(st.get("eta_history") or "[]")
    running: dict[Future[Done], Row] = {}
    own = pool is None
    executor = pool or ThreadPoolExecutor(max_workers=lanes)
    try:
        while pending or running:
            while pending and len(running) < lanes:
                row = pending.pop(0)
                slug = row.spec.slug
                why = st.get(f"unsupported:{row.spec.key}")
                if why:
                    st.start(row.seq, "-", out / "runs" / slug)
                    st.finish(row.seq, verdict="unsupported", detail=why)
                    done += 1
                    continue
                attempt = row.attempts + 1
                run_dir = out / "runs" / (slug if attempt == 1 else f"{slug}.{attempt}")
                st.start(row.seq, "", run_dir)
                ch = channel_of(plan, row.spec, real_time=real_time)
                text = (scn_dir / f"{slug}.json").read_text(encoding="utf-8")
                fut = executor.submit(execute, row.spec, text, run_dir, ch, plan.timeout_s)
                running[fut] = row
            if not running:
                break
            finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for fut in finished:
                row = running.pop(fut)
                res = fut.result()
                st.finish(
                    row.seq,
                    verdict=res.verdict,
                    trace=res.trace,
                    metrics=res.metrics,
                    detail=res.detail,
                    lane=res.where,
                )
                done += 1
                eta.learn(st.row(row.seq))
                left = eta.left(pending + list(running.values()))
                history.append([time.time(), left])
                st.put("eta_history", json.dumps(history))
                if on_progress:
                    on_progress(done, total, left, f"{row.spec.key}: {res.verdict}")
    except BaseException:
        # Ctrl-C, SIGTERM: the runs going on here stop (their rows stay
        # 'running': --resume redoes them)
        with _LIVE_LOCK:
            live = list(_LIVE)
        for proc in live:
            _stop(proc)
        for fut in running:
            fut.cancel()
        raise
    finally:
        if own:
            executor.shutdown(wait=True, cancel_futures=True)


def create(
    plan: Plan,
    out: Path,
    *,
    real_time: bool = False,
    say: Callable[[str], None],
    only: Sequence[str] = (),
) -> Store:
    """A new campaign in the folder ``out`` (made by the caller): its runs
    in order (``only``: those whose key holds one of these texts), each
    one's scenario (with the model's outcome set) and physical minimum, and
    the pairs that cannot run a scenario, said once (the caller has
    checked the plan with :func:`validate`); if anything fails, what this
    made is removed."""
    from conformance.campaign.plan import expand

    runs = [r for r in expand(plan) if not only or any(x in r.key for x in only)]
    if not runs:
        raise InputError(f"--only {' '.join(only)}: no run of the plan has that in its key")
    scn_dir = out / "scenarios"
    work = out / "outcomes"
    phys = []
    why: dict[str, str] = {}
    try:
        scn_dir.mkdir(exist_ok=True)
        for i, spec in enumerate(runs, 1):
            say(f"scenario {i}/{len(runs)}: {spec.key} (outcome set by TLC)")
            scn = scenario_of(plan, spec, work, real_time=real_time)
            dump_model(scn, scn_dir / f"{spec.slug}.json")
            phys.append(mx.physical_minimum(spec.size, scn.channel))
            if w := unsupported(plan, scn, spec):
                why[spec.key] = w
        if len(why) == len(runs):
            key, w = next(iter(why.items()))
            raise NotRun(f"none of the {len(runs)} runs can run: {key}: {w}")
    except BaseException:
        # nothing of a campaign that never began is left behind (the caller
        # removes ``out`` if it made it): the same command can be given again
        for made_here in (scn_dir, work):
            shutil.rmtree(made_here, ignore_errors=True)
        raise
    st = Store.create(out / "campaign.sqlite", plan, runs, phys)
    with st.tx():
        st.put("real_time", "1" if real_time else "0")
        st.put("only", json.dumps(list(only)))
        for k, w in why.items():
            st.put(f"unsupported:{k}", w)
    return st
