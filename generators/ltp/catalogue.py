"""The LTP scenario catalogue: every loss pattern the model allows within a
loss budget, for several block geometries and retransmission limits, each
one scenario that expects every outcome the model reaches with exactly
those losses (specs/ltp/MCLTPCatalogue.tla).

A pattern is a set of channel rules as the live channel applies them (a
direction, the segment's wire key and its occurrence: "drop the 2nd RS on
the return channel"), so two scenarios differ exactly where the segment
traces they ask for differ. One TLC run per geometry prints each terminal
state's pattern and outcome, and the actions the run took;
generators/outcomes.py groups them by pattern (as it does CFDP's), and this
module makes each pattern a scenario. The test purposes of
generators/ltp/purposes.py stay the curated set `make demo` runs; the
catalogue is the breadth behind them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from conformance.core.modelcheck import CatalogueReport as CatalogueReport  # what run() returns
from conformance.core.types import (
    Channel,
    Direction,
    DirectionChannel,
    Expectation,
    FieldValue,
    Impairment,
    LinkSettings,
    Origin,
    Scenario,
    _ordinal,
    dump_model,
)
from conformance.protocols.ltp import SPEC as LTP
from conformance.protocols.ltp import LtpBlock
from generators.ltp.outcomes import (
    block_segments,
    holding,
    impairment_of,
    outcome_of,
    segment_offset,
)
from generators.outcomes import (
    CatalogueModule,
    CatalogueRun,
    PlannedLoss,
    catalogue_run,
    merge_readings,
)
from generators.outcomes import Pattern as GenericPattern
from generators.tlaval import TlaValue
from generators.tlc import REPO_ROOT, TlcProgress

MODULE = REPO_ROOT / "specs" / "ltp" / "MCLTPCatalogue.tla"
SEGMENT_SIZE = 1000


@dataclass(frozen=True)
class Bound:
    """One TLC run of the catalogue: block geometry (in segments), the
    retransmission limit and the loss budget."""

    n_red: int
    n_green: int
    max_retx: int
    max_loss: int
    max_claims: int = 20  # reception claims per RS (more: several RSs per report)
    service_known: bool = True  # the receiver has the client service the data names
    max_late: int = 0  # segments the channel may delay or duplicate
    miscolored: bool = False  # the sender sends green data at offset 0 (RFC 5326 §6.21)
    idle_cancels: bool = False  # the receiver cancels a stalled session (a declared profile)
    reading: str = ""  # the model reading: '' the default, else a reading's id

    @property
    def tag(self) -> str:
        claims = f"c{self.max_claims}" if self.max_claims < self.n_red else ""
        unknown = "" if self.service_known else "u"
        late = f"x{self.max_late}" if self.max_late else ""
        mis = "mis" if self.miscolored else ""
        idle = "i" if self.idle_cancels else ""
        return f"r{self.n_red}g{self.n_green}l{self.max_retx}{claims}{unknown}{late}{mis}{idle}"

    def constants(self) -> dict[str, int | bool | str]:
        return {
            "NRed": self.n_red,
            "NGreen": self.n_green,
            "MaxRetx": self.max_retx,
            "MaxLoss": self.max_loss,
            "MaxLate": self.max_late,
            "LinkCues": False,
            "MaxOutages": 0,
            "PrematureTimeouts": False,
            "FaultyReceiver": False,
            "MiscoloredSender": self.miscolored,
            "MaxClaims": self.max_claims,
            "ServiceKnown": self.service_known,
            "IdleCancels": self.idle_cancels,
            **LTP.reading_constants(self.reading),
        }

    def under(self, reading: str) -> Bound:
        return replace(self, reading=reading)

    def readings(self) -> list[str]:
        """The readings to run it under: the default, and each alternative
        that can make a difference at this bound (readings.json,
        matters_when)."""
        return LTP.reading_ids(self.constants())


# Red-only, mixed and one-segment blocks; limits 0 and 1; three losses (four
# for the smallest block), enough to reach every cancel-timer path; and one
# claim per RS, so that a report with a gap is two RSs (RFC 5326 §6.11), some
# of them lost (ION issue #14's sessions); and one segment delayed past its
# timer or duplicated, at every point and with a loss or two beside it (the
# patterns of those bounds with no late segment are the other bounds'); and a
# sender that sends green data inside the red part (6.21: the receiver must
# cancel, MISCOLORED), which only the model-driven tester's sender plays;
# and a green-only block (8.2: its receiver closes at the EOB, no notice);
# and a receiver that cancels a stalled session (USR_CNCLD, 4.2), for the
# implementations that declare it (HDTN).
BOUNDS = (
    Bound(3, 1, 1, 3),
    Bound(2, 1, 1, 3),
    Bound(2, 0, 1, 3),
    Bound(1, 1, 1, 3),
    Bound(3, 1, 0, 3),
    Bound(1, 0, 1, 4),
    Bound(3, 0, 1, 3, max_claims=1),
    Bound(2, 1, 1, 3, service_known=False),
    Bound(2, 1, 1, 1, max_late=1),
    Bound(1, 1, 1, 2, max_late=1),
    Bound(2, 1, 1, 2, miscolored=True),
    Bound(0, 3, 1, 2),
    Bound(1, 1, 1, 2, idle_cancels=True),
)


# A printed terminal outcome: (sender's end, receiver's notice, red part
# deliveries, green offsets).
Outcome = tuple[str, str, int, frozenset[int]]
Pattern = GenericPattern[Bound, Outcome]
Run = CatalogueRun[Bound, Outcome]


def _outcome(v: Sequence[TlaValue]) -> Outcome:
    s, r, deliveries, green = v
    return (str(s), str(r), int(deliveries), frozenset(green))


CATALOGUE_MODULE = CatalogueModule(MODULE, "NoStaleLoss", _outcome)


# A delayed segment is held back this long: past the retransmission timers of
# the catalogue's channel (1 s, conformance/timers.py), so that it arrives
# after the segments sent behind it and after its timer expired, as the
# model's ChannelDelay... allows (its release may come at any later time).
DELAY_MS = 1500.0
_ACT_PREFIX = {"drop": "", "delay": "late-", "duplicate": "dup-"}


def _short(loss: PlannedLoss) -> str:
    what = _ACT_PREFIX[loss.act]
    if loss.key in ("red_data", "green_data"):
        return f"{what}{loss.key.split('_')[0]}{loss.off * SEGMENT_SIZE}.{loss.occ}"
    return f"{what}{loss.key}.{loss.occ}"


def _order(loss: PlannedLoss) -> tuple[str, str, int, int, str]:
    return (loss.dir, loss.key, loss.off, loss.occ, loss.act)


def scenario(p: Pattern, states: int) -> Scenario:
    """The scenario of one loss pattern."""
    b = p.bound
    losses = sorted(p.losses, key=_order)
    slug = "-".join(_short(x) for x in losses) or "nominal"
    consts = ", ".join(f"{k}={v}" for k, v in b.constants().items() if k not in READING_CONSTS)
    what = ", ".join(_short(x) for x in losses) or "no loss"
    late = (
        f"; 'late-' segments are delayed by {DELAY_MS:g} ms, 'dup-' ones duplicated"
        if any(x.late for x in losses)
        else ""
    )
    if b.miscolored:
        late += (
            "; the sender also sends green data at offset 0 after its first red segment (RFC "
            "5326 §6.21 fault injection: only the model-driven tester's sender plays it)"
        )
    if b.idle_cancels:
        late += (
            "; the receiver may cancel the session once it stalls (USR_CNCLD: a declared "
            "profile, receiver_cancels_idle)"
        )
    block = LtpBlock(
        segment_size=SEGMENT_SIZE,
        red_len=b.n_red * SEGMENT_SIZE,
        block_len=(b.n_red + b.n_green) * SEGMENT_SIZE,
        retransmission_limit=b.max_retx,
        max_claims_per_rs=b.max_claims,
        receiver_client_service_id=None if b.service_known else 2,
        miscolored_sender=b.miscolored,
        receiver_cancels_idle=b.idle_cancels,
    )
    return Scenario(
        name=f"ltp-{b.tag}-{slug}",
        protocol="ltp",
        description=(
            f"Catalogue: {what}{late}; {b.n_red} red and {b.n_green} green segments of "
            f"{SEGMENT_SIZE} bytes, retransmission limit {b.max_retx} (checkpoints, reports "
            "and cancels must all use it for the expected outcomes)."
        ),
        params=block,
        impairments=[
            impairment_of(
                x,
                block,
                note=f"catalogue {'impairment' if x.late else 'loss'}: {_short(x)} ({x.dir})",
                delay_ms=DELAY_MS,
            )
            for x in losses
        ],
        expect=Expectation(
            outcomes=[
                outcome_of(s, r, deliveries, sorted(green), block, sorted(p.outcomes[o]))
                for o in sorted(p.outcomes, key=str)
                for s, r, deliveries, green in [o]
            ],
            source=f"TLC, specs/ltp/MCLTPCatalogue.tla: every terminal state with exactly "
            f"these {'impairments' if late else 'losses'}, channels in order ({consts}; "
            f"{states:,} distinct states), under "
            "the default reading and each alternative (specs/ltp/readings.json)",
            in_order=True,
        ),
        origin=Origin(
            model=str(MODULE.relative_to(REPO_ROOT)),
            config=consts,
            purpose="catalogue",
            purposes=["catalogue"],
        ),
    )


def run_bound(
    b: Bound, workdir: Path, progress: Callable[[TlcProgress], None] | None = None
) -> Run:
    """One TLC run: the patterns of a bound under its reading, the actions
    it took, its distinct states and seconds."""
    under = f"_reading{b.reading}" if b.reading else ""
    return catalogue_run(
        CATALOGUE_MODULE,
        b,
        b.reading,
        workdir,
        cfg_name=f"MCLTPCatalogue_{b.tag}m{b.max_loss}{under}.cfg",
        comment=f"Catalogue: every loss pattern within {b.max_loss} losses.",
        constants=b.constants(),
        progress=progress,
    )


READING_CONSTS = {r.constant for r in LTP.readings}


def run_readings(b: Bound, workdir: Path) -> Run:
    """:func:`run_bound` under the default reading and each alternative, merged."""
    return merge_readings(
        [run_bound(b.under(r), workdir / (f"reading{r}" if r else "")) for r in b.readings()],
        b.under(""),
    )


def catalogue(
    outdir: Path,
    actions_total: list[str],
    *,
    terminal_action: str = "",
    bounds: tuple[Bound, ...] = BOUNDS,
    lanes: int = 2,
    on_bound: Callable[[int, int, str], None] | None = None,
    outages: bool = True,
    realistic: bool = True,
) -> CatalogueReport:
    """Write every pattern's scenario into ``outdir`` and ``catalogue.json``
    (counts per bound, action coverage)."""
    outdir.mkdir(parents=True, exist_ok=True)
    work = outdir / "tlc"
    results: dict[Bound, Run] = {}
    done = 0
    runs: dict[Bound, list[Run]] = {b: [] for b in bounds}
    jobs = [(b, r) for b in bounds for r in b.readings()]
    with ThreadPoolExecutor(max_workers=lanes) as pool:
        futures = {
            pool.submit(run_bound, b.under(r), work / b.tag / (f"reading{r}" if r else "")): (b, r)
            for b, r in jobs
        }
        for fut in futures:
            b, r = futures[fut]
            runs[b].append(fut.result())
            done += 1
            if on_bound:
                on_bound(done, len(jobs), b.tag + (f" (reading {r})" if r else ""))
    for b in bounds:
        results[b] = merge_readings(runs[b], b.under(""))
    scenarios: list[Scenario] = []
    covered: set[str] = set()
    seconds = 0.0
    per_bound: dict[str, int] = {}
    states: dict[str, int] = {}
    for b in bounds:
        res = results[b]
        covered |= res.actions
        seconds += res.seconds
        per_bound[f"{b.tag}m{b.max_loss}"] = len(res.patterns)
        states[f"{b.tag}m{b.max_loss}"] = res.states
        for p in sorted(res.patterns, key=lambda x: sorted(map(_order, x.losses))):
            scen = scenario(p, res.states)
            dump_model(scen, outdir / f"{scen.name}.json")
            scenarios.append(scen)
    if realistic:
        found = realistic_scenarios()
        for scen in found:
            dump_model(scen, outdir / f"{scen.name}.json")
        per_bound["realistic"] = len(found)
        scenarios += found
    if outages:
        # an outage during each sender and receiver state (OUTAGE_TRIGGERS)
        t0 = time.monotonic()
        found, seen = outage_scenarios(outdir)
        covered |= seen
        seconds += time.monotonic() - t0
        per_bound["outages"] = len(found)
        scenarios += found
    if scenarios and terminal_action:
        covered.add(terminal_action)  # every pattern ends in a terminal state
    names = [s.name for s in scenarios]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise RuntimeError(f"catalogue names collide: {sorted(dup)}")
    report = CatalogueReport(
        scenarios=scenarios,
        per_bound=per_bound,
        states=states,
        actions_covered=sorted(a for a in covered if a in actions_total),
        actions_total=list(actions_total),
        tlc_seconds=round(seconds, 2),
    )
    summary = {
        "scenarios": len(scenarios),
        "per_bound": per_bound,
        "distinct_states": states,
        "tlc_seconds": report.tlc_seconds,
        "actions_covered": report.actions_covered,
        "actions_uncovered": report.actions_uncovered,
    }
    (outdir / "catalogue.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return report


# The retransmission table's block (in the manner of Table 1 of the ns-3 LTP
# paper): 3 red and 1 green segments, limit 1, up to two losses.
TABLE_BOUND = Bound(3, 1, 1, 2)
TABLE_KEYS = frozenset({"red_data", "green_data", "RS"})


def retx_scenarios(workdir: Path, b: Bound = TABLE_BOUND) -> list[Scenario]:
    """The retransmission table's rows: every loss pattern of the bound made
    of data segments and reports only, nominal first, then by loss count."""
    res = run_readings(b, workdir)
    rows = [p for p in res.patterns if all(x.key in TABLE_KEYS for x in p.losses)]
    rows.sort(key=lambda p: (len(p.losses), sorted(map(_order, p.losses))))
    return [scenario(p, res.states) for p in rows]


# Built-in geometries for `dtnconform retx-table ltp --geometry NAME`: the
# ns-3 LTP paper's (Table 1: a 5000-byte block, 1500 bytes red, 1461-byte
# segments, up to 4 losses) and its all-red and all-green variants.
RETX_GEOMETRIES: dict[str, dict[str, int]] = {
    "ns3": {"block_len": 5000, "red_len": 1500, "segment_size": 1461, "max_losses": 4},
    "ns3-all-red": {"block_len": 5000, "red_len": 5000, "segment_size": 1461, "max_losses": 4},
    "ns3-all-green": {"block_len": 5000, "red_len": 0, "segment_size": 1461, "max_losses": 4},
}


def retx_grid(block_len: int, red_len: int, segment_size: int, max_losses: int) -> list[Scenario]:
    """The retransmission table of any geometry: every pattern of at most
    ``max_losses`` first copies lost among the block's data segments and
    its first report (a block with a red part), nominal first, then by loss
    count. No outcome set is enumerated: each row is judged at the end of
    its validated trace, whatever the block's size; a green-only block's
    receiver closes at the EOB with no notice (RFC 5326 §8.2). The
    retransmission limit is the loss count, so no pattern cancels."""
    from itertools import combinations

    block = LtpBlock(
        block_len=block_len,
        red_len=red_len,
        segment_size=segment_size,
        retransmission_limit=max(1, max_losses),
    )
    n_red, n_green = block_segments(block)
    units = [PlannedLoss("forward", "red_data", i, 1) for i in range(n_red)]
    units += [PlannedLoss("forward", "green_data", n_red + j, 1) for j in range(n_green)]
    if n_red:
        units.append(PlannedLoss("return", "RS", 0, 1))
    geometry = f"{block_len}-{red_len}-{segment_size}"
    out = []
    for k in range(min(max_losses, len(units)) + 1):
        for losses in combinations(units, k):
            slug = "-".join(_grid_name(x, block) for x in losses) or "nominal"
            what = ", ".join(_grid_name(x, block) for x in losses) or "no loss"
            out.append(
                Scenario(
                    name=f"ltp-retx-{geometry}-{slug}",
                    protocol="ltp",
                    description=(
                        f"Retransmission table: {what}; a {block_len}-byte block, {red_len} "
                        f"bytes red, in {segment_size}-byte segments, retransmission limit "
                        f"{block.retransmission_limit}."
                    ),
                    params=block,
                    # a segment past a 1500-byte link (the ns-3 paper's 1461
                    # bytes with LTP's header and IPv4/UDP's): a larger MTU,
                    # as the paper's point-to-point links have, not fragments
                    channel=Channel(mtu=max(1500, segment_size + 64)),
                    impairments=[
                        impairment_of(x, block, note=f"retx-table loss: {_grid_name(x, block)}")
                        for x in losses
                    ],
                    expect=judged_at_end(
                        block,
                        set(),
                        "a retransmission table's row: judged at the end of its validated "
                        "trace, no outcome set enumerated",
                    ),
                    origin=Origin(
                        model="specs/ltp/TraceLTP.tla",
                        config=f"block_len={block_len}, red_len={red_len}, "
                        f"segment_size={segment_size}, max_losses={max_losses}",
                        purpose="retx-table",
                        purposes=["retx-table"],
                    ),
                )
            )
    return out


def judged_at_end(block: LtpBlock, lost_green: set[int], unjudged: str) -> Expectation:
    """What a transfer that completes delivers, shown for a scenario too
    large for an outcome set (``unjudged`` says why): the red part, the
    green model segments but ``lost_green``; the receiver of a green-only
    block closes with no notice (RFC 5326 §8.2). The verdict comes from
    the end of the run's validated trace, not from this."""
    n_red, n_green = block_segments(block)
    green = [g for g in range(n_red, n_red + n_green) if g not in lost_green]
    end = "completed" if n_red else "closed"
    return Expectation(
        outcomes=[outcome_of("completed", end, 1 if n_red else 0, green, block)],
        unjudged=unjudged,
    )


def _grid_name(x: PlannedLoss, block: LtpBlock) -> str:
    """A loss as a row names it: "red1461.1", "green2961.1", "RS.1"."""
    if x.key in ("red_data", "green_data"):
        # the segment's offset, as catalogue names have it (the rule holds
        # another byte of it: outcomes.holding_byte)
        return f"{x.key.split('_')[0]}{segment_offset(x.key, x.off, block)}.{x.occ}"
    return f"{x.key}.{x.occ}"


def retx_geometry(scn: Scenario) -> str:
    """The block a row of the retransmission table transfers, for its title."""
    p = scn.params
    if not isinstance(p, LtpBlock):
        raise TypeError(f"{scn.name}: not an LTP scenario ({scn.protocol})")
    return (
        f"block {p.block_len} B (red {p.red_len} B) in {p.segment_size}-byte segments, "
        f"retransmission limit {p.retransmission_limit}"
    )


# ---------------------------------------------------------------------------
# Purposes at a realistic geometry (issue 29, item 6)
# ---------------------------------------------------------------------------

# 16 data segments of SEGMENT_SIZE bytes: past every outcome set TLC
# enumerates (blocks of a few segments), so each run is judged at the end
# of its validated trace.
REALISTIC_SEGMENTS = 16
# The forward link's rate in the purpose whose report must come back while
# the green part is still on the link: at 500 kbit/s the 8 green segments
# keep it busy for about 140 ms after the checkpoint, and the report's round
# trip takes a few ms (on a loaded machine licklider once took 30 ms to
# answer, longer than the green part took at 2 Mbit/s).
REALISTIC_RATE_BPS = 5e5


def realistic_scenarios() -> list[Scenario]:
    """Purposes at a realistic geometry, each judged from its trace: a
    report split into several RSs with one of them lost (nasa-jpl/ION-DTN
    issue #14 reports sessions that never end this way); a report that
    comes back while the green part is still on the link; the same red
    segment lost three times; green data lost from a long green part, and
    from a green-only block."""
    n, size = REALISTIC_SEGMENTS, SEGMENT_SIZE
    half = n // 2
    all_red = LtpBlock(block_len=n * size, red_len=n * size, segment_size=size,
                       retransmission_limit=2, max_claims_per_rs=1)  # fmt: skip
    mixed = LtpBlock(block_len=n * size, red_len=half * size, segment_size=size,
                     retransmission_limit=2)  # fmt: skip
    all_green = LtpBlock(block_len=n * size, red_len=0, segment_size=size)

    def red(seg: int, occ: int = 1) -> PlannedLoss:
        return PlannedLoss("forward", "red_data", seg, occ)

    def green(seg: int) -> PlannedLoss:
        return PlannedLoss("forward", "green_data", seg, 1)

    rs1, rs2 = PlannedLoss("return", "RS", 0, 1), PlannedLoss("return", "RS", 0, 2)
    rated = Channel(forward=DirectionChannel(link=LinkSettings(rate_bps=REALISTIC_RATE_BPS)))
    purposes: list[tuple[str, str, LtpBlock, list[PlannedLoss], Channel]] = [
        (
            "split-report-rs1-lost",
            "red 5000 lost, and the first of the report's two RSs (one claim each, no gap) "
            "lost: the sender retransmits for the second, yet has the whole red part claimed "
            "only when the receiver's report timer sends the first again (6.8, 6.12)",
            all_red,
            [red(5), rs1],
            Channel(),
        ),
        (
            "split-report-rs2-lost",
            "red 5000 lost, and the second of the report's two RSs, the one with the gap, "
            "lost: the first stops the checkpoint timer (6.13), and the retransmission waits "
            "for the receiver's report timer (6.8)",
            all_red,
            [red(5), rs2],
            Channel(),
        ),
        (
            "report-during-green-red3000",
            f"red 3000 lost, the forward link at {REALISTIC_RATE_BPS / 1e3:g} kbit/s: the "
            "report answering the end of the red part comes back while the green part is "
            "still on the link, and the retransmission follows it (6.13)",
            mixed,
            [red(3)],
            rated,
        ),
        (
            "repeated-loss-red5000",
            "red 5000 lost three times, its first copy, its retransmission (a checkpoint) and "
            "that checkpoint's copy after its timer, within the retransmission limit of 2 "
            "(6.7, 6.13)",
            all_red.model_copy(update={"max_claims_per_rs": 20}),
            [red(5, 1), red(5, 2), red(5, 3)],
            Channel(),
        ),
        (
            "green-lost-green10000-green12000",
            "green 10000 and 12000 lost: the red part is delivered and the session completes; "
            "the other green data, the EOB with it, reaches the client, and nothing else "
            "(6.1, 7.2)",
            mixed,
            [green(half + 2), green(half + 4)],
            Channel(),
        ),
        (
            "green-only-green5000",
            "a green-only block, green 5000 lost: nothing is retransmitted, the sender "
            "completes once all is sent (6.12), and the receiver closes at the EOB with no "
            "notice (8.2), the rest of the data delivered (7.2)",
            all_green,
            [green(5)],
            Channel(),
        ),
    ]
    out: list[Scenario] = []
    for tag, what, block, losses, channel in purposes:
        n_red, n_green = block_segments(block)
        name = f"ltp-realistic-{tag}"
        out.append(
            Scenario(
                name=name,
                protocol="ltp",
                description=f"Realistic geometry: {what}; a {block.block_len}-byte block, "
                f"{block.red_len} bytes red, in {size}-byte segments.",
                params=block,
                channel=channel,
                impairments=[
                    impairment_of(x, block, note=f"{_short(x)} ({x.dir})") for x in losses
                ],
                expect=judged_at_end(
                    block,
                    {x.off for x in losses if x.key == "green_data"},
                    f"{n_red + n_green} data segments, past the outcome sets TLC enumerates: "
                    "judged at the end of its validated trace",
                ),
                origin=Origin(
                    model="specs/ltp/TraceLTP.tla",
                    config=f"block_len={block.block_len}, red_len={block.red_len}, "
                    f"segment_size={size}, max_claims_per_rs={block.max_claims_per_rs}",
                    purpose=name,
                    purposes=[name, "realistic"],
                ),
            )
        )
    return out


# ---------------------------------------------------------------------------
# Outages during each sender and receiver state
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class OutageTrigger:
    """A state of one side, marked by the segment that enters it: the link
    goes down, both ways, as that segment reaches the channel (an ``outage``
    rule keyed on it). ``before``: the planned losses that bring the session
    to that state first."""

    name: str
    state: str
    direction: Direction
    match: dict[str, FieldValue]
    occurrence: int = 1
    before: tuple[PlannedLoss, ...] = ()


# The block every outage scenario sends: 2 red segments and 1 green, limit 1.
OUTAGE_BOUND = Bound(2, 1, 1, 0)
OUTAGE_TRIGGERS = (
    OutageTrigger(
        "sender-sends-red", "sender in its initial transmission (receiver not yet reached)",
        "forward", {"kind": "red_data", "holds": 0},
    ),
    OutageTrigger(
        "sender-awaits-report", "sender with its checkpoint timer running (6.2)",
        "forward", {"kind": "red_data", "holds": 1000},
    ),
    OutageTrigger(
        "sender-sends-green", "sender transmitting the green part (6.1)",
        "forward", {"kind": "green_data", "holds": 2000},
    ),
    OutageTrigger(
        "receiver-awaits-ack", "receiver with its RS timer running (6.3)",
        "return", {"type": "RS"},
    ),
    OutageTrigger(
        "receiver-closing", "receiver about to close on the RA (6.14)",
        "forward", {"type": "RA"},
    ),
    OutageTrigger(
        "sender-retransmits", "sender retransmitting a gap (6.13)",
        "forward", {"kind": "red_data", "holds": 0}, 2,
        (PlannedLoss("forward", "red_data", 0, 1),),
    ),
    OutageTrigger(
        "sender-cancels", "sender cancelling, its cancel timer running (6.15)",
        "forward", {"type": "CS"}, 1,
        (PlannedLoss("forward", "red_data", 1, 1), PlannedLoss("forward", "red_data", 1, 2)),
    ),
    OutageTrigger(
        "receiver-cancels", "receiver cancelling, its cancel timer running (6.15)",
        "return", {"type": "CR"}, 1,
        (PlannedLoss("return", "RS", 0, 1), PlannedLoss("return", "RS", 0, 2)),
    ),
)  # fmt: skip
# Outage lengths: shorter than the catalogue channel's 1 s retransmission
# timers (only what is in flight is lost) and longer than the limit's
# timers together (every retransmission in it is lost too).
OUTAGE_MS = (500.0, 2500.0)


def outage_scenarios(outdir: Path) -> tuple[list[Scenario], set[str]]:
    """One scenario per trigger and outage length into ``outdir``, and the
    model actions their outcome sets' behaviours took. The outage is a
    planned impairment (generators.outcomes): the model's link goes down as
    the trigger segment crosses it (ChannelLinkDown), swallows what it
    carries until it comes back (ChannelSwallow..., ChannelLinkUp), and the
    timers run on, since licklider has no link state cues (RFC 5326 6.5,
    6.6). The model is untimed, so both lengths of one trigger share a set."""
    from generators.ltp.outcomes import expectation_for

    b = OUTAGE_BOUND
    block = LtpBlock(
        segment_size=SEGMENT_SIZE,
        red_len=b.n_red * SEGMENT_SIZE,
        block_len=(b.n_red + b.n_green) * SEGMENT_SIZE,
        retransmission_limit=b.max_retx,
    )
    outdir.mkdir(parents=True, exist_ok=True)
    made: list[Scenario] = []
    for trig in OUTAGE_TRIGGERS:
        for ms in OUTAGE_MS:
            imps = [impairment_of(x, block, note=f"brings the session there: {_short(x)}")
                    for x in trig.before]  # fmt: skip
            match = dict(trig.match)
            if isinstance(at := match.get("holds"), int):  # the segment as generated rules name it
                match["holds"] = holding(str(match["kind"]), at, block)
            imps.append(
                Impairment(
                    direction=trig.direction,
                    match=match,
                    occurrence=trig.occurrence,
                    action="outage",
                    delay_ms=ms,
                    note=f"outage: {trig.state}",
                )
            )
            scn = Scenario(
                name=f"ltp-outage-{trig.name}-{ms:g}ms",
                protocol="ltp",
                description=(
                    f"Outage of {ms:g} ms, both ways, from the moment the {trig.state} "
                    f"(an outage rule keyed on the {_ordinal(trig.occurrence)} "
                    f"{trig.direction} segment {match}); {b.n_red} red and {b.n_green} "
                    f"green segments of {SEGMENT_SIZE} bytes, retransmission limit {b.max_retx}."
                ),
                params=block,
                impairments=imps,
                expect=Expectation(outcomes=[outcome_of("completed", "completed", 1, [], block)]),
                origin=Origin(
                    model=str(MODULE.relative_to(REPO_ROOT)),
                    config=f"NRed={b.n_red}, NGreen={b.n_green}, MaxRetx={b.max_retx}",
                    purpose="outage",
                    purposes=["outage", trig.name],
                ),
            )
            made.append(scn)
    # every trigger's first length, then the others: the model is untimed,
    # so those find their trigger's set computed (expectation_for's cache)
    # instead of waiting on it
    seen: set[str] = set()
    order = sorted(range(len(made)), key=lambda i: i % len(OUTAGE_MS))
    with ThreadPoolExecutor(max_workers=2) as pool:
        found = list(
            pool.map(
                lambda i: expectation_for(made[i], outdir / "tlc" / made[i].name, seen=seen),
                order,
            )
        )
    sets = dict(zip(order, found, strict=True))
    for i, scn in enumerate(made):
        scn.expect = sets[i]
        dump_model(scn, outdir / f"{scn.name}.json")
    return made, seen
