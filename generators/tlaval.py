"""TLA+ values as TLC prints them in traces, read into Python (and back).

=================================  =========================================
TLC prints                         Python value
=================================  =========================================
``42``, ``-1``                     ``int``
``"text"``                         ``str``
``TRUE`` / ``FALSE``               ``bool``
``[a |-> 1, b |-> "x"]``           :class:`Record` (a hashable ``dict``)
``<<1, 2>>``                       ``tuple``
``{1, 2}``, ``1..3``               ``frozenset``
``(1 :> "a" @@ 2 :> "b")``         :class:`Function` (a hashable ``dict``)
``a1`` (a model value)             :class:`ModelValue` (a ``str`` subclass)
=================================  =========================================

Records and functions are hashable so that they can be members of sets, as
they are in TLA+. :func:`parse_value` reads one value; :func:`parse_state`
reads the ``/\\ var = value`` block of one trace state; :func:`format_value`
writes a value back in TLC's syntax (``parse_value(format_value(v)) == v``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

# int | str | bool | Record | tuple | frozenset | Function | ModelValue, nested
# as TLC prints them: what a value holds is known only from the model it
# comes from, so it stays Any to the type checker (TLC output parsing).
TlaValue = Any

_K = TypeVar("_K")
_V = TypeVar("_V")


class TlaParseError(ValueError):
    """The text is not a TLA+ value as TLC prints it."""


class _FrozenDict(dict[_K, _V]):
    """A dict that cannot change after construction, and so can be hashed."""

    # dict declares itself unhashable (__hash__ = None): this one is hashable
    def __hash__(self) -> int:  # type: ignore[override]
        return hash((type(self).__name__, frozenset(self.items())))

    def _immutable(self, *_a: object, **_k: object) -> None:
        raise TypeError(f"{type(self).__name__} is immutable")

    # every mutator raises; their signatures differ from dict's, hence the ignore
    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _immutable  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict.__repr__(self)})"


class Record(_FrozenDict[str, TlaValue]):
    """A TLA+ record ``[field |-> value, ...]``; fields are strings."""


class Function(_FrozenDict[TlaValue, TlaValue]):
    """A TLA+ function printed as ``(k1 :> v1 @@ k2 :> v2)``."""


class ModelValue(str):
    """A TLC model value (an uninterpreted constant such as ``s1``)."""

    def __repr__(self) -> str:
        return f"ModelValue({str.__repr__(self)})"


_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<range>-?\d+\.\.-?\d+)
  | (?P<int>-?\d+)
  | (?P<punct>\|->|<<|>>|:>|@@|[\[\]{}(),])
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    """,
    re.VERBOSE,
)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", '"': '"', "\\": "\\"}


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


def _tokens(text: str) -> Iterator[tuple[str, str, int]]:
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise TlaParseError(f"unexpected character {text[pos]!r} at {pos}")
        kind = m.lastgroup or ""
        if kind != "ws":
            yield kind, m.group(), pos
        pos = m.end()


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = list(_tokens(text))
        self.i = 0
        self.text = text

    def peek(self) -> tuple[str, str, int] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, want: str | None = None) -> tuple[str, str, int]:
        tok = self.peek()
        if tok is None:
            raise TlaParseError(f"unexpected end of value{f', expected {want!r}' if want else ''}")
        if want is not None and tok[1] != want:
            raise TlaParseError(f"expected {want!r} at {tok[2]}, found {tok[1]!r}")
        self.i += 1
        return tok

    def at(self, lexeme: str) -> bool:
        tok = self.peek()
        return tok is not None and tok[1] == lexeme

    def value(self) -> TlaValue:
        kind, lex, pos = self.take()
        if kind == "int":
            return int(lex)
        if kind == "string":
            return _unescape(lex[1:-1])
        if kind == "range":
            lo, _, hi = lex.partition("..")  # the token is "-?\d+..-?\d+"
            return frozenset(range(int(lo), int(hi) + 1))
        if kind == "ident":
            if lex == "TRUE":
                return True
            if lex == "FALSE":
                return False
            return ModelValue(lex)
        if lex == "<<":
            return tuple(self._items(">>"))
        if lex == "{":
            return frozenset(self._items("}"))
        if lex == "[":
            return self._record()
        if lex == "(":
            return self._function()
        raise TlaParseError(f"unexpected {lex!r} at {pos}")

    def _items(self, close: str) -> list[TlaValue]:
        out: list[TlaValue] = []
        if self.at(close):
            self.take()
            return out
        while True:
            out.append(self.value())
            if self.at(close):
                self.take()
                return out
            self.take(",")

    def _record(self) -> Record:
        fields: dict[str, TlaValue] = {}
        if self.at("]"):
            self.take()
            return Record()
        while True:
            kind, name, pos = self.take()
            if kind != "ident":
                raise TlaParseError(f"expected a field name at {pos}, found {name!r}")
            self.take("|->")
            fields[name] = self.value()
            if self.at("]"):
                self.take()
                return Record(fields)
            self.take(",")

    def _function(self) -> Function:
        pairs: dict[TlaValue, TlaValue] = {}
        while True:
            key = self.value()
            self.take(":>")
            pairs[key] = self.value()
            if self.at(")"):
                self.take()
                return Function(pairs)
            self.take("@@")


def parse_value(text: str) -> TlaValue:
    """Parse one TLA+ value printed by TLC; raise TlaParseError if it is not one."""
    p = _Parser(text)
    v = p.value()
    rest = p.peek()
    if rest is not None:
        raise TlaParseError(f"trailing text at {rest[2]}: {text[rest[2] :][:30]!r}")
    return v


_VAR_LINE = re.compile(r"^(?:/\\ )?([A-Za-z_][A-Za-z0-9_]*) = ", re.MULTILINE)


def parse_state(text: str) -> dict[str, TlaValue]:
    """Parse a trace state's ``/\\ name = value`` lines into {name: value}."""
    body = text.strip("\n")
    starts = [m for m in _VAR_LINE.finditer(body) if m.start() == 0 or body[m.start() - 1] == "\n"]
    if not starts:
        return {}
    out: dict[str, TlaValue] = {}
    for m, nxt in zip(starts, [*starts[1:], None], strict=True):
        end = nxt.start() if nxt is not None else len(body)
        out[m.group(1)] = parse_value(body[m.end() : end])
    return out


def _format_string(s: str) -> str:
    out = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"' + out.replace("\t", "\\t").replace("\r", "\\r").replace("\f", "\\f") + '"'


def _sort_key(v: TlaValue) -> tuple[int, str]:
    return (0, f"{v:020d}") if isinstance(v, int) and not isinstance(v, bool) else (1, repr(v))


def format_value(v: TlaValue) -> str:
    """Write a value in TLC's syntax (the inverse of parse_value)."""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, ModelValue):
        return str(v)
    if isinstance(v, str):
        return _format_string(v)
    if isinstance(v, tuple):
        return "<<" + ", ".join(format_value(x) for x in v) + ">>"
    if isinstance(v, frozenset | set):
        return "{" + ", ".join(format_value(x) for x in sorted(v, key=_sort_key)) + "}"
    if isinstance(v, Function):
        if not v:
            raise ValueError("TLC prints no empty function literal")
        return (
            "(" + " @@ ".join(f"{format_value(k)} :> {format_value(x)}" for k, x in v.items()) + ")"
        )
    if isinstance(v, Mapping):
        return "[" + ", ".join(f"{k} |-> {format_value(x)}" for k, x in v.items()) + "]"
    raise TypeError(f"not a TLA+ value: {v!r}")


def to_json(v: TlaValue) -> Any:
    """A JSON-ready copy: sets become sorted lists, tuples lists, functions
    lists of [key, value] pairs."""
    if isinstance(v, bool | int | str):
        return v if not isinstance(v, ModelValue) else str(v)
    if isinstance(v, tuple):
        return [to_json(x) for x in v]
    if isinstance(v, frozenset | set):
        return [to_json(x) for x in sorted(v, key=_sort_key)]
    if isinstance(v, Function):
        return [[to_json(k), to_json(x)] for k, x in v.items()]
    if isinstance(v, Mapping):
        return {k: to_json(x) for k, x in v.items()}
    raise TypeError(f"not a TLA+ value: {v!r}")
