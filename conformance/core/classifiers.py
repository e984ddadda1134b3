"""The channel emulator's field vocabulary: ``fields`` and ``values`` of each
``specs/<proto>/wire.json``.

The same files are compiled into the Rust emulator, so a scenario validated
here names only fields the emulator's classifiers produce. ``values`` says
what each field can equal, so that a scenario naming a value the classifier
never produces is rejected before it runs: "uint" (0 .. 2^64-1), "bool",
{"min", "max"}, {"one_of": [...]}, {"codes_of": T} (one of the codes of code
table T), {"names": [...]} or {"table": T} (one of the names of code table
T), the last two optionally with "code": a companion
integer field that a rule's number matches (LTP ``type`` and ``type_code``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.core import registry, wire


def protocols() -> list[str]:
    return list(wire.protocols())


def vocabulary(protocol: str) -> dict[str, str]:
    """Field name -> description, for one protocol ({} if it has no classifier)."""
    if protocol not in wire.protocols():
        return {}
    return dict(wire.load(protocol).get("fields", {}))


def default_port(protocol: str) -> int | None:
    """The protocol's UDP port: the standard's (wire.json udp_port), else the
    convention its registry entry names (ProtocolSpec.run_port)."""
    if protocol not in wire.protocols():
        return None
    port = wire.load(protocol).get("udp_port")
    if port is not None:
        return int(port)
    if protocol in registry.names():
        return registry.get(protocol).run_port
    return None


UINT_MAX = 2**64 - 1


def value_spec(protocol: str, key: str) -> str | dict[str, Any] | None:
    """What ``key`` of ``protocol`` can equal (``values`` in its wire.json):
    "uint", "bool", {"min", "max"}, {"one_of"} or {"names"[, "code"]} (a
    {"table"} reference is resolved to the table's names); None when the
    field or the protocol is unknown."""
    if protocol not in wire.protocols():
        return None
    spec: str | dict[str, Any] | None = wire.load(protocol).get("values", {}).get(key)
    if isinstance(spec, dict) and "codes_of" in spec:
        return {"one_of": list(wire.names(protocol, spec["codes_of"]))}
    if isinstance(spec, dict) and "table" in spec:
        ref = spec["table"]
        data = wire.load(protocol)[ref]
        # a code table, or a table of names (LTP's kinds)
        listed = list(wire.names(protocol, ref).values()) if "entries" in data else list(data)
        other = data.get("other")
        if other:  # the name of every code the table does not list
            listed.append(other)
        spec = {"names": listed, **{k: v for k, v in spec.items() if k != "table"}}
    return spec


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


HOLDS = "holds"


def frame_matches(fields: Mapping[str, object], match: Mapping[str, object]) -> bool:
    """The emulator's match (its rules.rs ``matches``) on a frame's
    classified fields: every entry equal; a code field given as a number
    equal to its ``<name>_code`` companion (LTP's ``type`` as "RS" or 8);
    and ``holds: X`` true of a segment whose client data holds byte X
    (offset <= X < offset + length), whatever the segmentation."""
    for key, want in match.items():
        have = fields.get(key)
        if key == HOLDS:
            off, n = fields.get("offset"), fields.get("length")
            if not (isinstance(off, int) and isinstance(n, int) and isinstance(want, int)):
                return False
            if not off <= want < off + n:
                return False
        elif have == want and isinstance(have, bool) == isinstance(want, bool):
            continue
        elif not (
            isinstance(have, str)
            and isinstance(want, int)
            and not isinstance(want, bool)
            and fields.get(f"{key}_code") == want
        ):
            return False
    return True


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
