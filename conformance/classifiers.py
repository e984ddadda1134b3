"""The channel emulator's field vocabulary, read from ``classifiers.json``.

The same file is compiled into the Rust emulator, so a scenario validated
here names only fields the emulator's classifiers produce.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

PATH = Path(__file__).with_name("classifiers.json")


@functools.cache
def _data() -> dict[str, Any]:
    return json.loads(PATH.read_text(encoding="utf-8"))


def protocols() -> list[str]:
    return sorted(_data()["protocols"])


def vocabulary(protocol: str) -> dict[str, str]:
    """Field name -> description, for one protocol ({} if it has no classifier)."""
    entry = _data()["protocols"].get(protocol)
    return dict(entry["fields"]) if entry else {}


def default_port(protocol: str) -> int | None:
    entry = _data()["protocols"].get(protocol)
    return entry.get("udp_port") if entry else None


UINT_MAX = 2**64 - 1


def value_spec(protocol: str, key: str) -> str | dict[str, Any] | None:
    """What ``key`` of ``protocol`` can equal (``values`` in classifiers.json):
    "uint", "bool", {"min", "max"}, {"one_of"} or {"names"[, "code"]}; None
    when the field or the protocol is unknown."""
    entry = _data()["protocols"].get(protocol)
    return entry.get("values", {}).get(key) if entry else None


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return f"a flag ({str(value).lower()})"
    if isinstance(value, int):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, float):
        return f"a fractional number ({value!r})"
    return f"a {type(value).__name__}"


def _int_allowed(spec: str | dict[str, Any], value: int) -> str | None:
    """None when ``value`` fits an integer spec, else what the spec allows."""
    if isinstance(spec, dict) and "one_of" in spec:
        allowed = spec["one_of"]
        return None if value in allowed else "one of " + ", ".join(map(str, allowed))
    lo, hi = (
        (spec.get("min", 0), spec.get("max", UINT_MAX)) if isinstance(spec, dict) else (0, UINT_MAX)
    )
    if lo <= value <= hi:
        return None
    return "0 .. 2^64-1" if (lo, hi) == (0, UINT_MAX) else f"{lo}-{hi}"


def validate_match(protocol: str, key: str, value: object) -> None:
    """Raise ValueError (one sentence, no field path) unless ``value`` is a
    value the emulator's classifier can give field ``key`` of ``protocol``.

    Impairment rules match by equality, so a value of the wrong type (a
    string offset, ``true`` for a number, a number for a flag) or an unknown
    code name would make the rule never fire and the run end 'inconclusive'.
    Booleans never pass as integers. A code-name field with a companion
    ``<name>_code`` field (LTP ``type``) also takes that field's numbers.
    """
    proto = protocol.upper()
    if key not in vocabulary(protocol):
        known = ", ".join(sorted(vocabulary(protocol)))
        raise ValueError(f"unknown {proto} field {key!r} (known: {known})")
    spec = value_spec(protocol, key)
    if spec is None:
        return  # declared without a value type: any value
    if spec == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"{proto} {key} is a flag (true or false), not {_kind(value)}")
        return
    if isinstance(spec, dict) and "names" in spec:
        names: list[str] = spec["names"]
        code = spec.get("code")
        if isinstance(value, str):
            if value in names:
                return
            hint = [n for n in names if n.lower() == value.lower()]
            also = f"; did you mean {hint[0]!r}?" if hint else ""
            numbers = f", or a {code} number" if code else ""
            raise ValueError(
                f"unknown {proto} {key} {value!r} (known: {', '.join(names)}{numbers}){also}"
            )
        if code and isinstance(value, int) and not isinstance(value, bool):
            allowed = _int_allowed(value_spec(protocol, code) or "uint", value)
            if allowed:
                raise ValueError(f"unknown {proto} {key} code {value} ({code} is {allowed})")
            return
        raise ValueError(
            f"{proto} {key} is a name ({', '.join(names)}), not {_kind(value)}"
            + (f"; numbers go by {code}" if code else "")
        )
    # An integer field: "uint", {"min", "max"} or {"one_of"}.
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{proto} {key} is a non-negative integer, not {_kind(value)}")
    allowed = _int_allowed(spec, value)
    if allowed:
        raise ValueError(f"{proto} {key} {value} never occurs ({key} is {allowed})")
