"""A campaign plan (``dtnconform campaign PLAN``): which implementations
transfer what over which links, how often and in what order.

A plan is YAML or TOML, validated against :class:`Plan` (its JSON schema:
``dtnconform schema campaign-plan``). It expands into runs
(:func:`expand`): every protocol entry's implementation pairs, times every
link, times every size, times the replicates, in the plan's order (given,
or shuffled with the plan's seed, as NMSU randomised its replicates). A
run's key names it for good, so that a resumed campaign knows which runs
are done whatever order they ran in.
"""

from __future__ import annotations

import hashlib
import json
import random
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from conformance import protocols
from conformance.core.contract import ProtocolSpec, Strict
from conformance.core.errors import InputError, first_error
from conformance.core.types import Channel

# What stands for dtnconform's model-driven tester in a pair.
TESTER = "tester"


class Link(Channel):
    """One link of the plan: a channel (a named profile, or inline
    directions, or both) with the name the report uses for it."""

    name: str = Field("", pattern=r"^$|^[a-z0-9][a-z0-9_.-]*$")

    @field_validator("profile")
    @classmethod
    def _profile_known(cls, v: str | None) -> str | None:
        from conformance.channel import profiles

        if v is not None and v not in profiles.names():
            raise ValueError(f"unknown link profile {v!r} (dtnconform profiles lists them)")
        return v

    @property
    def label(self) -> str:
        return self.name or self.profile or "inline"

    def channel(self) -> Channel:
        """The link as a scenario's channel (its name dropped)."""
        data = self.model_dump(mode="json", by_alias=True, exclude={"name"}, exclude_unset=True)
        return Channel.model_validate(data)


class ProtocolEntry(Strict):
    """One protocol of the plan and what runs it."""

    protocol: Literal["ltp", "cfdp"]
    pairs: list[tuple[str, str]] | Literal["all"] = Field(
        description='sender and receiver implementations ("tester" for the model-driven '
        'tester), or "all": every ordered pair of the protocol\'s registered implementations'
    )
    sizes: list[Annotated[int, Field(gt=0, le=1 << 30)]] = Field(
        min_length=1, description="block or file sizes in bytes"
    )
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="scenario parameters over the protocol's campaign defaults "
        "(e.g. segment_size, mode)",
    )

    @field_validator("pairs")
    @classmethod
    def _pairs_known(cls, v: Any) -> Any:
        if v == "all":
            return v
        from suts.registry import REGISTRY, is_path

        for pair in v:
            for name in pair:
                if name.endswith("]") and "[" in name and not is_path(name):
                    from conformance.core.errors import InputError
                    from suts.registry import get

                    try:
                        get(name)  # NAME[OPT=VALUE,...]: its options checked
                    except InputError as exc:
                        raise ValueError(f"{name}: {exc}") from None
                    continue
                if name != TESTER and name not in REGISTRY and not is_path(name):
                    raise ValueError(
                        f"unknown implementation {name!r} (known: {', '.join(REGISTRY)}, {TESTER};"
                        " or the path of an endpoint file)"
                    )
            if pair[0] == pair[1] == TESTER:
                raise ValueError("a pair needs one implementation at least: tester -> tester")
        return v


class Plan(Strict):
    """A campaign plan (README, "Campaigns")."""

    schema_: Literal["dtnconform/campaign-plan/1"] = Field(
        "dtnconform/campaign-plan/1", alias="schema"
    )
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    description: str = ""
    source: str = Field("", description="the study it reproduces, if any")
    protocols: list[ProtocolEntry] = Field(min_length=1)
    links: list[Link] = Field(min_length=1)
    replicates: Annotated[int, Field(ge=1, le=10_000)] = 1
    order: Literal["random", "given"] = Field(
        "random", description="run order: shuffled with seed, or as the plan lists them"
    )
    seed: Annotated[int, Field(ge=0, lt=2**63)] = 0
    timeout_s: Annotated[float, Field(gt=0, le=86_400)] = Field(
        600, description="a run that takes longer is stopped and recorded as an error"
    )

    @cached_property
    def specs(self) -> dict[str, ProtocolSpec]:
        """The plan's protocols, resolved once (the registry validated
        their names when the plan was read): handed to what runs them."""
        return {e.protocol: protocols.get(e.protocol) for e in self.protocols}

    @model_validator(mode="before")
    @classmethod
    def _profile_globs(cls, data: Any) -> Any:
        """A link whose profile has wildcards ("grc-1mbps-*") stands for
        every profile it matches, in name order, each on its own."""
        if not isinstance(data, dict) or not isinstance(data.get("links"), list):
            return data
        from fnmatch import fnmatchcase

        from conformance.channel import profiles

        links: list[Any] = []
        for x in data["links"]:
            pat = x.get("profile") if isinstance(x, dict) else None
            if not isinstance(pat, str) or not any(c in pat for c in "*?["):
                links.append(x)
                continue
            names = [n for n in profiles.names() if fnmatchcase(n, pat)]
            if not names:
                raise ValueError(f"links: profile {pat!r} matches none (dtnconform profiles)")
            links += [{**x, "profile": n, "name": ""} for n in names]
        return {**data, "links": links}

    @model_validator(mode="after")
    def _distinct_links(self) -> Plan:
        labels = [x.label for x in self.links]
        dup = sorted({x for x in labels if labels.count(x) > 1})
        if dup:
            raise ValueError(f"links: two links are called {dup[0]!r}; name them apart")
        return self


def load(path: Path) -> Plan:
    """A plan file, validated; InputError naming the field otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        line = text_line(path.read_bytes(), exc.start)
        raise InputError(
            f"{path}: line {line}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x}); a plan is "
            "YAML or TOML in UTF-8"
        ) from None
    try:
        if path.suffix == ".toml":
            raw = tomllib.loads(text)
        else:
            import yaml

            raw = yaml.safe_load(text)
    except Exception as exc:  # the parsers' own errors, with line numbers
        kind = "TOML" if path.suffix == ".toml" else "YAML"
        raise InputError(f"{path}: not valid {kind}: {exc}") from exc
    if not isinstance(raw, dict):
        raise InputError(f"{path}: a plan is a mapping (schema, name, protocols, links, ...)")
    try:
        return Plan.model_validate(raw)
    except ValidationError as exc:
        raise InputError(f"{path}: {first_error(exc)}") from exc


def text_line(data: bytes, offset: int) -> int:
    """The 1-based line of a byte offset."""
    return data.count(b"\n", 0, offset) + 1


@dataclass(frozen=True)
class RunSpec:
    """One run of a campaign."""

    protocol: str
    sender: str
    receiver: str
    link: str
    size: int
    replicate: int  # 1-based
    entry: int = 0  # the plan's protocols[entry]
    variant: int = 0  # the how-manieth entry of its protocol (0: the first)

    @property
    def key(self) -> str:
        proto = self.protocol + (f"#{self.variant}" if self.variant else "")
        return f"{proto}/{self.sender}>{self.receiver}/{self.link}/{self.size}/r{self.replicate}"

    @property
    def pair(self) -> str:
        return f"{self.sender}>{self.receiver}"

    @property
    def slug(self) -> str:
        """A folder name for the run."""
        return self.key.replace("/", "--").replace(">", "-to-").replace("#", "-v")


def pairs_of(entry: ProtocolEntry) -> list[tuple[str, str]]:
    if isinstance(entry.pairs, list):  # not "all"
        return [(tx, rx) for tx, rx in entry.pairs]
    from suts.registry import REGISTRY, get

    names = [n for n in REGISTRY if get(n).protocol == entry.protocol]
    return [(a, b) for a in names for b in names]


def expand(plan: Plan) -> list[RunSpec]:
    """Every run of the plan, in the order they run."""
    variants = [
        sum(1 for x in plan.protocols[:i] if x.protocol == e.protocol)
        for i, e in enumerate(plan.protocols)
    ]
    runs = [
        RunSpec(e.protocol, tx, rx, link.label, size, r, i, variants[i])
        for i, e in enumerate(plan.protocols)
        for tx, rx in pairs_of(e)
        for link in plan.links
        for size in e.sizes
        for r in range(1, plan.replicates + 1)
    ]
    if plan.order == "random":
        random.Random(plan.seed).shuffle(runs)
    return runs


def link_of(plan: Plan, label: str) -> Link:
    return next(x for x in plan.links if x.label == label)


def params_of(plan: Plan, spec: RunSpec) -> dict[str, Any]:
    """The run's scenario parameters: the protocol's campaign defaults for
    its size, then the plan's."""
    e = plan.protocols[spec.entry]
    return {"protocol": spec.protocol, **plan.specs[spec.protocol].sized(spec.size), **e.params}


def digest(plan: Plan) -> str:
    """What a resumed campaign must match: the plan's runs and settings."""
    text = json.dumps(plan.model_dump(mode="json", by_alias=True), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def describe(runs: Sequence[RunSpec]) -> str:
    pairs = sorted({(r.protocol, r.pair) for r in runs})
    return f"{len(runs)} runs: " + ", ".join(f"{p} {x}" for p, x in pairs)


def _register() -> None:
    from conformance.core.types import SCHEMAS

    SCHEMAS["campaign-plan"] = Plan


_register()
