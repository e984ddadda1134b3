"""A pass that needed an alternative model reading is marked as such
wherever a verdict is shown (``pass (reading 5)``), and two implementations
that follow different readings are an interoperability hazard."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from conformance.core.types import RunOutcome, Verdict, mark_readings, mark_status, verdict_mark
from reports.html import (
    cell_mark,
    mark_counts,
    reading_hazard,
    readings_followed,
    render_interop,
)


def test_a_pass_names_the_readings_it_needed() -> None:
    v = Verdict(scenario="s", sut="x", status="pass", readings=["2", "5"])
    assert v.mark == "pass (reading 2, 5)"
    assert mark_status(v.mark) == "pass" and mark_readings(v.mark) == ["2", "5"]
    assert Verdict(scenario="s", sut="x", status="pass").mark == "pass"
    # only a pass is marked: an inconclusive run's readings are in its reasons
    assert verdict_mark("inconclusive", ["5"]) == "inconclusive"
    assert mark_readings("fail") == [] and mark_status("not run") == "not run"


def test_a_cell_is_its_worst_run_and_a_pass_keeps_its_readings() -> None:
    assert cell_mark(["pass", "pass (reading 5)", "pass (reading 12)"]) == "pass (reading 5, 12)"
    assert cell_mark(["pass (reading 5)", "fail"]) == "fail"
    assert cell_mark(["pass", "pass"]) == "pass"
    counts = mark_counts(["fail", "pass (reading 5)", "pass", "pass", "error"])
    assert counts == [
        ("pass", "pass", 2),
        ("pass (reading 5)", "pass", 1),
        ("fail", "fail", 1),
        ("error", "error", 1),
    ]


def test_implementations_that_follow_different_readings_are_a_hazard() -> None:
    cells = {
        ("a", "a"): ["pass (reading 4)", "pass"],
        ("b", "b"): ["pass"],
        ("c", "c"): ["pass", "fail"],
        ("a", "b"): ["pass"],
    }
    followed = readings_followed(cells)
    assert followed == {"a": frozenset({"4"}), "b": frozenset(), "c": frozenset()}
    hazard = reading_hazard(followed, "a", "b")
    assert hazard.startswith("interoperability hazard")
    assert "a follows reading 4's alternative" in hazard
    assert "b follows the default readings" in hazard
    assert reading_hazard(followed, "b", "c") == ""
    assert reading_hazard(followed, "a", "a") == ""
    # an implementation never run with itself follows no known reading
    assert reading_hazard(followed, "a", "tester") == ""


def test_the_interop_matrix_marks_readings_and_hazards(tmp_path: Path) -> None:
    """Each implementation with itself, one pair each way: a's pass under
    reading 4 carries r4 in its cell, and the pairs of a with b (which
    follows the default with itself) are flagged."""
    from conformance.core.capabilities import InteropConfig
    from conformance.protocols.cfdp import SPEC as CFDP

    cfg = InteropConfig(name="class2", params={})
    cells, runs = [], {}
    marks = {("a", "a"): ["4"], ("b", "b"): [], ("a", "b"): [], ("b", "a"): []}
    for (tx, rx), readings in marks.items():
        name = f"{tx}-{rx}"
        cells.append(
            SimpleNamespace(name=name, sender=tx, receiver=rx, config=cfg,
                            scenario=Path(f"{name}.json"), unsupported="")
        )  # fmt: skip
        verdict = Verdict(scenario=name, sut=f"{tx} -> {rx}", status="pass", readings=readings)
        runs[name] = RunOutcome(None, verdict, [], tmp_path / name)
    suts = [SimpleNamespace(name=n, version="1") for n in ("a", "b")]
    page = render_interop(CFDP, suts, [cfg], cells, runs, tmp_path, tmp_path / "log.html")
    html = page.read_text()
    matrix = html[html.index('<table class="matrix">') :]
    matrix = matrix[: matrix.index("</table>")]
    assert matrix.count("<sup>r4</sup>") == 1
    assert matrix.count('class="hazard" title="interoperability hazard') == 2
    assert "a follows reading 4&#39;s alternative, b follows the default readings" in matrix
    assert "1 pass (reading 4)" in html and "3 pass" in html
    assert '<td class="pass">pass (reading 4)</td>' in html
