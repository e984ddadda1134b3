"""CFDP's scenario catalogue (:func:`generate`), made of

* every impairment pattern of one transaction within a bound's budgets
  (specs/cfdp/MCCFDPCatalogue.tla, one TLC run per bound and reading):
  each PDU lost at each point, once and repeatedly, and held back or
  duplicated at each point (so File Data overtakes the Metadata and the last
  two File Data PDUs swap), in each transmission mode, with immediate and
  deferred NAKs; the limits are reached where the losses exhaust them;
* planned purposes, one outcome-set run each (generators/cfdp/outcomes.py):
  a user's cancel or suspend at either entity and a Prompt, each after every
  PDU of the nominal transaction; a link outage as each PDU crosses;
  undetected corruption of each File Data PDU.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from conformance.core.errors import DtncError
from conformance.core.types import (
    Direction,
    Expectation,
    Impairment,
    Origin,
    Scenario,
    dump_model,
)
from conformance.protocols.cfdp import (
    MODEL_MODES,
    CfdpRequest,
    CfdpTransfer,
    Trigger,
)
from generators.cfdp import SPEC_DIR
from generators.cfdp.outcomes import (
    DELAY_MS,
    MAX_OUTCOME_SEGMENTS,
    OUTAGE_MS,
    OUTCOMES,
    Case,
    constants,
    expectations,
    impairment_of,
    match_of,
    n_segments,
    outcome_of,
    reading_ids,
)
from generators.outcomes import (
    CatalogueModule,
    CatalogueRun,
    PlannedLoss,
    Unplannable,
    catalogue_run,
    merge_readings,
)
from generators.outcomes import Pattern as GenericPattern
from generators.tlaval import TlaValue
from generators.tlc import REPO_ROOT, TlcProgress
from generators.traps import GenerateReport, PurposeStatus

CATALOGUE = SPEC_DIR / "MCCFDPCatalogue.tla"


# Short names in scenario names.
SHORT = {
    "metadata": "md",
    "file_data": "fd",
    "eof": "eof",
    "ack_eof": "ackeof",
    "ack_finished": "ackfin",
    "nak": "nak",
    "finished": "fin",
    "prompt": "prompt",
    "keep_alive": "ka",
}


_ACT_PREFIX = {"drop": "", "delay": "late-", "duplicate": "dup-", "corrupt": "bad-",
               "outage": "down-"}  # fmt: skip


# The file every catalogue scenario sends: two File Data PDUs, the last one
# short (as in ION issue #31).
SEGMENT_SIZE = 1024


FILE_LEN = 2 * SEGMENT_SIZE - 100


@dataclass(frozen=True)
class Bound:
    """One catalogue run: the transfer's mode, NAK mode and limits, and the
    channel's budgets."""

    mode: str  # CfdpTransfer.mode
    max_loss: int
    max_late: int = 0
    nak_mode: str = "immediate"
    ack_limit: int = 1
    nak_limit: int = 1
    check_limit: int = 1

    @property
    def tag(self) -> str:
        mode = MODEL_MODES[self.mode] + ("d" if self.nak_mode == "deferred" else "")
        limits = f"a{self.ack_limit}n{self.nak_limit}k{self.check_limit}"
        return f"{mode}-{limits}-l{self.max_loss}" + (f"x{self.max_late}" if self.max_late else "")

    def transfer(self) -> CfdpTransfer:
        return CfdpTransfer(
            file_len=FILE_LEN,
            segment_size=SEGMENT_SIZE,
            # (str here, Literal there: CfdpTransfer validates them)
            mode=self.mode,  # type: ignore[arg-type]
            nak_mode=self.nak_mode,  # type: ignore[arg-type]
            ack_limit=self.ack_limit,
            nak_limit=self.nak_limit,
            check_limit=self.check_limit,
        )


# Three losses in Class 2 (the NAK limit takes three); every mode with one
# PDU held back or duplicated beside a loss; deferred NAKs; limits of 0,
# where one loss exhausts them.
BOUNDS = (
    Bound("class2", 3),
    Bound("class2", 1, 1),
    Bound("class2", 2, nak_mode="deferred"),
    Bound("class2", 2, ack_limit=0, nak_limit=0),
    Bound("class1-closure", 3),
    Bound("class1-closure", 1, 1),
    Bound("class1", 3),
    Bound("class1", 1, 1),
    Bound("class1", 2, check_limit=0),
)


def _short(x: PlannedLoss) -> str:
    seg = str(x.off) if x.key == "file_data" else ""
    return f"{_ACT_PREFIX[x.act]}{SHORT[x.key]}{seg}.{x.occ}"


def _order(x: PlannedLoss) -> tuple[str, str, int, int, str]:
    return (x.dir, x.key, x.off, x.occ, x.act)


# A printed terminal outcome (MCCFDPOutcomes Outcome): <<sender out, sender
# condition, receiver out, receiver condition, delivered>>.
Outcome = tuple[object, ...]
Pattern = GenericPattern[Bound, Outcome]
Run = CatalogueRun[Bound, Outcome]


def _outcome(v: Sequence[TlaValue]) -> Outcome:
    (outcome,) = v
    return tuple(outcome)


CATALOGUE_MODULE = CatalogueModule(CATALOGUE, "NoStaleImpairment", _outcome)


def run_bound(
    b: Bound, reading: str, workdir: Path, progress: Callable[[TlcProgress], None] | None = None
) -> Run:
    """One TLC run of the catalogue: the patterns of a bound under a reading,
    the actions taken, distinct states and seconds."""
    return catalogue_run(
        CATALOGUE_MODULE,
        b,
        reading,
        workdir,
        cfg_name=f"MCCFDPCatalogue_{b.tag}.cfg",
        comment=f"Catalogue: every pattern within {b.max_loss} losses and {b.max_late} late PDUs.",
        constants=constants(b.transfer(), reading, losses=b.max_loss, late=b.max_late),
        progress=progress,
    )


def pattern_scenario(p: Pattern, states: int) -> Scenario:
    b, t = p.bound, p.bound.transfer()
    losses = sorted(p.losses, key=_order)
    what = ", ".join(_short(x) for x in losses) or "no impairment"
    return Scenario(
        name=f"cfdp-{b.tag}-" + ("-".join(_short(x) for x in losses) or "nominal"),
        protocol="cfdp",
        description=(
            f"Catalogue: {what} ('late-' PDUs held back {DELAY_MS:g} ms, 'dup-' ones "
            f"duplicated); {t.mode}, {t.nak_mode} NAKs, a {t.file_len}-byte file in "
            f"{SEGMENT_SIZE}-byte File Data PDUs, ACK/NAK/check limits "
            f"{t.ack_limit}/{t.nak_limit}/{t.check_limit}."
        ),
        params=t,
        impairments=[impairment_of(x, t, note=f"catalogue: {_short(x)} ({x.dir})") for x in losses],
        expect=Expectation(
            outcomes=[
                outcome_of(o, t, sorted(rs)) for o, rs in sorted(p.outcomes.items(), key=str)
            ],
            source=(
                "TLC, specs/cfdp/MCCFDPCatalogue.tla: every terminal state with exactly these "
                f"impairments, channels in order ({states:,} distinct states), under the default "
                "reading and each alternative that can matter (specs/cfdp/readings.json)"
            ),
            in_order=True,
        ),
        origin=Origin(
            model=str(CATALOGUE.relative_to(REPO_ROOT)),
            config=b.tag,
            purpose="catalogue",
            purposes=["catalogue", b.tag],
        ),
    )


# The nominal transaction's PDUs, per mode, as (direction, key, segment):
# the points a request or an outage is tied to.
NOMINAL: dict[str, tuple[tuple[Direction, str, int], ...]] = {
    "class1": (("forward", "metadata", 0), ("forward", "file_data", 0),
               ("forward", "file_data", 1), ("forward", "eof", 0)),
    "class1-closure": (("forward", "metadata", 0), ("forward", "file_data", 0),
                       ("forward", "file_data", 1), ("forward", "eof", 0),
                       ("return", "finished", 0)),
    "class2": (("forward", "metadata", 0), ("forward", "file_data", 0),
               ("forward", "file_data", 1), ("forward", "eof", 0), ("return", "ack_eof", 0),
               ("return", "finished", 0), ("forward", "ack_finished", 0)),
}  # fmt: skip


# Who makes a request, and which (CfdpRequest's entity and request).
_Entity = Literal["sender", "receiver"]
_Request = Literal["cancel", "suspend", "prompt_nak", "prompt_keep_alive"]


@dataclass(frozen=True)
class Planned:
    """A purpose with its own outcome-set run."""

    name: str
    transfer: CfdpTransfer
    impairments: tuple[Impairment, ...]
    description: str


def _point(d: str, key: str, off: int) -> str:
    return SHORT[key] + (str(off) if key == "file_data" else "")


def planned_purposes() -> list[Planned]:
    """Each request at each point of each mode's nominal transaction; an
    outage as each PDU crosses; each File Data PDU corrupted; a receiver
    resumed before any EOF reaches it, with a gap to NAK."""
    out: list[Planned] = []
    for mode, points in NOMINAL.items():
        base = Bound(mode, 0).transfer()
        tag = MODEL_MODES[mode]
        asks: list[tuple[_Entity, _Request]] = [
            ("sender", "cancel"), ("receiver", "cancel"), ("sender", "suspend"),
            ("receiver", "suspend")]  # fmt: skip
        if mode == "class2":
            asks += [("sender", "prompt_nak"), ("sender", "prompt_keep_alive")]
        for who, what in asks:
            for d, key, off in points:
                trig = Trigger(direction=d, match=match_of(key, off, base))
                req = CfdpRequest(entity=who, request=what, after=trig)
                out.append(
                    Planned(
                        f"cfdp-{tag}-{who}-{what.replace('_', '')}-after-{_point(d, key, off)}",
                        base.model_copy(update={"requests": [req]}),
                        (),
                        f"the {req.describe()}",
                    )
                )
        for d, key, off in points:
            x = PlannedLoss(d, key, off, 1, "outage")
            out.append(
                Planned(
                    f"cfdp-{tag}-outage-at-{_point(d, key, off)}",
                    base,
                    (impairment_of(x, base, note=f"outage as {_short(x)} crosses ({d})"),),
                    f"a {OUTAGE_MS:g} ms link outage both ways from the 1st {d} "
                    f"{key.replace('_', ' ')} PDU (the model lets it last any number of steps)",
                )
            )
        for seg in range(n_segments(base)):
            x = PlannedLoss("forward", "file_data", seg, 1, "corrupt")
            out.append(
                Planned(
                    f"cfdp-{tag}-corrupt-fd{seg}",
                    base,
                    (impairment_of(x, base, note="file data corrupted, UDP checksum made good"),),
                    f"File Data segment {seg} corrupted with no PDU CRC: the file checksum "
                    "must catch it (4.6.1.2)",
                )
            )
    out.append(_resumed_receiver_nak())
    return out


# How soon the receiver of the resumed-receiver purpose is resumed: well
# before the EOF's resend, a timer period (1 s on this path) after its loss.
RESUME_BEFORE_EOF_MS = 100.0


def _resumed_receiver_nak() -> Planned:
    """A Class 2 receiver suspended as the Metadata arrives and resumed
    RESUME_BEFORE_EOF_MS later, before any EOF has reached it (the first
    is lost), with File Data 1 lost: once resumed it must NAK the gap when
    the EOF's resend comes, as one never suspended (4.6.4.3.1; CFDP.tla
    ReceiverResumeTransaction). LibreCube keeps a receiver resumed before
    the EOF marked suspended on a mutant of receiver2.py:138, and a
    suspended receiver sends no NAK."""
    base = Bound("class2", 0).transfer()
    req = CfdpRequest(
        entity="receiver",
        request="suspend",
        after=Trigger(direction="forward", match=match_of("metadata", 0, base)),
        resume_after_ms=RESUME_BEFORE_EOF_MS,
    )
    losses = (
        PlannedLoss("forward", "file_data", 1, 1, "drop"),
        PlannedLoss("forward", "eof", 0, 1, "drop"),
    )
    point = _point("forward", "metadata", 0)
    return Planned(
        f"cfdp-{MODEL_MODES['class2']}-receiver-suspend-after-{point}-resumed-"
        + "-".join(_short(x) for x in losses),
        base.model_copy(update={"requests": [req]}),
        tuple(impairment_of(x, base, note=f"{_short(x)} (forward)") for x in losses),
        f"the {req.describe()}, with File Data 1 and the first EOF lost: resumed before any "
        "EOF reaches it, the receiver must NAK the gap when the EOF's resend comes "
        "(4.6.4.3.1)",
    )


def planned_scenarios(
    group: Sequence[Planned], workdir: Path, seen: set[str]
) -> list[Scenario | None]:
    """The purposes' scenarios, from one outcome-set run per reading for the
    whole group (its purposes need the same model constants: :func:`groups`);
    None where the model reaches no end with a purpose (a request the
    transaction is over for)."""
    scns = [
        Scenario(
            name=p.name,
            protocol="cfdp",
            description=f"{p.description}; {p.transfer.mode}, a {p.transfer.file_len}-byte file "
            f"in {p.transfer.segment_size}-byte File Data PDUs.",
            params=p.transfer,
            impairments=list(p.impairments),
            expect=Expectation(
                outcomes=[outcome_of(("open", "NoError", "none", "NoError", False), p.transfer)]
            ),  # fmt: skip
            origin=Origin(
                model=str(OUTCOMES.relative_to(REPO_ROOT)),
                config=MODEL_MODES[p.transfer.mode],
                purpose=p.name,
                purposes=[p.name],
            ),
        )
        for p in group
    ]
    got = expectations(
        [Case(p.name, p.transfer, p.impairments) for p in group],
        workdir,
        name=group[0].name if len(group) == 1 else f"{group[0].name}+{len(group) - 1}",
        seen=seen,
    )
    out: list[Scenario | None] = []
    for scn, exp in zip(scns, got, strict=True):
        if isinstance(exp, Unplannable):
            out.append(None)
            continue
        scn.expect = exp
        out.append(scn)
    return out


def groups(planned: Sequence[Planned]) -> list[list[Planned]]:
    """The planned purposes by the model constants their outcome sets need
    (mode, limits, budgets: a mode's cancels, suspends, prompts, outages
    and corruptions), in their order: each group is one TLC run per reading."""
    out: dict[str, list[Planned]] = {}
    for p in planned:
        key = json.dumps(
            Case(p.name, p.transfer, p.impairments).constants(""), sort_keys=True, default=sorted
        )
        out.setdefault(key, []).append(p)
    return list(out.values())


# The realistic geometry of issue 29's purposes: a file of 16 File Data PDUs,
# the last one short, so that feedback can reach the sender while it still
# sends new data. No outcome set is enumerated for it (MAX_OUTCOME_SEGMENTS):
# each run is judged at the end of its validated trace.
REALISTIC_SEGMENTS = 16

REALISTIC_FILE_LEN = REALISTIC_SEGMENTS * SEGMENT_SIZE - 100

# How long the reordering purpose holds a segment back: long enough for the
# next one to overtake it (cfdp-py sends a File Data PDU every 2 ms or so),
# short enough to arrive while the transaction is still open (cfdp-rs sends
# the whole file at once and ends it within 10 ms). The catalogue's DELAY_MS
# outlasts the timers: the held copy would reach a receiver whose
# transaction is over, a question the model has not settled
# (generators/cfdp/trace.py _no_reopened_transaction).
REORDER_MS = 3.0

# How long the late-original purpose holds File Data 2 back: past its resend
# (the EOF's NAK and a File Data across a namespace path, a few ms), within
# the first NAK-timer period (1 s on this path, conformance.timers), before
# which the earlier gap it leaves open cannot close.
LATE_ORIGINAL_MS = 300.0


def realistic_scenarios() -> list[Scenario]:
    """Class 2 purposes at a realistic geometry (16 File Data PDUs, immediate
    NAKs, NAK limit 4), each judged from its trace: a NAK that reaches the
    sender mid-transfer; a second NAK whose gaps overlap the first one's; the
    short last segment arriving before the one before it (ION-DTN issue #31
    corrupted files that way); the same segment lost three times; and, with
    deferred NAKs: two adjacent segments lost, one gap that each resend fills
    only in part; the same segment lost four times, so that the NAK timer
    expires three times below the limit (the catalogue's other deferred
    purposes have NAK limit 1, so there the count of NAK-timer expiries is
    tested only at its limit); and an original File Data that arrives after
    its own resend while an earlier gap is still open."""
    t = CfdpTransfer(
        file_len=REALISTIC_FILE_LEN,
        segment_size=SEGMENT_SIZE,
        mode="class2",
        nak_mode="immediate",
        ack_limit=2,
        nak_limit=4,
    )
    last = REALISTIC_SEGMENTS - 1

    def fd(
        seg: int, occ: int, act: str = "drop", held_ms: float = REORDER_MS
    ) -> tuple[PlannedLoss, float]:
        """File Data ``seg``'s ``occ``-th copy, dropped or held ``held_ms``."""
        return PlannedLoss("forward", "file_data", seg, occ, act), held_ms

    deferred = t.model_copy(update={"nak_mode": "deferred"})
    purposes: list[tuple[str, str, list[tuple[PlannedLoss, float]]]] = [
        (
            "nak-mid-transfer-fd2",
            "File Data 2 lost once: the immediate NAK reaches the sender while it still "
            "sends the file's first pass, and must be answered with segment 2 (4.6.4.2.1)",
            [fd(2, 1)],
        ),
        (
            "nak-overlap-fd2-fd5",
            "File Data 2 lost, then its resend lost too, and File Data 5 lost: the later "
            "NAKs ask again for a gap an earlier NAK asked for (4.6.4.3.3)",
            [fd(2, 1), fd(2, 2), fd(5, 1)],
        ),
        (
            f"short-last-first-fd{last - 1}",
            f"File Data {last - 1} held back {REORDER_MS:g} ms, so that the short last "
            "segment arrives before the one before it (ION-DTN issue #31): the file must "
            "still be whole, its checksum verified (4.6.1.2.8)",
            [fd(last - 1, 1, "delay")],
        ),
        (
            "repeated-loss-fd3",
            "File Data 3 lost three times, first copy and two resends: each NAK asks for "
            "it again, within the NAK limit of 4 (4.6.4.7)",
            [fd(3, 1), fd(3, 2), fd(3, 3)],
        ),
        (
            "deferred-adjacent-loss-fd2-fd3",
            "deferred NAKs, File Data 2 and 3 lost once each: the EOF's NAK asks for one gap "
            "spanning both segments, each resend fills only its own part of it, and once "
            "both have arrived the NAK timer may ask for neither again (4.6.4.3.3)",
            [fd(2, 1), fd(3, 1)],
        ),
        (
            "deferred-late-original-fd0-fd2",
            f"deferred NAKs, File Data 0 lost twice (its first copy and the resend the "
            f"EOF's NAK asks for) and File Data 2 held back {LATE_ORIGINAL_MS:g} ms: "
            "segment 2's resend arrives first, then its original, repeated data that the "
            "receiver discards (4.6.1.2.7) while the gap at 0 is still open; the NAK timer "
            "must still ask for that gap (4.6.4.3.3, 4.6.4.7)",
            [fd(0, 1), fd(0, 2), fd(2, 1, "delay", LATE_ORIGINAL_MS)],
        ),
        (
            "deferred-repeated-loss-fd3",
            "deferred NAKs, File Data 3 lost four times, first copy and three resends: "
            "the NAK timer expires three times and each expiry, below the NAK limit of 4, "
            "asks for it again (4.6.4.7)",
            [fd(3, 1), fd(3, 2), fd(3, 3), fd(3, 4)],
        ),
    ]
    out: list[Scenario] = []
    for tag, what, losses in purposes:
        name = f"cfdp-c2-realistic-{tag}"
        tt = deferred if tag.startswith("deferred-") else t
        out.append(
            Scenario(
                name=name,
                protocol="cfdp",
                description=f"Realistic geometry: {what}; Class 2, a {t.file_len}-byte file in "
                f"{REALISTIC_SEGMENTS} File Data PDUs of {SEGMENT_SIZE} bytes.",
                params=tt,
                impairments=[
                    impairment_of(x, tt, note=f"{_short(x)} ({x.dir})").model_copy(
                        update={"delay_ms": held} if x.act == "delay" else {}
                    )
                    for x, held in losses
                ],
                expect=Expectation(
                    outcomes=[
                        outcome_of(("completed", "NoError", "completed", "NoError", True), tt)
                    ],
                    unjudged=f"{REALISTIC_SEGMENTS} File Data PDUs, past the outcome sets' "
                    f"{MAX_OUTCOME_SEGMENTS}: judged at the end of its validated trace",
                ),
                origin=Origin(
                    model="specs/cfdp/TraceCFDP.tla",
                    config=f"segments={REALISTIC_SEGMENTS}",
                    purpose=name,
                    purposes=[name, "realistic"],
                ),
            )
        )
    return out


def generate(
    outdir: Path,
    actions_total: list[str],
    *,
    terminal_action: str = "Terminating",
    bounds: Sequence[Bound] = BOUNDS,
    planned: Sequence[Planned] | None = None,
    lanes: int = 2,
    on_purpose: Callable[[int, int, str], None] | None = None,
) -> GenerateReport:
    """The catalogue's patterns and the planned purposes' scenarios into
    ``outdir`` (``coverage.json``: counts, coverage, purposes)."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    work = outdir / "tlc"
    planned = planned_purposes() if planned is None else list(planned)
    jobs = [(b, r) for b in bounds for r in reading_ids(b.transfer())]
    total = len(jobs) + len(planned)
    done = 0
    lock = threading.Lock()
    t0 = time.monotonic()

    def tick(name: str) -> None:
        nonlocal done
        with lock:
            done += 1
            if on_purpose:
                on_purpose(done, total, name)

    def bound_job(job: tuple[Bound, str]) -> Run:
        b, r = job
        res = run_bound(b, r, work / b.tag / (f"reading{r}" if r else ""))
        tick(b.tag + (f" (reading {r})" if r else ""))
        return res

    covered: set[str] = set()

    planned_seconds: list[float] = []

    def planned_job(group: list[Planned]) -> list[Scenario | None]:
        took: set[str] = set()
        start = time.monotonic()
        scns = planned_scenarios(group, work / "planned", took)
        with lock:
            covered.update(took)
            planned_seconds.append(time.monotonic() - start)
        for p in group:
            tick(p.name)
        return scns

    if on_purpose:
        on_purpose(0, total, "catalogue")
    # the largest groups first, so that the lanes finish together
    grouped = sorted(groups(planned), key=len, reverse=True)
    with ThreadPoolExecutor(max_workers=max(1, lanes)) as pool:
        bound_runs = list(pool.map(bound_job, jobs))
        by_name = dict(
            zip(
                (p.name for g in grouped for p in g),
                (s for scns in pool.map(planned_job, grouped) for s in scns),
                strict=True,
            )
        )
    planned_runs = [by_name[p.name] for p in planned]
    seconds = sum(r.seconds for r in bound_runs)
    statuses: list[PurposeStatus] = []
    scenarios: list[Path] = []
    per_bound: dict[str, int] = {}
    for b in bounds:
        merged = merge_readings(
            [res for (bb, _r), res in zip(jobs, bound_runs, strict=True) if bb == b], b
        )
        covered |= merged.actions
        for p in sorted(merged.patterns, key=lambda x: sorted(map(_order, x.losses))):
            scn = pattern_scenario(p, merged.states)
            path = outdir / f"{scn.name}.json"
            dump_model(scn, path)
            scenarios.append(path)
        per_bound[b.tag] = len(merged.patterns)
        statuses.append(
            PurposeStatus(
                f"catalogue {b.tag}",
                "reached",
                detail=f"{len(merged.patterns)} scenarios ({merged.states:,} distinct states)",
            )
        )
    for purpose, made in zip(planned, planned_runs, strict=True):
        if made is None:
            statuses.append(
                PurposeStatus(
                    purpose.name, "unreachable", detail="the model reaches no end with it"
                )
            )
            continue
        path = outdir / f"{made.name}.json"
        dump_model(made, path)
        scenarios.append(path)
        statuses.append(PurposeStatus(purpose.name, "reached", scenario=path))
    realistic = realistic_scenarios()
    for scn in realistic:
        path = outdir / f"{scn.name}.json"
        dump_model(scn, path)
        scenarios.append(path)
        statuses.append(PurposeStatus(scn.name, "reached", scenario=path))
    if scenarios and terminal_action:
        covered.add(terminal_action)  # every scenario ends in a terminal state
    names = [s.name for s in scenarios]
    if len(set(names)) < len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise DtncError(f"CFDP catalogue names collide: {dup}")
    report = GenerateReport(
        scenarios=scenarios,
        purposes=statuses,
        actions_covered=[a for a in actions_total if a in covered],
        actions_total=list(actions_total),
        tlc_seconds=round(seconds + sum(planned_seconds), 2),
        outdir=outdir,
    )
    summary = {
        "scenarios": len(scenarios),
        "per_bound": per_bound,
        "planned": sum(s.status == "reached" for s in statuses) - len(bounds) - len(realistic),
        "realistic": len(realistic),
        "unreachable": report.unreachable,
        "wall_seconds": round(time.monotonic() - t0, 1),
        "catalogue_tlc_seconds": round(seconds, 2),
        "covered": report.actions_covered,
        "total": report.actions_total,
        "uncovered": report.actions_uncovered,
    }
    (outdir / "coverage.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return report
