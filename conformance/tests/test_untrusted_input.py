"""Untrusted input and honest exits (issue 27): a path is data, never code;
a command that judged nothing never exits 0; bad input is refused before any
work and never blamed on an implementation; a full or read-only disk, a
folder in use, a garbage file each end with one line and exit 2.

Robot Framework is run for real on suites our generators write, with a
resource whose keywords record the arguments they receive, so what Robot
reads back is compared with what was meant. Commands run as subprocesses
of the installed ``dtnconform``. The disk-full and read-only cases mount a
small tmpfs (root only; skipped otherwise, with why).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance import certify, interop
from conformance.certify import Case, RobotRun, no_verdicts, run_robot
from conformance.core.errors import InputError, NotRun
from conformance.core.types import Reason, Verdict, dump_model
from conformance.protocols.cfdp import SPEC as CFDP
from conformance.protocols.ltp import SPEC as LTP
from conformance.robot.suitefile import cell
from generators.cfdp.interop import CONFIGS as CFDP_CONFIGS
from suts.registry import get

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".venv" / "bin" / "dtnconform"
CLI = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "conformance.cli"]
FINDINGS = ROOT / "reports" / "findings"
LTP_SCENARIO = FINDINGS / "ltp" / "scenarios" / "ltp-two-reports-lost.json"
CFDP_SCENARIO = FINDINGS / "cfdp" / "scenarios" / "cfdp-c2-a1n1k1-l3-ackeof.1.json"
IS_ROOT = os.geteuid() == 0

# Folder names someone else may choose: Robot's variables (``${{…}}`` runs
# Python), environment variables, cell separators, a comment sign, an
# escape, named-argument syntax, non-ASCII.
NASTY = [
    "x${{__import__('os').system('touch PWNED')}}",
    "%{HOME}",
    "two  spaces",
    "a\ttab",
    "#hash",
    " lead and trail ",
    "näö ☃",
    "scenario=x",
    "back\\slash",
    "@{list}&{dict}",
]


def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT, check=False
    )


def one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exit 2, one stderr line naming every needle, no traceback."""
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2, (proc.returncode, proc.stderr, proc.stdout[-2000:])
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


# ---------------------------------------------------------------------------
# 1. Values written into a generated Robot suite are read back as written
# ---------------------------------------------------------------------------

RECORDER = """
import json

class Recorder:
    ROBOT_LIBRARY_SCOPE = "GLOBAL"

    def __init__(self, where):
        self.where = where

    def record(self, *args):
        with open(self.where, "a", encoding="utf-8") as f:
            f.write(json.dumps(list(args)) + "\\n")
"""


def _recording_resource(tmp_path: Path) -> tuple[Path, Path]:
    """A resource with the generated suites' keywords, each recording its
    arguments into a JSON-lines file (returned with the resource)."""
    lib = tmp_path / "Recorder.py"
    lib.write_text(RECORDER, encoding="utf-8")
    got = tmp_path / "got.jsonl"
    res = tmp_path / "recording.resource"
    res.write_text(
        "\n".join(
            [
                "*** Settings ***",
                f"Library    {cell(str(lib))}    {cell(str(got))}",
                "",
                "*** Keywords ***",
                "Scenario Should Pass",
                "    [Arguments]    ${scenario}    ${tester}=none    ${run}=${EMPTY}",
                "    Record    ${scenario}    ${tester}    ${run}    ${RUNS_DIR}",
                "",
                "Interop Should Pass",
                "    [Arguments]    ${scenario}    ${sender}    ${receiver}    ${run}"
                "    ${unsupported}=${EMPTY}",
                "    Record    ${scenario}    ${sender}    ${receiver}    ${run}    ${unsupported}"
                "    ${RUNS_DIR}",
                "",
            ]
        ),
        encoding="utf-8",
    )
    return res, got


@pytest.fixture
def nasty_scenarios(tmp_path: Path) -> Iterator[list[Path]]:
    """A real scenario file copied under each nasty folder name; the test
    runs in tmp_path, so a ``touch PWNED`` that ran would show there."""
    paths = []
    for i, name in enumerate(NASTY):
        folder = tmp_path / "s" / name
        folder.mkdir(parents=True)
        path = folder / f"s{i}.json"
        data = json.loads(LTP_SCENARIO.read_text())
        data["name"] = f"case-{i}"
        path.write_text(json.dumps(data), encoding="utf-8")
        paths.append(path)
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield paths
    finally:
        os.chdir(old)


@pytest.mark.parametrize("lanes", [1, 2])
def test_certification_suite_reads_paths_back_as_written(
    tmp_path: Path, nasty_scenarios: list[Path], lanes: int
) -> None:
    """certify's suite, under Robot alone and under pabot: each scenario
    path (and the runs folder, a command-line variable) arrives as itself,
    and ``${{…}}`` in a folder name runs nothing."""
    res, got = _recording_resource(tmp_path)
    suite = tmp_path / "suite.robot"
    cases = [Case(p, "sender" if i % 2 else None) for i, p in enumerate(nasty_scenarios)]
    certify.write_suite(LTP, cases, suite, resource=res)
    runs_dir = tmp_path / "runs ${{1+1}}  two"
    robot = run_robot(suite, tmp_path, [f"RUNS_DIR:{runs_dir}"], len(cases), None, lanes)
    assert robot.rc == 0, (tmp_path / certify.CONSOLE).read_text()
    rows = sorted(json.loads(ln) for ln in got.read_text(encoding="utf-8").splitlines())
    want = sorted([str(c.path.resolve()), c.tester or "none", c.name, str(runs_dir)] for c in cases)
    assert rows == want
    assert not (tmp_path / "PWNED").exists()


def test_random_values_read_back_as_written(tmp_path: Path) -> None:
    """300 seeded random strings over Robot's special characters (and
    control characters, non-ASCII), each as one cell of one keyword call."""
    import random

    rng = random.Random(27)
    alphabet = list("${}@&%=#\\|[] \t\n\r\x01\x7fab=é☃") + ["${{", "%{", "  ", "..."]
    values = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(300)]
    res, got = _recording_resource(tmp_path)
    suite = tmp_path / "suite.robot"
    lines = ["*** Settings ***", f"Resource    {cell(str(res))}", "", "*** Test Cases ***"]
    lines += [f"T{i}\n    Record    {cell(v)}" for i, v in enumerate(values)]
    suite.write_text("\n".join(lines) + "\n", encoding="utf-8")
    robot = run_robot(suite, tmp_path, [], len(values), None)
    assert robot.rc == 0, (tmp_path / certify.CONSOLE).read_text()[-3000:]
    rows = [json.loads(ln)[0] for ln in got.read_text(encoding="utf-8").splitlines()]
    assert rows == values


def test_interop_suite_reads_paths_and_reasons_back(
    tmp_path: Path, nasty_scenarios: list[Path]
) -> None:
    """interop's suite: paths, and an adapter's reason with quotes and
    ``${{…}}`` in it (Skip If takes it as a value, never as Python text)."""
    res, got = _recording_resource(tmp_path)
    suite = tmp_path / "suite.robot"
    cfg = CFDP_CONFIGS[0]
    cells = [
        interop.Cell(cfg, p, "cfdp-py", "cfdp-rs", "" if i else 'no "${{1/0}}" here  ok')
        for i, p in enumerate(nasty_scenarios)
    ]
    interop.write_suite("cfdp", cells, suite, resource=res)
    robot = run_robot(suite, tmp_path, [f"RUNS_DIR:{tmp_path}"], len(cells), None)
    assert robot.rc == 0, (tmp_path / certify.CONSOLE).read_text()
    rows = sorted(json.loads(ln) for ln in got.read_text(encoding="utf-8").splitlines())
    want = sorted(
        [str(c.scenario.resolve()), c.sender, c.receiver, c.name, c.unsupported, str(tmp_path)]
        for c in cells
    )
    assert rows == want
    assert not (tmp_path / "PWNED").exists()


def test_the_real_resource_skips_an_unsupported_cell_by_its_reason(tmp_path: Path) -> None:
    """res_dtnconform.robot's Skip If with a reason full of quotes: the
    cell is skipped with the reason as its message, and nothing runs."""
    cfg = CFDP_CONFIGS[0]
    why = "cfdp-rs: \"quoted\" ${{__import__('os').system('touch PWNED')}}"
    cells = [interop.Cell(cfg, CFDP_SCENARIO, "cfdp-py", "cfdp-rs", why)]
    suite = tmp_path / "suite.robot"
    interop.write_suite("cfdp", cells, suite)
    with contextlib.chdir(tmp_path):
        robot = run_robot(suite, tmp_path, [f"RUNS_DIR:{tmp_path / 'runs'}"], 1, None)
    from robot.api import ExecutionResult

    test = next(iter(ExecutionResult(str(robot.dir / "output.xml")).suite.all_tests))
    assert test.status == "SKIP" and test.message == f"not supported: {why}"
    assert not (tmp_path / "PWNED").exists() and not (tmp_path / "runs").exists()


# ---------------------------------------------------------------------------
# 2. Nothing judged is never exit 0
# ---------------------------------------------------------------------------


def _certification(tmp_path: Path) -> Path:
    """A certification folder whose generation finished: one scenario."""
    out = tmp_path / "cert"
    (out / "scenarios").mkdir(parents=True)
    shutil.copy(LTP_SCENARIO, out / "scenarios" / LTP_SCENARIO.name)
    (out / "scenarios" / certify.GENERATED).write_text("{}")
    return out


def test_only_matching_no_case_is_refused_before_any_run(tmp_path: Path) -> None:
    out = _certification(tmp_path)
    with pytest.raises(InputError, match=r"--only zzzz: no case's name holds it.*ltp-two-reports"):
        certify.certify(LTP, get("licklider"), out, only="zzzz", sut_roles=["both"])
    assert not (out / "runs").exists() and not (out / "robot").exists()


def test_resume_with_every_case_judged_has_nothing_to_resume(tmp_path: Path) -> None:
    out = _certification(tmp_path)
    run = out / "runs" / "ltp-two-reports-lost"
    run.mkdir(parents=True)
    dump_model(Verdict(scenario="ltp-two-reports-lost", sut="licklider 0.1.1", status="fail",
                       reasons=[Reason(code="x", message="y")]), run / "verdict.json")  # fmt: skip
    with pytest.raises(NotRun, match="nothing to resume: each of its 1 cases has a verdict"):
        certify.certify(LTP, get("licklider"), out, sut_roles=["both"], resume=True)
    assert (out / "report.html").is_file()  # the report still covers them


def test_a_row_robot_cannot_read_is_a_case_with_no_verdict(tmp_path: Path) -> None:
    """What an unescaped path with two spaces did: Robot reads four
    arguments where the keyword takes three, fails the test without running
    the keyword, and returns 1 as for a failed verdict. The case has no
    verdict, and that is what is reported, with Robot's own words."""
    suite = tmp_path / "suite.robot"
    certify.write_suite(LTP, [Case(LTP_SCENARIO, None)], suite)
    text = suite.read_text().replace(cell(str(LTP_SCENARIO)), str(LTP_SCENARIO) + "    two")
    suite.write_text(text)
    runs = tmp_path / "runs"
    robot = run_robot(suite, tmp_path, [f"RUNS_DIR:{runs}"], 1, None)
    assert robot.rc == 1 and not robot.broken
    missing = no_verdicts(["ltp-two-reports-lost"], runs, robot, tmp_path / certify.CONSOLE)
    assert list(missing) == ["ltp-two-reports-lost"]
    assert "expected 1 to 3 arguments, got 4" in missing["ltp-two-reports-lost"]
    with pytest.raises(NotRun, match="1 of 1 cases ran to no verdict"):
        certify.raise_if_unrun(missing, 1, robot, tmp_path / certify.CONSOLE)


def test_robot_failing_as_a_tool_is_exit_2(tmp_path: Path) -> None:
    suite = tmp_path / "suite.robot"
    suite.write_text("*** Test Cases ***\n")  # no test at all: Robot's exit 252
    robot = run_robot(suite, tmp_path, [], 0, None)
    assert robot.rc == 252 and robot.broken
    with pytest.raises(NotRun, match="Robot Framework failed"):
        certify.raise_if_unrun({}, 0, robot, tmp_path / certify.CONSOLE)
    assert not RobotRun(tmp_path, 1).broken  # one failed test is a verdict, not a broken tool


def test_interop_only_matching_no_cell_is_refused_before_tlc(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--only zzzz: no cell's name"):
        interop.interop(CFDP, ["cfdp-py"], tmp_path / "i", only="zzzz")
    assert not (tmp_path / "i" / "tlc").exists()


# ---------------------------------------------------------------------------
# 3. Bad input is refused before any work, naming the field
# ---------------------------------------------------------------------------


def test_cfdp_segment_over_the_mtu_is_bad_input_not_a_fail(tmp_path: Path) -> None:
    """A File Data PDU over the MTU would go out as IP fragments that no
    planned loss can match: refused like LTP's, naming the field."""
    data = json.loads(CFDP_SCENARIO.read_text())
    data["params"]["segment_size"] = 4000  # over its file: one PDU of the whole file
    path = tmp_path / "big.json"
    path.write_text(json.dumps(data))
    proc = run_cli("run", str(path), "--sut", "cfdp-py", "--out", str(tmp_path / "r"))
    one_line_error(proc, "params.segment_size", "over channel.mtu 1500", "<= ")
    assert not (tmp_path / "r").exists()


PLAN = """schema: dtnconform/campaign-plan/1
name: bigseg
protocols:
  - protocol: ltp
    pairs: [[licklider, licklider]]
    sizes: [4000]
    params: {segment_size: 4000}
links:
  - {name: lan, forward: {link: {delay_ms: 5}}, return: {link: {delay_ms: 5}}}
"""


def test_a_plan_over_the_mtu_is_refused_before_its_folder(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    out = tmp_path / "campaign"
    proc = run_cli("campaign", str(plan), "--out", str(out))
    one_line_error(proc, str(plan), "protocols[0] (ltp), link lan, size 4000",
                   "params.segment_size")  # fmt: skip
    assert not out.exists()


def test_a_plan_that_is_not_utf8(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_bytes(PLAN.encode().replace(b"bigseg", b"big\xffseg"))
    one_line_error(run_cli("campaign", str(plan)), str(plan), "line 2", "not UTF-8")


def test_a_scenario_nested_100000_deep(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    one_line_error(run_cli("run", str(path), "--sut", "licklider"), str(path), "nested too deeply")


def test_an_option_value_the_sut_does_not_take(tmp_path: Path) -> None:
    """Refused before namespaces (run) or minutes of TLC (certify)."""
    for argv in (
        ["run", str(LTP_SCENARIO), "--sut", "licklider"],
        ["certify", "ltp", "--out", str(tmp_path / "c")],
    ):
        proc = run_cli(*argv, "--sut-option", "report-upper-bound=x", timeout=60)
        one_line_error(proc, "report-upper-bound=x", "cp-end or max-seen")
    assert not (tmp_path / "c").exists()


def test_trace_judge_of_a_garbage_capture(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(ROOT / "conformance" / "tests" / "data" / "ltp-refused-first-cr-lost", run)
    (run / "channel.jsonl").write_text("")
    (run / "a.pcap").write_bytes(b"not a capture at all")
    proc = run_cli("validate-trace", str(run), "--judge")
    one_line_error(proc, str(run / "a.pcap"), "not a capture file")
    assert not (run / "verdict.previous.json").exists()


# ---------------------------------------------------------------------------
# 4. Resources: a folder in use, a full disk, a read-only one
# ---------------------------------------------------------------------------


def test_a_folder_in_use_is_refused_naming_its_holder(tmp_path: Path) -> None:
    """Another dtnconform holds the folder (its flock, taken here as a
    running command takes it): a second command stops with exit 2, --force
    or not, before any work."""
    out = tmp_path / "busy"
    out.mkdir()
    (out / "something").write_text("")
    fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        for force in ([], ["--force"]):
            proc = run_cli("generate", "ltp", "--out", str(out), "--no-catalogue", *force)
            one_line_error(proc, str(out), "in use by another dtnconform", f"pid {os.getpid()}")
    finally:
        os.close(fd)
    assert sorted(p.name for p in out.iterdir()) == ["something"]


@contextlib.contextmanager
def _tmpfs(where: Path, size: str, *, ro: bool = False) -> Iterator[Path]:
    where.mkdir()
    opts = f"size={size}" + (",ro" if ro else "")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(where)],
                          capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


needs_mount = pytest.mark.skipif(not IS_ROOT, reason="mounting a small tmpfs needs root")


@needs_mount
def test_check_out_on_a_read_only_file_system(tmp_path: Path) -> None:
    with _tmpfs(tmp_path / "ro", "1m", ro=True) as ro:
        proc = run_cli("check", "ltp", "--out", str(ro / "x"))
        one_line_error(proc, str(ro / "x"), "cannot create it")


@needs_mount
def test_expect_write_on_a_read_only_file_system(tmp_path: Path) -> None:
    with _tmpfs(tmp_path / "ro", "1m") as ro:
        shutil.copy(LTP_SCENARIO, ro / "s.json")
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
        proc = run_cli("expect", str(ro / "s.json"), "--write", timeout=60)
        one_line_error(proc, str(ro / "s.json"), "--write")
        assert "outcomes the model allows" not in proc.stdout  # refused before TLC


@needs_mount
def test_a_disk_that_fills_during_check(tmp_path: Path) -> None:
    """TLC's state files and log on a 200 KB file system: one line, exit 2."""
    with _tmpfs(tmp_path / "small", "200k") as small:
        proc = run_cli("check", "ltp", "--out", str(small / "x"))
        line = one_line_error(proc)
        assert "No space left on device" in line or "disk" in line, line


@needs_mount
def test_a_campaign_database_on_a_full_disk(tmp_path: Path) -> None:
    """The campaign's folder fills while its scenarios are written: one
    line, exit 2, and the half-made campaign is removed."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN.replace("params: {segment_size: 4000}", "params: {}"))
    with _tmpfs(tmp_path / "small", "40k") as small:
        out = small / "campaign"
        proc = run_cli("campaign", str(plan), "--out", str(out), "--replicates", "1")
        line = one_line_error(proc)
        assert "No space left on device" in line or "disk is full" in line, line
        assert not out.exists()


HARNESS = ROOT / "suts" / "ltp" / "licklider" / "harness" / "target" / "release" / "dtnc-licklider"
needs_live = pytest.mark.skipif(
    not (IS_ROOT and HARNESS.exists() and shutil.which("tcpdump")),
    reason="a live run needs root, tcpdump and the licklider harness (make setup)",
)


@needs_live
def test_a_disk_that_fills_during_a_run(tmp_path: Path) -> None:
    """The run's captures and logs fill a 60 KB file system: one line
    naming the folder, exit 2, no verdict at all (never one that reads as
    pass), and no namespace left."""
    with _tmpfs(tmp_path / "small", "60k") as small:
        out = small / "run"
        proc = run_cli("run", str(LTP_SCENARIO), "--sut", "licklider", "--out", str(out))
        one_line_error(proc, str(out), "No space left on device")
        assert not (out / "verdict.json").exists()


@needs_live
def test_a_disk_that_fills_during_certify(tmp_path: Path) -> None:
    """certify --resume of a certification whose scenarios are made (no
    TLC): its one case's run fills the disk. Exit 2, one line, and no
    verdict that reads as pass."""
    with _tmpfs(tmp_path / "small", "60k") as small:
        out = _certification(small)
        proc = run_cli("certify", "ltp", "--resume", str(out), "--sut-roles", "both")
        one_line_error(proc)
        assert "No space left on device" in proc.stderr or "no verdict" in proc.stderr
        verdicts = list(out.glob("runs/*/verdict.json"))
        assert all(json.loads(v.read_text())["status"] != "pass" for v in verdicts)


@needs_mount
def test_a_capture_that_could_not_even_log_says_why(tmp_path: Path) -> None:
    """tcpdump on a full disk cannot write its own log: the reason is its
    exit status and the full disk, never an empty string."""
    from conformance.runner import _capture_trouble

    with _tmpfs(tmp_path / "small", "16k") as small:
        log = small / "a.tcpdump.log"
        log.write_text("")
        with contextlib.suppress(OSError):  # fill it
            (small / "filler").write_bytes(b"\0" * 64 * 1024)
        proc = subprocess.Popen(["sh", "-c", "exit 1"])
        proc.wait()
        why = _capture_trouble(proc, log)
    assert "exited with status 1, silently" in why and "is full" in why, why


@pytest.mark.skipif(not IS_ROOT, reason="certify --resume checks root before it generates")
def test_resume_of_a_generation_cut_short_generates_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the scenarios were generated leaves a scenarios folder
    with no .generated: --resume generates them again (here a generator that
    writes one real scenario, to spare minutes of TLC) instead of reporting
    "0 scenarios" and exiting 0."""
    from conformance import cli

    out = tmp_path / "cert"
    (out / "scenarios").mkdir(parents=True)
    (out / "scenarios" / "half-written.json").write_text("{")
    calls: list[tuple[str, Path]] = []

    def generate(protocol: str, where: Path, **_kw: object) -> None:
        calls.append((protocol, where))
        where.mkdir(parents=True, exist_ok=True)
        shutil.copy(LTP_SCENARIO, where / LTP_SCENARIO.name)
        (where / certify.GENERATED).write_text("{}")

    monkeypatch.setattr(cli, "_generate", generate)
    code = cli.main(["certify", "ltp", "--resume", str(out), "--only", "zzzz"])
    assert code == 2  # then --only matched none of the regenerated cases
    assert calls == [("ltp", out / "scenarios")]
    assert sorted(p.name for p in (out / "scenarios").glob("*.json")) == [LTP_SCENARIO.name]
