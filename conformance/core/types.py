"""The data types that pass between dtnconform's stages, each defined once.

    specs/ (TLA+) --TLC trace--> generators/ --Scenario--> conformance/ --RunResult,
    SegmentRecord--> judge --Verdict--> reports/

Every type here is a pydantic model: it validates what is read from disk and
exports a JSON schema (``dtnconform schema``) for the files it describes. No
other module defines its own copy of these structures; they import them from
here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, TypeVar, Union, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    model_validator,
)

from conformance.core import registry as protocols
from conformance.core.contract import Delivery, ProtocolParams, Strict
from conformance.core.errors import InputError

M = TypeVar("M", bound=BaseModel)


def _registered(name: str) -> str:
    if name not in protocols.names():
        raise ValueError(f"unknown protocol {name!r} (registered: {', '.join(protocols.names())})")
    return name


# A protocol registered in conformance/protocols/ (the registry lists them).
Protocol = Annotated[str, AfterValidator(_registered)]

# The two directions of a point-to-point channel. "forward" runs from endpoint A
# (the side that starts the transfer: the LTP block sender) to endpoint B;
# "return" runs from B back to A.
Direction = Literal["forward", "return"]

# What an impairment rule does to the segments it matches (Impairment.action).
ImpairmentAction = Literal["drop", "corrupt", "delay", "duplicate", "outage"]

# A value a classifier can match on: numbers, names of codes, flags.
FieldValue = int | str | bool

# How one side of a session ended: its last notice. "completed": the
# protocol's own success notice (LTP: transmission-session completion at the
# sender, RFC 5326 §7.4; at the receiver, red-part delivery, §7.3, in a
# session that then closed, §6.20); "cancelled": a cancellation notice (§7.5,
# §7.6), also after a delivery (the delivered bytes still count);
# "abandoned": CFDP's abandonment (727.0-B-5 4.8: the transaction ends with no
# notice to the peer); "closed": the session closed with no notice at all;
# "open": no end notice when the endpoint stopped (its time limit, or it
# stopped waiting), whatever it delivered: never "completed", the model
# judges whether the session may still be open; "error": the endpoint
# crashed or could not be started (the harness's fault, never the
# protocol's).
OutcomeName = Literal["completed", "cancelled", "abandoned", "closed", "open", "error"]
OUTCOMES: Final[tuple[str, ...]] = get_args(OutcomeName)


def outcome_alias(v: object) -> object:
    """ "timeout" was "open"'s name until 2026-11-29: results stored before,
    and harnesses written against the older contract, still say it."""
    return "open" if v == "timeout" else v


Outcome = Annotated[OutcomeName, BeforeValidator(outcome_alias)]

VerdictStatus = Literal["pass", "fail", "inconclusive", "error"]


def verdict_mark(status: str, readings: Sequence[str]) -> str:
    """A verdict as every table, report, matrix, campaign and Robot tag
    shows it: its status, and for a pass that needed an alternative model
    reading, which: ``pass (reading 5)``, ``pass (reading 2, 5)``. Such a
    pass holds only if the standard admits that reading; a reader must see
    it without opening the run."""
    if status != "pass" or not readings:
        return status
    return f"pass (reading {', '.join(readings)})"


def mark_status(mark: str) -> str:
    """The status under a mark: ``pass (reading 5)`` is a ``pass``."""
    return mark.split(" (", 1)[0]


def mark_readings(mark: str) -> list[str]:
    """The alternative readings a mark names: ``pass (reading 2, 5)`` ->
    ``["2", "5"]``; none for any other mark."""
    head, _, rest = mark.partition(" (reading ")
    return rest.rstrip(")").split(", ") if head == "pass" and rest else []


# Final: their literal values are the defaults of the Literal "schema" fields.
SCENARIO_SCHEMA: Final = "dtnconform/scenario/1"
RUN_RESULT_SCHEMA: Final = "dtnconform/run-result/1"
VERDICT_SCHEMA: Final = "dtnconform/verdict/1"


# ---------------------------------------------------------------------------
# Scenario: what generators/ writes and conformance/ replays.
# ---------------------------------------------------------------------------


def _union(members: list[type[BaseModel]], base: type[BaseModel]) -> object:
    if not members:  # nothing registered yet
        return base
    if len(members) == 1:
        return members[0]
    return Annotated[Union[tuple(members)], Field(discriminator="protocol")]  # noqa: UP007


# The registered protocols' parameter and delivery types, told apart by
# "protocol" (filled in by rebuild(), from conformance/protocols/).
# To a type checker they are the bases every protocol's types extend.
if TYPE_CHECKING:
    AnyParams = ProtocolParams
    AnyDelivery = Delivery
else:
    AnyParams: object = ProtocolParams
    AnyDelivery: object = Delivery


def _inject_protocol(data: object, protocol: object) -> object:
    """``data`` with "protocol" set, when it is a dict without one."""
    if isinstance(data, dict) and "protocol" not in data and isinstance(protocol, str):
        return {**data, "protocol": protocol}
    return data


_GENERIC_OUTCOME_KEYS = {"sender_outcome", "receiver_outcome", "delivered", "protocol"}


class Timers(Strict):
    """The endpoints' timers. Left empty, they are derived from the channel
    (``conformance.timers``): the one-way delays both ways, serialization at
    the link rates, plus a margin, the way RFC 5326 §6.2 sizes them."""

    retransmission_ms: Annotated[float, Field(gt=0, le=86_400_000)] | None = Field(
        None,
        description="retransmission timer of checkpoints, reports and cancels "
        "(default: derived from the channel)",
    )
    linger_ms: Annotated[float, Field(ge=0, le=86_400_000)] | None = Field(
        None,
        description="how long each endpoint keeps serving after its session ended, so late "
        "segments meet a running engine (default: two round trips)",
    )
    tester_retransmission_ms: Annotated[float, Field(gt=0, le=86_400_000)] | None = Field(
        None,
        description="the model-driven tester's own retransmission timer (default: the "
        "implementation's). Set apart from the implementation's, it decides which of two "
        "equal timers fires first, a timing hint the model allows (its timers may expire at "
        "any time once the guarded segment has left the channel)",
    )
    margin_ms: Annotated[float, Field(ge=0, le=3_600_000)] = Field(
        1000.0,
        description="processing and scheduling margin added to derived timers (RFC 5325 "
        "§3.1.3 local and remote processing delays); generous, because a timer that fires "
        "before its answer could arrive is a premature timeout the model excludes, and would "
        "blame the implementation for a loaded test machine",
    )


class Impairment(Strict):
    """One targeted impairment, keyed on protocol fields, never on packet index.

    The rule watches the segments that cross the channel in ``direction`` and
    counts those whose decoded fields equal every entry of ``match``; it acts on
    matches number ``occurrence`` .. ``occurrence + count - 1`` (1-based).
    Field names are the emulator classifier's, declared per protocol in
    ``specs/<proto>/wire.json`` (``fields``).
    Every rule counts every segment it matches, whatever other rules decide.
    """

    direction: Direction
    match: dict[str, FieldValue] = Field(min_length=1)
    occurrence: Annotated[int, Field(ge=1)] = 1
    count: Annotated[int, Field(ge=1)] = Field(1, description="successive matches acted on")
    action: ImpairmentAction = Field(
        "drop",
        description="duplicate: the segment is delivered twice, the copy right behind it; "
        "outage: the link goes down both ways for delay_ms from the segment's arrival (the "
        "segment is lost with the rest)",
    )
    bits: Annotated[int, Field(ge=1, le=1000)] = Field(1, description="corrupt: bits to flip")
    delay_ms: Annotated[float, Field(ge=0, le=86_400_000)] = Field(
        0.0, description="delay: extra one-way delay; outage: how long the link is down"
    )
    checksum: Literal["keep", "recompute"] | None = Field(
        None, description="corrupt: UDP checksum handling (default: the link's)"
    )
    tail_octets: Annotated[int, Field(ge=1, le=65535)] | None = Field(
        None,
        description="corrupt: flip bits only among the datagram's last octets (a PDU's "
        "data, not its headers); default: anywhere in the payload",
    )
    note: str = ""

    @model_validator(mode="after")
    def _outage_has_a_length(self) -> Impairment:
        if self.action == "outage" and self.delay_ms <= 0:
            raise ValueError("delay_ms: an outage needs a length > 0 ms")
        return self

    def describe(self) -> str:
        fields = ", ".join(f"{k}={v}" for k, v in self.match.items())
        which = _ordinal(self.occurrence)
        if self.count > 1:
            which += f"..{_ordinal(self.occurrence + self.count - 1)}"
        what = {"drop": "drop", "corrupt": f"corrupt ({self.bits} bit)",
                "delay": f"delay +{self.delay_ms:g} ms",
                "duplicate": "duplicate",
                "outage": f"{self.delay_ms:g} ms outage from"}[self.action]  # fmt: skip
        return f"{what} {which} {self.direction} segment [{fields}]"


# ---------------------------------------------------------------------------
# The channel: per-direction link model, timeline, outages.
# ---------------------------------------------------------------------------

Probability = Annotated[float, Field(ge=0.0, le=1.0)]


class Reorder(Strict):
    """Bounded reordering: a frame chosen with ``probability`` leaves after
    1..``max_displacement`` later frames of its direction (uniform), or
    ``timeout_ms`` after its due time if fewer follow."""

    probability: Probability = 0.0
    max_displacement: Annotated[int, Field(ge=1, le=1000)] = 3
    timeout_ms: Annotated[float, Field(ge=0, le=3_600_000)] = 100.0


Checksum = Literal["keep", "recompute"]


class LinkSettings(Strict):
    """One direction of the link. Rate counts whole Ethernet frames."""

    delay_ms: Annotated[float, Field(ge=0, le=86_400_000)] = Field(
        0.0, description="one-way propagation delay (0 .. 24 h)"
    )
    rate_bps: Annotated[float, Field(ge=0, le=100e9)] = Field(
        0.0, description="link rate, bits/s of Ethernet frames; 0 = unlimited"
    )
    queue_bytes: Annotated[int, Field(ge=64)] = Field(
        1 << 20, description="bytes that may wait for serialization; more is tail-dropped"
    )
    loss: Probability = Field(0.0, description="probability an IPv4 frame is lost")
    ber: Annotated[float, Field(ge=0, le=0.5)] = Field(
        0.0, description="bit error rate over UDP payload bits"
    )
    packet_error: Probability = Field(
        0.0, description="probability a frame gets exactly one bit error"
    )
    duplicate: Probability = 0.0
    reorder: Reorder = Field(default_factory=Reorder)
    checksum: Checksum = Field(
        "keep",
        description="after bit errors: 'keep' the UDP checksum (the receiving kernel drops the "
        "datagram) or 'recompute' it (the application sees the corruption)",
    )


def _patch_of(model: type[BaseModel], name: str, doc: str) -> type[BaseModel]:
    """A model with every field of ``model``, each optional and unset by
    default, with the same constraints: a partial update of it."""
    fields: dict[str, Any] = {}
    for key, f in model.model_fields.items():
        kind: Any = Annotated[f.annotation, *f.metadata] if f.metadata else f.annotation
        fields[key] = (kind | None, Field(None, description=f.description))
    return create_model(name, __base__=Strict, __doc__=doc, **fields)


# What a timeline event changes: any subset of LinkSettings, validated as it.
if TYPE_CHECKING:
    # A type checker cannot follow a model made by create_model(): this is
    # what it sees of the one below, LinkSettings' fields, each optional.
    class LinkPatch(Strict):
        delay_ms: float | None = None
        rate_bps: float | None = None
        queue_bytes: int | None = None
        loss: float | None = None
        ber: float | None = None
        packet_error: float | None = None
        duplicate: float | None = None
        reorder: Reorder | None = None
        checksum: Checksum | None = None

else:
    LinkPatch = _patch_of(
        LinkSettings, "LinkPatch", "What a timeline event changes: any subset of LinkSettings."
    )


class LinkEvent(Strict):
    t: Annotated[float, Field(ge=0)] = Field(description="scenario time, seconds")
    set: LinkPatch


class Outage(Strict):
    """The link is down (every frame lost) from ``start`` for ``duration``
    seconds of scenario time."""

    start: Annotated[float, Field(ge=0)]
    duration: Annotated[float, Field(gt=0)]


class DirectionChannel(Strict):
    link: LinkSettings = Field(default_factory=LinkSettings)
    timeline: list[LinkEvent] = Field(default_factory=list)
    outages: list[Outage] = Field(default_factory=list)

    @model_validator(mode="after")
    def _ordered(self) -> DirectionChannel:
        times = [e.t for e in self.timeline]
        if times != sorted(times):
            raise ValueError("timeline events must be in time order")
        return self


class Channel(Strict):
    """The channel between A and B. ``profile`` names a link profile
    (``dtnconform profiles``) whose directions are the starting point;
    ``forward``/``return`` given here replace the profile's link fields they
    name, and add their timeline events and outages."""

    profile: str | None = None
    forward: DirectionChannel | None = None
    ret: DirectionChannel | None = Field(None, alias="return")
    time_scale: Annotated[float, Field(ge=0.001, le=1e6)] = Field(
        1.0,
        description="k: scenario time t happens at real time t/k (event times, outage starts "
        "and lengths); delay and rate stay real time",
    )
    seed: Annotated[int, Field(ge=0, lt=2**64)] = 0
    mtu: Annotated[int, Field(ge=576, le=9000)] = 1500
    fragment: bool = Field(
        False,
        description="let datagrams larger than the MTU be IP-fragmented; impairments "
        "cannot see fragmented segments (the channel classifies whole datagrams only)",
    )

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class LinkProfile(Strict):
    """A named channel from the literature (``conformance/channel/profiles/``)."""

    schema_: Literal["dtnconform/link-profile/1"] = Field(
        "dtnconform/link-profile/1", alias="schema"
    )
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    description: str
    source: str = Field(description="where the figures come from")
    forward: DirectionChannel = Field(default_factory=DirectionChannel)
    ret: DirectionChannel = Field(default_factory=DirectionChannel, alias="return")
    time_scale: Annotated[float, Field(ge=0.001, le=1e6)] = 1.0

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ExpectedOutcome(Strict):
    """One terminal outcome: what each side noticed and what was delivered."""

    sender_outcome: Outcome
    receiver_outcome: Outcome
    delivered: AnyDelivery
    readings: list[str] = Field(
        default_factory=lambda: [""],
        description="the model readings under which this outcome is reachable: '' the "
        "default, else a reading's id (specs/<proto>/readings.json)",
    )

    @model_validator(mode="before")
    @classmethod
    def _legacy_flat(cls, data: object) -> object:
        # Files written before the protocol seam held the delivery counters
        # beside the outcomes (LTP's red_bytes_delivered, ...).
        if isinstance(data, dict) and "delivered" not in data:
            extra = {k: v for k, v in data.items() if k not in _GENERIC_OUTCOME_KEYS}
            data = {k: v for k, v in data.items() if k in _GENERIC_OUTCOME_KEYS}
            data["delivered"] = _inject_protocol(extra, data.pop("protocol", None))
        elif isinstance(data, dict) and "protocol" in data:
            data = dict(data)
            data["delivered"] = _inject_protocol(data["delivered"], data.pop("protocol"))
        return data

    def parts(self) -> dict[str, int | str]:
        """Every part the judge compares, delivered counters first."""
        return {
            **self.delivered.parts(),
            "sender_outcome": self.sender_outcome,
            "receiver_outcome": self.receiver_outcome,
        }

    def key(self) -> tuple[int | str, ...]:
        return tuple(self.parts().values())

    def matches(self, other: ExpectedOutcome) -> bool:
        """The same outcome: every part, and the finer facts of what was
        delivered where both know them (Delivery.agrees)."""
        return self.key() == other.key() and self.delivered.agrees(other.delivered)

    def describe(self) -> str:
        under = (
            "" if "" in self.readings else " (only under reading " + ", ".join(self.readings) + ")"
        )
        return (
            f"{self.delivered.describe()}, sender {self.sender_outcome}, "
            f"receiver {self.receiver_outcome}{under}"
        )


class Expectation(Strict):
    """Every terminal outcome the model allows under the scenario's
    impairments (not one interleaving's): a run passes with any of them."""

    outcomes: list[ExpectedOutcome] = Field(min_length=1)
    source: str = Field(
        "",
        description="how the set was computed, e.g. the TLC run that enumerated it",
    )
    in_order: bool | None = Field(
        None,
        description="the set assumes channels that keep order (None: not computed by the model)",
    )
    random_losses: Annotated[int, Field(ge=0)] = Field(
        0, description="how many losses beyond the planned ones the set allows for"
    )
    random_late: Annotated[int, Field(ge=0)] = Field(
        0,
        description="how many delayed or duplicated segments beyond the planned ones the set "
        "allows for",
    )
    outages: Annotated[int, Field(ge=0)] = Field(
        0,
        description="link outages the set plans (an outage rule each): the segments a dead "
        "link swallows are the model's, not losses beyond the plan",
    )
    unjudged: str = Field(
        "",
        description="why the model gives no outcome set here (a transfer past its bounds): "
        "outcomes holds a placeholder, the run's outcome is not judged (inconclusive), its "
        "trace still is validated",
    )

    @model_validator(mode="before")
    @classmethod
    def _legacy_single(cls, data: object) -> object:
        # Scenario files written before outcome sets held one flat outcome.
        if isinstance(data, dict) and "outcomes" not in data and "sender_outcome" in data:
            return {"outcomes": [data]}
        return data

    @model_validator(mode="after")
    def _distinct(self) -> Expectation:
        merged: dict[tuple[int | str, ...], ExpectedOutcome] = {}
        for o in self.outcomes:
            have = merged.get(o.key())
            if have is None:
                merged[o.key()] = o
            else:
                have.readings = sorted(set(have.readings) | set(o.readings))
        self.outcomes = sorted(merged.values(), key=_outcome_order)
        return self

    def allows(self, observed: ExpectedOutcome, reading: str | None = None) -> bool:
        """Is ``observed`` one of the outcomes (under ``reading``: '' the
        model's default, a reading's id, None any reading)?"""
        return any(
            o.key() == observed.key() and (reading is None or reading in o.readings)
            for o in self.outcomes
        )

    def readings_allowing(self, observed: ExpectedOutcome) -> list[str]:
        """The readings under which ``observed`` is allowed, the default first."""
        out = {r for o in self.outcomes if o.key() == observed.key() for r in o.readings}
        return sorted(out, key=lambda r: (r != "", r))

    def describe(self) -> str:
        return " | ".join(o.describe() for o in self.outcomes)


def _outcome_order(o: ExpectedOutcome) -> tuple[object, ...]:
    # counters largest first; named parts (CFDP's condition codes) by name
    counts = tuple(-v if isinstance(v, int) else v for v in o.delivered.parts().values())
    return (*counts, o.sender_outcome, o.receiver_outcome)


class Origin(Strict):
    """Where a scenario came from: the model, the test purpose, the trace."""

    model: str = Field(description="path of the TLA+ module, relative to the repository")
    config: str = ""
    purpose: str = Field(description="test purpose (the trap property's name)")
    purposes: list[str] = Field(
        default_factory=list,
        description="every test purpose whose trace gave this same scenario (impairments and "
        "expected outcomes); the first is 'purpose'",
    )
    actions: list[str] = Field(default_factory=list, description="TLA+ actions of the trace")


class Probe(Strict):
    """A robustness case the model-driven tester plays inside a scenario: it
    sends ``count`` crafted segments of ``kind`` (its protocol's tester
    lists them, e.g. conformance.tester.ltp.PROBES) and checks the answer
    the rule requires, while the scenario's transfer goes on."""

    kind: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
    count: Annotated[int, Field(ge=1, le=20)] = 1


class Scenario(Strict):
    schema_: Literal["dtnconform/scenario/1"] = Field(SCENARIO_SCHEMA, alias="schema")
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=120)
    protocol: Protocol
    description: str = ""
    params: AnyParams = Field(
        description="the protocol's parameters (conformance/protocols/<protocol>.py)"
    )
    impairments: list[Impairment] = Field(default_factory=list)
    probes: list[Probe] = Field(
        default_factory=list,
        description="robustness cases the model-driven tester plays (needs --tester)",
    )
    channel: Channel = Field(default_factory=Channel)
    timers: Timers = Field(default_factory=Timers)
    expect: Expectation
    origin: Origin | None = None
    time_limit_s: Annotated[float, Field(gt=0, le=86400)] | None = Field(
        None,
        description="the longest a run may take before its open sides count as 'open' "
        "(default: derived from the channel and the retransmission limits)",
    )

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _protocol_parts(cls, data: object) -> object:
        # The protocol names its parts: params (legacy files kept them under
        # the protocol's own name, e.g. "ltp") and every delivered counter.
        if not isinstance(data, dict) or not isinstance(data.get("protocol"), str):
            return data
        proto = data["protocol"]
        data = dict(data)
        if "params" not in data and isinstance(data.get(proto), dict):
            data["params"] = data.pop(proto)
        if "params" in data:
            data["params"] = _inject_protocol(data["params"], proto)
        expect = data.get("expect")
        if isinstance(expect, dict):
            data["expect"] = _expect_with_protocol(expect, proto)
        return data

    @model_validator(mode="after")
    def _protocol_params(self) -> Scenario:
        from conformance.core.classifiers import vocabulary

        known = vocabulary(self.protocol)
        for i, imp in enumerate(self.impairments):
            from conformance.core.classifiers import validate_match

            for key, value in imp.match.items():
                if key not in known:
                    raise ValueError(
                        f"impairments[{i}].match: unknown {self.protocol.upper()} field {key!r} "
                        f"(known: {', '.join(sorted(known))})"
                    )
                try:  # a value the classifier never gives: the rule would never fire
                    validate_match(self.protocol, key, value)
                except ValueError as exc:
                    raise ValueError(f"impairments[{i}].match.{key}: {exc}") from None
        if self.params.protocol != self.protocol:
            raise ValueError(
                f"params: parameters of {self.params.protocol!r} in a {self.protocol!r} scenario"
            )
        for o in self.expect.outcomes:
            if o.delivered.protocol != self.protocol:
                raise ValueError(f"expect: delivery counters of {o.delivered.protocol!r}")
        self.params.check(self)
        self.params.fits(self.channel.mtu, self.channel.fragment)
        return self


def _expect_with_protocol(expect: dict[str, object], proto: str) -> dict[str, object]:
    """An expectation whose outcomes name ``proto`` (legacy flat ones too)."""
    outcomes = expect.get("outcomes")
    if "outcomes" not in expect and "sender_outcome" in expect:
        outcomes = [{k: v for k, v in expect.items()}]
        expect = {}
    if isinstance(outcomes, list):
        expect = {**expect, "outcomes": [_outcome_with_protocol(o, proto) for o in outcomes]}
    return expect


def _outcome_with_protocol(o: object, proto: str) -> object:
    if not isinstance(o, dict):
        return o
    if "delivered" in o:
        return {**o, "delivered": _inject_protocol(o["delivered"], proto)}
    return _inject_protocol(o, proto)


# ---------------------------------------------------------------------------
# What a run observes.
# ---------------------------------------------------------------------------


class SegmentRecord(Strict):
    """One decoded segment seen on the wire.

    ``time`` is the capture time on the transmitting side (seconds since the
    epoch); ``dropped`` says whether the channel withheld it from the other
    side. ``fields`` holds the dissector's fields under their leaf names.
    """

    protocol: Protocol
    direction: Direction
    time: float
    frame: Annotated[int, Field(ge=1)] = Field(
        description="frame number in the sender-side capture"
    )
    length: Annotated[int, Field(ge=0)] = Field(description="UDP payload bytes")
    summary: str = ""
    fields: dict[str, FieldValue | list[FieldValue]] = Field(default_factory=dict)
    dropped: bool = False
    copies: Annotated[int, Field(ge=1, le=2)] = Field(
        1, description="copies the channel delivered (2: it duplicated the segment)"
    )
    corrupted: bool = Field(
        False,
        description="the channel flipped bits in it and made its UDP checksum good, so it "
        "arrived changed",
    )


# The tester's own last probe, after segments to discard: a cancel for a
# session of its own, not judged, which shows whether the implementation
# still listens (conformance.runner reads its host's ICMP refusals).
ALIVE_PROBE = "engine-alive"


class ProbeResult(Strict):
    """What became of one probe: the answer the rule requires (``discard``:
    none; a unit type; ``any``: the spec leaves it open) and the answers seen."""

    kind: str
    sent: int
    expect: str
    answers: list[str] = Field(default_factory=list)
    status: Literal["pass", "fail", "unsent", "undelivered"]
    rule: str = ""
    message: str = ""
    payloads: list[str] = Field(
        default_factory=list, description="hex of each datagram of the probe"
    )
    answer_payloads: list[str] = Field(
        default_factory=list, description="hex of each answer the tester attributed to the probe"
    )
    sessions: list[list[int]] = Field(
        default_factory=list,
        description="the probe's own sessions (their segments are kept out of the trace)",
    )


class EndpointResult(Strict):
    role: Literal["sender", "receiver"]
    outcome: Outcome
    delivered: AnyDelivery | None = Field(
        None, description="what the receiver delivered (its protocol's counters)"
    )
    payload_ok: bool | None = Field(
        None, description="delivered bytes equal the bytes sent (receiver only)"
    )
    duration_s: float = 0.0
    exit_code: int | None = None
    exited_at: float | None = Field(
        None,
        description="when the endpoint stopped taking protocol steps (seconds since the epoch): "
        "its process's end, or the earlier stopped_at its result reported",
    )
    detail: str = ""
    crashed: str = Field(
        "",
        description="what the implementation raised (an exception, a panic) when it stopped "
        "with its session open, as its harness reported it: it takes no step again",
    )
    log: str = Field("", description="path of the endpoint's log, relative to the run directory")
    probes: list[ProbeResult] = Field(
        default_factory=list, description="robustness probes the tester played (tester only)"
    )
    requests_unmade: list[str] = Field(
        default_factory=list,
        description="the scenario's users' requests this endpoint could not make, each with "
        "why (its trigger never seen, the implementation has no such request)",
    )
    told_session: list[int] | None = Field(
        None,
        description="the session ID the sending implementation gave its user when the session "
        "began (LTP's Session Start notice, CFDP's Transaction.indication), as its units' "
        "session fields order it; [] when it gave one without an ID; absent where its harness "
        "does not report it (then not judged)",
    )
    told_segments: list[list[int | None]] | None = Field(
        None,
        description="the file data segments the receiving implementation told its user had "
        "arrived (CFDP's File-Segment-Recv.indication), each [offset, length] as given, null "
        "for a parameter given without a value; absent where its harness does not report them "
        "(then not judged)",
    )


_GENERIC_ENDPOINT_KEYS = {
    "role", "outcome", "delivered", "payload_ok", "duration_s", "exit_code", "exited_at",
    "detail", "crashed", "log", "probes", "requests_unmade", "told_session", "told_segments",
}  # fmt: skip


def _endpoint_with_protocol(end: dict[str, object], proto: str) -> dict[str, object]:
    """An endpoint result whose delivery counters name ``proto``; legacy
    results held them beside the outcome."""
    extra = {k: v for k, v in end.items() if k not in _GENERIC_ENDPOINT_KEYS}
    out = {k: v for k, v in end.items() if k in _GENERIC_ENDPOINT_KEYS}
    if extra and "delivered" not in out:
        out["delivered"] = extra
    if isinstance(out.get("delivered"), dict):
        out["delivered"] = _inject_protocol(out["delivered"], proto)
    return out


class SegmentCounts(Strict):
    forward: Annotated[int, Field(ge=0)] = 0
    ret: Annotated[int, Field(ge=0, alias="return")] = 0

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Provenance(Strict):
    """Where a result comes from, so that a reader can reproduce it."""

    date: str = Field("", description="ISO 8601 UTC")
    tool_commit: str = Field("", description="git commit of dtnconform (+dirty if modified)")
    sut: str = Field("", description="implementation name")
    sut_version: str = ""
    knobs: dict[str, FieldValue | float] = Field(
        default_factory=dict,
        description="every knob the endpoints ran with: timers, limits, segment size, ...",
    )
    tshark: str = ""
    kernel: str = ""
    tlc: str = ""
    channel: dict[str, object] = Field(
        default_factory=dict,
        description="the channel as run: profile, each direction's delay, rate, loss, seed",
    )


class RunResult(Strict):
    schema_: Literal["dtnconform/run-result/1"] = Field(RUN_RESULT_SCHEMA, alias="schema")
    scenario: str
    protocol: Protocol
    sut: str
    started_at: str = Field(description="ISO 8601 UTC")
    duration_s: float
    sender: EndpointResult
    receiver: EndpointResult
    delivered_bytes: Annotated[int, Field(ge=0)]
    goodput_bps: float | None = Field(
        description="delivered bytes × 8 / receiver session time; null when that time is 0"
    )
    segments: SegmentCounts = Field(description="segments each way, as sent into the channel")
    dropped: SegmentCounts = Field(description="segments the channel withheld each way")
    captures: dict[str, str] = Field(
        default_factory=dict, description="capture files by side, relative to the run directory"
    )
    channel_log: str = ""
    provenance: Provenance | None = None
    tester: Literal["sender", "receiver"] | None = Field(
        None, description="the role dtnconform's model-driven tester played (the SUT the other)"
    )
    processing_ms: dict[str, float] = Field(
        default_factory=dict,
        description="role -> the processing time its implementation declares (its profile's "
        "processing-ms), where it declares one",
    )
    slowdown: float = Field(
        1.0,
        description="the load the roles ran under: how much longer than on an idle machine an "
        "endpoint took to be scheduled (conformance/loadprobe.py)",
    )

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _protocol_parts(cls, data: object) -> object:
        if not isinstance(data, dict) or not isinstance(data.get("protocol"), str):
            return data
        data = dict(data)
        for role in ("sender", "receiver"):
            end = data.get(role)
            if isinstance(end, dict):
                data[role] = _endpoint_with_protocol(end, data["protocol"])
        return data

    def outcome(self) -> ExpectedOutcome:
        """What the run observed, in the terms of the scenario's expectation."""
        kind = protocols.get(self.protocol).delivery
        delivered = kind.observed(self.sender.delivered, self.receiver.delivered)
        if delivered is None:
            delivered = kind(protocol=self.protocol)
        return ExpectedOutcome(
            delivered=delivered,
            sender_outcome=self.sender.outcome,
            receiver_outcome=self.receiver.outcome,
        )


class Reason(Strict):
    """One reason behind a verdict: a code, a sentence, and the rule if any."""

    code: str
    message: str
    rule: str = Field("", description="spec section, e.g. 'RFC 5326 §6.2'")
    actions: list[str] = Field(
        default_factory=list, description="the TLA+ actions of the model behind the rule"
    )
    tags: list[str] = Field(
        default_factory=list, description="the rule's sections as tags, e.g. 'RFC5326-6.8'"
    )
    frames: list[int] = Field(default_factory=list)


class TraceCheck(Strict):
    """Trace validation of a run: the captured segments, as a trace, checked
    by TLC against the protocol's model (conformance/tracecheck.py).

    ``accepted``: some behaviour of the model takes every line. ``rejected``:
    none takes line ``line`` (the segment of ``frame`` in ``side``.pcap, or
    the trace's end), with what the model could do there. ``unchecked``: the
    trace holds something the model cannot express, named in ``message``.
    ``error``: TLC itself failed on the trace (our tool's failure, never the
    implementation's), named in ``message``."""

    status: Literal["accepted", "rejected", "unchecked", "error"]
    message: str = ""
    lines: int = 0
    sessions: int = 0
    window_ms: float = Field(0.0, description="the shortest reaction window (TraceCore's Window)")
    windows_ms: dict[str, float] = Field(
        default_factory=dict,
        description="each actor's reaction window: its declared processing time (250 ms where "
        "it declares none) times the slowdown, at most half the retransmission interval",
    )
    slowdown: float = Field(
        1.0,
        description="the load the run met: how much longer than on an idle machine an endpoint "
        "took to be scheduled (conformance/loadprobe.py)",
    )
    states: int | None = Field(None, description="distinct states TLC explored")
    seconds: float = 0.0
    line: int | None = Field(None, description="the first trace line no behaviour takes")
    frame: int | None = None
    side: str = ""
    actor: str = Field(
        "",
        description="who sent that line (sender, receiver), or exited there; '' for an "
        "arrival or the trace's end",
    )
    enabled: list[str] = Field(
        default_factory=list, description="model actions enabled where the trace stopped"
    )
    actions: list[str] = Field(
        default_factory=list, description="the model actions the deviation is held against"
    )
    rule: str = ""
    tags: list[str] = Field(default_factory=list)
    overdue: bool = Field(
        False,
        description="rejected for something owed that the wire never showed in time: an "
        "arrival left unanswered, an emission never sent, a request's obligation lapsed "
        "(docs/trace-validation.md); else for a line no behaviour of the model explains",
    )
    trace_file: str = Field("", description="the NDJSON trace, relative to the run directory")
    reading: str = Field(
        "",
        description="the model reading the accepted trace needed: '' the default, else the id "
        "of an alternative (specs/<proto>/readings.json)",
    )
    default_rejected: bool = Field(
        False,
        description="the default reading was tried on the trace and rejected it before the "
        "alternative that accepted it (readings the observed outcome allows are tried first)",
    )
    ends: list[ExpectedOutcome] = Field(
        default_factory=list,
        description="the outcomes the model holds at the trace's end, under the reading that "
        "accepted it: what each endpoint must have reported, whatever the run's size (empty "
        "where the protocol's trace module does not report them, or the run has several "
        "sessions; then the scenario's outcome set judges the outcome)",
    )
    late: bool = Field(
        False,
        description="accepted only with reaction times longer than the window, yet shorter "
        "than a retransmission interval: some answer came late (the model is untimed; "
        "message says where)",
    )


class Verdict(Strict):
    schema_: Literal["dtnconform/verdict/1"] = Field(VERDICT_SCHEMA, alias="schema")
    scenario: str
    sut: str
    status: VerdictStatus
    reasons: list[Reason] = Field(default_factory=list)
    trace: TraceCheck | None = Field(None, description="trace validation of the run's captures")
    readings: list[str] = Field(
        default_factory=list,
        description="the alternative model readings (ids) the run needed to be explained: "
        "the implementation follows them",
    )

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @property
    def mark(self) -> str:
        """The verdict as shown: ``pass (reading 5)`` for a pass that needed
        reading 5's alternative (:func:`verdict_mark`)."""
        return verdict_mark(self.status, self.readings)


# ---------------------------------------------------------------------------
# Files on disk.
# ---------------------------------------------------------------------------

SCHEMAS: dict[str, type[BaseModel]] = {
    "scenario": Scenario,
    "link-profile": LinkProfile,
    "segment-record": SegmentRecord,
    "run-result": RunResult,
    "verdict": Verdict,
}


def load_model(cls: type[M], path: Path) -> M:
    """Read and validate a JSON file; on failure raise InputError naming
    the file, the first offending field and the reason."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON: {exc.msg} at line {exc.lineno}") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not JSON: not UTF-8 text") from None
    except RecursionError:
        raise InputError(f"{path}: not a {cls.__name__}: JSON nested too deeply") from None
    try:
        return cls.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        # With several protocols registered, params and delivered are unions
        # told apart by "protocol", and the error's path names the member
        # ("params.ltp.red_len"): the file has no such level.
        loc, tags = list(err["loc"]), set(protocols.names())
        loc = [
            p for i, p in enumerate(loc)
            if not (i and loc[i - 1] in ("params", "delivered") and p in tags)
        ]  # fmt: skip
        where = ".".join(str(p) for p in loc)
        msg = err["msg"].removeprefix("Value error, ")
        # A whole-scenario check names its field at the start of its message.
        named = re.match(r"([A-Za-z_][\w.\[\]]*): (.*)", msg, re.S)
        if named and not where:
            where, msg = named.group(1), named.group(2)
        where = where or "(top level)"
        # A file that keeps its parameters under the protocol's name (as
        # files written before "params" do) is told about that key.
        proto = raw.get("protocol") if isinstance(raw, dict) else None
        if isinstance(proto, str) and "params" not in raw and proto in raw:
            where = re.sub(r"^params\b", proto, where)
        more = f" (+{len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
        raise InputError(f"{path}: field {where}: {msg}{more}") from None


def load_scenario(path: Path) -> Scenario:
    return load_model(Scenario, path)


def dump_model(obj: BaseModel, path: Path) -> None:
    """Write a model as indented JSON, atomically (an interrupted run never
    leaves half a file behind)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(obj.model_dump_json(indent=2, by_alias=True) + "\n", encoding="utf-8")
    tmp.replace(path)


def json_schema(name: str) -> dict[str, object]:
    return SCHEMAS[name].model_json_schema(by_alias=True)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def rebuild() -> None:
    """Make params and delivery counters the union of the registered
    protocols' types (at import, and when the registry changes)."""
    specs = protocols.all_specs()
    g = globals()
    g["AnyParams"] = _union([sp.params for sp in specs], ProtocolParams)
    g["AnyDelivery"] = _union([sp.delivery for sp in specs], Delivery)
    # A field's type is fixed when its class is made; set it anew, then
    # rebuild every model that holds one of these (inner ones first).
    ExpectedOutcome.model_fields["delivered"].annotation = g["AnyDelivery"]
    EndpointResult.model_fields["delivered"].annotation = g["AnyDelivery"] | None
    Scenario.model_fields["params"].annotation = g["AnyParams"]
    # (TraceCheck holds ExpectedOutcomes, its ends; Verdict a TraceCheck)
    for model in (
        ExpectedOutcome,
        Expectation,
        Scenario,
        EndpointResult,
        RunResult,
        TraceCheck,
        Verdict,
    ):
        model.model_rebuild(force=True)


def _follow_registry() -> None:
    protocols.on_change(rebuild)


rebuild()
_follow_registry()


class ChannelRecord(Strict):
    """One line of ``channel.jsonl``, the channel emulator's decision log:
    what dtnc-emu did with one frame it read (written by
    ``conformance/channel/emulator/core/src/log.rs``, read through
    ``conformance.channel.control.read_log``). Keys that do not apply to a frame
    are absent from its line; here they take their defaults."""

    t_ns: Annotated[int, Field(ge=0)] = Field(
        description="arrival time, ns since the Unix epoch (comparable with the captures)"
    )
    dir: Direction
    index: Annotated[int, Field(ge=1)] = Field(description="1-based frame number in this direction")
    len: Annotated[int, Field(ge=0)] = Field(description="frame bytes, Ethernet header included")
    kind: Literal["udp", "ipv4", "fragment", "non-ip"] = Field(
        description="unfragmented IPv4/UDP, other IPv4, an IPv4 fragment, or not IPv4 (ARP, IPv6)"
    )
    proto: Protocol | None = Field(None, description="the protocol the frame classified as")
    seg: Annotated[int, Field(ge=1)] | None = Field(
        None, description="1-based number of the segment in this direction (classified frames)"
    )
    fields: dict[str, FieldValue] = Field(
        default_factory=dict, description="the classifier's fields (classified frames)"
    )
    decision: Literal["pass", "corrupt", "drop"] = Field(
        description="forwarded unchanged, forwarded with bits flipped, or not forwarded"
    )
    cause: (
        Literal["rule", "outage", "loss", "ber", "packet_error", "queue", "memory", "oversize"]
        | None
    ) = Field(
        None,
        description="why the frame was dropped, corrupted or (by a rule) delayed: a rule, an "
        "outage, random loss, bit errors, the single bit of packet_error, a full queue (tail "
        "drop), the in-flight memory guard, or a frame larger than the bridge receives whole",
    )
    rule: Annotated[int, Field(ge=0)] | None = Field(
        None, description="index of the impairment rule that acted"
    )
    release_ns: Annotated[int, Field(ge=0)] | None = Field(
        None, description="when the frame left the channel, ns since the epoch (not dropped)"
    )
    flipped: list[Annotated[int, Field(ge=0)]] = Field(
        default_factory=list, description="flipped bit positions, bit 0 = first bit of the frame"
    )
    fixed: bool = Field(False, description="the UDP checksum was recomputed after the flips")
    copies: Annotated[int, Field(ge=1, le=2)] = Field(1, description="2 when duplicated")
    hold: Annotated[int, Field(ge=0)] = Field(
        0, description="reordering: the frame left after this many later frames"
    )
    extra_delay_ns: Annotated[int, Field(ge=0)] = Field(0, description="a rule's extra delay")
    replayed: bool = Field(False, description="the decision came from a replayed log")
    mismatch: bool = Field(
        False, description="under replay, the logged frame had another length or kind"
    )

    @property
    def lost(self) -> bool:
        """The frame did not reach the other side: dropped, or corrupted with
        its UDP checksum left wrong (the receiving kernel discards it)."""
        return self.decision == "drop" or (self.decision == "corrupt" and not self.fixed)


SCHEMAS["channel-record"] = ChannelRecord


@dataclass
class RunOutcome:
    """One run as the runner hands it on: its result (None when it never
    ran), its verdict, the segments the captures showed, and its folder."""

    result: RunResult | None
    verdict: Verdict
    segments: list[SegmentRecord]
    run_dir: Path
