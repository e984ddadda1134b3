"""LTP test generation from the TLA+ model (specs/ltp/); the loop itself is
protocol-free, in :mod:`generators.traps`.

Each test purpose (see :data:`PURPOSES` and specs/ltp/MCLTPTraps.tla) is a
trap invariant ``~(Happened /\\ Done)``. TLC refutes it with a shortest
complete session in which the purpose happened; :func:`compile_trace` turns
that trace into a :class:`~conformance.core.types.Scenario`:

* every channel loss becomes an :class:`~conformance.core.types.Impairment` keyed
  on wire fields (``fields`` of specs/ltp/wire.json), never a packet index:
  data segments by ``kind`` and byte ``offset``, control segments by
  ``type``; ``occurrence`` counts the earlier transmissions in the same
  direction that match the same fields;
* the expectation is every terminal outcome the model allows with exactly
  those losses (:mod:`generators.ltp.outcomes`), not the trace's end state;
* purposes whose traces give the same impairments are one scenario, which
  records every purpose that produced it.

The TLA+ action names (``SenderTxCheckpoint``, ``ChannelLoseReturn``, ...) are
the vocabulary shared with the rest of dtnconform; each trace state carries
the step that produced it in the history variable ``lastEvent``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rich.table import Table

from conformance.core.errors import InputError
from conformance.core.types import (
    Expectation,
    ExpectedOutcome,
    FieldValue,
    Impairment,
    Origin,
    Probe,
    Scenario,
    dump_model,
    load_scenario,
)
from conformance.protocols.ltp import LtpBlock, LtpDelivery
from generators import traps
from generators.ltp import SPEC_DIR as SPEC_DIR  # re-exported, as the model's folder
from generators.ltp import catalogue as _catalogue
from generators.ltp import outcomes
from generators.ltp.trace import NEXT_BLOCKS
from generators.outcomes import direction_of
from generators.tlc import (
    REPO_ROOT,
    TlaConstant,
    TlcProgress,
    TlcResult,
    TraceState,
    cfg_text,
    run_tlc,
    step_table,
    tla_value,
)
from generators.tlc import steps as steps  # re-exported: a trace's steps, for its table
from generators.traps import GenerateReport, TrapModel
from generators.traps import Purpose as Purpose  # re-exported: the LTP purposes are these
from generators.traps import impairment_key as impairment_key

MODEL = SPEC_DIR / "MCLTP.tla"
# two concurrent sessions over one link (LTPSessions.tla): the "sessions" bounds
MODEL_SESSIONS = SPEC_DIR / "MCLTPSessions.tla"
TRAPS = SPEC_DIR / "MCLTPTraps.tla"
SPEC = SPEC_DIR / "LTP.tla"

Bound = str  # a specs/ltp/MCLTP_<bound>.cfg: ci, deep, bug, reading2, claims, ...

# The bound test generation runs at: 3 red + 1 green segments, timers that
# never expire while their reply is in flight, up to two losses.
GEN_CONSTANTS: dict[str, int | bool] = {
    "NRed": 3,
    "NGreen": 1,
    "MaxRetx": 1,
    "MaxLoss": 2,
    "MaxLate": 0,
    "LinkCues": False,
    "MaxOutages": 0,
    "PrematureTimeouts": False,
    "FaultyReceiver": False,
    "MiscoloredSender": False,
    "MaxClaims": 20,
    "ServiceKnown": True,
    "ReportBoundsMay": False,
    "RefusalStateless": False,
    "ClosedReopens": False,
    "GreenEobCloses": False,
    "RedPartCloses": False,
    "IdleCancels": False,
    "OverlapMiscolored": False,
}
SEGMENT_SIZE = 1000
# TLC processes run side by side during generation (one worker each).
LANES = 2

RED_TYPES = frozenset({"RD", "RD-CP", "RD-CP-EORP", "RD-CP-EORP-EOB"})
GREEN_TYPES = frozenset({"GD", "GD-U5", "GD-U6", "GD-EOB"})


def purposes(n_red: int, n_green: int) -> list[Purpose]:
    """The test purposes for a block of n_red + n_green segments."""
    out = [Purpose("nominal", "nominal", 0, "no loss")]
    for o in range(n_red - 1):
        out.append(
            Purpose(
                f"red-data-{o}-lost",
                "data_lost",
                o,
                f"red data segment {o} lost once (RFC 5326 §6.13)",
            )
        )
    for o in range(n_red, n_red + n_green):
        out.append(
            Purpose(
                f"green-data-{o}-lost",
                "data_lost",
                o,
                f"green data segment {o} lost (RFC 5326 §6.10: not retransmitted)",
            )
        )
    out += [
        Purpose(
            "checkpoint-lost", "checkpoint_lost", 0, "the EORP checkpoint lost once (RFC 5326 §6.7)"
        ),
        Purpose(
            "checkpoint-lost-twice",
            "checkpoint_lost_twice",
            0,
            "the EORP checkpoint and its retransmission lost (RFC 5326 §6.7)",
        ),
        Purpose("report-lost", "report_lost", 0, "a report segment lost (RFC 5326 §6.8)"),
        Purpose(
            "two-reports-lost", "two_reports_lost", 0, "two report segments lost (RFC 5326 §6.8)"
        ),
        Purpose(
            "report-ack-lost",
            "report_ack_lost",
            0,
            "a report-acknowledgment lost (RFC 5326 §6.8, §6.13)",
        ),
        Purpose(
            "sender-cancels",
            "sender_cancels",
            0,
            "the sender hits its checkpoint retransmission limit and cancels "
            "(RFC 5326 §6.7, §6.19)",
        ),
        Purpose(
            "receiver-cancels",
            "receiver_cancels",
            0,
            "the receiver hits its report retransmission limit and cancels (RFC 5326 §6.8, §6.19)",
        ),
        Purpose(
            "redundant-checkpoint",
            "redundant_checkpoint",
            0,
            "a report segment lost, and the sender's retransmitted checkpoint makes the "
            "receiver resend it (RFC 5326 §6.7, §6.8 b)",
        ),
        Purpose(
            "redundant-checkpoint-cancel",
            "redundant_checkpoint_cancel",
            0,
            "two report segments lost, and a redundant checkpoint arriving at the report "
            "retransmission limit cancels the session (RFC 5326 §6.8 b, §6.19)",
        ),
    ]
    if n_red >= 3:
        out.append(
            Purpose(
                "red-data-0-1-lost",
                "two_data_lost",
                0,
                "red data segments 0 and 1 lost: one retransmission of two "
                "segments, the last a checkpoint (RFC 5326 §6.13)",
            )
        )
    if n_red >= 2:
        out.append(
            Purpose(
                "retx-checkpoint-lost",
                "retx_checkpoint_lost",
                0,
                "red segment 0 lost, then the checkpoint closing its "
                "retransmission lost (RFC 5326 §6.13, §6.7)",
            )
        )
    return out


PURPOSES = purposes(int(GEN_CONSTANTS["NRed"]), int(GEN_CONSTANTS["NGreen"]))


# ---------------------------------------------------------------------------
# Model checking
# ---------------------------------------------------------------------------


def check(
    bound: Bound,
    progress: Callable[[TlcProgress], None] | None = None,
    workdir: Path | None = None,
    distributed: int = 0,
) -> TlcResult:
    """Model-check the LTP spec at a bound: "ci" (seconds), "deep" (minutes),
    or "bug" (fails on purpose with a counterexample); "sessions" and
    "sessions_deep" check two concurrent sessions (MCLTPSessions.tla). TLC's
    files go to ``workdir`` (default: a new folder of this run's own).
    ``distributed``: TLC's distributed mode with that many local workers
    (generators.tlc.run_tlc)."""
    cfg = SPEC_DIR / f"MCLTP_{bound}.cfg"
    if not cfg.is_file():
        known = sorted(p.stem.removeprefix("MCLTP_") for p in SPEC_DIR.glob("MCLTP_*.cfg"))
        raise InputError(f"unknown bound {bound!r} (the LTP bounds: {', '.join(known)})")
    # One worker for the failing model: breadth-first search then returns a
    # shortest counterexample, the same every time (two workers may not).
    workers = {"deep": None, "sessions_deep": None, "bug": 1}.get(bound, 2)
    model = MODEL_SESSIONS if bound.startswith("sessions") else MODEL
    return run_tlc(
        model, cfg, workers=workers, progress=progress, workdir=workdir, distributed=distributed
    )


def trap_cfg(purpose: Purpose, constants: Mapping[str, int | bool] = GEN_CONSTANTS) -> str:
    """The text of the .cfg that traps one purpose."""
    # AnyLoss (a definition of MCLTPOutcomes, overridden here): the channel may
    # lose any segment, within MaxLoss.
    consts: dict[str, TlaConstant] = {
        **constants,
        "PurposeKind": purpose.kind,
        "PurposeOff": purpose.off,
        "AnyLoss": True,
    }
    return cfg_text(
        f"Trap for test purpose {purpose.name}: {purpose.description}",
        consts,
        spec="TrapSpec",
        view="View",
        invariants=["Trap"],
        action_constraint="NoStaleLoss",
    )


def model_actions(spec: Path = SPEC) -> list[str]:
    """The actions of the LTP model (the disjuncts of its next-state relation)."""
    return traps.model_actions(spec, NEXT_BLOCKS)


# ---------------------------------------------------------------------------
# Trace -> Scenario
# ---------------------------------------------------------------------------


def block_of(constants: Mapping[str, int | bool], segment_size: int = SEGMENT_SIZE) -> LtpBlock:
    """The block a bound's constants transfer, on a grid of ``segment_size``."""
    n_red, n_green = int(constants["NRed"]), int(constants["NGreen"])
    return LtpBlock(
        segment_size=segment_size,
        red_len=n_red * segment_size,
        block_len=(n_red + n_green) * segment_size,
        retransmission_limit=int(constants["MaxRetx"]),
    )


# The block of the generator's own bound (GEN_CONSTANTS).
BLOCK = block_of(GEN_CONSTANTS)


def match_fields(seg: Mapping[str, Any], block: LtpBlock | None = None) -> dict[str, FieldValue]:
    """The wire fields an impairment matches a model segment on: a data
    segment by a byte it holds (``holds``: the segment holding that byte in
    any segmentation, RFC 5326 leaves segmentation to the engine, §6.1;
    which byte: outcomes.holding_byte, by the segment's place in ``block``,
    the generator's own by default), a control segment by its type."""
    t = seg["type"]
    if t in RED_TYPES or t in GREEN_TYPES:
        kind = "red_data" if t in RED_TYPES else "green_data"
        # the retransmission of a part's last segment may lack its flags
        # (RD-CP): the byte comes from its place, so every copy matches alike
        return {"kind": kind, "holds": outcomes.segment_byte(kind, int(seg["off"]), block or BLOCK)}
    return {"type": t}


@dataclass
class _Tx:
    seg: Mapping[str, Any]
    match: dict[str, FieldValue]
    occurrence: int
    state: Literal["flight", "received", "lost"] = "flight"


def impairments(trace: Sequence[TraceState], block: LtpBlock | None = None) -> list[Impairment]:
    """One drop rule per channel loss in the trace.

    Transmissions are tracked per direction. A receipt or a loss applies to
    the in-flight transmissions equal to the segment (the model's channel is
    a set: identical copies in flight together are one element, so all of
    them are received or lost together)."""
    flights: dict[str, list[_Tx]] = {"forward": [], "return": []}
    counts: dict[tuple[str, tuple[tuple[str, FieldValue], ...]], int] = {}
    out: list[Impairment] = []
    for step in steps(trace):
        for seg in step.received:
            rxdir = "forward" if step.actor == "receiver" else "return"
            for tx in flights[rxdir]:
                if tx.state == "flight" and tx.seg == seg:
                    tx.state = "received"
        for d, seg in step.lost:
            for tx in flights[d]:
                if tx.state == "flight" and tx.seg == seg:
                    tx.state = "lost"
                    out.append(
                        Impairment(
                            direction=direction_of(d),
                            match=tx.match,
                            occurrence=tx.occurrence,
                            note=f"{step.action} at step {step.index}: {describe_segment(seg)}",
                        )
                    )
        for d, seg in step.sent:
            m = match_fields(seg, block)
            key = (d, tuple(sorted(m.items())))
            counts[key] = counts.get(key, 0) + 1
            flights[d].append(_Tx(seg, m, counts[key]))
    return out


def trace_outcome(
    final: Mapping[str, Any],
    n_red: int,
    segment_size: int = SEGMENT_SIZE,
    service_known: bool = True,
) -> ExpectedOutcome:
    """The outcome at the end of one trace: one member of the scenario's set.
    The receiver's notice as MCLTPOutcomes' ReceiverNotice has it: "closed"
    for a session closed with no notice, except a refused one (the service
    unknown: it never was the client's); "open" for a red part delivered in
    a session not closed yet."""
    closed = final.get("rState") == "closed"
    notice = str(final["rOutcome"])
    if notice == "none" and closed and service_known:
        notice = "closed"
    elif notice == "completed" and not closed:
        notice = "open"
    return ExpectedOutcome(
        delivered=LtpDelivery(
            red_bytes_delivered=n_red * segment_size * int(final["rDeliveries"]),
            green_bytes_delivered=len(final["rGreen"]) * segment_size,
        ),
        sender_outcome=outcomes.outcome_name(str(final["sOutcome"])),
        receiver_outcome=outcomes.outcome_name(notice),
    )


def compile_trace(
    trace: Sequence[TraceState],
    purpose: Purpose | str,
    *,
    constants: Mapping[str, int | bool] = GEN_CONSTANTS,
    segment_size: int = SEGMENT_SIZE,
    config: str = "",
) -> Scenario:
    """Turn a TLC counterexample of a trap into a Scenario. Its expectation
    is the trace's end state only; :func:`generate` replaces it with every
    outcome the model allows under the same losses."""
    if not trace:
        raise InputError("empty trace")
    p = purpose if isinstance(purpose, Purpose) else Purpose(purpose, purpose)
    n_red = int(constants["NRed"])
    actions = [s.action for s in steps(trace)]
    slug = re.sub(r"[^A-Za-z0-9]+", "-", p.name.lower()).strip("-")
    block = block_of(constants, segment_size)
    return Scenario(
        name=f"ltp-{slug}",
        protocol="ltp",
        description=(
            f"{p.description or p.name}. Model bound MaxRetx={constants['MaxRetx']}: "
            "the endpoints' checkpoint, report and cancel retransmission limits "
            f"must be {constants['MaxRetx']} for the expected outcome."
        ),
        params=block,
        impairments=impairments(trace, block),
        expect=Expectation(
            outcomes=[
                trace_outcome(
                    trace[-1].variables,
                    n_red,
                    segment_size,
                    service_known=bool(constants.get("ServiceKnown", True)),
                )
            ],
            source="end state of the trap's trace",
        ),
        origin=Origin(
            model=str(TRAPS.relative_to(REPO_ROOT)),
            config=config,
            purpose=p.name,
            purposes=[p.name],
            actions=actions,
        ),
    )


def _compile(trace: Sequence[TraceState], p: Purpose) -> Scenario:
    consts = ", ".join(f"{k}={tla_value(v)}" for k, v in GEN_CONSTANTS.items())
    return compile_trace(trace, p, config=f'{consts}, PurposeKind="{p.kind}", PurposeOff={p.off}')


def _outcome_set(
    scen: Scenario, workdir: Path, progress: Callable[[TlcProgress], None] | None
) -> Expectation:
    assert isinstance(scen.params, LtpBlock)
    return outcomes.expectation(
        scen.params,
        scen.impairments,
        workdir,
        name=scen.name.removeprefix("ltp-"),
        must_include=scen.expect.outcomes[0],
        progress=progress,
    )


TRAP_MODEL = TrapModel(
    purposes=PURPOSES,
    traps=TRAPS,
    trap_cfg=trap_cfg,
    compile=_compile,
    outcome_set=_outcome_set,
    actions=model_actions,
    terminal_action="Terminating",
    lanes=LANES,
)


def generate(
    outdir: Path,
    progress: Callable[[TlcProgress], None] | None = None,
    on_purpose: Callable[[int, int, str], None] | None = None,
) -> GenerateReport:
    """Every LTP test purpose's scenario into ``outdir`` (:func:`traps.generate`)."""
    return traps.generate(TRAP_MODEL, outdir, progress, on_purpose)


def catalogue(
    outdir: Path, on_bound: Callable[[int, int, str], None] | None = None
) -> _catalogue.CatalogueReport:
    """Every loss pattern's scenario, over the catalogue's bounds, into
    ``outdir`` (:mod:`generators.ltp.catalogue`)."""
    return _catalogue.catalogue(
        outdir, model_actions(), terminal_action="Terminating", lanes=LANES, on_bound=on_bound
    )


def robustness(outdir: Path, report: GenerateReport) -> list[Path]:
    """The robustness scenarios into ``outdir``: the nominal transfer with
    every probe of one tester role (conformance.tester.ltp.PROBES), one
    scenario per role. The RFC has the implementation discard or merely
    acknowledge each probe, so the nominal scenario's expectation holds
    unchanged; each probe is judged by its own rule."""
    from conformance.tester.ltp import PROBES

    nominal = next((s for s in map(load_scenario, report.scenarios) if not s.impairments), None)
    if nominal is None:
        return []
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    for role in ("sender", "receiver"):
        kinds = [k for k, p in PROBES.items() if p.role == role]
        scn = nominal.model_copy(deep=True)
        scn.name = f"ltp-robustness-{role}"
        scn.probes = [Probe(kind=k) for k in kinds]
        if scn.origin is not None:
            scn.origin.purpose = f"robustness-{role}"
            scn.origin.purposes = [scn.origin.purpose]
        scn.description = (
            f"robustness: the tester's {role} sends {', '.join(kinds)} during a nominal "
            "transfer; the implementation must discard each, or give the acknowledgment "
            "RFC 5326 asks for (§6, §6.13, §6.17), and complete the transfer"
        )
        path = outdir / f"{scn.name}.json"
        dump_model(scn, path)
        written.append(path)
    return written


def describe_segment(seg: Mapping[str, Any]) -> str:
    """A one-line summary of a model segment: type, offset, serials, claims."""
    t = seg["type"]
    if t in RED_TYPES or t in GREEN_TYPES:
        out = f"{t} off={seg['off']}"
        if t in RED_TYPES and t != "RD":
            out += f" cp={seg['cp']} rs={seg['rs']}"
        return out
    if t == "RS":
        claims = ",".join(str(c) for c in sorted(seg["claims"]))
        return f"RS rs={seg['rs']} cp={seg['cp']} [{seg['lb']},{seg['ub']}) claims={{{claims}}}"
    if t == "RA":
        return f"RA rs={seg['rs']}"
    if seg.get("reason"):
        return f"{t} {seg['reason']}"
    return str(t)


def _delivered(v: Mapping[str, Any]) -> str:
    if "rRed" not in v:
        return ""
    red = ",".join(str(o) for o in sorted(v["rRed"]))
    green = ",".join(str(o) for o in sorted(v.get("rGreen", ())))
    done = " delivered" if int(v.get("rDeliveries", 0)) > 0 else ""
    return f"red {{{red}}}{done}; green {{{green}}}"


def trace_table(trace: Sequence[TraceState] | Iterable[TraceState], title: str = "") -> Table:
    """A counterexample as a table: one row per step, with the segments
    received, sent and lost, and what the receiver holds so far."""
    return step_table(list(trace), describe_segment, _delivered, "segments", title)
