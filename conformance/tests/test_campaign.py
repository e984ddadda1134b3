"""Campaign plans, their expansion and order, the database a killed
campaign resumes from, the figures of a run and the report, without the
network (test_campaign_live.py runs plans/smoke.yaml between namespaces)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.campaign import metrics, plan, report
from conformance.campaign.store import Store
from conformance.core.errors import InputError
from conformance.core.types import Channel
from conformance.protocols.cfdp import SPEC as CFDP

REPO = Path(__file__).resolve().parents[2]


def write_plan(tmp: Path, text: str, name: str = "p.yaml") -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


BASE = """
schema: dtnconform/campaign-plan/1
name: t
protocols:
  - {protocol: ltp, pairs: [[licklider, licklider], [tester, licklider]], sizes: [1000, 8000]}
links:
  - {name: a, forward: {link: {delay_ms: 5}}}
  - {profile: grc-1mbps-25ms-pe0}
replicates: 3
seed: 4
"""


def test_smoke_plan_is_valid_and_small() -> None:
    p = plan.load(REPO / "plans" / "smoke.yaml")
    runs = plan.expand(p)
    assert len(runs) == 8 and len({r.key for r in runs}) == 8
    assert {r.protocol for r in runs} == {"ltp", "cfdp"}


def test_expansion_is_the_cross_product_in_a_seeded_order(tmp_path: Path) -> None:
    p = plan.load(write_plan(tmp_path, BASE))
    runs = plan.expand(p)
    assert len(runs) == 2 * 2 * 2 * 3  # pairs x links x sizes x replicates
    assert len({r.key for r in runs}) == len(runs)
    assert plan.expand(p) == runs  # the same seed, the same order
    other = plan.expand(p.model_copy(update={"seed": 5}))
    assert sorted(r.key for r in other) == sorted(r.key for r in runs) and other != runs
    given = plan.expand(p.model_copy(update={"order": "given"}))
    assert [r.replicate for r in given[:3]] == [1, 2, 3]
    assert {r.link for r in runs} == {"a", "grc-1mbps-25ms-pe0"}


def test_toml_plans_read_as_yaml_ones(tmp_path: Path) -> None:
    toml = """
schema = "dtnconform/campaign-plan/1"
name = "t"
[[protocols]]
protocol = "cfdp"
pairs = [["cfdp-py", "cfdp-rs"]]
sizes = [2048]
params = {mode = "class1"}
[[links]]
name = "x"
"""
    p = plan.load(write_plan(tmp_path, toml, "p.toml"))
    (run,) = plan.expand(p)
    assert plan.params_of(p, run)["mode"] == "class1"
    assert plan.params_of(p, run)["file_len"] == 2048


def test_a_pair_may_name_an_implementation_with_its_options(tmp_path: Path) -> None:
    """NAME[OPT=VALUE,...] in a plan's pairs: the run's --sut carries it."""
    text = BASE.replace(
        "licklider, licklider", '"licklider[report-upper-bound=max-seen]", licklider'
    )
    runs = plan.expand(plan.load(write_plan(tmp_path, text)))
    assert "licklider[report-upper-bound=max-seen]" in {r.sender for r in runs}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            BASE.replace("licklider, licklider", "licklider, nosuch"),
            r"protocols\.0\.pairs: .*nosuch",
        ),
        (
            BASE.replace("licklider, licklider", '"licklider[speed=fast]", licklider'),
            r"protocols\.0\.pairs: licklider\[speed=fast\]: .*report-upper-bound",
        ),
        (BASE.replace("replicates: 3", "replicates: 0"), r"replicates: .*greater than or equal"),
        (BASE.replace("{profile: grc-1mbps-25ms-pe0}", "{name: a}"), r"two links are called 'a'"),
        (BASE.replace("sizes: [1000, 8000]", "sizes: []"), r"sizes: .*at least 1"),
        ("- just\n- a list\n", r"a plan is a mapping"),
        ("name: [unclosed\n", r"not valid YAML"),
    ],
)
def test_bad_plans_name_the_field(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        plan.load(write_plan(tmp_path, text))


def runs_of(tmp: Path) -> tuple[plan.Plan, list[plan.RunSpec]]:
    p = plan.load(write_plan(tmp, BASE))
    return p, plan.expand(p)


def test_store_resumes_cut_runs_and_keeps_finished_ones(tmp_path: Path) -> None:
    p, runs = runs_of(tmp_path)
    db = tmp_path / "c" / "campaign.sqlite"
    db.parent.mkdir()
    st = Store.create(db, p, runs, [1.0] * len(runs))
    st.start(1, "lane 1", tmp_path / "r1")
    st.finish(1, verdict="pass", trace="accepted", metrics={"goodput_bps": 10.0})
    st.start(2, "lane 1", tmp_path / "r2")  # killed here
    st.close()
    st, cut = Store.reopen(db, p)
    assert cut == 1
    assert st.counts() == {"done": 1, "pending": len(runs) - 1}
    (done,) = st.rows("done")
    assert done.seq == 1 and done.metrics == {"goodput_bps": 10.0} and done.attempts == 1
    again = next(r for r in st.rows("pending") if r.seq == 2)
    assert again.attempts == 1  # started once; a second start makes it 2
    st.start(2, "lane 2", tmp_path / "r2")
    assert next(r for r in st.rows("running")).attempts == 2


def test_store_refuses_another_plan(tmp_path: Path) -> None:
    p, runs = runs_of(tmp_path)
    db = tmp_path / "campaign.sqlite"
    Store.create(db, p, runs, [0.0] * len(runs)).close()
    with pytest.raises(InputError, match="ran another plan"):
        Store.reopen(db, p.model_copy(update={"replicates": 2}))
    with pytest.raises(InputError, match="no campaign to resume"):
        Store.reopen(tmp_path / "none" / "campaign.sqlite", p)


def seg(t: float, direction: str, octets: int, **fields: Any) -> str:
    return json.dumps({"time": t, "direction": direction, "length": octets, "fields": fields,
                       "dropped": fields.pop("dropped", False)})  # fmt: skip


def test_figures_of_a_run_with_a_retransmission(tmp_path: Path) -> None:
    # a CFDP transfer of 2000 octets in two File Data PDUs, the second
    # lost once and sent again after the NAK, over 10 ms each way at 1 Mb/s
    fd = {"pdu_type": "file_data"}
    lines = [
        seg(100.000, "forward", 40, pdu_type="file_directive"),
        seg(100.001, "forward", 1010, offset=0, length=1000, **fd),
        seg(100.002, "forward", 1010, offset=1000, length=1000, dropped=True, **fd),
        seg(100.003, "forward", 30, pdu_type="file_directive"),
        seg(100.015, "return", 30, pdu_type="file_directive"),
        seg(100.030, "forward", 1010, offset=1000, length=1000, **fd),
        seg(100.050, "return", 20, pdu_type="file_directive"),
        seg(100.070, "forward", 20, pdu_type="file_directive"),
    ]
    (tmp_path / "segments.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "result.json").write_text(json.dumps({"delivered_bytes": 2000, "duration_s": 1}))
    ch = Channel.model_validate({"forward": {"link": {"delay_ms": 10, "rate_bps": 1e6}},
                                 "return": {"link": {"delay_ms": 10, "rate_bps": 1e6}}})  # fmt: skip
    m = metrics.of_run(tmp_path, CFDP, 2000, ch)
    assert (m.units_forward, m.units_return, m.lost_forward) == (6, 2, 1)
    assert (m.data_units, m.retransmissions) == (3, 1)
    assert m.bytes_forward == 40 + 3 * 1010 + 30 + 20
    assert m.time_to_last_data_s == pytest.approx(0.040)  # sent at +30 ms, 10 ms on the link
    assert m.time_to_close_s == pytest.approx(0.080)
    assert m.physical_minimum_s == pytest.approx(2000 * 8 / 1e6 + 0.010 + 0.020)
    assert m.goodput_bps == pytest.approx(2000 * 8 / 0.080)
    assert m.efficiency == pytest.approx(m.physical_minimum_s / 0.080)


def test_report_of_a_partial_campaign(tmp_path: Path) -> None:
    p, runs = runs_of(tmp_path)
    st = Store.create(tmp_path / "campaign.sqlite", p, runs, [0.5] * len(runs))
    for seq, g in ((1, 1000.0), (2, 1500.0), (3, 1200.0)):
        st.start(seq, "lane 1", tmp_path / "runs" / f"r{seq}")
        st.finish(seq, verdict="pass", trace="accepted",
                  metrics={"goodput_bps": g, "units_forward": 5, "units_return": 1})  # fmt: skip
    path = report.write(st, tmp_path)
    page = path.read_text()
    assert "pass: 3" in page and "goodput.png" in page
    assert (tmp_path / "goodput.png").stat().st_size > 1000
    rows = list((tmp_path / "results.csv").read_text().splitlines())
    assert len(rows) == 1 + len(runs) and rows[0].startswith("seq,key,protocol")
    data = json.loads((tmp_path / "results.json").read_text())
    assert [r["goodput_bps"] for r in data["runs"][:3]] == [1000.0, 1500.0, 1200.0]


def test_interop_matrix_marks_each_pair_by_its_worst_verdict(tmp_path: Path) -> None:
    """Sender rows, receiver columns: a pair with one failed run among passes
    is marked failed, the link it failed on named in the cell's title; a
    pair with runs still to come is marked by those that ran."""
    p, runs = runs_of(tmp_path)
    st = Store.create(tmp_path / "campaign.sqlite", p, runs, [0.5] * len(runs))
    failed = next(r.seq for r in st.rows() if r.spec.sender == "tester")
    for r in st.rows():
        if r.spec.sender == "tester" or r.spec.replicate == 1:
            st.start(r.seq, "lane 1", tmp_path / "runs" / f"r{r.seq}")
            st.finish(r.seq, verdict="fail" if r.seq == failed else "pass", trace="accepted")
    rows = [report.flat(x) for x in st.rows()]
    cells = report.matrices(rows)["ltp"]
    assert set(cells) == {("licklider", "licklider"), ("tester", "licklider")}
    tester = cells[("tester", "licklider")]
    assert tester["status"] == "fail"
    assert tester["counts"] == {"fail": 1, "pass": len(runs) // 2 - 1}
    bad_link = next(r["link"] for r in rows if r["seq"] == failed)
    assert tester["links"][bad_link] == "fail"
    assert set(tester["links"].values()) == {"fail", "pass"}
    own = cells[("licklider", "licklider")]
    assert own["status"] == "pass" and own["counts"]["not run"] > 0
    page = report.write(st, tmp_path).read_text()
    table = page[page.index("id='matrix-ltp'") :]
    table = table[: table.index("</table>")]
    assert table.count("<tr>") == 3  # the header and two senders
    assert "class='fail'" in table and "✘" in table and "✔" in table


def test_a_campaign_counts_and_marks_passes_under_a_reading(tmp_path: Path) -> None:
    """A pass that needed an alternative reading is counted apart, in the
    page, the matrix (a superscript) and results.csv."""
    p, runs = runs_of(tmp_path)
    st = Store.create(tmp_path / "campaign.sqlite", p, runs, [0.5] * len(runs))
    rows = st.rows()
    for r in rows:
        st.start(r.seq, "lane 1", tmp_path / "runs" / f"r{r.seq}")
        mark = "pass (reading 5)" if r.spec.sender == "licklider" else "pass"
        st.finish(r.seq, verdict=mark, trace="accepted")
    flat = [report.flat(x) for x in st.rows()]
    cells = report.matrices(flat)["ltp"]
    own = cells[("licklider", "licklider")]
    assert own["status"] == "pass" and own["label"] == "pass (reading 5)"
    assert own["counts"] == {"pass (reading 5)": len(runs) // 2}
    page = report.write(st, tmp_path).read_text()
    assert f"pass (reading 5): {len(runs) // 2}" in page
    table = page[page.index("id='matrix-ltp'") :]
    assert "<sup>r5</sup>" in table[: table.index("</table>")]
    assert "pass (reading 5)" in (tmp_path / "results.csv").read_text()


def test_eta_fits_a_line_to_the_finished_runs(tmp_path: Path) -> None:
    """Before any run: each run's physical minimum plus the first guess;
    with runs of one minimum only, plus their median overhead; once three
    runs of different minima have finished, the line through them (a run
    of minimum x takes a + b x); over two lanes, half."""
    from dataclasses import replace

    from conformance.campaign.engine import FIRST_OVERHEAD_S, Eta

    p, runs = runs_of(tmp_path)
    st = Store.create(tmp_path / "campaign.sqlite", p, runs, [2.0] * len(runs))
    rows = st.rows()
    eta = Eta(lanes=1)
    assert eta.left(rows[:1]) == pytest.approx(2.0 + FIRST_OVERHEAD_S)

    def ran(r: Any, x: float, wall: float) -> Any:
        return replace(r, phys_min_s=x, started=0.0, finished=wall, verdict="pass")

    eta.learn(ran(rows[0], 2.0, 12.0))
    eta.learn(ran(rows[1], 2.0, 4.0))
    eta.learn(ran(rows[2], 2.0, 6.0))
    assert eta.line() is None  # one minimum: no line
    assert eta.left([rows[3]]) == pytest.approx(2.0 + 4.0)  # median overhead 4 s
    eta = Eta(lanes=1)
    for r, x in zip(rows[:4], (1.0, 2.0, 4.0, 8.0), strict=True):
        eta.learn(ran(r, x, 5.0 + 3.0 * x))
    a, b = eta.line() or (0.0, 0.0)
    assert (a, b) == (pytest.approx(5.0), pytest.approx(3.0))
    todo = [replace(rows[4], phys_min_s=10.0), replace(rows[5], phys_min_s=20.0)]
    assert eta.left(todo) == pytest.approx(35.0 + 65.0)
    two = Eta(lanes=2)
    two.points = list(eta.points)
    assert two.left(todo) == pytest.approx(50.0)
    # faster than the minimum is no run: the slope stays at least 1
    flat = Eta(lanes=1)
    for r, x in zip(rows[:3], (1.0, 5.0, 9.0), strict=True):
        flat.learn(ran(r, x, 20.0))
    line = flat.line()
    assert line is not None and line[1] == pytest.approx(1.0)


def test_builtin_plans_load_and_expand() -> None:
    sizes = {}
    for path in sorted((REPO / "plans").glob("*.yaml")):
        p = plan.load(path)
        runs = plan.expand(p)
        assert len({r.key for r in runs}) == len(runs), path.name
        sizes[path.stem] = len(runs)
    # the NASA Glenn matrix: 36 links x 5 implementations x 10 replicates
    assert sizes["nasa-grc"] == 36 * 5 * 10
    p = plan.load(REPO / "plans" / "nasa-grc.yaml")
    runs = plan.expand(p)
    # two CFDP entries: LibreCube's runs are the second, with its own parameters
    lc = next(r for r in runs if r.sender == "librecube")
    assert lc.key.startswith("cfdp#1/") and plan.params_of(p, lc)["entity_id_len"] == 1
    py = next(r for r in runs if r.sender == "cfdp-py")
    assert py.key.startswith("cfdp/") and "entity_id_len" not in plan.params_of(p, py)


def test_profile_wildcards_and_unknown_profiles(tmp_path: Path) -> None:
    text = BASE.replace("{profile: grc-1mbps-25ms-pe0}", "{profile: 'grc-10mbps-1250ms-*'}")
    p = plan.load(write_plan(tmp_path, text))
    assert [x.label for x in p.links][1:] == [
        f"grc-10mbps-1250ms-pe{e}" for e in ("0", "1e-1", "1e-2", "1e-3", "1e-4", "1e-5")
    ]
    with pytest.raises(InputError, match=r"links\.1\.profile: .*unknown link profile 'nope'"):
        plan.load(write_plan(tmp_path, BASE.replace("grc-1mbps-25ms-pe0", "nope")))
    with pytest.raises(InputError, match=r"matches none"):
        plan.load(write_plan(tmp_path, BASE.replace("grc-1mbps-25ms-pe0", "'x-*'")))


def test_statistics_per_group_and_between_pairs() -> None:
    def row(pair: str, rep: int, g: float) -> dict[str, Any]:
        tx, rx = pair.split(">")
        return {"protocol": "cfdp", "link": "l", "size": 1, "sender": tx, "receiver": rx,
                "replicate": rep, "status": "done", "verdict": "pass", "goodput_bps": g}  # fmt: skip

    a = [100.0, 110.0, 105.0, 95.0]
    b = [200.0, 190.0, 210.0, 205.0]
    rows = [row("x>x", i + 1, g) for i, g in enumerate(a)]
    rows += [row("y>y", i + 1, g) for i, g in enumerate(b)]
    rows.append({**row("y>y", 5, 1.0), "verdict": "error"})  # not counted
    per, between = report.statistics(rows)
    x = next(p for p in per if p["pair"] == "x>x")
    assert x["n"] == 4 and x["mean_bps"] == pytest.approx(102.5)
    assert x["ci95_low"] < 102.5 < x["ci95_high"]
    (d,) = between
    assert d["paired_n"] == 4 and d["mean_diff_bps"] == pytest.approx(102.5 - 201.25)
    assert d["paired_ci95_high"] < 0  # x is slower on every replicate
    assert d["tukey_p"] < 0.001


def test_time_sequence_graph_shades_the_outage(tmp_path: Path) -> None:
    from conformance.campaign import tsg
    from conformance.core.types import Scenario, dump_model

    fd = {"pdu_type": "file_data"}
    lines = [
        seg(100.0, "forward", 1010, offset=0, length=1000, **fd),
        seg(100.1, "forward", 1010, offset=1000, length=1000, dropped=True, **fd),
        seg(100.5, "return", 30, pdu_type="file_directive"),
        seg(100.9, "forward", 1010, offset=1000, length=1000, **fd),
    ]
    (tmp_path / "segments.jsonl").write_text("\n".join(lines) + "\n")
    scn = Scenario.model_validate({
        "name": "g", "protocol": "cfdp",
        "params": {"protocol": "cfdp", "file_len": 2000, "segment_size": 1000},
        "channel": {"forward": {"outages": [{"start": 10, "duration": 20}]}, "time_scale": 100},
        "expect": {"outcomes": [{"sender_outcome": "completed", "receiver_outcome": "completed",
                                 "delivered": {"protocol": "cfdp"}}]},
    })  # fmt: skip
    dump_model(scn, tmp_path / "scenario.json")
    (tmp_path / "channel-clock.json").write_text(json.dumps({"started_ns": int(99.95e9)}))
    assert tsg.plot(CFDP, tmp_path, tmp_path / "g.png") == 1
    assert (tmp_path / "g.png").stat().st_size > 5000
    (tmp_path / "channel-clock.json").unlink()  # no clock: no window to place
    assert tsg.plot(CFDP, tmp_path, tmp_path / "g.png") == 0
    (tmp_path / "segments.jsonl").write_text("")
    assert tsg.plot(CFDP, tmp_path, tmp_path / "h.png") is None


def test_report_renders_in_a_headless_browser(tmp_path: Path) -> None:
    """report.html in real headless Chromium (Debian's chromium-headless-shell,
    make setup): every figure decodes and the tables are there."""
    import re
    import shutil
    import subprocess

    browser = shutil.which("chromium-headless-shell") or shutil.which("chromium")
    assert browser, "no headless Chromium: apt-get install chromium-headless-shell (make setup)"
    p, runs = runs_of(tmp_path)
    st = Store.create(tmp_path / "campaign.sqlite", p, runs, [0.5] * len(runs))
    for seq, pair_g in enumerate([900.0, 1000.0, 1100.0, 2000.0, 2100.0, 1900.0], 1):
        st.start(seq, "lane 1", tmp_path / "runs" / f"r{seq}")
        st.finish(seq, verdict="pass", metrics={"goodput_bps": pair_g, "units_forward": 5,
                                                "units_return": 2, "efficiency": 0.5})  # fmt: skip
    page = report.write(st, tmp_path)
    dom = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files",
         "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    images = re.search(r'data-images="(\d+)"', dom)
    decoded = re.search(r'data-images-ok="(\d+)"', dom)
    assert images and decoded, dom[:500]
    assert int(images.group(1)) >= 4  # goodput, units each way, efficiency
    assert decoded.group(1) == images.group(1)
    assert '<table id="stats">' in dom and '<table id="runs">' in dom
    assert '<table class="matrix" id="matrix-ltp">' in dom


def test_goodput_against_the_error_rate(tmp_path: Path) -> None:
    text = BASE.replace(
        "{name: a, forward: {link: {delay_ms: 5}}}", "{profile: grc-1mbps-25ms-pe1e-2}"
    )
    p = plan.load(write_plan(tmp_path, text))
    runs = plan.expand(p)
    st = Store.create(tmp_path / "campaign.sqlite", p, runs, [0.1] * len(runs))
    for seq, r in enumerate(runs, 1):
        st.start(seq, "lane 1", tmp_path / "runs" / f"r{seq}")
        g = 9e5 if r.link.endswith("pe0") else 4e5
        st.finish(seq, verdict="pass", metrics={"goodput_bps": g + r.replicate})
    made = report._curves([report.flat(x) for x in st.rows()], p, tmp_path)
    assert [n for n, _ in made] == ["goodput-vs-error.png", "goodput-vs-size.png"]
    assert (tmp_path / "goodput-vs-error.png").stat().st_size > 5000
    figs = report._link_figures(p)
    assert figs["grc-1mbps-25ms-pe1e-2"] == (1e6, 25, 1e-2)
