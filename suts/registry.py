"""The implementations dtnconform can put under test: each is imported and
named in ``ADAPTERS`` (docs/implementers.md). Every adapter is a
:class:`~suts.base.SutAdapter`; generic code finds one by name here."""

from __future__ import annotations

from conformance.core.errors import InputError
from suts.base import SutAdapter
from suts.cfdp.cfdppy import CfdpPy
from suts.cfdp.cfdprs import CfdpRs
from suts.cfdp.librecube import LibreCube
from suts.cfdp.yamcs import Yamcs
from suts.ltp.licklider import Licklider

# in the order `dtnconform run --help` lists them
ADAPTERS: tuple[type[SutAdapter], ...] = (Licklider, CfdpPy, CfdpRs, LibreCube, Yamcs)
REGISTRY: dict[str, type[SutAdapter]] = {a.name: a for a in ADAPTERS}


def get(name: str) -> SutAdapter:
    """A new adapter of a registered implementation (InputError naming them)."""
    if name not in REGISTRY:
        raise InputError(f"unknown SUT {name!r} (known: {', '.join(REGISTRY)})")
    return REGISTRY[name]()
