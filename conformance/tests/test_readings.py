"""Every model reading quotes the standard for both of its sides
(specs/<proto>/readings.json), verbatim; a reading whose alternative the
text forbids is a deviation and never excuses a run (issue 29)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conformance.core.contract import ProtocolSpec, Quote
from conformance.protocols.cfdp import SPEC as CFDP
from conformance.protocols.ltp import SPEC as LTP
from dissectors.tests.test_wire_facts import need_text, norm, section_text

# the LTP quotes' documents: RFC 5326 unless the quote names another
RFC_TEXTS = {"": "rfc5326.txt", "RFC 5325": "rfc5325.txt"}


@pytest.mark.parametrize("spec", [LTP, CFDP], ids=lambda s: s.name)
def test_each_side_of_each_reading_is_quoted(spec: ProtocolSpec) -> None:
    """An admissible reading quotes passages for both sides; a deviation
    names the passage its alternative breaks, one its default quotes."""
    assert spec.readings
    for r in spec.readings:
        assert r.default_quotes, (spec.name, r.id)
        assert r.audit, (spec.name, r.id)
        if r.deviation:
            assert r.breaks is not None, (spec.name, r.id)
            assert r.breaks.text in {q.text for q in r.default_quotes}, (spec.name, r.id)
        else:
            assert r.standing == "admissible", (spec.name, r.id, r.standing)
            assert r.alternative_quotes, (spec.name, r.id)


def _document(q: Quote) -> str:
    return next(v for k, v in RFC_TEXTS.items() if k and q.source.startswith(k)) if q.source else ""


def test_the_ltp_quotes_are_the_rfcs_words_in_their_sections() -> None:
    """Each LTP quote is in the section it names (its leading number) of
    the RFC text, word for word (whitespace aside)."""
    checked = 0
    for r in LTP.readings:
        quotes = [*r.default_quotes, *r.alternative_quotes, *([r.breaks] if r.breaks else [])]
        for q in quotes:
            name = _document(q) or RFC_TEXTS[""]
            number = re.match(r"\d+(?:\.\d+)*", q.section)
            assert number is not None, q.section
            text = section_text(need_text(name), number.group(0))
            assert norm(q.text) in text, (r.id, q.section, q.text[:60])
            checked += 1
    assert checked >= 20


def test_the_cfdp_quotes_name_the_source_that_quotes_the_book() -> None:
    """727.0-B-5 is not reachable here: each quote names the
    implementation's file and line it was read from."""
    for r in CFDP.readings:
        for q in (*r.default_quotes, *r.alternative_quotes):
            assert re.search(r"\S+:\d+(-\d+)?$", q.source), (r.id, q.source)


def test_the_audited_deviations_are_the_issues() -> None:
    """LTP 12 (no cancel timer), CFDP 1 and 4 (contrary to 4.7.2 Note 2's
    'regardless') and CFDP 3 (4.6.3.2.2's Check timer) are deviations;
    LTP 2, 4 and 5 and CFDP 2 stay admissible."""
    dev = {(s.name, r.id) for s in (LTP, CFDP) for r in s.readings if r.deviation}
    assert dev == {("ltp", "12"), ("cfdp", "1"), ("cfdp", "3"), ("cfdp", "4")}
    note2 = CFDP.reading("4").breaks
    assert note2 is not None and "regardless of the status of the transaction" in note2.text


def test_a_run_only_a_deviation_explains_fails_quoting_the_rule(tmp_path: Path) -> None:
    """The trace was accepted only under reading 12's alternative (a
    receiver refusing with no cancel timer): not a pass under a reading but
    a fail, quoting §6.15; were the run inconclusive otherwise (its planned
    loss never met), it still fails when the wire showed the deviation (the
    default reading tried on the trace and rejected it)."""
    from conformance.core.types import TraceCheck
    from conformance.judge import judge
    from conformance.tests.test_judge import _log, _result, _scenario

    scn = _scenario([(0, 0, "cancelled", "open")], impairments=[])
    scn.expect.outcomes[0].readings = ["", "2", "12"]
    res = _result(0, 0, "cancelled", "open")
    log = _log(tmp_path, [])
    v = judge(LTP, scn, res, log, [], trace=TraceCheck(status="accepted", reading="12"))
    assert v.status == "fail", v.reasons
    head = v.reasons[0]
    assert head.code == "reading-12-deviation" and head.rule == "RFC 5326 §6.15"
    assert "de-queuing (for transmission) of a Cx segment" in head.message
    assert v.mark == "fail"
    unmet = _scenario(
        [(0, 0, "cancelled", "open")],
        impairments=[{"direction": "forward", "match": {"type": "RD"}, "occurrence": 9}],
    )
    unmet.expect.outcomes[0].readings = ["", "12"]
    shown = TraceCheck(status="accepted", reading="12", default_rejected=True)
    v = judge(LTP, unmet, res, log, [], trace=shown)
    assert v.status == "fail" and v.reasons[0].code == "reading-12-deviation"
    # an admissible reading still passes, marked
    v = judge(LTP, scn, res, log, [], trace=TraceCheck(status="accepted", reading="2"))
    assert v.status == "pass" and v.mark == "pass (reading 2)"


# A definition of a TLA+ module (its name), or a unit that is none (an
# ASSUME, the declarations), each up to the next.
_UNIT = re.compile(
    r"^(?:(?!ASSUME\b|CONSTANTS?\b|VARIABLES?\b)([A-Za-z_]\w*)(?:\([^)]*\))? ==|\w+\b)",
    re.M,
)


def _definitions(text: str) -> dict[str, str]:
    # comments hold the readings' names too: only the code counts
    code = re.sub(r"\(\*.*?\*\)", "", text, flags=re.S)
    code = re.sub(r"\\\*.*", "", code)
    starts = [(m.start(), m.group(1)) for m in _UNIT.finditer(code)]
    ends = [s for s, _ in starts[1:]] + [len(code)]
    return {name: code[s:e] for (s, name), e in zip(starts, ends, strict=True) if name}


@pytest.mark.parametrize("spec", [LTP, CFDP], ids=lambda s: s.name)
def test_a_reading_that_acts_on_arrivals_reads_its_constant_only_there(
    spec: ProtocolSpec,
) -> None:
    """acts_on_arrival_of lets trace validation skip a reading's pass where
    no such unit arrives (tracecheck._validate): each definition of the
    model that reads the constant must be an action that takes an arrival
    (Arrivals) of one of those kinds, tested on the line that reads it or
    as a conjunct of the action (the model and its trace module; the
    model-checking wrappers only fix the constants)."""
    folder = Path(__file__).parents[2] / "specs" / spec.name
    proto = spec.name.upper()
    sources = "\n".join(
        (folder / name).read_text(encoding="utf-8")
        for name in (f"{proto}.tla", f"Trace{proto}.tla")
    )
    declared = [r for r in spec.readings if r.acts_on]
    if spec.name == "cfdp":
        assert {r.id for r in declared} == {"1", "2", "4"}
    for r in declared:
        users = {
            n: b for n, b in _definitions(sources).items() if re.search(rf"\b{r.constant}\b", b)
        }
        assert users, (r.id, r.constant)
        for name, body in users.items():
            assert "Arrivals(" in body, (r.id, name)
            kinds = "|".join(r.acts_on)
            # a guard among the action's outermost conjuncts holds for all of it
            conjuncts = [x for x in body.splitlines() if x.strip().startswith("/\\")]
            outer = min((len(x) - len(x.lstrip()) for x in conjuncts), default=0)
            top = re.search(rf'^ {{{outer}}}/\\ p\.k = "({kinds})"', body, re.M)
            for line in (x for x in body.splitlines() if re.search(rf"\b{r.constant}\b", x)):
                assert top or re.search(rf'p\.k = "({kinds})"', line), (r.id, name, line)


@pytest.mark.parametrize("spec", [LTP, CFDP], ids=lambda s: s.name)
def test_the_widening_readings_are_those_the_model_checks(spec: ProtocolSpec) -> None:
    """``widens`` lets trace validation judge a whole family of tries by
    their union (tracecheck._validate); it holds only because TLC checks
    it: the wrapper's ReadingsWiden instantiates the model with each
    widening constant on, and the bounds that check it are the small
    ``widens`` bound (make test) and each widening reading's own."""
    folder = Path(__file__).parents[2] / "specs" / spec.name
    proto = spec.name.upper()
    declared = {r.constant for r in spec.readings if r.widens}
    wrapper = (folder / f"MC{proto}.tla").read_text(encoding="utf-8")
    checked = set(re.findall(rf"INSTANCE {proto} WITH (\w+) <- TRUE", wrapper))
    assert checked == declared, (checked, declared)
    if not declared:
        return
    assert re.search(r"^ReadingsWiden ==", wrapper, re.M)
    cfgs = [f"MC{proto}_widens.cfg"] + [
        f"MC{proto}_reading{r.id}.cfg" for r in spec.readings if r.widens
    ]
    for cfg in cfgs:
        text = (folder / cfg).read_text(encoding="utf-8")
        assert re.search(r"^PROPERTIES .*\bReadingsWiden\b", text, re.M), cfg
