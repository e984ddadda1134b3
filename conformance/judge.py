"""RunResult + channel log + dissector findings -> Verdict.

The rules, in order:
- error: an endpoint crashed, hung, or printed no result: the run says nothing
  about conformance.
- fail: an observed outcome differs from the model's expectation (bytes
  delivered each colour, each side's session outcome), delivered bytes differ
  from the bytes sent, or our dissector flagged a malformed or erroneous
  segment (an expert info of severity error).
- inconclusive: everything matched, but an impairment of the scenario never
  met its segment (the implementation did not send what the model sent), so
  the path the scenario was written for was not exercised.
- pass: otherwise. Warnings from the dissector are kept as reasons on a pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from conformance.types import Reason, RunResult, Scenario, Verdict, VerdictStatus

if TYPE_CHECKING:
    from conformance.segments import Finding

# Where each expectation comes from in RFC 5326.
_RULES = {
    "red_bytes_delivered": "RFC 5326 §7.3 (red-part reception)",
    "green_bytes_delivered": "RFC 5326 §7.2 (green-segment arrival)",
    "sender_outcome": "RFC 5326 §7.4/§7.5 (session completion / cancellation at the sender)",
    "receiver_outcome": "RFC 5326 §7.3/§7.6 (red-part reception / cancellation at the receiver)",
}


def fired_rules(channel_log: Path) -> set[int]:
    from conformance.emulator import read_log

    return {int(rec["rule"]) for rec in read_log(channel_log) if rec.get("rule") is not None}


def judge(scn: Scenario, result: RunResult, channel_log: Path, findings: list[Finding]) -> Verdict:
    errors: list[Reason] = []
    fails: list[Reason] = []
    notes: list[Reason] = []

    for end in (result.sender, result.receiver):
        if end.outcome == "error":
            errors.append(
                Reason(
                    code=f"{end.role}-error",
                    message=f"the {end.role} failed: {end.detail or 'no detail'} (log: {end.log})",
                )
            )

    exp = scn.expect
    observed = {
        "red_bytes_delivered": result.receiver.red_bytes_delivered,
        "green_bytes_delivered": result.receiver.green_bytes_delivered,
        "sender_outcome": result.sender.outcome,
        "receiver_outcome": result.receiver.outcome,
    }
    for key, have in observed.items():
        want = getattr(exp, key)
        if have != want and not (key.endswith("outcome") and have == "error"):
            fails.append(
                Reason(
                    code=f"unexpected-{key.replace('_', '-')}",
                    message=f"{key}: expected {want}, observed {have}",
                    rule=_RULES[key],
                )
            )
    if result.receiver.payload_ok is False:
        fails.append(
            Reason(
                code="payload-corrupt",
                message="delivered bytes differ from the bytes the sender sent",
                rule="RFC 5326 §7.2/§7.3",
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

    fired = fired_rules(Path(channel_log))
    unmet = [
        Reason(
            code="impairment-unmet",
            message=f"impairment {i} never met its segment: {imp.describe()}",
        )
        for i, imp in enumerate(scn.impairments)
        if i not in fired
    ]

    status: VerdictStatus
    if errors:
        status, reasons = "error", errors + fails + unmet
    elif fails:
        status, reasons = "fail", fails + unmet + notes
    elif unmet:
        status, reasons = "inconclusive", unmet + notes
    else:
        status, reasons = "pass", notes
    return Verdict(scenario=scn.name, sut=result.sut, status=status, reasons=reasons)


def _rule_in(message: str) -> str:
    """Pull 'RFC 5326 §x.y' out of an expert-info text, if it cites one."""
    import re

    m = re.search(r"RFC\s*\d+\s*§\s*[\d.]+", message)
    return m.group(0) if m else ""
