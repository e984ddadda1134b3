"""The protocol registry: the one place that lists the protocols dtnconform
can check, generate, run, certify and validate.

Each ``conformance/protocols/<proto>.py`` defines a :class:`ProtocolSpec`
named ``SPEC``: its scenario parameters, what it delivers, its judge rules,
its dissector and its generator. Generic modules (the CLI, the judge,
segments, the runner, the report, the SUT adapters) reach a protocol only
through :func:`get`; none imports a protocol module by name.

Adding a protocol adds files and one line to :data:`MODULES`
(docs/adding-a-protocol.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from conformance.errors import InputError
from conformance.protocols.base import (
    Delivery,
    Dissector,
    FieldTypes,
    ProtocolParams,
    ProtocolSpec,
    Rule,
)

__all__ = [
    "Delivery",
    "Dissector",
    "FieldTypes",
    "ProtocolParams",
    "ProtocolSpec",
    "Rule",
    "all_specs",
    "get",
    "names",
    "register",
    "unregister",
]

# The registered protocols, by module of this package.
MODULES: tuple[str, ...] = ("cfdp", "ltp")

_SPECS: dict[str, ProtocolSpec] = {}


def _load() -> None:
    if _SPECS:
        return
    for mod in MODULES:
        spec = importlib.import_module(f"conformance.protocols.{mod}").SPEC
        _SPECS[spec.name] = spec


# Called after the registry changes (conformance.types rebuilds its unions).
_ON_CHANGE: list[Callable[[], None]] = []


def on_change(hook: Callable[[], None]) -> None:
    """Call ``hook`` whenever a protocol is registered or unregistered."""
    _ON_CHANGE.append(hook)


def register(spec: ProtocolSpec) -> None:
    """Add a protocol at run time (the test suite's toy protocol does)."""
    _load()
    _SPECS[spec.name] = spec
    for hook in _ON_CHANGE:
        hook()


def unregister(name: str) -> None:
    _SPECS.pop(name, None)
    for hook in _ON_CHANGE:
        hook()


def names() -> list[str]:
    _load()
    return sorted(_SPECS)


def all_specs() -> list[ProtocolSpec]:
    _load()
    return [_SPECS[n] for n in sorted(_SPECS)]


def get(name: str) -> ProtocolSpec:
    _load()
    try:
        return _SPECS[name]
    except KeyError:
        raise InputError(f"unknown protocol {name!r} (registered: {', '.join(names())})") from None
