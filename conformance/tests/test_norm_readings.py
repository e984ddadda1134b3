"""NORM's model readings (specs/norm/readings.json): each quotes RFC 5740
for both sides, word for word in the section it names; its constant is
the model's (specs/norm/NORM.tla), every bound fixes it, and one bound
checks the alternative."""

from __future__ import annotations

import re

from conformance.protocols.norm import SPEC as NORM
from dissectors.tests.test_wire_facts import need_text, norm, section_text
from generators.norm import SPEC_DIR


def test_each_norm_reading_quotes_rfc_5740_for_both_sides() -> None:
    assert NORM.readings
    rfc = need_text("rfc5740.txt")
    for r in NORM.readings:
        assert r.standing == "admissible" and r.audit, r.id
        assert r.default_quotes and r.alternative_quotes, r.id
        for q in (*r.default_quotes, *r.alternative_quotes):
            number = re.match(r"\d+(?:\.\d+)*", q.section)
            assert number is not None and number.group(0) in r.sections, (r.id, q.section)
            assert norm(q.text) in section_text(rfc, number.group(0)), (r.id, q.text[:60])


def test_each_reading_is_a_constant_every_bound_fixes() -> None:
    model = (SPEC_DIR / "NORM.tla").read_text(encoding="utf-8")
    cfgs = {p.stem: p.read_text(encoding="utf-8") for p in SPEC_DIR.glob("MCNORM_*.cfg")}
    assert len(cfgs) >= 9
    for r in NORM.readings:
        assert re.search(rf"^    {r.constant}\b", model, re.MULTILINE), r.constant
        default = "TRUE" if r.default else "FALSE"
        alternative = "TRUE" if r.alternative else "FALSE"
        values = {
            name: re.findall(rf"^    {r.constant} = (\w+)$", t, re.MULTILINE)
            for name, t in cfgs.items()
        }
        assert all(len(v) == 1 for v in values.values()), values
        assert values.pop("MCNORM_readings") == [alternative]
        assert {v[0] for v in values.values()} == {default}
