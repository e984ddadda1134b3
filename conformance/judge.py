"""RunResult + channel log + dissector findings -> Verdict.

The rules, in order:
- error: our side failed: an endpoint harness crashed, hung or printed no
  result (outcome "error"), or the channel died (the runner adds that). Only
  then; nothing the implementation does on the wire is an error.
- inconclusive: an impairment of the scenario never met its segment, so the
  losses the expectation was computed for did not all happen and the path
  the scenario was written for was not exercised. Each such impairment is
  named with what the channel saw in its direction instead.
- fail: the observed outcome (bytes delivered each colour, each side's last
  notice: completed, cancelled, closed without a notice, or still open at
  the time limit) is not one of the outcomes the model allows under the
  scenario's losses; or the delivered bytes differ from the bytes sent; or
  our dissector flagged a segment as an error. Each reason cites its rule.
- pass: otherwise. Warnings from the dissector are kept as reasons on a pass.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance.types import (
    ExpectedOutcome,
    Impairment,
    Reason,
    RunResult,
    Scenario,
    Verdict,
    VerdictStatus,
)

if TYPE_CHECKING:
    from conformance.segments import Finding

# The rule that makes the model's outcome what it is, by part and by the value
# the model allows (RFC 5326): a deviation breaks the rule of what should have
# happened. "closed" is cited by what was observed: no rule allows it.
_RULES: dict[str, dict[str, str]] = {
    "red_bytes_delivered": {
        "": "RFC 5326 §6.9, §7.3 (the red part is delivered once all of it has arrived, "
        "and only then)"
    },
    "green_bytes_delivered": {
        "": "RFC 5326 §6.10, §7.2 (each green segment that arrives is delivered; none is "
        "retransmitted)"
    },
    "sender_outcome": {
        "completed": "RFC 5326 §6.12, §7.4 (the session completes once reports claim the "
        "whole red part)",
        "cancelled": "RFC 5326 §6.7, §6.17, §6.19, §7.5 (the checkpoint retransmission limit, "
        "or a CR, cancels the sending session)",
        "timeout": "RFC 5326 §6 (no procedure ends this sending session)",
    },
    "receiver_outcome": {
        "completed": "RFC 5326 §6.9, §7.3 (the red part is delivered once all of it has arrived)",
        "cancelled": "RFC 5326 §6.8, §6.17, §6.19, §7.6 (the report retransmission limit, "
        "on an RS timer or a redundant checkpoint, or a CS, cancels the receiving session)",
        "timeout": "RFC 5326 §6 (no procedure ends a receiving session that got no "
        "checkpoint and no cancel)",
    },
}
_CLOSED = (
    "RFC 5326 §6.20, §7.3, §7.6 (a session closed with neither a red-part reception nor a "
    "cancellation notice)"
)
_FIELDS = ("red_bytes_delivered", "green_bytes_delivered", "sender_outcome", "receiver_outcome")


def _rule(field: str, allowed: object, observed: object) -> str:
    """The rule a part of an outcome breaks: the one behind the value the
    model allows, or, for a session that closed with no notice, that."""
    if observed == "closed":
        return _CLOSED
    table = _RULES[field]
    return table.get(str(allowed), table.get("", ""))


def outcome_reasons(scn: Scenario, seen: ExpectedOutcome) -> list[Reason]:
    """Why an observed outcome is not in the scenario's set: one reason per
    part that differs from the nearest allowed outcome, each with its rule."""
    allowed = scn.expect.outcomes
    nearest = min(
        allowed,
        key=lambda o: sum(getattr(o, f) != getattr(seen, f) for f in _FIELDS),
    )
    reasons = []
    for f in _FIELDS:
        have = getattr(seen, f)
        if have == getattr(nearest, f):
            continue
        options = sorted({str(getattr(o, f)) for o in allowed})
        reasons.append(
            Reason(
                code=f"unexpected-{f.replace('_', '-')}",
                message=f"{f}: observed {have}; with the other parts as observed, the model "
                f"allows {getattr(nearest, f)} (over all allowed outcomes: {', '.join(options)})",
                rule=_rule(f, getattr(nearest, f), have),
            )
        )
    head = Reason(
        code="outcome-not-allowed",
        message=f"observed outcome ({seen.describe()}) is none of the {len(allowed)} the model "
        f"allows under the scenario's losses: {scn.expect.describe()}",
        rule="; ".join(dict.fromkeys(r.rule for r in reasons if r.rule)),
    )
    return [head, *reasons]


def channel_saw(records: list[dict[str, Any]], imp: Impairment) -> str:
    """What the channel saw in an impairment's direction, for an unmet one:
    how many frames and segments, how many were fragments, and how many
    segments matched the rule's fields (against the occurrence it waited for)."""
    frames = [r for r in records if r.get("dir") == imp.direction]
    kinds = Counter(str(r.get("kind", "")) for r in frames)
    segs = [r for r in frames if r.get("proto")]
    matching = [
        r for r in segs if all(r.get("fields", {}).get(k) == v for k, v in imp.match.items())
    ]
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


def judge(scn: Scenario, result: RunResult, channel_log: Path, findings: list[Finding]) -> Verdict:
    from conformance.emulator import read_log

    errors: list[Reason] = []
    fails: list[Reason] = []
    notes: list[Reason] = []

    for end in (result.sender, result.receiver):
        if end.outcome == "error":
            errors.append(
                Reason(
                    code=f"{end.role}-error",
                    message=f"the {end.role} harness failed: {end.detail or 'no detail'} "
                    f"(log: {end.log})",
                )
            )

    seen = result.outcome()
    stale = ""
    if not errors and not scn.expect.allows(seen):
        from generators.outcomes import stale as stale_reason

        stale = stale_reason(scn)
        if not stale:
            fails += outcome_reasons(scn, seen)
    if result.receiver.payload_ok is False:
        fails.append(
            Reason(
                code="payload-corrupt",
                message="delivered bytes differ from the bytes the sender sent",
                rule="RFC 5326 §7.2, §7.3",
            )
        )

    for f in findings:
        reason = Reason(
            code=f.name or "dissector-finding",
            message=f"{f.message} (frame {f.frame} of {f.side}.pcap)",
            rule=_rule_in(f.message),
            frames=[f.frame],
        )
        (fails if f.severity.lower() == "error" else notes).append(reason)

    records = read_log(Path(channel_log))
    fired = {int(r["rule"]) for r in records if r.get("rule") is not None}
    unmet = [
        Reason(
            code="impairment-unmet",
            message=f"impairment {i} ({imp.describe()}) never met its segment: the channel saw "
            f"{channel_saw(records, imp)}",
        )
        for i, imp in enumerate(scn.impairments)
        if i not in fired
    ]
    # The outcome set assumes every planned loss happened; with one missing,
    # an outcome outside it says nothing, so it is reported, not judged.
    outcome_codes = {"outcome-not-allowed"} | {f"unexpected-{f.replace('_', '-')}" for f in _FIELDS}
    wire_fails = [r for r in fails if r.code not in outcome_codes]

    if stale:
        # The set was computed for another channel: an outcome outside it
        # may be one the model allows on this one. Not judged, said.
        unmet.append(
            Reason(
                code="expectation-stale",
                message=f"observed {seen.describe()}, outside the stored outcome set; {stale}: "
                "recompute it with `dtnconform expect SCENARIO --write`",
            )
        )

    status: VerdictStatus
    if errors:
        status, reasons = "error", errors + fails + unmet
    elif unmet and not wire_fails:
        observed = Reason(
            code="observed-outcome",
            message=f"observed {seen.describe()}"
            + (" (outside the set computed for the planned losses)" if fails else ""),
        )
        status, reasons = "inconclusive", [*unmet, observed, *notes]
    elif fails:
        status, reasons = "fail", fails + unmet + notes
    else:
        status, reasons = "pass", notes
    return Verdict(scenario=scn.name, sut=result.sut, status=status, reasons=reasons)


def _rule_in(message: str) -> str:
    """Pull 'RFC 5326 §x.y' out of an expert-info text, if it cites one."""
    m = re.search(r"RFC\s*\d+\s*§\s*[\d.]+", message)
    return m.group(0) if m else ""
