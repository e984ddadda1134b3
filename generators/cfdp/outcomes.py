"""CFDP's outcome sets (:func:`expectation_for`): for a scenario's
impairments and users' requests, TLC explores specs/cfdp/MCCFDPOutcomes.tla
with the channel allowed to impair exactly the planned PDUs, named as the
live channel names them (direction, wire key, occurrence), and prints every
terminal outcome: each entity's end, its condition code (Table 5-5) and
whether the file was delivered. A run passes with any of them.

The machinery is shared with LTP's: :class:`generators.outcomes.PlannedLoss`
names an impairment, :func:`generators.tlc.printed` reads what TLC printed,
and the readings come from the protocol registry (specs/cfdp/readings.json).
Scenarios that need the same model constants (a catalogue's planned
purposes of one kind) share one TLC run per reading (:func:`expectations`):
TLC's start costs far more than their few dozen states each.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from conformance.core.errors import DtncError
from conformance.core.types import (
    Expectation,
    ExpectedOutcome,
    FieldValue,
    Impairment,
    Outcome,
    Scenario,
)
from conformance.protocols.cfdp import (
    MODEL_CONDITIONS,
    MODEL_MODES,
    SPEC,
    CfdpDelivery,
    CfdpRequest,
    CfdpTransfer,
)
from generators.cfdp import SPEC_DIR
from generators.outcomes import (
    ACTS,
    OutcomeSet,
    PlannedLoss,
    action_of,
    cached,
    channel_shape,
    direction_of,
    expand,
)
from generators.outcomes import Unplannable as Unplannable  # re-exported: what plan() raises
from generators.tlc import TlaConstant, TlcProgress, cfg_text, printed, run_tlc

OUTCOMES = SPEC_DIR / "MCCFDPOutcomes.tla"


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

# A held-back PDU waits this long: past the catalogue channel's timers (1 s),
# as ChannelHoldPdu allows (its release may come at any later time).
DELAY_MS = 1500.0

# An outage this long: shorter than the timers, though the model lets it
# last any number of steps (WrapperLinkUp).
OUTAGE_MS = 500.0

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
        direction=direction_of(x.dir),
        match=match_of(x.key, x.off, t),
        occurrence=x.occ,
        action=action_of(x.act),
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


def plan_module(
    cases: Iterable[tuple[Iterable[PlannedLoss], Iterable[str]]], in_order: bool
) -> str:
    """MCCFDPPlan for a run: one case per scenario explored, each its planned
    impairments and its requests (TLA+ records, :func:`request_tla`)."""
    body = ",\n    ".join(
        f"[plan |-> {{{', '.join(x.tla() for x in losses)}}}, "
        f"requests |-> {{{', '.join(requests)}}}]"
        for losses, requests in cases
    )
    return (
        "---- MODULE MCCFDPPlan ----\n"
        f"TheCases == <<\n    {body}>>\n"
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
        "KeepAliveTimer": False,
        **SPEC.reading_constants(reading),
    }


# The model's ends that are outcomes as they are.
_ENDS: dict[str, Outcome] = {
    "completed": "completed", "cancelled": "cancelled", "abandoned": "abandoned"
}  # fmt: skip


def _end(v: str) -> Outcome:
    # the model's out: open (never here: terminal states are ended), completed,
    # cancelled, abandoned; "none": the transaction never reached the receiving
    # entity, which a live run sees as its time limit passing
    return _ENDS.get(v, "open")


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


@dataclass(frozen=True)
class Case:
    """One scenario's part of an outcome-set run: its transfer and its
    planned impairments (the transfer's requests with them)."""

    name: str
    transfer: CfdpTransfer
    impairments: Sequence[Impairment]

    def plan(self) -> tuple[list[PlannedLoss], list[str]]:
        t = self.transfer
        reqs = [request_tla(r, t, f"params.requests[{i}]") for i, r in enumerate(t.requests)]
        return plan(self.impairments, t), reqs

    def constants(self, reading: str) -> dict[str, TlaConstant]:
        """The model constants its run needs: its transfer's, with budgets
        for exactly its impairments and requests."""
        losses = plan(self.impairments, self.transfer)
        acts = [x.act for x in losses]
        return constants(
            self.transfer,
            reading,
            losses=acts.count("drop"),
            late=sum(x.late for x in losses),
            corrupt=acts.count("corrupt"),
            outages=acts.count("outage"),
            requests=self.transfer.requests,
        )


def outcome_sets(
    cases: Sequence[Case],
    workdir: Path,
    *,
    name: str,
    reading: str = "",
    in_order: bool = True,
    progress: Callable[[TlcProgress], None] | None = None,
) -> list[OutcomeSet]:
    """One TLC run of MCCFDPOutcomes for several cases at once, one outcome
    set each: every terminal outcome with exactly its planned impairments and
    requests, under one reading. The cases must need the same constants (a
    mode's planned purposes of one kind do): a behaviour follows one case
    from the start, so each set is what a run of its case alone gives. The
    distinct states and the actions taken are the run's, all cases together."""
    consts = cases[0].constants(reading)
    for c in cases[1:]:
        if c.constants(reading) != consts:
            raise DtncError(
                f"{name}: {c.name} needs other model constants than {cases[0].name}: "
                "they cannot share an outcome-set run"
            )
    work = workdir / (name + (f"-reading{reading}" if reading else ""))
    work.mkdir(parents=True, exist_ok=True)
    cfg = work / "MCCFDPOutcomes_plan.cfg"
    cfg.write_text(
        cfg_text(
            f"Outcome set of {name}"
            + (
                f" ({len(cases)} cases: {', '.join(c.name for c in cases)})."
                if len(cases) > 1
                else "."
            ),
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
        extra_modules={"MCCFDPPlan": plan_module([c.plan() for c in cases], in_order)},
    )
    if res.violated or res.errors:
        raise DtncError(f"{name}: TLC failed on the outcome set: {res.errors} ({res.log_path})")
    text = res.log_path.read_text(encoding="utf-8")
    actions = {str(v[0]) for v in printed(text, "dtnc-action")}
    return [
        OutcomeSet(
            parse_outcomes(text, c.transfer, reading, case=i),
            res.distinct_states or 0,
            res.seconds,
            res.log_path,
            set(actions),
        )
        for i, c in enumerate(cases, start=1)
    ]


def parse_outcomes(
    text: str, t: CfdpTransfer, reading: str = "", case: int | None = None
) -> list[ExpectedOutcome]:
    """The distinct ends a TLC log printed as <<"dtnc-outcome", EndOf(1)>>
    (TraceCFDP at a trace's end) or <<"dtnc-outcome", EndOf(1), case>>
    (MCCFDPOutcomes at terminal states: ``case`` keeps only that case's)."""
    seen: dict[tuple[int | str, ...], ExpectedOutcome] = {}
    for v in printed(text, "dtnc-outcome"):
        if case is not None and v[1] != case:
            continue
        o = outcome_of(v[0], t, (reading,))
        seen.setdefault(o.key(), o)
    return list(seen.values())


# A reported outcome as the model's out (TraceCFDP ObservedSender and
# ObservedReceiver); any other ("closed", "error") constrains nothing.
_MODEL_OUT = {"completed": "completed", "cancelled": "cancelled", "abandoned": "abandoned",
              "open": "open"}  # fmt: skip


def observed_constants(seen: ExpectedOutcome | None) -> dict[str, TlaConstant]:
    """TraceCFDP's ObservedSender and ObservedReceiver for the outcome the
    harnesses reported (``None``: "any", nothing known)."""
    if seen is None:
        return {"ObservedSender": "any", "ObservedReceiver": "any"}
    return {
        "ObservedSender": _MODEL_OUT.get(seen.sender_outcome, "any"),
        "ObservedReceiver": _MODEL_OUT.get(seen.receiver_outcome, "any"),
    }


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
    (got,) = expectations(
        [Case(name, t, impairments)],
        workdir,
        name=name,
        in_order=in_order,
        progress=progress,
        seen=seen,
    )
    if isinstance(got, Unplannable):
        raise got
    return got


def expectations(
    cases: Sequence[Case],
    workdir: Path,
    *,
    name: str,
    in_order: bool = True,
    progress: Callable[[TlcProgress], None] | None = None,
    seen: set[str] | None = None,
) -> list[Expectation | Unplannable]:
    """Each case's expectation (:func:`expectation`), from one TLC run per
    reading for them all (:func:`outcome_sets`: they need the same
    constants), or Unplannable where the model reaches no end with it.
    ``seen`` gets the model actions of every case's behaviours (a shared
    run's, so an unreachable case's behaviours count too: they are the
    model's, taken on the way to no end)."""
    t = cases[0].transfer
    for c in cases:
        if n_segments(c.transfer) > MAX_OUTCOME_SEGMENTS:
            raise Unplannable(
                f"{c.name}: a file of {n_segments(c.transfer)} File Data PDUs; outcome sets are "
                f"enumerated for files of up to {MAX_OUTCOME_SEGMENTS} (the model's NSeg: its "
                "states grow exponentially with it)"
            )
    runs = [
        outcome_sets(cases, workdir, name=name, reading=r, in_order=in_order, progress=progress)
        for r in reading_ids(t)
    ]
    if seen is not None:
        for run in runs:
            seen |= run[0].actions
    out: list[Expectation | Unplannable] = []
    for i, c in enumerate(cases):
        every = [o for run in runs for o in run[i].outcomes]
        if not every:
            out.append(
                Unplannable(
                    f"{c.name}: the model reaches no end with exactly these impairments and "
                    "requests (a request after the transaction is over, or an impairment of a "
                    "PDU never sent)"
                )
            )
            continue
        requests = "; ".join(r.describe() for r in c.transfer.requests)
        together = f", explored with {len(cases) - 1} other scenarios" if len(cases) > 1 else ""
        out.append(
            Expectation(
                outcomes=every,
                in_order=in_order,
                source=(
                    "TLC, specs/cfdp/MCCFDPOutcomes.tla: every terminal state with exactly the "
                    "planned impairments"
                    + (f" and requests ({requests})" if requests else "")
                    + (", channels in order" if in_order else ", channels that may reorder")
                    + f" ({runs[0][i].distinct_states:,} distinct states{together}), under the "
                    "default reading and each alternative that can matter "
                    "(specs/cfdp/readings.json)"
                ),
            )
        )
    return out


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
