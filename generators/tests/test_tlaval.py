"""The TLA+ value reader: fixed cases from TLC's printer, and a Hypothesis
round-trip property (parse_value(format_value(v)) == v) over nested values."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generators.tlaval import (
    Function,
    ModelValue,
    Record,
    TlaParseError,
    format_value,
    parse_state,
    parse_value,
    to_json,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("42", 42),
        ("-7", -7),
        ('"RD-CP-EORP"', "RD-CP-EORP"),
        (r'"a\"b\\c\n"', 'a"b\\c\n'),
        ("TRUE", True),
        ("FALSE", False),
        ("<<>>", ()),
        ("<<1, <<2>>>>", (1, (2,))),
        ("{}", frozenset()),
        ("{1, 2, 3}", frozenset({1, 2, 3})),
        ("1..3", frozenset({1, 2, 3})),
        ('[a |-> 1, b |-> "x"]', Record({"a": 1, "b": "x"})),
        ('(1 :> "a" @@ 2 :> "b")', Function({1: "a", 2: "b"})),
        ("s1", ModelValue("s1")),
    ],
)
def test_parse_value_cases(text, value):
    """Each form TLC prints reads into the documented Python value."""
    got = parse_value(text)
    assert got == value
    assert type(got) is type(value)


def test_parse_multiline_record_from_tlc():
    """A record set spread over lines, as TLC prints channel contents."""
    text = """{ [ cp |-> 0,
    type |-> "RD",
    claims |-> {},
    reason |-> "" ],
  [ cp |-> 1,
    type |-> "RD-CP-EORP",
    claims |-> {1},
    reason |-> "" ] }"""
    v = parse_value(text)
    assert Record({"cp": 1, "type": "RD-CP-EORP", "claims": frozenset({1}), "reason": ""}) in v
    assert len(v) == 2


def test_parse_state_block():
    """A trace state's /\\ lines become a dict of variables."""
    state = parse_state('/\\ x = 1\n/\\ s = { "a",\n  "b" }\n/\\ r = [ f |-> <<>> ]\n')
    assert state == {"x": 1, "s": frozenset({"a", "b"}), "r": Record({"f": ()})}


def test_parse_state_single_variable():
    assert parse_state("x = TRUE") == {"x": True}


@pytest.mark.parametrize(
    "text", ["", "[a |-> ]", "<<1, 2", "{1 2}", "1 2", "(1 :> 2 @@)", "[1 |-> 2]"]
)
def test_parse_errors(text):
    with pytest.raises(TlaParseError):
        parse_value(text)


def test_records_are_immutable_and_hashable():
    r = Record({"a": 1})
    assert hash(r) == hash(Record({"a": 1}))
    with pytest.raises(TypeError):
        r["b"] = 2


def test_to_json():
    v = Record({"s": frozenset({2, 1}), "q": (ModelValue("m"), True), "f": Function({1: "x"})})
    assert to_json(v) == {"s": [1, 2], "q": ["m", True], "f": [[1, "x"]]}


# --- Hypothesis round trip -------------------------------------------------

identifiers = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
scalars = st.one_of(
    st.integers(min_value=-(2**31), max_value=2**31 - 1),
    st.text(max_size=8),
    st.booleans(),
    identifiers.map(ModelValue),
)


def _compound(children):
    return st.one_of(
        st.lists(children, max_size=4).map(tuple),
        st.frozensets(children, max_size=4),
        st.dictionaries(identifiers, children, max_size=4).map(Record),
        st.dictionaries(children, children, min_size=1, max_size=3).map(Function),
    )


tla_values = st.recursive(scalars, _compound, max_leaves=12)


@settings(max_examples=300)
@given(tla_values)
def test_round_trip(v):
    """Every value survives format_value then parse_value."""
    assert parse_value(format_value(v)) == v
