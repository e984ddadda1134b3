"""The implementations dtnconform can put under test (docs/implementers.md):
each described by an endpoint file, ``suts/<proto>/<impl>/endpoint.toml``
(suts.endpoint), or, where the contract cannot express it, a Python adapter
imported and named in ``ADAPTERS``. Every one is a
:class:`~suts.base.SutAdapter`; generic code finds one by name, or by an
endpoint file's path, here."""

from __future__ import annotations

from pathlib import Path

from conformance.core.errors import InputError
from suts.base import REPO, SutAdapter
from suts.cfdp.cfdppy import CfdpPy
from suts.cfdp.librecube import LibreCube
from suts.cfdp.yamcs import Yamcs
from suts.endpoint import EndpointFile, registered

# Python adapters, each for what an endpoint file cannot say (its README)
ADAPTERS: tuple[type[SutAdapter], ...] = (CfdpPy, LibreCube, Yamcs)
ENDPOINT_FILES: dict[str, Path] = registered(REPO / "suts")
# every registered name, in the order `dtnconform run --help` lists them
REGISTRY: tuple[str, ...] = tuple(sorted([*ENDPOINT_FILES, *(a.name for a in ADAPTERS)]))


def is_path(name: str) -> bool:
    """A ``--sut`` value that names an endpoint file rather than a registered name."""
    return name.endswith(".toml") or "/" in name


def get(name: str) -> SutAdapter:
    """A new adapter of a registered implementation, or of the endpoint
    file at path ``name`` (InputError naming the registered ones). A
    suffix ``[NAME=VALUE,...]`` sets the implementation's options, as
    ``--sut-option`` does: "hdtn[session-number-bits=32]" wherever a name
    is taken (``interop --suts``, a campaign plan's pairs)."""
    if name.endswith("]") and "[" in name:
        base, _, rest = name.partition("[")
        adapter = get(base)
        adapter.set_options([p.strip() for p in rest[:-1].split(",") if p.strip()])
        return adapter
    if is_path(name):
        path = Path(name)
        if not path.is_file():
            raise InputError(f"{name}: no such endpoint file")
        return EndpointFile(path)
    if name in ENDPOINT_FILES:
        return EndpointFile(ENDPOINT_FILES[name])
    for a in ADAPTERS:
        if a.name == name:
            return a()
    raise InputError(
        f"unknown SUT {name!r} (known: {', '.join(REGISTRY)}; or the path of an endpoint file)"
    )
