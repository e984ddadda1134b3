"""CFDP test generation: outcome sets and the scenario catalogue.

Outcome sets (:func:`expectation_for`): for a scenario's impairments and
users' requests, TLC explores specs/cfdp/MCCFDPOutcomes.tla with the channel
allowed to impair exactly the planned PDUs, named as the live channel names
them (direction, wire key, occurrence), and prints every terminal outcome:
each entity's end, its condition code (Table 5-5) and whether the file was
delivered. A run passes with any of them.

The catalogue (:func:`generate`) is made of

* every impairment pattern of one transaction within a bound's budgets
  (specs/cfdp/MCCFDPCatalogue.tla, one TLC run per bound and reading):
  each PDU lost at each point, once and repeatedly, and held back or
  duplicated at each point (so File Data overtakes the Metadata and the last
  two File Data PDUs swap), in each transmission mode, with immediate and
  deferred NAKs; the limits are reached where the losses exhaust them;
* planned purposes, one outcome-set run each: a user's cancel or suspend at
  either entity and a Prompt, each after every PDU of the nominal
  transaction; a link outage as each PDU crosses; undetected corruption of
  each File Data PDU.

The machinery is LTP's: :class:`generators.outcomes.PlannedLoss` names an
impairment, :func:`generators.tlc.printed` reads what TLC printed, the
readings come from the protocol registry (specs/cfdp/readings.json).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from conformance.errors import DtncError
from conformance.protocols.cfdp import (
    MODEL_CONDITIONS,
    MODEL_MODES,
    SPEC,
    CfdpDelivery,
    CfdpRequest,
    CfdpTransfer,
    Trigger,
)
from conformance.types import (
    Expectation,
    ExpectedOutcome,
    FieldValue,
    Impairment,
    Origin,
    Outcome,
    Scenario,
    dump_model,
)
from generators.outcomes import ACTS, PlannedLoss, Unplannable, cached, channel_shape, expand
from generators.tlc import REPO_ROOT, TlaConstant, TlcProgress, cfg_text, printed, run_tlc
from generators.traps import GenerateReport, PurposeStatus

SPEC_DIR = REPO_ROOT / "specs" / "cfdp"
OUTCOMES = SPEC_DIR / "MCCFDPOutcomes.tla"
CATALOGUE = SPEC_DIR / "MCCFDPCatalogue.tla"

# The model's wire keys (MCCFDPOutcomes Key) as the emulator's rules match
# them (specs/cfdp/wire.json fields); File Data adds its offset.
MATCHES: dict[str, dict[str, FieldValue]] = {
    "metadata": {"directive": "metadata"},
    "file_data": {"pdu_type": "file_data"},
    "eof": {"directive": "eof"},
    "ack_eof": {"directive": "ack", "ack_of": "eof"},
    "ack_finished": {"directive": "ack", "ack_of": "finished"},
    "nak": {"directive": "nak"},
    "finished": {"directive": "finished"},
    "prompt": {"directive": "prompt"},
    "keep_alive": {"directive": "keep_alive"},
}
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

# A held-back PDU waits this long: past the catalogue channel's timers (1 s),
# as ChannelHoldPdu allows (its release may come at any later time).
DELAY_MS = 1500.0
# An outage this long: shorter than the timers, though the model lets it
# last any number of steps (WrapperLinkUp).
OUTAGE_MS = 500.0
# The file every catalogue scenario sends: two File Data PDUs, the last one
# short (as in ION issue #31).
SEGMENT_SIZE = 1024
FILE_LEN = 2 * SEGMENT_SIZE - 100
# The model's own loss budget for an outage's free losses.
OUTAGE_LOSSES = 8


def n_segments(t: CfdpTransfer) -> int:
    """The File Data PDUs the file takes (the model's NSeg)."""
    return max(1, -(-t.file_len // t.segment_size))


def match_of(key: str, off: int, t: CfdpTransfer) -> dict[str, FieldValue]:
    """The emulator match of a model key (and segment, for File Data)."""
    m = dict(MATCHES[key])
    if key == "file_data":
        m["offset"] = off * t.segment_size
    return m


def key_of(match: dict[str, FieldValue], t: CfdpTransfer, where: str) -> tuple[str, int]:
    """The model key and segment a match names (the inverse of :func:`match_of`)."""
    m = dict(match)
    offset = m.pop("offset", None)
    for key, want in MATCHES.items():
        if m == want:
            if key != "file_data":
                if offset is not None:
                    break
                return key, 0
            if not isinstance(offset, int) or offset % t.segment_size:
                raise Unplannable(
                    f"{where}: File Data is named by an offset at a segment boundary "
                    f"(segment_size {t.segment_size}), not {offset!r}"
                )
            if offset // t.segment_size >= n_segments(t):
                raise Unplannable(f"{where}: offset {offset} is past the file's end")
            return key, offset // t.segment_size
    raise Unplannable(
        f"{where}: match {match} is not one the model names (directive, ack_of for an ACK, "
        "pdu_type file_data with its offset)"
    )


def impairment_of(x: PlannedLoss, t: CfdpTransfer, note: str = "") -> Impairment:
    """The channel rule that makes a planned impairment."""
    return Impairment(
        direction=x.dir,  # type: ignore[arg-type]
        match=match_of(x.key, x.off, t),
        occurrence=x.occ,
        action=x.act,  # type: ignore[arg-type]
        delay_ms={"delay": DELAY_MS, "outage": OUTAGE_MS}.get(x.act, 0.0),
        # a corruption must reach the receiver (the UDP checksum is made good)
        # and strike file data, not a header: the last octet of the PDU,
        # which carries no CRC (the model corrupts File Data with none)
        checksum="recompute" if x.act == "corrupt" else None,
        tail_octets=1 if x.act == "corrupt" else None,
        note=note,
    )


def plan(impairments: Sequence[Impairment], t: CfdpTransfer) -> list[PlannedLoss]:
    """The planned impairments of a scenario (one per match acted on)."""

    def planned_key(where: str, imp: Impairment) -> tuple[str, int]:
        key, off = key_of(imp.match, t, where)
        if imp.action == "corrupt" and (key != "file_data" or t.pdu_crc):
            raise Unplannable(
                f"{where}: the model corrupts File Data with no PDU CRC only (with the CRC "
                "a corrupted PDU is a lost one: use drop)"
            )
        return key, off

    return expand(impairments, planned_key, (*ACTS, "corrupt"))


def request_tla(r: CfdpRequest, t: CfdpTransfer, where: str) -> str:
    key, off = key_of(r.after.match, t, where)
    return (
        f'[who |-> "{r.entity}", what |-> "{r.request}", dir |-> "{r.after.direction}", '
        f'key |-> "{key}", off |-> {off}, occ |-> {r.after.occurrence}]'
    )


def plan_module(losses: Iterable[PlannedLoss], requests: Iterable[str], in_order: bool) -> str:
    return (
        "---- MODULE MCCFDPPlan ----\n"
        f"ThePlan == {{{', '.join(x.tla() for x in losses)}}}\n"
        f"TheRequests == {{{', '.join(requests)}}}\n"
        f"InOrder == {'TRUE' if in_order else 'FALSE'}\n"
        "====\n"
    )


def constants(
    t: CfdpTransfer,
    reading: str = "",
    *,
    losses: int = 0,
    late: int = 0,
    corrupt: int = 0,
    outages: int = 0,
    requests: Sequence[CfdpRequest] = (),
) -> dict[str, TlaConstant]:
    """The model constants of a transfer (one transaction) and its budgets."""
    asked = [r.request for r in requests]
    return {
        "NTx": 1,
        "NSeg": n_segments(t),
        "Modes": {MODEL_MODES[t.mode]},
        "NakMode": t.nak_mode,
        "MaxAck": t.ack_limit,
        "MaxNak": t.nak_limit,
        "MaxCheck": t.check_limit,
        "MaxLoss": losses + (OUTAGE_LOSSES if outages else 0),
        "MaxLate": late,
        "MaxCorrupt": corrupt,
        "MaxOutages": outages,
        "MaxCancels": asked.count("cancel"),
        "MaxSuspends": asked.count("suspend"),
        "MaxPrompts": sum(a.startswith("prompt") for a in asked),
        "FaultAbandons": set(),
        "PrematureTimeouts": False,
        "FaultyReceiver": False,
        **SPEC.reading_constants(reading),
    }


def _end(v: str) -> Outcome:
    # the model's out: open (never here: terminal states are ended), completed,
    # cancelled, abandoned; "none": the transaction never reached the receiving
    # entity, which a live run sees as its time limit passing
    return v if v in ("completed", "cancelled", "abandoned") else "timeout"  # type: ignore[return-value]


def outcome_of(
    v: Sequence[object], t: CfdpTransfer, readings: Sequence[str] = ("",)
) -> ExpectedOutcome:
    """A printed terminal outcome <<sender out, sender condition, receiver
    out, receiver condition, delivered>> (MCCFDPOutcomes Outcome)."""
    s_out, s_cc, r_out, r_cc, kept = v
    return ExpectedOutcome(
        readings=list(readings),
        sender_outcome=_end(str(s_out)),
        receiver_outcome=_end(str(r_out)),
        delivered=CfdpDelivery(
            file_bytes_delivered=t.file_len if kept is True else 0,
            sender_condition=MODEL_CONDITIONS[str(s_cc)],
            receiver_condition="" if r_out == "none" else MODEL_CONDITIONS[str(r_cc)],
        ),
    )


@dataclass
class OutcomeSet:
    outcomes: list[ExpectedOutcome]
    distinct_states: int
    seconds: float
    actions: set[str] = field(default_factory=set)


def outcome_set(
    t: CfdpTransfer,
    impairments: Sequence[Impairment],
    workdir: Path,
    *,
    name: str = "outcomes",
    reading: str = "",
    in_order: bool = True,
    progress: Callable[[TlcProgress], None] | None = None,
) -> OutcomeSet:
    """One TLC run of MCCFDPOutcomes: every terminal outcome with exactly the
    planned impairments and requests, under one reading."""
    losses = plan(impairments, t)
    reqs = [request_tla(r, t, f"params.requests[{i}]") for i, r in enumerate(t.requests)]
    acts = [x.act for x in losses]
    consts = constants(
        t,
        reading,
        losses=acts.count("drop"),
        late=sum(x.late for x in losses),
        corrupt=acts.count("corrupt"),
        outages=acts.count("outage"),
        requests=t.requests,
    )
    work = workdir / (name + (f"-reading{reading}" if reading else ""))
    work.mkdir(parents=True, exist_ok=True)
    cfg = work / "MCCFDPOutcomes_plan.cfg"
    cfg.write_text(
        cfg_text(
            f"Outcome set of {name}.",
            consts,
            spec="OutcomeSpec",
            view="OutcomeView",
            invariants=["Report", "ActionSeen"],
        ),
        encoding="utf-8",
    )
    res = run_tlc(
        OUTCOMES,
        cfg,
        workers=1,
        workdir=work,
        progress=progress,
        short=True,
        extra_modules={"MCCFDPPlan": plan_module(losses, reqs, in_order)},
    )
    if res.violated or res.errors:
        raise DtncError(f"{name}: TLC failed on the outcome set: {res.errors} ({res.log_path})")
    text = res.log_path.read_text(encoding="utf-8")
    seen: dict[tuple[int | str, ...], ExpectedOutcome] = {}
    for v in printed(text, "dtnc-outcome"):
        o = outcome_of(v[0], t, (reading,))  # type: ignore[arg-type]
        seen.setdefault(o.key(), o)
    return OutcomeSet(
        list(seen.values()),
        res.distinct_states or 0,
        res.seconds,
        {str(v[0]) for v in printed(text, "dtnc-action")},
    )


def reading_ids(t: CfdpTransfer) -> list[str]:
    """The readings that can make a difference to a transfer."""
    return SPEC.reading_ids(constants(t, losses=1))


# The largest file, in File Data PDUs, whose outcome set TLC enumerates
# (4: plans/smoke.yaml's 4,000 octets in 1024-octet PDUs, seconds of TLC; a
# 98-PDU file ran for minutes without an end).
MAX_OUTCOME_SEGMENTS = 4


def expectation(
    t: CfdpTransfer,
    impairments: Sequence[Impairment],
    workdir: Path,
    *,
    name: str = "outcomes",
    in_order: bool = True,
    progress: Callable[[TlcProgress], None] | None = None,
    seen: set[str] | None = None,
) -> Expectation:
    """The expectation: the outcome sets under the default reading and each
    alternative, merged (an outcome carries the readings reaching it)."""
    if n_segments(t) > MAX_OUTCOME_SEGMENTS:
        raise Unplannable(
            f"{name}: a file of {n_segments(t)} File Data PDUs; outcome sets are enumerated for "
            f"files of up to {MAX_OUTCOME_SEGMENTS} (the model's NSeg: its states grow "
            "exponentially with it)"
        )
    runs = [
        outcome_set(
            t, impairments, workdir, name=name, reading=r, in_order=in_order, progress=progress
        )
        for r in reading_ids(t)
    ]
    if seen is not None:
        for x in runs:
            seen |= x.actions
    every = [o for x in runs for o in x.outcomes]
    if not every:
        raise Unplannable(
            f"{name}: the model reaches no end with exactly these impairments and requests "
            "(a request after the transaction is over, or an impairment of a PDU never sent)"
        )
    requests = "; ".join(r.describe() for r in t.requests)
    return Expectation(
        outcomes=every,
        in_order=in_order,
        source=(
            "TLC, specs/cfdp/MCCFDPOutcomes.tla: every terminal state with exactly the planned "
            "impairments"
            + (f" and requests ({requests})" if requests else "")
            + (", channels in order" if in_order else ", channels that may reorder")
            + f" ({runs[0].distinct_states:,} distinct states), under the default reading and "
            "each alternative that can matter (specs/cfdp/readings.json)"
        ),
    )


def expectation_for(
    scn: Scenario,
    workdir: Path,
    *,
    progress: Callable[[TlcProgress], None] | None = None,
    seen: set[str] | None = None,
) -> Expectation:
    """A CFDP scenario's expectation from its transfer, impairments, requests
    and channel (``dtnconform expect``); ``seen`` gets the model actions its
    behaviours took."""
    if not isinstance(scn.params, CfdpTransfer):
        raise Unplannable(f"{scn.name}: this outcome set is for CFDP scenarios only")
    shape = channel_shape(scn)
    if shape.random_loss or shape.random_late:
        raise Unplannable(
            f"{scn.name}: the CFDP outcome sets take planned impairments only, not a channel "
            f"that loses, reorders or duplicates at random ({shape.why})"
        )
    key = json.dumps(
        [
            scn.params.model_dump(mode="json"),
            [i.model_dump(mode="json", exclude={"note", "delay_ms"}) for i in scn.impairments],
            shape.in_order,
        ],
        sort_keys=True,
    )
    params = scn.params
    return cached(
        key,
        lambda took: expectation(
            params,
            scn.impairments,
            workdir,
            name=scn.name,
            in_order=shape.in_order,
            progress=progress,
            seen=took,
        ),
        seen,
    )


# ---------------------------------------------------------------------------
# The catalogue: every impairment pattern of a bound
# ---------------------------------------------------------------------------


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


@dataclass
class Pattern:
    bound: Bound
    losses: frozenset[PlannedLoss]
    outcomes: dict[tuple[object, ...], set[str]] = field(default_factory=dict)


def run_bound(
    b: Bound, reading: str, workdir: Path, progress: Callable[[TlcProgress], None] | None = None
) -> tuple[list[Pattern], set[str], int, float]:
    """One TLC run of the catalogue: the patterns of a bound under a reading,
    the actions taken, distinct states and seconds."""
    workdir.mkdir(parents=True, exist_ok=True)
    cfg = workdir / f"MCCFDPCatalogue_{b.tag}.cfg"
    cfg.write_text(
        cfg_text(
            f"Catalogue: every pattern within {b.max_loss} losses and {b.max_late} late PDUs.",
            constants(b.transfer(), reading, losses=b.max_loss, late=b.max_late),
            spec="CatalogueSpec",
            view="OutcomeView",
            invariants=["CatalogueReport", "ActionSeen"],
            action_constraint="NoStaleImpairment",
        ),
        encoding="utf-8",
    )
    res = run_tlc(CATALOGUE, cfg, workers=1, workdir=workdir, progress=progress, short=True)
    if res.violated or res.errors:
        raise DtncError(f"TLC failed on the catalogue ({b.tag}): {res.errors} ({res.log_path})")
    text = res.log_path.read_text(encoding="utf-8")
    found: dict[frozenset[PlannedLoss], Pattern] = {}
    for hit, outcome in printed(text, "dtnc-pattern"):  # type: ignore[misc]
        losses = frozenset(
            PlannedLoss(str(x["dir"]), str(x["key"]), int(x["off"]), int(x["occ"]), str(x["act"]))
            for x in hit  # type: ignore[union-attr]
        )
        if b.max_late and not any(x.late for x in losses):
            continue  # a bound without late PDUs has it
        if len({(x.dir, x.key, x.off, x.occ) for x in losses}) < len(losses):
            continue  # two acts on one transmission: a live rule takes one
        p = found.setdefault(losses, Pattern(b, losses))
        p.outcomes.setdefault(tuple(outcome), set()).add(reading)  # type: ignore[arg-type]
    actions = {str(v[0]) for v in printed(text, "dtnc-action")}
    return list(found.values()), actions, res.distinct_states or 0, res.seconds


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


# ---------------------------------------------------------------------------
# Planned purposes: requests, outages, corruption
# ---------------------------------------------------------------------------

# The nominal transaction's PDUs, per mode, as (direction, key, segment):
# the points a request or an outage is tied to.
NOMINAL: dict[str, tuple[tuple[str, str, int], ...]] = {
    "class1": (("forward", "metadata", 0), ("forward", "file_data", 0),
               ("forward", "file_data", 1), ("forward", "eof", 0)),
    "class1-closure": (("forward", "metadata", 0), ("forward", "file_data", 0),
                       ("forward", "file_data", 1), ("forward", "eof", 0),
                       ("return", "finished", 0)),
    "class2": (("forward", "metadata", 0), ("forward", "file_data", 0),
               ("forward", "file_data", 1), ("forward", "eof", 0), ("return", "ack_eof", 0),
               ("return", "finished", 0), ("forward", "ack_finished", 0)),
}  # fmt: skip


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
    outage as each PDU crosses; each File Data PDU corrupted."""
    out: list[Planned] = []
    for mode, points in NOMINAL.items():
        base = Bound(mode, 0).transfer()
        tag = MODEL_MODES[mode]
        asks = [("sender", "cancel"), ("receiver", "cancel"), ("sender", "suspend"),
                ("receiver", "suspend")]  # fmt: skip
        if mode == "class2":
            asks += [("sender", "prompt_nak"), ("sender", "prompt_keep_alive")]
        for who, what in asks:
            for d, key, off in points:
                trig = Trigger(direction=d, match=match_of(key, off, base))  # type: ignore[arg-type]
                req = CfdpRequest(entity=who, request=what, after=trig)  # type: ignore[arg-type]
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
    return out


def planned_scenario(p: Planned, workdir: Path, seen: set[str]) -> Scenario | None:
    """The purpose's scenario, or None when the model reaches no end with it
    (a request the transaction is over for)."""
    scn = Scenario(
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
    try:
        scn.expect = expectation_for(scn, workdir, seen=seen)
    except Unplannable:
        return None
    return scn


# ---------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------


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

    def bound_job(job: tuple[Bound, str]) -> tuple[list[Pattern], set[str], int, float]:
        b, r = job
        res = run_bound(b, r, work / b.tag / (f"reading{r}" if r else ""))
        tick(b.tag + (f" (reading {r})" if r else ""))
        return res

    covered: set[str] = set()

    planned_seconds: list[float] = []

    def planned_job(p: Planned) -> Scenario | None:
        took: set[str] = set()
        start = time.monotonic()
        scn = planned_scenario(p, work / "planned", took)
        with lock:
            covered.update(took)
            planned_seconds.append(time.monotonic() - start)
        tick(p.name)
        return scn

    if on_purpose:
        on_purpose(0, total, "catalogue")
    with ThreadPoolExecutor(max_workers=max(1, lanes)) as pool:
        bound_runs = list(pool.map(bound_job, jobs))
        planned_runs = list(pool.map(planned_job, planned))
    seconds = sum(r[3] for r in bound_runs)
    statuses: list[PurposeStatus] = []
    scenarios: list[Path] = []
    per_bound: dict[str, int] = {}
    for b in bounds:
        runs = [res for (bb, _r), res in zip(jobs, bound_runs, strict=True) if bb == b]
        merged: dict[frozenset[PlannedLoss], Pattern] = {}
        for patterns, acts, _states, _secs in runs:
            covered |= acts
            for p in patterns:
                have = merged.setdefault(p.losses, Pattern(b, p.losses))
                for o, rs in p.outcomes.items():
                    have.outcomes.setdefault(o, set()).update(rs)
        states = runs[0][2]
        for p in sorted(merged.values(), key=lambda x: sorted(map(_order, x.losses))):
            scn = pattern_scenario(p, states)
            path = outdir / f"{scn.name}.json"
            dump_model(scn, path)
            scenarios.append(path)
        per_bound[b.tag] = len(merged)
        statuses.append(
            PurposeStatus(
                f"catalogue {b.tag}",
                "reached",
                detail=f"{len(merged)} scenarios ({states:,} distinct states)",
            )
        )
    for p, scn in zip(planned, planned_runs, strict=True):
        if scn is None:
            statuses.append(
                PurposeStatus(p.name, "unreachable", detail="the model reaches no end with it")
            )
            continue
        path = outdir / f"{scn.name}.json"
        dump_model(scn, path)
        scenarios.append(path)
        statuses.append(PurposeStatus(p.name, "reached", scenario=path))
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
        "planned": sum(s.status == "reached" for s in statuses) - len(bounds),
        "unreachable": report.unreachable,
        "wall_seconds": round(time.monotonic() - t0, 1),
        "catalogue_tlc_seconds": round(seconds, 2),
        "covered": report.actions_covered,
        "total": report.actions_total,
        "uncovered": report.actions_uncovered,
    }
    (outdir / "coverage.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return report


__all__ = [
    "BOUNDS",
    "Bound",
    "Planned",
    "expectation_for",
    "generate",
    "outcome_set",
    "plan",
    "planned_purposes",
]
