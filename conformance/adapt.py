"""Scenarios adapted to implementations' declared profiles
(docs/implementers.md, "Profiles"): where an endpoint file fixes what the
standard leaves to the implementation (ION's retransmission limit is never
below 3, RFC 5326 §6.7 and §6.8 leave the limit to network management), a
scenario outside it runs with the profile's value, and the model computes
its outcome set again: the same test purpose under the implementation's
own settings, judged exactly, not a fail and not "not supported"."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from conformance.core import registry as protocols
from conformance.core.errors import InputError
from conformance.core.types import Scenario
from suts.base import SutAdapter

Play = tuple[SutAdapter, str]  # an implementation and the side it plays


def changes(scn: Scenario, plays: Sequence[Play]) -> dict[str, tuple[object, object, str]]:
    """What the implementations' profiles move in ``scn``, each where it
    plays its sides (a profile may bind a parameter to one side): name ->
    (the scenario's value, the value run, why). Two implementations that
    move one parameter apart (an interop pair) are refused: no value suits
    both."""
    params = scn.params.model_dump(mode="json")
    roles: dict[SutAdapter, list[str]] = {}
    for sut, role in plays:
        roles.setdefault(sut, []).append(role)
    out: dict[str, tuple[object, object, str]] = {}
    for sut, sides in roles.items():
        for key, (old, new, why) in sut.profile_changes(params, sides).items():
            if key in out and out[key][1] != new:
                raise InputError(
                    f"{scn.name}: {key}: the profiles of the pair ask for {out[key][1]} and "
                    f"{new} ({sut.name}: {why})"
                )
            out[key] = (old, new, f"{sut.name}: {why}")
    return out


def adapt(scn: Scenario, plays: Sequence[Play], workdir: Path) -> tuple[Scenario, list[str]]:
    """``scn`` as the implementations' profiles run it, each on the side it
    plays, its outcome set computed again by the model, and each change said
    ("retransmission_limit 1 -> 3 (ion: ...)"); ``scn`` itself, and no
    change, where none moves."""
    moved = changes(scn, plays)
    if not moved:
        return scn, []
    said = [f"{k} {old} -> {new} ({why})" for k, (old, new, why) in moved.items()]
    params = scn.params.model_copy(update={k: new for k, (_, new, _) in moved.items()})
    spec = protocols.get(scn.protocol)
    out = scn.model_copy(
        update={
            "params": type(scn.params).model_validate(params.model_dump()),
            "description": f"Adapted to the implementation's profile: {'; '.join(said)}. "
            + scn.description,
        }
    )
    oc = spec.need("outcomes", spec.capabilities.outcomes)
    out.expect = oc.expectation_for(out, workdir)
    return out, said


def plays(sut: SutAdapter, tester: str | None = None, peer: SutAdapter | None = None) -> list[Play]:
    """The sides the implementations play in one run: ``sut`` both, or the
    one the model-driven ``tester`` leaves it, or the sender with ``peer``
    receiving (an interoperability run)."""
    if peer is not None:
        return [(sut, "sender"), (peer, "receiver")]
    return [(sut, r) for r in ("sender", "receiver") if r != tester]


def adapt_run(scn: Scenario, run_plays: Sequence[Play]) -> tuple[Scenario, list[str]]:
    """:func:`adapt` for one run, its TLC files not kept (the run keeps the
    scenario)."""
    with tempfile.TemporaryDirectory(prefix="dtnc-adapt-") as tlc:
        return adapt(scn, run_plays, Path(tlc))
