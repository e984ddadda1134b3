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
from pathlib import Path
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from conformance.errors import InputError

M = TypeVar("M", bound=BaseModel)

Protocol = Literal["ltp", "cfdp", "norm", "saratoga"]

# The two directions of a point-to-point channel. "forward" runs from endpoint A
# (the side that starts the transfer: the LTP block sender) to endpoint B;
# "return" runs from B back to A.
Direction = Literal["forward", "return"]

# A value a classifier can match on: numbers, names of codes, flags.
FieldValue = int | str | bool

# How one side of a session ended: its last notice. "completed": the
# protocol's own success notice (LTP: transmission-session completion at the
# sender, RFC 5326 §7.4; red-part delivery at the receiver, §7.3);
# "cancelled": a cancellation notice (§7.5, §7.6), also after a delivery
# (the delivered bytes still count); "closed": the session closed with no
# notice at all (never allowed by the model); "timeout": the run's time limit
# passed with the session still open; "error": the endpoint crashed or could
# not be started (the harness's fault, never the protocol's).
Outcome = Literal["completed", "cancelled", "closed", "timeout", "error"]

VerdictStatus = Literal["pass", "fail", "inconclusive", "error"]

SCENARIO_SCHEMA = "dtnconform/scenario/1"
RUN_RESULT_SCHEMA = "dtnconform/run-result/1"
VERDICT_SCHEMA = "dtnconform/verdict/1"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


# ---------------------------------------------------------------------------
# Scenario: what generators/ writes and conformance/ replays.
# ---------------------------------------------------------------------------


class LtpBlock(_Strict):
    """Geometry and knobs of the one LTP block a scenario transfers, in bytes.

    The block is ``block_len`` bytes of client data, the first ``red_len`` of
    them red (RFC 5326 §2.1, §6.1); the sender cuts it into data segments of at
    most ``segment_size`` bytes of client data each, so impairments name data
    segments by their byte offset (§3.2.1). Model-generated scenarios use one
    abstract model segment per data segment.
    """

    block_len: Annotated[int, Field(gt=0, le=1 << 30)] = Field(
        description="client-data bytes in the block"
    )
    red_len: Annotated[int, Field(ge=0)] = Field(
        description="bytes of the block that are red (the first red_len); the rest is green"
    )
    segment_size: Annotated[int, Field(gt=0, le=65000)] = Field(
        description="client-data bytes per data segment (payload only, no header)"
    )
    client_service_id: Annotated[int, Field(ge=0, lt=2**63)] = Field(
        1,
        description="destination client service in the data segments; the receiver registers "
        "this service too unless receiver_client_service_id says otherwise",
    )
    receiver_client_service_id: Annotated[int, Field(ge=0, lt=2**63)] | None = Field(
        None,
        description="the client service the receiver registers (default: client_service_id); "
        "a different value makes the sender name an unknown service (RFC 5326 §6.21 UNREACH)",
    )
    retransmission_limit: Annotated[int, Field(ge=0, le=100)] = Field(
        1,
        description="checkpoint, report and cancel retransmission limit the expectation "
        "assumes (RFC 5326 §6.7, §6.8, §6.16); the endpoints are configured with it",
    )

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _legacy_segments(cls, data: object) -> object:
        # Scenario files written before geometry in bytes counted the block
        # in whole segments: red_segments and green_segments of segment_size.
        if isinstance(data, dict) and ("red_segments" in data or "green_segments" in data):
            data = dict(data)
            size = data.get("segment_size")
            red, green = data.pop("red_segments", 0), data.pop("green_segments", 0)
            if isinstance(size, int) and isinstance(red, int) and isinstance(green, int):
                data.setdefault("red_len", size * red)
                data.setdefault("block_len", size * (red + green))
        return data

    @model_validator(mode="after")
    def _red_within_block(self) -> LtpBlock:
        if self.red_len > self.block_len:
            raise ValueError(f"red_len {self.red_len} exceeds block_len {self.block_len}")
        return self

    @property
    def green_len(self) -> int:
        return self.block_len - self.red_len

    @property
    def service_at_receiver(self) -> int:
        if self.receiver_client_service_id is None:
            return self.client_service_id
        return self.receiver_client_service_id


class Timers(_Strict):
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
    margin_ms: Annotated[float, Field(ge=0, le=3_600_000)] = Field(
        1000.0,
        description="processing and scheduling margin added to derived timers (RFC 5325 "
        "§3.1.3 local and remote processing delays); generous, because a timer that fires "
        "before its answer could arrive is a premature timeout the model excludes, and would "
        "blame the implementation for a loaded test machine",
    )


class Impairment(_Strict):
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
    action: Literal["drop", "corrupt", "delay"] = "drop"
    bits: Annotated[int, Field(ge=1, le=1000)] = Field(1, description="corrupt: bits to flip")
    delay_ms: Annotated[float, Field(ge=0, le=86_400_000)] = Field(
        0.0, description="delay: extra one-way delay"
    )
    checksum: Literal["keep", "recompute"] | None = Field(
        None, description="corrupt: UDP checksum handling (default: the link's)"
    )
    note: str = ""

    def describe(self) -> str:
        fields = ", ".join(f"{k}={v}" for k, v in self.match.items())
        which = _ordinal(self.occurrence)
        if self.count > 1:
            which += f"..{_ordinal(self.occurrence + self.count - 1)}"
        what = {"drop": "drop", "corrupt": f"corrupt ({self.bits} bit)",
                "delay": f"delay +{self.delay_ms:g} ms"}[self.action]  # fmt: skip
        return f"{what} {which} {self.direction} segment [{fields}]"


# ---------------------------------------------------------------------------
# The channel: per-direction link model, timeline, outages.
# ---------------------------------------------------------------------------

Probability = Annotated[float, Field(ge=0.0, le=1.0)]


class Reorder(_Strict):
    """Bounded reordering: a frame chosen with ``probability`` leaves after
    1..``max_displacement`` later frames of its direction (uniform), or
    ``timeout_ms`` after its due time if fewer follow."""

    probability: Probability = 0.0
    max_displacement: Annotated[int, Field(ge=1, le=1000)] = 3
    timeout_ms: Annotated[float, Field(ge=0, le=3_600_000)] = 100.0


Checksum = Literal["keep", "recompute"]


class LinkSettings(_Strict):
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


class LinkPatch(_Strict):
    """What a timeline event changes: any subset of LinkSettings."""

    delay_ms: Annotated[float, Field(ge=0, le=86_400_000)] | None = None
    rate_bps: Annotated[float, Field(ge=0, le=100e9)] | None = None
    queue_bytes: Annotated[int, Field(ge=64)] | None = None
    loss: Probability | None = None
    ber: Annotated[float, Field(ge=0, le=0.5)] | None = None
    packet_error: Probability | None = None
    duplicate: Probability | None = None
    reorder: Reorder | None = None
    checksum: Checksum | None = None


class LinkEvent(_Strict):
    t: Annotated[float, Field(ge=0)] = Field(description="scenario time, seconds")
    set: LinkPatch


class Outage(_Strict):
    """The link is down (every frame lost) from ``start`` for ``duration``
    seconds of scenario time."""

    start: Annotated[float, Field(ge=0)]
    duration: Annotated[float, Field(gt=0)]


class DirectionChannel(_Strict):
    link: LinkSettings = Field(default_factory=LinkSettings)
    timeline: list[LinkEvent] = Field(default_factory=list)
    outages: list[Outage] = Field(default_factory=list)

    @model_validator(mode="after")
    def _ordered(self) -> DirectionChannel:
        times = [e.t for e in self.timeline]
        if times != sorted(times):
            raise ValueError("timeline events must be in time order")
        return self


class Channel(_Strict):
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


class LinkProfile(_Strict):
    """A named channel from the literature (``conformance/profiles/``)."""

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


class ExpectedOutcome(_Strict):
    """One terminal outcome: what each side noticed and what was delivered."""

    red_bytes_delivered: Annotated[int, Field(ge=0)]
    green_bytes_delivered: Annotated[int, Field(ge=0)]
    sender_outcome: Outcome
    receiver_outcome: Outcome

    def key(self) -> tuple[int, int, str, str]:
        return (
            self.red_bytes_delivered,
            self.green_bytes_delivered,
            self.sender_outcome,
            self.receiver_outcome,
        )

    def describe(self) -> str:
        return (
            f"red {self.red_bytes_delivered} B, green {self.green_bytes_delivered} B, "
            f"sender {self.sender_outcome}, receiver {self.receiver_outcome}"
        )


class Expectation(_Strict):
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

    @model_validator(mode="before")
    @classmethod
    def _legacy_single(cls, data: object) -> object:
        # Scenario files written before outcome sets held one flat outcome.
        if isinstance(data, dict) and "outcomes" not in data and "sender_outcome" in data:
            return {"outcomes": [data]}
        return data

    @model_validator(mode="after")
    def _distinct(self) -> Expectation:
        self.outcomes = sorted({o.key(): o for o in self.outcomes}.values(), key=_outcome_order)
        return self

    def allows(self, observed: ExpectedOutcome) -> bool:
        return any(o.key() == observed.key() for o in self.outcomes)

    def describe(self) -> str:
        return " | ".join(o.describe() for o in self.outcomes)


def _outcome_order(o: ExpectedOutcome) -> tuple[int, int, str, str]:
    return (-o.red_bytes_delivered, -o.green_bytes_delivered, o.sender_outcome, o.receiver_outcome)


class Origin(_Strict):
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


class Scenario(_Strict):
    schema_: Literal["dtnconform/scenario/1"] = Field(SCENARIO_SCHEMA, alias="schema")
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=120)
    protocol: Protocol
    description: str = ""
    ltp: LtpBlock | None = None
    impairments: list[Impairment] = Field(default_factory=list)
    channel: Channel = Field(default_factory=Channel)
    timers: Timers = Field(default_factory=Timers)
    expect: Expectation
    origin: Origin | None = None
    time_limit_s: Annotated[float, Field(gt=0, le=86400)] | None = Field(
        None,
        description="the longest a run may take before its open sides count as 'timeout' "
        "(default: derived from the channel and the retransmission limits)",
    )

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _protocol_params(self) -> Scenario:
        from conformance.classifiers import vocabulary

        known = vocabulary(self.protocol)
        for i, imp in enumerate(self.impairments):
            from conformance.classifiers import validate_match

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
        if self.protocol == "ltp":
            if self.ltp is None:
                raise ValueError("an LTP scenario needs the 'ltp' block geometry")
            self._ltp_fits_mtu()
            for o in self.expect.outcomes:
                if o.red_bytes_delivered > self.ltp.red_len:
                    raise ValueError("expect: red_bytes_delivered exceeds the red part")
                if o.green_bytes_delivered > self.ltp.green_len:
                    raise ValueError("expect: green_bytes_delivered exceeds the green part")
        return self

    # IPv4 (no options) and UDP headers around each datagram.
    _IP_UDP = 28

    def _ltp_fits_mtu(self) -> None:
        """One data segment plus headers must fit the channel's MTU, or the
        channel sees IP fragments instead of segments and no impairment can
        match them (unless channel.fragment says to run it so)."""
        from conformance.ltp import max_data_header_len

        assert self.ltp is not None
        if self.channel.fragment:
            return
        size = min(self.ltp.segment_size, self.ltp.block_len)
        header = max_data_header_len(self.ltp.block_len, self.ltp.client_service_id)
        total = size + header + self._IP_UDP
        if total > self.channel.mtu:
            room = self.channel.mtu - header - self._IP_UDP
            raise ValueError(
                f"ltp.segment_size: {size} bytes of data + up to {header} of LTP header + "
                f"{self._IP_UDP} of IPv4/UDP is {total} bytes, over channel.mtu "
                f"{self.channel.mtu}: use ltp.segment_size <= {room}, raise channel.mtu, or set "
                "channel.fragment to run it fragmented (impairments cannot see fragments)"
            )


# ---------------------------------------------------------------------------
# What a run observes.
# ---------------------------------------------------------------------------


class SegmentRecord(_Strict):
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


class EndpointResult(_Strict):
    role: Literal["sender", "receiver"]
    outcome: Outcome
    red_bytes_delivered: Annotated[int, Field(ge=0)] = 0
    green_bytes_delivered: Annotated[int, Field(ge=0)] = 0
    payload_ok: bool | None = Field(
        None, description="delivered bytes equal the bytes sent (receiver only)"
    )
    duration_s: float = 0.0
    exit_code: int | None = None
    detail: str = ""
    log: str = Field("", description="path of the endpoint's log, relative to the run directory")


class SegmentCounts(_Strict):
    forward: Annotated[int, Field(ge=0)] = 0
    ret: Annotated[int, Field(ge=0, alias="return")] = 0

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Provenance(_Strict):
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


class RunResult(_Strict):
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

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def outcome(self) -> ExpectedOutcome:
        """What the run observed, in the terms of the scenario's expectation."""
        return ExpectedOutcome(
            red_bytes_delivered=self.receiver.red_bytes_delivered,
            green_bytes_delivered=self.receiver.green_bytes_delivered,
            sender_outcome=self.sender.outcome,
            receiver_outcome=self.receiver.outcome,
        )


class Reason(_Strict):
    """One reason behind a verdict: a code, a sentence, and the rule if any."""

    code: str
    message: str
    rule: str = Field("", description="spec section, e.g. 'RFC 5326 §6.2'")
    frames: list[int] = Field(default_factory=list)


class Verdict(_Strict):
    schema_: Literal["dtnconform/verdict/1"] = Field(VERDICT_SCHEMA, alias="schema")
    scenario: str
    sut: str
    status: VerdictStatus
    reasons: list[Reason] = Field(default_factory=list)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


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
    try:
        return cls.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        # A whole-scenario check names its field at the start of its message.
        named = re.match(r"([A-Za-z_][\w.\[\]]*): (.*)", msg, re.S)
        if named and not where:
            where, msg = named.group(1), named.group(2)
        where = where or "(top level)"
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
