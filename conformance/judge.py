"""RunResult + channel log + dissector findings -> Verdict.

The rules, in order:
- error: our side failed: an endpoint harness crashed, hung or printed no
  result (outcome "error"), or the channel died (the runner adds that). Only
  then; nothing the implementation does on the wire is an error.
- inconclusive: an impairment of the scenario never met its segment, so the
  losses the expectation was computed for did not all happen and the path
  the scenario was written for was not exercised. Each such impairment is
  named with what the channel saw in its direction instead.
- fail: trace validation rejected the run's captures (the first segment no
  behaviour of the model explains, with the rule; conformance/tracecheck.py);
  or the observed outcome (bytes delivered each colour, each side's last
  notice: completed, cancelled, closed without a notice, or still open at
  the time limit) is not one of the outcomes the model allows under the
  scenario's losses; or the delivered bytes differ from the bytes sent; or
  our dissector flagged a segment as an error. Each reason cites its rule.
- pass: otherwise. Warnings from the dissector are kept as reasons on a pass.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from conformance.core.classifiers import HOLDS, frame_matches
from conformance.core.types import (
    ExpectedOutcome,
    FieldValue,
    Impairment,
    Reason,
    RunResult,
    Scenario,
    TraceCheck,
    Verdict,
    VerdictStatus,
)
from conformance.protocols import ProtocolSpec, Rule
from generators.outcomes import stale as outcomes_stale

if TYPE_CHECKING:
    from conformance.core.types import ChannelRecord
    from conformance.segments import Finding


def _rule(spec: ProtocolSpec, part: str, allowed: object, observed: object) -> Rule | None:
    """The rule a part of an outcome breaks: the one behind the value the
    model allows (the protocol's rule table), or, for a session that closed
    with no notice, that."""
    if observed == "closed":
        return spec.closed_rule
    table = spec.rules.get(part, {})
    return table.get(str(allowed), table.get(""))


def _cited(spec: ProtocolSpec, rule: Rule | None, **kw: Any) -> dict[str, Any]:
    """Reason fields for a rule: its citation, TLA+ actions and tags."""
    if rule is None:
        return kw
    std = spec.spec
    return {**kw, "rule": rule.cite(std), "actions": list(rule.actions), "tags": rule.tags(std)}


def outcome_reasons(
    spec: ProtocolSpec, scn: Scenario, seen: ExpectedOutcome, reading: str | None = None
) -> list[Reason]:
    """Why an observed outcome is not in the scenario's set (under the
    reading that explained the trace, if given): one reason per part that
    differs from the nearest allowed outcome, each with its rule."""
    allowed = [
        o for o in scn.expect.outcomes if reading is None or reading in o.readings
    ] or scn.expect.outcomes
    reasons = part_reasons(spec, allowed, seen)
    under = ""
    if reading is not None and scn.expect.allows(seen):
        under = (
            f" under the reading that explains the trace ({reading or 'the default'}; the "
            f"outcome needs reading {', '.join(x or 'default' for x in scn.expect.readings_allowing(seen))})"
        )
    head = Reason(
        code="outcome-not-allowed",
        message=f"observed outcome ({seen.describe()}) is none of the {len(allowed)} the model "
        f"allows under the scenario's losses{under}: " + " | ".join(o.describe() for o in allowed),
        **_gathered(reasons),
    )
    return [head, *reasons]


def end_reasons(spec: ProtocolSpec, trace: TraceCheck, seen: ExpectedOutcome) -> list[Reason]:
    """Why an observed outcome is none of those the model holds at the end
    of the run's validated trace (TraceCheck.ends): the wire was the
    model's, what the endpoints reported is not. One reason per part that
    differs from the nearest end, each with its rule."""
    reasons = part_reasons(spec, trace.ends, seen)
    finer = not reasons  # the parts agree with an end's; what was delivered does not
    if finer:
        reasons = finer_reasons(spec, trace.ends, seen)

    def said(o: ExpectedOutcome) -> str:
        detail = o.delivered.finer()[1] if finer else ""
        return o.describe() + (f" ({detail})" if detail else "")

    under = f" under reading {trace.reading}'s alternative" if trace.reading else ""
    head = Reason(
        code="outcome-not-at-end",
        message=f"observed outcome ({said(seen)}) is none of the {len(trace.ends)} the "
        f"model holds at the end of the run's trace{under} (what each endpoint must have "
        "reported, the wire being what it was): " + " | ".join(said(o) for o in trace.ends),
        **_gathered(reasons),
    )
    return [head, *reasons]


def finer_reasons(
    spec: ProtocolSpec, allowed: Sequence[ExpectedOutcome], seen: ExpectedOutcome
) -> list[Reason]:
    """Why ``seen``, whose parts are those of some of ``allowed``, is none of
    them: what it delivered agrees in count, not in its finer facts (LTP's
    green data at another offset: the same bytes' count, other segments)."""
    name, have = seen.delivered.finer()
    same = [o for o in allowed if o.key() == seen.key()]
    want = sorted({o.delivered.finer()[1] for o in same} - {""})
    if not name or not same:
        return []
    return [
        Reason(
            **_cited(
                spec,
                _rule(spec, name, "", have),
                code=outcome_code(name),
                message=f"{name}: observed {have}; the model's ends with the same counts give "
                + (" or ".join(want) or "none known"),
            )
        )
    ]


def _gathered(reasons: Sequence[Reason]) -> dict[str, Any]:
    """The rules, actions and tags of ``reasons``, for the reason heading them."""
    return {
        "rule": "; ".join(dict.fromkeys(r.rule for r in reasons if r.rule)),
        "actions": list(dict.fromkeys(a for r in reasons for a in r.actions)),
        "tags": list(dict.fromkeys(t for r in reasons for t in r.tags)),
    }


def part_reasons(
    spec: ProtocolSpec, allowed: Sequence[ExpectedOutcome], seen: ExpectedOutcome
) -> list[Reason]:
    """One reason per part of ``seen`` that differs from the nearest of
    ``allowed``, each with the rule behind the value the model allows."""
    have = seen.parts()
    near = min(
        allowed,
        # fewest differing parts; on a tie, an outcome of the default reading
        key=lambda o: (sum(v != have[f] for f, v in o.parts().items()), "" not in o.readings),
    )
    nearest = near.parts()
    under = "" if "" in near.readings else " (only under reading " + ", ".join(near.readings) + ")"
    reasons = []
    for f, value in have.items():
        if value == nearest[f]:
            continue
        options = sorted({str(o.parts()[f]) for o in allowed})
        reasons.append(
            Reason(
                **_cited(
                    spec,
                    _rule(spec, f, nearest[f], value),
                    code=outcome_code(f),
                    message=f"{f}: observed {value}; with the other parts as observed, the "
                    f"model allows {nearest[f]}{under} (over all allowed outcomes: {', '.join(options)})",
                )
            )
        )
    return reasons


def outcome_code(part: str) -> str:
    return f"unexpected-{part.replace('_', '-')}"


def channel_saw(records: list[ChannelRecord], imp: Impairment) -> str:
    """What the channel saw in an impairment's direction, for an unmet one:
    how many frames and segments, how many were fragments, and how many
    segments matched the rule's fields (against the occurrence it waited for)."""
    frames = [r for r in records if r.dir == imp.direction]
    kinds = Counter(r.kind for r in frames)
    segs = [r for r in frames if r.proto]
    matching = [r for r in segs if frame_matches(r.fields, imp.match)]
    parts = [f"{len(frames)} {imp.direction} frame{'s' * (len(frames) != 1)}"]
    parts.append(f"{len(segs)} classified as segments")
    if kinds.get("fragment"):
        parts.append(
            f"{kinds['fragment']} IP fragment{'s' * (kinds['fragment'] != 1)} (fragmented "
            "datagrams carry no segment the rule can see: raise the MTU or lower segment_size)"
        )
    if kinds.get("ipv4"):
        parts.append(f"{kinds['ipv4']} other IPv4")
    wanted = imp.occurrence + imp.count - 1
    parts.append(
        f"{len(matching)} matching [{', '.join(f'{k}={v}' for k, v in imp.match.items())}] "
        f"where the rule waited for match {imp.occurrence}"
        + (f"..{wanted}" if imp.count > 1 else "")
    )
    if not segs and not kinds.get("fragment"):
        parts.append("the implementation sent nothing this way")
    return ", ".join(parts)


def tester_blamed(trace: TraceCheck, tester: str | None) -> bool:
    """Trace validation held the deviation against the tester's own role
    only: every blamed action is one of that role's (Sender*, Receiver*),
    and the line it stopped at is not one the implementation sent (a
    segment of the implementation's that no behaviour explains is the
    implementation's, whatever the model could still do: HDTN's CR on a
    miscolored segment, before reading 14, fell on the tester's actions)."""
    if tester is None or not trace.actions:
        return False
    if trace.actor and trace.actor != tester:
        return False
    return all(a.lower().startswith(tester) for a in trace.actions)


def trace_reasons(
    trace: TraceCheck | None, tester: str | None = None
) -> tuple[list[Reason], list[Reason]]:
    """(fails, notes) from trace validation: a rejected trace is a fail with
    the rule and the frame; an unchecked one is said, and judged no further.
    A rejection held against the tester's role alone is our harness's
    failure: use :func:`tester_blamed` first."""
    if trace is not None and trace.status == "accepted" and trace.late:
        # an answer past the reaction window: no rule of the untimed model
        # is broken, and a loaded machine does the same; said, not failed
        return [], [Reason(code="trace-late", message=f"trace validation: {trace.message}")]
    if trace is None or trace.status == "accepted":
        return [], []
    if trace.status == "rejected":
        return [
            Reason(
                code="trace-rejected",
                message=f"trace validation: {trace.message}",
                rule=trace.rule,
                actions=trace.actions,
                tags=trace.tags,
                frames=[trace.frame] if trace.frame else [],
            )
        ], []
    return [], [Reason(code="trace-unchecked", message=f"trace not validated: {trace.message}")]


def uncovered(scn: Scenario, records: Sequence[ChannelRecord]) -> str:
    """Why a model-computed outcome set may not cover this run ('' if it
    does): the channel lost, duplicated or reordered more segments than no
    rule named than the set allows for (Expectation.random_losses and
    random_late; e.g. an outage or a lossy link that struck more often than
    the bound the set was enumerated with), or a rule naming a byte
    (``holds``) met a segment other than the one of the scenario's grid
    that holds it (``ProtocolParams.grid_span``), whose loss the set was
    computed for."""
    exp = scn.expect
    segs = [r for r in records if r.seg is not None]

    def grid_unit(byte: FieldValue) -> tuple[int, int] | None:
        return scn.params.grid_span(byte) if isinstance(byte, int) else None

    def off_grid(r: ChannelRecord, byte: FieldValue) -> bool:
        o, n = r.fields.get("offset"), r.fields.get("length")
        if (grid := grid_unit(byte)) is None:  # no grid known: where it starts
            return o != byte
        return not (isinstance(o, int) and isinstance(n, int)) or (o, o + n) != grid

    # a rule naming a byte ("holds") meets whatever segment holds it; the
    # set was computed for the segment of the scenario's grid that holds
    # it, so another one (ION's [1999, 2998) or its 2-byte checkpoint
    # [2998, 3000) where the grid's checkpoint is [2000, 3000)) may be
    # another test
    off = [
        (i, r)
        for r in segs
        if r.rule is not None
        and r.rule < len(scn.impairments)
        and (i := scn.impairments[r.rule].match.get(HOLDS)) is not None
        and off_grid(r, i)
    ]
    if off:
        i, r = off[0]
        grid = grid_unit(i)
        return (
            f"the rule naming byte {i} acted on a segment at {r.fields.get('offset')} "
            f"({r.fields.get('length')} bytes), not the one the scenario's grid has there"
            + (f" ([{grid[0]}, {grid[1]})" if grid else "")
            + " (the implementation cuts the block otherwise): the set, computed for the "
            "grid's segment, does not decide"
        )
    if exp.in_order is None:
        return ""  # a hand-written set: nothing else to compare with
    # what a planned outage swallowed is in the set (Expectation.outages)
    planned = ("rule", "outage") if exp.outages else ("rule",)
    lost = sum(1 for r in segs if r.lost and r.cause not in planned)
    late = sum(1 for r in segs if not r.lost and r.cause != "rule" and (r.copies > 1 or r.hold))
    why = []
    if lost > exp.random_losses:
        why.append(
            f"the channel lost {lost} segment(s) no rule named, the set allows for "
            f"{exp.random_losses}"
        )
    if late > exp.random_late:
        why.append(
            f"it duplicated or reordered {late} segment(s) no rule named, the set allows "
            f"for {exp.random_late}"
        )
    return "; ".join(why)


def crashed(
    scn: Scenario, result: RunResult, records: Sequence[ChannelRecord], tester: str | None
) -> tuple[list[Reason], list[Reason]]:
    """(fails, not judged) for each side whose implementation raised (an
    exception, a panic) and stopped with its session open, as its harness
    reported ("crashed").

    Trace validation takes such a side as one still open when the run
    stopped: in the trace model its timers may yet expire. But it takes no
    step again, so its open session is final: it is judged against the
    model's final outcomes, the scenario's outcome set (TLC's enumeration
    under the scenario's limits). Where no outcome of the set leaves that
    side open, every behaviour of the model ends its session, and this one
    never will: a fail. Where the set does not decide (not computed for a
    transfer this size, or exceeded by the channel), it is not judged."""
    exp = scn.expect
    fails: list[Reason] = []
    unjudged: list[Reason] = []
    for end in (result.sender, result.receiver):
        who = end.role
        if who == tester or not end.crashed or end.outcome != "open":
            continue
        what = f"the {who} stopped with its session open ({end.crashed})"
        beyond = uncovered(scn, records)
        if exp.unjudged or exp.in_order is None or beyond:
            why = exp.unjudged or beyond or "the scenario's outcome set is not the model's"
            unjudged.append(
                Reason(
                    code="crash-unjudged",
                    message=f"{what}; whether the model lets its session stay open for good is "
                    f"not judged: {why}",
                )
            )
        elif not any(o.parts()[f"{who}_outcome"] == "open" for o in exp.outcomes):
            fails.append(
                Reason(
                    code=f"{who}-crashed",
                    message=f"{what}, and takes no step again; in every final outcome the model "
                    f"allows here ({exp.describe()}) the {who}'s session ends",
                )
            )
    return fails, unjudged


def judge(
    spec: ProtocolSpec,
    scn: Scenario,
    result: RunResult,
    channel_log: Path,
    findings: list[Finding],
    *,
    trace: TraceCheck | None = None,
    tester: str | None = None,
) -> Verdict:
    from conformance.channel.control import read_log

    errors, fails, notes = _trace_judged(trace, tester)
    errors += _harness_errors(result)
    seen = result.outcome()
    records = read_log(Path(channel_log))
    told_errors, told_fails = _told_reasons(spec, result, records)
    errors += told_errors
    # The outcome is judged under the reading that explained the trace (any
    # reading when the trace was not validated).
    reading = trace.reading if trace is not None and trace.status == "accepted" else None
    # A trace that only readings together explain ("2+4": two questions the
    # implementation answers the alternative way): outcome sets are computed
    # reading by reading, so its outcome is judged under any reading.
    reading_judged = None if reading and "+" in reading else reading
    unjudged: list[Reason] = []
    stale = beyond = ""
    ends = trace.ends if trace is not None and trace.status == "accepted" else []
    if not errors and ends:
        # Judged from the trace: exact, whatever the run's size; the
        # scenario's outcome set (TLC's enumeration) is not consulted.
        if not any(e.matches(seen) for e in ends):
            assert trace is not None
            fails += end_reasons(spec, trace, seen)
        elif not scn.expect.unjudged and not scn.expect.allows(seen):
            # said, so that the scenario's author sees it: the set does not
            # decide here, and it is wrong or stale
            notes.append(
                Reason(
                    code="expectation-disagrees",
                    message=f"the scenario's outcome set does not hold the outcome the model "
                    f"reaches at the trace's end ({seen.describe()}): the set is stale, was "
                    "written by hand, or counts the scenario's segments where the trace shows "
                    "the implementation's own (ION's green EOB of 1 byte); `dtnconform expect "
                    "SCENARIO --write` recomputes it",
                )
            )
    elif not errors and trace is not None and trace.status == "rejected" and scn.expect.unjudged:
        # the run fails on the rejection; past that line no model state
        # says what each endpoint must report, and no set was enumerated
        notes.append(
            Reason(
                code="outcome-after-rejection",
                message=f"observed {seen.describe()}; not judged: trace validation rejected the "
                f"trace at line {trace.line}, so the model reaches no end to judge it against",
            )
        )
    elif not errors and scn.expect.unjudged:
        unjudged.append(
            Reason(
                code="outcome-unjudged",
                message=f"observed {seen.describe()}; not judged: {scn.expect.unjudged}",
            )
        )
    elif not errors and not scn.expect.allows(seen, reading_judged):
        stale = outcomes_stale(scn) if spec.capabilities.outcomes is not None else ""
        beyond = "" if stale else uncovered(scn, records)
        if not stale and not beyond:
            fails += outcome_reasons(spec, scn, seen, reading_judged)
    crash_fails, crash_unjudged = ([], []) if errors else crashed(scn, result, records, tester)
    fails += crash_fails
    unjudged += crash_unjudged
    probe_fails, probe_unsent = _probe_reasons(result)
    fails += probe_fails + _payload_reasons(spec, result) + told_fails
    fails += _segments_told_reasons(spec, result, records)
    for f in findings:
        reason = Reason(
            code=f.name or "dissector-finding",
            message=f"{f.message} (frame {f.frame} of {f.side}.pcap)",
            rule=_rule_in(f.message),
            frames=[f.frame],
        )
        (fails if f.severity.lower() == "error" else notes).append(reason)
    # An endpoint that never reported an end is said so, whatever the
    # verdict: a pass then means the model allows that session still open.
    still_open = [who for who in ("sender", "receiver") if seen.parts()[f"{who}_outcome"] == "open"]
    if still_open:
        notes.append(
            Reason(
                code="endpoint-open",
                message=f"the {' and the '.join(still_open)} reported no end (outcome open): "
                "judged as a session still open when the run stopped",
            )
        )
    unmet = _unmet_reasons(scn, result, records) + probe_unsent + unjudged
    unmet += _requests_unmade(result) + _uncovered_reasons(seen, stale, beyond)
    status, reasons = _status(seen, errors, fails, unmet, notes)
    readings, explained = _readings(spec, scn, seen, trace, reading, status)
    forbidden = _deviations(spec, readings)
    if forbidden and status in ("pass", "inconclusive"):
        # the run is the model's only under an alternative the standard
        # forbids: a deviation, whatever else was or was not exercised
        status, explained = "fail", []
        reasons = forbidden + [r for r in reasons if r.code != "observed-outcome"]
    return Verdict(
        scenario=scn.name,
        sut=result.sut,
        status=status,
        reasons=[*explained, *reasons],
        trace=trace,
        readings=readings,
    )


def _trace_judged(
    trace: TraceCheck | None, tester: str | None
) -> tuple[list[Reason], list[Reason], list[Reason]]:
    """(errors, fails, notes) from trace validation: TLC failing on the
    trace, or a rejection held against our tester alone, is our error."""
    if trace is not None and trace.status == "error":
        # TLC failed on the trace: our tool's failure, not a verdict on anyone
        return [Reason(code="trace-error", message=trace.message)], [], []
    if trace is not None and trace.status == "rejected" and tester_blamed(trace, tester):
        # A false fail is the worst defect there is: our tester left the
        # model, so nothing about the implementation can be concluded.
        deviation = Reason(
            code="tester-deviation",
            message=f"the model-driven tester ({tester}) left the model: {trace.message}",
            rule=trace.rule,
            actions=trace.actions,
            frames=[trace.frame] if trace.frame else [],
        )
        return [deviation], [], []
    fails, notes = trace_reasons(trace)
    return [], fails, notes


def _harness_errors(result: RunResult) -> list[Reason]:
    """An endpoint harness that crashed, hung or printed no result."""
    return [
        Reason(
            code=f"{end.role}-error",
            message=f"the {end.role} harness failed: {end.detail or 'no detail'} (log: {end.log})",
        )
        for end in (result.sender, result.receiver)
        if end.outcome == "error"
    ]


def _probe_reasons(result: RunResult) -> tuple[list[Reason], list[Reason]]:
    """(fails, unmet) of the robustness probes: a probe that failed, and
    one never sent or not delivered whole (nothing to judge)."""
    fails: list[Reason] = []
    unsent: list[Reason] = []
    for end in (result.sender, result.receiver):
        for pr in end.probes:
            if pr.status == "fail":
                fails.append(
                    Reason(
                        code=f"probe-{pr.kind}",
                        message=f"robustness probe {pr.kind}: {pr.message}",
                        rule=pr.rule,
                    )
                )
            elif pr.status == "unsent":
                unsent.append(
                    Reason(
                        code=f"probe-{pr.kind}-unsent",
                        message=f"robustness probe {pr.kind} was never sent: the run never "
                        "reached the point where the tester sends it",
                    )
                )
            elif pr.status == "undelivered":
                unsent.append(
                    Reason(
                        code=f"probe-{pr.kind}-undelivered",
                        message=f"robustness probe {pr.kind}: {pr.message}",
                    )
                )
    return fails, unsent


def _payload_reasons(spec: ProtocolSpec, result: RunResult) -> list[Reason]:
    """Delivered bytes that are not the bytes sent."""
    if result.receiver.payload_ok is not False:
        return []
    return [
        Reason(
            **_cited(
                spec,
                spec.payload_rule,
                code="payload-corrupt",
                message="delivered bytes differ from the bytes the sender sent",
            )
        )
    ]


def _told_reasons(
    spec: ProtocolSpec, result: RunResult, records: Sequence[ChannelRecord]
) -> tuple[list[Reason], list[Reason]]:
    """(errors, fails) of the session ID a sending implementation told its
    user (LTP's Session Start notice, CFDP's Transaction.indication): a
    fail where it told none, or one that none of the units it sent carries;
    our harness's error where what it reported is no session ID at all (a
    length other than the session's). Judged where its harness reports
    ``told_session`` and the sender sent something; not where our tester
    plays the sender."""
    told = result.sender.told_session
    gen = spec.capabilities.trace
    if told is None or spec.told_rule is None or gen is None or result.tester == "sender":
        return [], []
    sent = {
        tuple(cast("Iterable[Any]", gen.session_of(r.fields)))
        for r in records
        if r.dir == "forward" and r.proto == spec.name
    }
    if not sent:
        return [], []
    if told and {len(s) for s in sent} != {len(told)}:
        bad = f"told_session {told} is not a session ID of {spec.name} (its units carry {sent})"
        return [Reason(code="told-session-unreadable", message=f"our sender harness: {bad}")], []
    if told and tuple(told) in sent:
        return [], []
    what = f"it told its user {tuple(told)}" if told else "its user was told no session ID"
    carried = ", ".join(str(s) for s in sorted(sent, key=str))
    fail = Reason(
        **_cited(
            spec,
            spec.told_rule,
            code="session-told",
            message=f"the sender began a session its {spec.unit}s carry as {carried}, but {what}",
        )
    )
    return [], [fail]


def _segments_told_reasons(
    spec: ProtocolSpec, result: RunResult, records: Sequence[ChannelRecord]
) -> list[Reason]:
    """Fails for the data segments a receiving implementation told its user
    had arrived (CFDP's File-Segment-Recv.indication) that no unit the
    channel passed to it carried: an offset or length given without a value,
    or a span no such unit holds. What the channel corrupted on its way, or
    passed as IPv4 fragments (which it does not classify), may have carried
    any span, so where any forward frame was either only the values are
    held. Judged where its harness reports ``told_segments`` and the channel
    log shows the protocol's units; not where our tester plays the
    receiver."""
    told = result.receiver.told_segments
    if told is None or spec.segment_told_rule is None or result.tester == "receiver":
        return []
    forward = [r for r in records if r.dir == "forward"]
    if not any(r.proto == spec.name for r in forward):
        return []
    unknown = any(r.decision == "corrupt" or r.kind == "fragment" for r in forward)
    spans = {
        span
        for r in forward
        if r.proto == spec.name and r.decision != "drop"
        for span in [spec.data_span(r.fields)]
        if span is not None
    }
    wrong: list[str] = []
    for off, length in (tuple(s) for s in told):
        if off is None or length is None:
            wrong.append(f"offset {off}, length {length} (a parameter without its value)")
        elif (off, length) not in spans and not unknown:
            wrong.append(f"offset {off}, length {length} (no {spec.unit} it received)")
    if not wrong:
        return []
    more = f" and {len(wrong) - 3} more" if len(wrong) > 3 else ""
    return [
        Reason(
            **_cited(
                spec,
                spec.segment_told_rule,
                code="segment-told",
                message=f"the receiver told its user of {len(wrong)} segment(s) that did not "
                f"arrive as told: {'; '.join(wrong[:3])}{more}",
            )
        )
    ]


def _unmet_reasons(scn: Scenario, result: RunResult, records: list[ChannelRecord]) -> list[Reason]:
    """The scenario's impairments that never met their segment."""
    fired = {r.rule for r in records if r.rule is not None}
    return [
        Reason(
            code="impairment-unmet",
            message=f"impairment {i} ({imp.describe()}) never met its segment: the channel saw "
            f"{channel_saw(records, imp)}",
        )
        for i, imp in enumerate(scn.impairments)
        if i not in fired
    ]


def _requests_unmade(result: RunResult) -> list[Reason]:
    """A user's request the endpoint could not make: the outcome set assumed
    it was made, so the outcome says nothing (as an unmet impairment)."""
    return [
        Reason(code="request-unmade", message=f"the {end.role}'s request {why}")
        for end in (result.sender, result.receiver)
        for why in end.requests_unmade
    ]


def _uncovered_reasons(seen: ExpectedOutcome, stale: str, beyond: str) -> list[Reason]:
    """An outcome outside a set that may not cover the run: said, not judged."""
    out = []
    if stale:
        # The set was computed for another channel: an outcome outside it
        # may be one the model allows on this one. Not judged, said.
        out.append(
            Reason(
                code="expectation-stale",
                message=f"observed {seen.describe()}, outside the stored outcome set; {stale}: "
                "recompute it with `dtnconform expect SCENARIO --write`",
            )
        )
    if beyond:
        # The run's channel did more than the set was computed for: an outcome
        # outside it may be one the model allows. Not judged, said.
        out.append(
            Reason(
                code="expectation-bound",
                message=f"observed {seen.describe()}, outside the outcome set; {beyond}",
            )
        )
    return out


def _status(
    seen: ExpectedOutcome,
    errors: list[Reason],
    fails: list[Reason],
    unmet: list[Reason],
    notes: list[Reason],
) -> tuple[VerdictStatus, list[Reason]]:
    """The verdict's status and reasons, by the rules' order (the module's
    docstring)."""
    # The outcome set assumes every planned loss happened; with one missing,
    # an outcome outside it says nothing, so it is reported, not judged.
    outcome_codes = {"outcome-not-allowed"} | {outcome_code(f) for f in seen.parts()}
    wire_fails = [r for r in fails if r.code not in outcome_codes]
    if errors:
        return "error", errors + fails + unmet
    if unmet and not wire_fails:
        observed = Reason(
            code="observed-outcome",
            message=f"observed {seen.describe()}"
            + (" (outside the set computed for the planned losses)" if fails else ""),
        )
        return "inconclusive", [*unmet, observed, *notes]
    if fails:
        # a planned loss that never happened: the set's outcome reasons
        # speak of losses that were not, and the wire's fails carry the run
        return "fail", (wire_fails if unmet else fails) + unmet + notes
    return "pass", notes


def _readings(
    spec: ProtocolSpec,
    scn: Scenario,
    seen: ExpectedOutcome,
    trace: TraceCheck | None,
    reading: str | None,
    status: VerdictStatus,
) -> tuple[list[str], list[Reason]]:
    """The readings the run follows, and on a pass the reasons that name
    each alternative it needed."""
    needed = reading
    if needed is None and scn.expect.allows(seen):
        # no validated trace: the readings the outcome alone needs
        allowing = scn.expect.readings_allowing(seen)
        needed = "" if "" in allowing else allowing[0]
    # A failed run follows no reading: the model explains it under none. An
    # inconclusive one follows a reading only if its trace showed it (the
    # default tried and rejected): its outcome is not judged, and the
    # readings its outcome allows are tried on its trace first.
    shown = trace is not None and trace.status == "accepted" and trace.default_rejected
    readings = (
        needed.split("+")
        if needed and (status == "pass" or (status == "inconclusive" and shown))
        else []
    )
    explained: list[Reason] = []
    if status == "pass" and needed:
        both = " together with the other alternative(s) named here" if "+" in needed else ""
        for rid in needed.split("+"):
            r = spec.reading(rid)
            explained.append(
                Reason(
                    code=f"reading-{rid}",
                    message=f"explained only under {r.label(spec.spec)}'s alternative{both}: "
                    f"{r.alternative_text} (the model's default: {r.default_text}; the "
                    f"question: {r.question})",
                    rule=f"{spec.spec} " + ", ".join(f"§{x}" for x in r.sections),
                )
            )
    return readings, explained


def _deviations(spec: ProtocolSpec, readings: Sequence[str]) -> list[Reason]:
    """A reason for each reading the run needed whose alternative the
    standard forbids (Reading.deviation), quoting the passage it breaks."""
    out = []
    for rid in readings:
        r = spec.reading(rid)
        if not r.deviation:
            continue
        breaks = f': {r.breaks.cite()}: "{r.breaks.text}"' if r.breaks else ""
        out.append(
            Reason(
                code=f"reading-{rid}-deviation",
                message=f"explained only by {r.label(spec.spec)}'s alternative, "
                f"{r.alternative_text}, which the standard forbids{breaks}",
                rule=f"{spec.spec} §{r.breaks.section}" if r.breaks else "",
            )
        )
    return out


def _rule_in(message: str) -> str:
    """Pull 'RFC 5326 §x.y' out of an expert-info text, if it cites one."""
    m = re.search(r"RFC\s*\d+\s*§\s*[\d.]+", message)
    return m.group(0) if m else ""
