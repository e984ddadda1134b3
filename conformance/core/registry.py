"""The protocol registry: the protocols dtnconform can check, generate,
run, certify and validate, each a :class:`~conformance.core.contract.ProtocolSpec`.

The registry is filled from above: :mod:`conformance.protocols` imports each
protocol's module (one line per protocol), and that module registers its
``SPEC``. Generic code reaches a protocol only through :func:`get`; nothing
in the core imports a protocol, by name or by string.
"""

from __future__ import annotations

from collections.abc import Callable

from conformance.core.contract import ProtocolSpec
from conformance.core.errors import InputError

_SPECS: dict[str, ProtocolSpec] = {}

# Called after the registry changes (conformance.core.types rebuilds its unions).
_ON_CHANGE: list[Callable[[], None]] = []


def on_change(hook: Callable[[], None]) -> None:
    """Call ``hook`` whenever a protocol is registered or unregistered."""
    _ON_CHANGE.append(hook)


def register(spec: ProtocolSpec) -> None:
    """Add a protocol (each protocol module does, and the test suite's toy
    protocol)."""
    _SPECS[spec.name] = spec
    for hook in _ON_CHANGE:
        hook()


def unregister(name: str) -> None:
    _SPECS.pop(name, None)
    for hook in _ON_CHANGE:
        hook()


def names() -> list[str]:
    return sorted(_SPECS)


def all_specs() -> list[ProtocolSpec]:
    return [_SPECS[n] for n in sorted(_SPECS)]


def get(name: str) -> ProtocolSpec:
    try:
        return _SPECS[name]
    except KeyError:
        if not _SPECS:
            raise InputError(
                f"unknown protocol {name!r}: no protocol is registered "
                "(import conformance.protocols first)"
            ) from None
        raise InputError(f"unknown protocol {name!r} (registered: {', '.join(names())})") from None
