"""A protocol's wire facts, read from ``specs/<proto>/wire.json``.

Each protocol's facts (segment or PDU types, codes, reasons, the fields an
impairment may match on, the RFC/CCSDS section of each, and the byte pattern
dtnconform's transfers carry) are written once, in that file. The Rust
channel emulator compiles the same files in, the Lua dissectors' tables are
generated from them (:mod:`dissectors.luagen`), and Python reads them here.
A protocol exists for the wire layer when its folder has a ``wire.json``:
nothing else lists the protocols.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SPECS = Path(__file__).resolve().parents[2] / "specs"
SCHEMA = "dtnconform/wire/1"


class WireFactsError(ValueError):
    """A wire.json file is missing or does not follow the schema."""


def path(protocol: str) -> Path:
    return SPECS / protocol / "wire.json"


@functools.cache
def protocols() -> tuple[str, ...]:
    """Every protocol with a facts file, sorted."""
    return tuple(sorted(p.parent.name for p in SPECS.glob("*/wire.json")))


@functools.cache
def load(protocol: str) -> dict[str, Any]:
    """The parsed facts of ``protocol`` (cached; treat as read-only)."""
    f = path(protocol)
    if not f.is_file():
        known = ", ".join(protocols()) or "none"
        raise WireFactsError(f"no wire facts for {protocol!r} ({f} is missing; known: {known})")
    data: dict[str, Any] = json.loads(f.read_text(encoding="utf-8"))  # JSON: Any inside
    if data.get("schema") != SCHEMA or data.get("protocol") != protocol:
        raise WireFactsError(f"{f}: expected schema {SCHEMA!r} for protocol {protocol!r}")
    return data


@dataclass(frozen=True)
class Code:
    """One entry of a code table (a segment type, a reason code, ...)."""

    code: int
    name: str
    attrs: dict[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self.attrs[key]


@functools.cache
def table(protocol: str, name: str) -> dict[int, Code]:
    """Code table ``name`` of ``protocol``: code -> entry (cached; read-only)."""
    data = load(protocol)
    if name not in data or "entries" not in data[name]:
        raise WireFactsError(f"{path(protocol)} has no code table {name!r}")
    out: dict[int, Code] = {}
    for entry in data[name]["entries"]:
        attrs = {k: v for k, v in entry.items() if k not in ("code", "name")}
        out[int(entry["code"])] = Code(int(entry["code"]), str(entry["name"]), attrs)
    return out


def names(protocol: str, name: str) -> dict[int, str]:
    """Code table ``name`` as code -> name."""
    return {code: entry.name for code, entry in table(protocol, name).items()}


def payload(protocol: str, offset: int, length: int) -> bytes:
    """Bytes [offset, offset + length) of the data dtnconform sends over
    ``protocol``: its wire.json ``payload``, byte i = (i * multiplier +
    increment) mod modulus. The SUT harnesses compute the same bytes from the
    same entry, so a receiver can check what it was given."""
    data = load(protocol)
    if "payload" not in data:
        raise WireFactsError(f"{path(protocol)} has no payload")
    p = data["payload"]
    mul, inc, mod = int(p["multiplier"]), int(p["increment"]), int(p["modulus"])
    return bytes((i * mul + inc) % mod for i in range(offset, offset + length))
