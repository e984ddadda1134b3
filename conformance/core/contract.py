"""The parts every protocol fills in: its parameter and delivery types and
its :class:`ProtocolSpec` (registered in :mod:`conformance.protocols`).

This module imports nothing of conformance but errors, so that protocol
modules and :mod:`conformance.core.types` can both build on it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from conformance.core.capabilities import Capabilities
from conformance.core.errors import DtncError, InputError

if TYPE_CHECKING:
    from conformance.core.types import ExpectedOutcome, Scenario


T = TypeVar("T")

# The IPv4 (no options) and UDP headers around each datagram; the bytes an
# Ethernet frame (no FCS: the emulator serializes frames as it reads them
# from AF_PACKET) adds to a UDP datagram besides: Ethernet 14.
IP_UDP = 20 + 8
FRAME_OVERHEAD = 14 + IP_UDP


class Strict(BaseModel):
    """A model that rejects unknown keys (every file type of dtnconform)."""

    model_config = ConfigDict(extra="forbid", frozen=False)


class ProtocolParams(Strict):
    """Base of a protocol's scenario parameters (what one scenario transfers
    and how the endpoints are configured). Each protocol subclasses it in
    ``conformance/protocols/<proto>.py`` with ``protocol: Literal["<proto>"]``;
    a scenario's ``params`` is the union of the registered ones, told apart by
    ``protocol``."""

    protocol: str

    def retx_limit(self) -> int:
        """The retransmission limit the expectation assumes (1 if none)."""
        return 1

    def queued_bytes(self, mtu: int) -> tuple[int, int]:
        """(forward, return) frame bytes one transfer may queue ahead of an
        acknowledged unit; for timers. Default: one full frame each way."""
        return mtu + 14, mtu + 14

    def check(self, scn: Scenario) -> None:
        """Raise ValueError (starting "field: ") when the scenario cannot
        run with these parameters."""

    def grid_span(self, byte: int) -> tuple[int, int] | None:
        """The scenario's own data unit that holds ``byte``, as [start,
        end) (its grid, for which an outcome set is computed); None where
        the protocol has no such grid."""
        return None

    def features(self, role: str | None = None) -> list[str]:
        """What a transfer with these parameters asks of an implementation
        (of the side playing ``role``; None: of either), in the protocol's
        words (docs/implementers.md, "Features"): an endpoint given one it
        lacks exits 127, "not supported"."""
        return []

    def largest_unit(self) -> tuple[int, int, str] | None:
        """The largest datagram a transfer with these parameters sends, as
        (its ``segment_size`` data octets, at most, the protocol's other
        octets around them, the protocol's own words for those): what must
        fit the channel's MTU. None: nothing to check."""
        return None

    def fits(self, mtu: int, fragment: bool) -> None:
        """The largest datagram plus IPv4/UDP must fit the channel's MTU, or
        the channel sees IP fragments instead of units and no impairment can
        match them (unless ``channel.fragment`` says to run it so): a
        ValueError naming ``params.segment_size`` otherwise. One check for
        every protocol, scenarios and campaign plans alike."""
        unit = self.largest_unit()
        if fragment or unit is None:
            return
        data, other, what = unit
        total = data + other + IP_UDP
        if total > mtu:
            raise ValueError(
                f"params.segment_size: {data} bytes of data + up to {other} of {what} + "
                f"{IP_UDP} of IPv4/UDP is {total} bytes, over channel.mtu {mtu}: use "
                f"params.segment_size <= {mtu - other - IP_UDP}, raise channel.mtu, or set "
                "channel.fragment to run it fragmented (impairments cannot see fragments)"
            )


class Delivery(Strict):
    """Base of what a protocol's receiver delivered (bytes, by part). Each
    protocol subclasses it with ``protocol: Literal["<proto>"]`` and its
    counters; the judge compares their ``parts()``."""

    protocol: str

    def parts(self) -> dict[str, int | str]:
        """Counter name -> value, in display order: byte counts, and the
        named parts a protocol's outcome holds besides (CFDP's condition codes)."""
        return {k: v for k, v in self.model_dump().items() if k != "protocol"}

    def agrees(self, other: Delivery) -> bool:
        """Whether facts finer than ``parts()`` agree where both sides know
        them (LTP: the offsets of the green data given); none by default."""
        return True

    def finer(self) -> tuple[str, str]:
        """The finer fact ``agrees`` compares, as (the name the protocol's
        rule table files it under, its value in words); ('', '') if none
        is known."""
        return "", ""

    def total(self) -> int:
        """The bytes delivered: every counter (a protocol with named parts
        says which of its parts count)."""
        return sum(v for v in self.parts().values() if isinstance(v, int))

    def describe(self) -> str:
        return ", ".join(f"{k} {v}" for k, v in self.parts().items())

    @classmethod
    def observed(cls, sender: Delivery | None, receiver: Delivery | None) -> Delivery | None:
        """What a run delivered, from both ends' results: the receiver's
        counters (a protocol whose outcome holds the sender's view too, as
        CFDP's condition codes, overrides this)."""
        return receiver

    def cell(self) -> str:
        """The counters in a table cell: "3000/1000"."""
        return "/".join(str(v) for v in self.parts().values())

    @classmethod
    def labels(cls) -> dict[str, str]:
        """Counter name -> column heading (CLI tables, the report)."""
        return {k: k.replace("_", " ") for k in cls.model_fields if k != "protocol"}


def field_int(value: object) -> int:
    """A unit's numeric field, as records and dissectors give it (an int, or
    its text), read as int() reads it; anything else fails as int() fails."""
    if isinstance(value, int | float | str | bytes | bytearray):
        return int(value)
    raise TypeError(
        "int() argument must be a string, a bytes-like object or a real number, "
        f"not '{type(value).__name__}'"
    )


@dataclass(frozen=True)
class Rule:
    """A rule the judge cites: the spec section and the TLA+ actions behind it."""

    section: str
    text: str
    actions: tuple[str, ...] = ()

    def sections(self) -> list[str]:
        return [s.strip().lstrip("§") for s in self.section.split(",") if s.strip()]

    def cite(self, spec: str) -> str:
        """ "RFC 5326 §6.9, §7.3 (the red part is delivered ...)"."""
        return f"{spec} " + ", ".join(f"§{s}" for s in self.sections()) + f" ({self.text})"

    def tags(self, spec: str) -> list[str]:
        """Robot/report tags: ``RFC5326-6.8`` per section."""
        head = spec.replace(" ", "")
        return [f"{head}-{s}" for s in self.sections()]


@dataclass(frozen=True)
class FieldTypes:
    """How to read a dissector's fields from PDML (by leaf name): anything
    not listed is an integer when it parses as one, else its shown text."""

    bool_fields: frozenset[str] = frozenset()
    str_fields: frozenset[str] = frozenset()
    bytes_fields: frozenset[str] = frozenset()  # read as lowercase hex
    repeated: frozenset[str] = frozenset()  # always a list


@dataclass(frozen=True)
class Dissector:
    """Our Wireshark dissector for the protocol, as tshark loads it."""

    lua: Path
    proto: str  # the Lua Proto's name, the prefix of its fields
    label: str  # the protocol item's text before ", <summary>"
    fields: FieldTypes = FieldTypes()
    # dissector field -> classifier field, where the names differ
    match_renames: dict[str, str] = field(default_factory=dict)
    # the boolean preference that turns session analysis on ("" if none):
    # off when runs are decoded, on (with tshark's second pass) for validate
    analysis_pref: str = ""


@dataclass(frozen=True)
class Quote:
    """A passage of the standard, verbatim: its section, and where it was
    read when not from the standard's own text (an implementation's source
    that quotes a book not reachable here, file:line)."""

    section: str
    text: str
    source: str = ""

    def cite(self) -> str:
        return f"§{self.section}" + (f" ({self.source})" if self.source else "")


@dataclass(frozen=True)
class Reading:
    """A question the protocol's standard leaves open, answered by a model
    constant: ``default`` is the model's first reading, ``alternative`` the
    other (specs/<proto>/readings.json), each with the passages that support
    it. A run is judged under the default first; one that only an
    admissible alternative explains passes, and says so. A ``deviation``
    alternative is one the text forbids (``breaks``: the passage it breaks):
    the model keeps it to name the behaviour, and a run that needs it fails."""

    id: str
    constant: str
    default: bool | int | str
    alternative: bool | int | str
    sections: tuple[str, ...]
    question: str
    default_text: str
    alternative_text: str
    # Model constants outside of which the alternative behaves as the default
    # does (its action can never be enabled): constant -> a value it must
    # have, or ">0". Empty: it can matter everywhere.
    matters_when: tuple[tuple[str, bool | int | str], ...] = ()
    default_quotes: tuple[Quote, ...] = ()
    alternative_quotes: tuple[Quote, ...] = ()
    standing: str = "admissible"  # or "deviation"
    audit: str = ""
    breaks: Quote | None = None
    # The model's unit kinds whose arrival alone the alternative acts on
    # (the constant is read only in actions that take such an arrival):
    # up to a trace line with no such arrival, the alternative explores
    # what the default does. Empty: not declared, it may act anywhere.
    acts_on: tuple[str, ...] = ()
    # The alternative only adds behaviours: its constant is read only where
    # it enables (a guard's disjunct, a larger set of choices), so every
    # behaviour of the model without it is one with it, whatever the other
    # constants. Trace validation then tries the union of such alternatives
    # before their parts: if it rejects a trace, so does each part
    # (tracecheck._validate). Checked by TLC (specs/<proto>/MC*Widens.tla).
    widens: bool = False

    @property
    def deviation(self) -> bool:
        """Does the standard forbid the alternative (it never excuses a run)?"""
        return self.standing == "deviation"

    def matters(self, constants: Mapping[str, object], unbounding: Collection[str] = ()) -> bool:
        """Can the alternative make a difference under these model constants?
        ``unbounding``: constants that bound nothing here, so no condition on
        them rules the alternative out (a trace's loss count, where premature
        timeouts make duplicates with no loss: TraceModel.unbounding)."""
        for name, need in self.matters_when:
            have = constants.get(name)
            if have is None or name in unbounding:
                continue
            if need == ">0" and not (isinstance(have, int) and have > 0):
                return False
            if isinstance(have, (set, frozenset)):
                if need not in have:  # a set-valued constant (CFDP's Modes) holding it
                    return False
            elif need != ">0" and have != need:
                return False
        return True

    def label(self, spec: str) -> str:
        """ "reading 5 (RFC 5326 §6.20, §8.2)"."""
        return f"reading {self.id} ({spec} " + ", ".join(f"§{s}" for s in self.sections) + ")"


def load_readings(path: Path) -> tuple[Reading, ...]:
    """The readings a protocol's model declares (none if no file)."""
    if not path.is_file():
        return ()
    raw = json.loads(path.read_text(encoding="utf-8"))
    return tuple(
        Reading(
            id=str(r["id"]),
            constant=r["constant"],
            default=r["default"],
            alternative=r["alternative"],
            sections=tuple(r["sections"]),
            question=r["question"],
            default_text=r["default_text"],
            alternative_text=r["alternative_text"],
            matters_when=tuple(sorted(r.get("matters_when", {}).items())),
            default_quotes=tuple(_quote(q) for q in r.get("default_quotes", [])),
            alternative_quotes=tuple(_quote(q) for q in r.get("alternative_quotes", [])),
            standing=r.get("standing", "admissible"),
            audit=r.get("audit", ""),
            breaks=_quote(r["breaks"]) if r.get("breaks") else None,
            acts_on=tuple(r.get("acts_on_arrival_of", [])),
            widens=bool(r.get("widens", False)),
        )
        for r in raw["readings"]
    )


def _quote(raw: Mapping[str, str]) -> Quote:
    return Quote(section=raw["section"], text=raw["text"], source=raw.get("source", ""))


@dataclass(frozen=True)
class ProtocolSpec:
    """Everything generic code needs to know about one protocol."""

    name: str
    title: str
    spec: str  # "RFC 5326", "CCSDS 727.0-B-5"
    params: type[ProtocolParams]
    delivery: type[Delivery]
    dissector: Dissector
    # one line for a unit's fields on the report's ladder diagram, and its
    # arrow's colour by the unit's "kind" field
    label: Callable[[Mapping[str, object]], str] = lambda fields: str(fields.get("type", "?"))
    # what a unit's record keeps beside the classifier's fields, decoded from
    # its payload and classifier fields (LTP: a report's claims; CFDP: a
    # NAK's segment requests): name -> value, under our dissector's names
    extras: Callable[[bytes, Mapping[str, object]], dict[str, list[int]]] = lambda payload, fields: {}
    colors: dict[str, str] = field(default_factory=dict)
    # What the protocol provides (conformance/core/capabilities.py): a
    # function, called once when first asked, because the capabilities build
    # on the protocol's types (its module defines both)
    provides: Callable[[], Capabilities] = Capabilities
    unit: str = "segment"  # what one datagram carries: segment, PDU, message
    # The judge's rule table: outcome part -> value the model allows -> rule.
    # Part "" of each is the default; "closed" names the rule a session that
    # closed with no notice breaks.
    rules: dict[str, dict[str, Rule]] = field(default_factory=dict)
    closed_rule: Rule | None = None
    payload_rule: Rule | None = None
    # the rule a sender breaks that tells its user a session other than the
    # one its units carry (LTP's Session Start notice, CFDP's
    # Transaction.indication): judged where its harness reports what it told
    told_rule: Rule | None = None
    # the rule a receiver breaks that tells its user of a data segment no
    # unit it received carried (CFDP's File-Segment-Recv.indication): judged
    # where its harness reports what it told
    segment_told_rule: Rule | None = None
    # the model's readings of the standard's open questions (Reading)
    readings: tuple[Reading, ...] = ()
    # the UDP port runs use when the standard assigns none (wire.json's
    # udp_port otherwise): a convention, said where it comes from
    run_port: int | None = None
    # the client data a unit carries, as (offset, length), or None for a
    # unit that carries none (campaign metrics: data sent, retransmissions)
    data_span: Callable[[Mapping[str, object]], tuple[int, int] | None] = lambda fields: None
    # the scenario parameters of a campaign's transfer of ``size`` bytes
    # (conformance.campaign): the protocol's defaults, then the plan's
    sized: Callable[[int], dict[str, object]] = lambda size: {}
    # The endpoint contract's knobs of one role (docs/implementers.md): name
    # -> value, every setting the model has, from the scenario and its timers;
    # a list is repeated (CFDP's users' requests). An endpoint file passes
    # them as DTNC_<NAME> and {name} in its arguments.
    endpoint_knobs: Callable[[Scenario, str], dict[str, int | str | list[str]]] = lambda scn, role: {}
    # The suite `dtnconform mutate` runs against each mutant (docs/mutation.md):
    # "purposes", the test purposes' scenarios and the robustness probes, or
    # "interop", the interoperability configurations' scenarios (where the
    # purposes are too many to run once per mutant); every role of each
    mutation_suite: Literal["purposes", "interop"] = "purposes"

    def reading(self, rid: str) -> Reading:
        for r in self.readings:
            if r.id == rid:
                return r
        raise InputError(f"{self.name} has no reading {rid!r}")

    def reading_ids(
        self, constants: Mapping[str, object] | None = None, unbounding: Collection[str] = ()
    ) -> list[str]:
        """Every reading to judge under: '' (the defaults), then each
        alternative; with ``constants`` (the model's), only the alternatives
        that can make a difference there (``unbounding``: Reading.matters)."""
        return [
            "",
            *(r.id for r in self.readings if constants is None or r.matters(constants, unbounding)),
        ]

    def acts_on(self, rid: str) -> frozenset[str] | None:
        """The unit kinds on whose arrival alone the alternatives of
        ``rid`` ("2+4") act (Reading.acts_on); None if one of them may act
        anywhere, or for the defaults."""
        kinds: set[str] = set()
        for part in filter(None, rid.split("+")):
            r = self.reading(part)
            if not r.acts_on:
                return None
            kinds |= set(r.acts_on)
        return frozenset(kinds) if kinds else None

    @functools.cached_property
    def widening(self) -> frozenset[str]:
        """The readings whose alternative only adds behaviours (Reading.widens)."""
        return frozenset(r.id for r in self.readings if r.widens)

    def reading_constants(self, rid: str) -> dict[str, bool | int | str]:
        """The model constants of reading ``rid`` ("" = every default; "2+4":
        the alternatives of readings 2 and 4 together)."""
        out = {r.constant: r.default for r in self.readings}
        for part in filter(None, rid.split("+")):
            r = self.reading(part)
            out[r.constant] = r.alternative
        return out

    @functools.cached_property
    def capabilities(self) -> Capabilities:
        return self.provides()

    def need(self, name: str, have: T | None) -> T:
        """``have``, the capability ``name`` of :attr:`capabilities`, or an
        InputError (exit 2) with the reason the protocol gives for lacking it."""
        if have is None:
            why = self.capabilities.missing.get(name, "not built yet")
            raise InputError(f"{self.name}: no {name.replace('_', ' ')}: {why}")
        return have


# The trace model a protocol provides for trace validation (conformance.tracecheck)


class Unrepresentable(DtncError):
    """The trace holds something the model cannot express (the check is
    then 'unchecked', with this as the reason). ``at``: the time (seconds
    since the epoch) from which on the model cannot follow the trace, where
    it is known; the trace before it is still validated, so that a deviation
    there is found (conformance.tracecheck)."""

    def __init__(self, message: str, *, at: float | None = None) -> None:
        super().__init__(message)
        self.at = at


def first_unrepresentable(checks: Sequence[Callable[[], None]]) -> None:
    """Run every check of a trace model on the whole trace and raise what
    the model cannot express first: one with no known start before any
    other (nothing of the trace can then be validated), else the one that
    starts earliest, so that trace validation cuts the trace there (a check
    that needs what comes later would not fire on a prefix)."""
    found: list[Unrepresentable] = []
    for check in checks:
        try:
            check()
        except Unrepresentable as exc:
            found.append(exc)
    if found:
        raise min(found, key=lambda x: (x.at is not None, x.at or 0.0))


@dataclass
class WireEvent:
    kind: str  # send, arrive, lose, exit, end
    t: float  # seconds since the epoch
    dir: str = ""  # forward / return
    actor: str = ""  # sender / receiver / channel
    record: int = -1  # index of the sent segment in the run's records
    side: str = ""  # capture that shows the event: a / b
    frame: int = 0  # its frame number there
    corrupt: bool = False  # an arrival the channel corrupted (its bytes differ)


# A model constant's value as a .cfg file can give it (a set of strings
# written as a TLA+ set: generators.tlc.tla_value).
TlaConstant = int | bool | str | frozenset[str] | set[str]


@dataclass
class TraceModel:
    """What a protocol's ``trace_model`` returns for one session."""

    module: Path  # the trace spec, e.g. specs/ltp/TraceLTP.tla
    constants: dict[str, TlaConstant]
    units: dict[int, Any]  # record index -> the model's unit (a tlaval value)
    actions: list[str]  # the model's action names
    sections: Mapping[str, list[str]]  # action -> spec sections (for the rule)
    # model definitions the trace spec replaces (the .cfg's Def <- TraceDef)
    overrides: Mapping[str, str] = field(default_factory=dict)
    # the actions that cancel a session: its queued emissions may be deleted
    purging: Sequence[str] = ()
    # the model's timer actions: an expiry that emits is taken only where the
    # trace shows its emission among the actor's next sends (TraceCore's
    # SentSoon)
    foreseeable: Sequence[str] = ()
    # the model's actions that emit without consuming and are no timer's (a
    # sender's new data): taken only where the trace needs them (TraceCore's
    # Wanted)
    on_demand: Sequence[str] = ()
    # arrivals processed only where the trace needs it (TraceCore's Needs)
    lazy_arrivals: bool = False
    # record index -> the unit as it arrived corrupted (SegmentRecord
    # corrupted), or None where the model reads the corruption as a loss
    # (a CRC the receiver checks); a corrupted record left out is
    # unrepresentable
    arrived: Mapping[int, Any] = field(default_factory=dict)
    # record index -> the model's units one frame carries, in order, where an
    # implementation's segment spans several of them (ION cuts a block one
    # way, then a retransmission of it another): each event of the record
    # is read as the same event of each of its pieces, at its time
    pieces: Mapping[int, Sequence[Any]] = field(default_factory=dict)
    # a unit in words, for a rejection's message (default: its "type")
    describe: Callable[[Mapping[str, Any]], str] | None = None
    # actor -> the longest its user may hold it suspended, in microseconds:
    # its reaction window is that much longer (TraceCore's Hold)
    hold_us: Mapping[str, int] = field(default_factory=dict)
    # actor -> the earliest and the latest time (seconds since the epoch)
    # its user's resume may come, for an actor whose user may suspend it:
    # TraceCore's HoldEnds, which the protocol's trace module reads
    hold_ends: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    # the actions an actor resumed by its user must go on with (CFDP: the
    # sender's first pass): the trace module rejects a line past the
    # resume's window while one is enabled, and the diagnosis names them
    carries_on: frozenset[str] = frozenset()
    # the outcomes the trace module prints at the trace's end (its
    # EndReport invariant), read from TLC's output: what each endpoint must
    # have reported, judged exactly whatever the run's size. None: the
    # protocol's outcome is judged against the scenario's outcome set.
    end_outcomes: Callable[[str], list[ExpectedOutcome]] | None = None
    # the constants that confine the trace module's behaviours to those in
    # which each side ends as its harness reported (None: the module has
    # none): a run's passes take them, so that a rejection names the line
    # where the model and the implementation's own account part
    observe: Callable[[ExpectedOutcome | None], dict[str, TlaConstant]] | None = None
    # constants the trace sets that bound no behaviour (its loss count,
    # where premature timeouts duplicate with no loss): readings'
    # matters_when conditions on them skip no pass
    unbounding: frozenset[str] = frozenset()
    # a unit's kind, as readings.json's acts_on_arrival_of names it (None:
    # the protocol declares none, and every reading's pass runs)
    unit_kind: Callable[[Any], str] | None = None
