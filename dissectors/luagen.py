"""Generate a Lua dissector's fact tables from its protocol's ``wire.json``.

The wire facts of a protocol (type codes, flags, reason codes, extension
tags, UDP port, version, ... each with its spec section) are written once, in
``specs/<proto>/wire.json``. The Lua dissector ``dissectors/<proto>/<proto>.lua``
keeps them in one generated block, between the lines::

    -- BEGIN GENERATED from specs/<proto>/wire.json (python -m dissectors.luagen <proto>); do not edit
    -- END GENERATED

Nothing outside that block is touched. Usage::

    python -m dissectors.luagen ltp            rewrite the block of dissectors/ltp/ltp.lua
    python -m dissectors.luagen --check ltp    exit 1 if that block differs from wire.json
    python -m dissectors.luagen [--check]      every protocol that has a Lua dissector

The mapping from JSON to Lua is the same for every protocol (top-level keys
in sorted order, each giving Lua ``local``\\ s named after the key in capitals):

* a code table ``{"section", "entries": [{"code", "name", ...}], ...}`` gives
  ``NAME = {[code] = "name"}`` (a Wireshark value_string), ``NAME_INFO =
  {[code] = {attr = value, ...}}`` when the entries carry more than code and
  name, and ``NAME_<KEY>`` for each other scalar of the table (e.g.
  ``CANCEL_REASONS_RESERVED_FROM``);
* a fact ``{"value": v, "section": ...}`` gives ``NAME = v``; a fact object
  without ``value`` gives ``NAME_<KEY>`` per scalar (``SDNV_MAX_BYTES``);
* an object of objects gives ``NAME = {key = {attr = value, ...}}`` (``KINDS``);
* a scalar gives ``NAME = v`` (``UDP_PORT``);
* every ``section`` (and ``<fact>_section``) becomes a citation such as
  ``"RFC 5326 §3.2.4"``: ``SECTION.<fact>`` for a top-level fact, the
  ``section`` attribute inside an object of objects;
* ``SPEC`` is the spec's name. Prose (``description``, ``meaning``,
  ``nature``, ``note``, ``term``, ``title``), the emulator's field
  vocabulary (``fields``, ``values``) and the test data pattern (``payload``)
  are left out.

Output is deterministic: keys sorted, codes ascending, and Lua that reads the
same under Lua 5.2 (Wireshark 4.0-4.2) and Lua 5.4 (Wireshark 4.4 and later):
plain literals only (no bit operators, no ``//``), integers only where Lua 5.2's
numbers hold them exactly (below 2^53: Lua 5.4 would read a literal of 2^63 or
more as a float), finite floats only (Lua has no literal for inf or nan).
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

from conformance.core import wire

DISSECTORS = Path(__file__).resolve().parent
REPO = DISSECTORS.parent

END = "-- END GENERATED"
_BEGIN_PREFIX = "-- BEGIN GENERATED"

# top-level keys that are not facts for a dissector ("payload" is the test data
# dtnconform sends, not something a dissector decodes)
_SKIP_TOP = frozenset(
    {
        "schema",
        "protocol",
        "title",
        "description",
        "spec",
        "spec_text",
        "fields",
        "values",
        "payload",
    }
)
# prose, kept in wire.json for people (and for the RFC check), left out of the Lua
_PROSE = frozenset({"description", "meaning", "nature", "note", "term", "title"})
_LINE = 119  # a table row longer than this is written one attribute per line
_LUA_KEYWORDS = frozenset(
    {
        "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto",
        "if", "in", "local", "nil", "not", "or", "repeat", "return", "then", "true",
        "until", "while",
    }
)  # fmt: skip
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# integers Lua 5.2's numbers (doubles) hold exactly; Lua 5.4 keeps them integers
_EXACT = 2**53


class LuagenError(Exception):
    """The dissector or its facts cannot be processed (exit status 2)."""


def lua_path(protocol: str) -> Path:
    return DISSECTORS / protocol / f"{protocol}.lua"


def command(protocol: str) -> str:
    return f"python -m dissectors.luagen {protocol}"


def begin_marker(protocol: str) -> str:
    return f"{_BEGIN_PREFIX} from specs/{protocol}/wire.json ({command(protocol)}); do not edit"


def protocols_with_dissector() -> list[str]:
    """Protocols that have both a wire.json and a Lua dissector, sorted."""
    return [p for p in wire.protocols() if lua_path(p).is_file()]


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


# ---------------------------------------------------------------------------
# JSON -> Lua literals
# ---------------------------------------------------------------------------


def _string(s: str) -> str:
    out = []
    for ch in s:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\{ord(ch):03d}")
        else:
            out.append(ch)  # UTF-8 bytes pass through Lua strings unchanged
    return '"' + "".join(out) + '"'


def _scalar(v: Any) -> str:
    if v is None:
        return "nil"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        if not -_EXACT <= v <= _EXACT:
            raise LuagenError(f"{v}: beyond 2^53, not exact in Lua 5.2 (a float in Lua 5.4)")
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise LuagenError(f"{v!r}: Lua has no literal for it")
        return repr(v)
    if isinstance(v, str):
        return _string(v)
    raise LuagenError(f"no Lua literal for {v!r}")


def _key(k: str | int) -> str:
    if isinstance(k, int):
        return f"[{_scalar(k)}]"
    if _IDENT.match(k) and k not in _LUA_KEYWORDS:
        return k
    return f"[{_string(k)}]"


def _name(key: str) -> str:
    """A JSON key as a Lua local's name: capitals, non-word characters as _."""
    name = re.sub(r"\W", "_", key, flags=re.ASCII).upper()
    return f"_{name}" if name[:1].isdigit() else name


def _is_scalar(v: Any) -> bool:
    return v is None or isinstance(v, bool | int | float | str)


def _record(attrs: dict[str, Any], indent: str, key: str) -> list[str]:
    """``key = { a = 1, b = "x" },`` on one line, or one attribute per line."""
    if not attrs:
        return [f"{indent}{key} = {{}},"]
    items = [f"{_key(k)} = {_literal(attrs[k])}" for k in sorted(attrs)]
    line = f"{indent}{key} = {{ {', '.join(items)} }},"
    if len(line) <= _LINE:
        return [line]
    return [f"{indent}{key} = {{", *(f"{indent}    {i}," for i in items), f"{indent}}},"]


def _literal(v: Any) -> str:
    if _is_scalar(v):
        return _scalar(v)
    if isinstance(v, list) and all(_is_scalar(x) for x in v):
        return "{ " + ", ".join(_scalar(x) for x in v) + " }"
    raise LuagenError(f"no Lua literal for {v!r} (nested lists/objects are not generated)")


class _Block:
    def __init__(self, facts: dict[str, Any]) -> None:
        self.spec = str(facts.get("spec", "")).strip()
        self.lines: list[str] = []
        self.sections: dict[str, str] = {}

    def cite(self, section: Any) -> str:
        # a section of another document names it ("RFC 5327 §2.1")
        if str(section).startswith(("RFC ", "CCSDS ", "draft-")):
            return str(section)
        return f"{self.spec} §{section}" if self.spec else f"§{section}"

    def local(self, name: str, value: Any) -> None:
        self.lines.append(f"local {name} = {_literal(value)}")

    def scalars(self, prefix: str, key: str, obj: dict[str, Any], skip: set[str]) -> None:
        """``PREFIX_<K> = v`` for each remaining scalar of ``obj``; its
        ``section`` goes to SECTION[key]."""
        for k in sorted(obj):
            if k in skip or k in _PROSE:
                continue
            v = obj[k]
            if k == "section":
                self.sections[key] = self.cite(v)
            elif _is_scalar(v) or isinstance(v, list):
                self.local(f"{prefix}_{_name(k)}", v)
            else:
                raise LuagenError(f"{key}.{k}: nested objects are not generated")

    def code_table(self, key: str, obj: dict[str, Any]) -> None:
        name = _name(key)
        entries = sorted(obj["entries"], key=lambda e: int(e["code"]))
        codes = [int(e["code"]) for e in entries]
        if len(set(codes)) != len(codes):
            raise LuagenError(f"{key}: duplicate codes")
        self.lines.append(f"local {name} = {{")
        for e in entries:
            self.lines.append(f"    [{_scalar(int(e['code']))}] = {_string(str(e['name']))},")
        self.lines.append("}")
        attrs = [
            {k: v for k, v in e.items() if k not in ("code", "name") and k not in _PROSE}
            for e in entries
        ]
        if any(attrs):
            self.lines.append(f"local {name}_INFO = {{")
            for e, a in zip(entries, attrs, strict=True):
                self.lines.extend(_record(a, "    ", f"[{_scalar(int(e['code']))}]"))
            self.lines.append("}")
        self.scalars(name, key, obj, {"entries"})

    def object_map(self, key: str, obj: dict[str, Any]) -> None:
        self.lines.append(f"local {_name(key)} = {{")
        for k in sorted(obj):
            attrs = {}
            for a, v in obj[k].items():
                if a in _PROSE:
                    continue
                attrs[a] = self.cite(v) if a == "section" else v
            self.lines.extend(_record(attrs, "    ", _key(k)))
        self.lines.append("}")

    def fact(self, key: str, value: Any) -> None:
        name = _name(key)
        if key.endswith("_section"):
            self.sections[key[: -len("_section")]] = self.cite(value)
        elif _is_scalar(value) or isinstance(value, list):
            self.local(name, value)
        elif isinstance(value, dict) and "entries" in value:
            self.code_table(key, value)
        elif isinstance(value, dict) and "value" in value:
            self.local(name, value["value"])
            self.scalars(name, key, value, {"value"})
        elif isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
            self.object_map(key, value)
        elif isinstance(value, dict):
            self.scalars(name, key, value, set())
        else:
            raise LuagenError(f"{key}: cannot generate Lua for {type(value).__name__}")


def generate(facts: dict[str, Any]) -> str:
    """The generated block for ``facts`` (a parsed wire.json), markers included,
    ending with a newline."""
    protocol = str(facts["protocol"])
    block = _Block(facts)
    for key in sorted(facts):
        if key in _SKIP_TOP or key in _PROSE:
            continue
        block.fact(key, facts[key])
    title = str(facts.get("title", protocol))
    head = [begin_marker(protocol), f"-- {title} ({block.spec})" if block.spec else f"-- {title}"]
    head.append(f"local SPEC = {_string(block.spec)}")
    tail = ["local SECTION = {"]
    tail += [f"    {_key(k)} = {_string(v)}," for k, v in sorted(block.sections.items())]
    tail += ["}", END]
    return "\n".join(head + block.lines + tail) + "\n"


# ---------------------------------------------------------------------------
# The block inside the dissector
# ---------------------------------------------------------------------------


def _span(text: str, path: Path, protocol: str) -> tuple[int, int]:
    """Character offsets [start, end) of the generated block (marker lines included)."""
    lines = text.splitlines(keepends=True)
    begins = [i for i, ln in enumerate(lines) if ln.startswith(_BEGIN_PREFIX)]
    ends = [i for i, ln in enumerate(lines) if ln.rstrip("\r\n") == END]
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise LuagenError(
            f"{_rel(path)}: expected one generated block, the lines "
            f"'{begin_marker(protocol)}' ... '{END}' "
            f"(found {len(begins)} BEGIN and {len(ends)} END lines)"
        )
    start = sum(len(ln) for ln in lines[: begins[0]])
    end = sum(len(ln) for ln in lines[: ends[0] + 1])
    return start, end


def render(text: str, facts: dict[str, Any], path: Path | None = None) -> str:
    """``text`` (a dissector's source) with its generated block rewritten."""
    protocol = str(facts["protocol"])
    start, end = _span(text, path or lua_path(protocol), protocol)
    return text[:start] + generate(facts) + text[end:]


def load_facts(protocol: str, wire_file: Path | None = None) -> dict[str, Any]:
    """The facts of ``protocol``: via :mod:`conformance.core.wire`, or from
    ``wire_file`` (an edited copy) with the same schema check."""
    if wire_file is None:
        try:
            return wire.load(protocol)
        except wire.WireFactsError as exc:
            raise LuagenError(str(exc)) from exc
    try:
        data = json.loads(wire_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LuagenError(f"{wire_file}: {exc}") from exc
    if data.get("schema") != wire.SCHEMA or data.get("protocol") != protocol:
        raise LuagenError(f"{wire_file}: expected schema {wire.SCHEMA!r} for {protocol!r}")
    return data


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LuagenError(f"{_rel(path)}: {exc.strerror or exc}") from exc


def check(
    protocol: str,
    *,
    facts: dict[str, Any] | None = None,
    lua: Path | None = None,
    source: str | None = None,
) -> str:
    """'' when the generated block of ``lua`` (default: the protocol's
    dissector) is what ``facts`` (default: its wire.json; ``source`` names
    another origin in the message) give, else a message naming the stale file
    and the command to run, with a diff."""
    facts = load_facts(protocol) if facts is None else facts
    path = lua or lua_path(protocol)
    source = source or f"specs/{protocol}/wire.json"
    text = _read(path)
    start, end = _span(text, path, protocol)
    have, want = text[start:end], generate(facts)
    if have == want:
        return ""
    diff = difflib.unified_diff(
        have.splitlines(),
        want.splitlines(),
        f"{_rel(path)} (generated block)",
        f"from {source}",
        lineterm="",
        n=1,
    )
    return (
        f"{_rel(path)} is stale: its generated block differs from {source}; "
        f"run `{command(protocol)}`\n" + "\n".join(diff)
    )


def write(protocol: str, *, facts: dict[str, Any] | None = None, lua: Path | None = None) -> bool:
    """Rewrite the generated block; True when the file changed."""
    facts = load_facts(protocol) if facts is None else facts
    path = lua or lua_path(protocol)
    text = _read(path)
    new = render(text, facts, path)
    if new == text:
        return False
    path.write_text(new, encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m dissectors.luagen",
        description="Generate the fact tables of dissectors/<proto>/<proto>.lua "
        "from specs/<proto>/wire.json.",
    )
    ap.add_argument(
        "protocol",
        nargs="*",
        help="protocols (default: every protocol with a wire.json and a Lua dissector)",
    )
    ap.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if a block is stale"
    )
    ap.add_argument("--wire", type=Path, help="read the facts from this file (one protocol)")
    ap.add_argument("--lua", type=Path, help="the dissector to check or rewrite (one protocol)")
    args = ap.parse_args(argv)
    protocols = args.protocol or protocols_with_dissector()
    if (args.wire or args.lua) and len(protocols) != 1:
        ap.error("--wire and --lua need exactly one protocol")
    stale = 0
    try:
        for protocol in protocols:
            facts = load_facts(protocol, args.wire)
            path = args.lua or lua_path(protocol)
            if args.check:
                source = str(args.wire) if args.wire else None
                message = check(protocol, facts=facts, lua=path, source=source)
                if message:
                    print(message, file=sys.stderr)
                    stale += 1
                else:
                    print(f"{_rel(path)}: generated block is up to date")
            elif write(protocol, facts=facts, lua=path):
                print(f"{_rel(path)}: generated block rewritten from specs/{protocol}/wire.json")
            else:
                print(f"{_rel(path)}: generated block already up to date")
    except LuagenError as exc:
        print(f"luagen: {exc}", file=sys.stderr)
        return 2
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
