"""A block really moves through licklider 0.1.1 between namespaces, through
the channel emulator, with segments dropped by protocol field; the verdict compares the
observed outcome with the expectation."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from conformance import cli, netns
from conformance.channel import control as emulator
from conformance.core.types import EndpointResult, Scenario
from conformance.protocols.ltp import LtpBlock, LtpDelivery
from conformance.runner import run_scenario
from generators.ltp import outcomes
from suts.base import Endpoint
from suts.registry import get

pytestmark = [pytest.mark.netns, pytest.mark.integration]


def _scenario(name: str, impairments: list[dict[str, object]], red: int, green: int) -> Scenario:
    return Scenario.model_validate(
        {
            "schema": "dtnconform/scenario/1",
            "name": name,
            "protocol": "ltp",
            "ltp": {"segment_size": 1000, "red_segments": 2, "green_segments": 1},
            "impairments": impairments,
            "expect": {
                "red_bytes_delivered": red,
                "green_bytes_delivered": green,
                "sender_outcome": "completed",
                "receiver_outcome": "completed",
            },
            "time_limit_s": 20,
        }
    )


def test_lost_red_segment_and_report_are_recovered(tmp_path: Path) -> None:
    """Red data at offset 0 and the first RS lost. With a limit of 1, the RS
    timer's resend and the sender's redundant checkpoint, which race (both
    timers equal), would exceed it and RFC 5326 §6.8(b) would cancel; with a
    limit of 2 either order recovers. The expectation is what TLC says."""
    scn = _scenario(
        "live-red-and-rs-lost",
        [
            {"direction": "forward", "match": {"kind": "red_data", "offset": 0}},
            {"direction": "return", "match": {"type": "RS"}},
        ],
        red=2000,
        green=1000,
    )
    assert isinstance(scn.params, LtpBlock), scn.params
    scn.params.retransmission_limit = 2
    scn.expect = outcomes.expectation_for(scn, tmp_path / "tlc")
    out = run_scenario(scn, get("licklider"), tmp_path / "run")
    assert out.verdict.status == "pass", out.verdict.reasons
    assert out.result is not None
    assert (out.result.sender.outcome, out.result.receiver.outcome) == ("completed", "completed")
    assert out.result is not None
    assert out.result.receiver.payload_ok is True
    assert out.result.dropped.forward == 1 and out.result.dropped.ret == 1
    # The dropped segments are the ones the plan named, by field.
    dropped = [s for s in out.segments if s.dropped]
    assert {(s.direction, s.fields["type"]) for s in dropped} == {
        ("forward", "RD"),
        ("return", "RS"),
    }
    assert [s.fields.get("offset") for s in dropped if s.direction == "forward"] == [0]
    # The red segment at offset 0 was sent again, as a checkpoint (RFC 5326 §6.7).
    resent = [s for s in out.segments if s.fields.get("offset") == 0 and not s.dropped]
    assert resent and resent[0].fields["checkpoint"] is True
    # Our dissector and Wireshark's built-in one agree on every mapped field of
    # the captured licklider traffic, on both sides.
    from dissectors.ltp.builtin import compare_with_builtin

    for cap in ("a.pcap", "b.pcap"):
        report = compare_with_builtin(tmp_path / "run" / cap)
        assert report.compared > 50 and report.disagreed == 0, report.summary()
    files = {p.name for p in (tmp_path / "run").iterdir()}
    assert {"a.pcap", "b.pcap", "channel.jsonl", "result.json", "verdict.json"} <= files
    assert not [ns for ns in netns.ours() if ns.startswith(f"dtnc{__import__('os').getpid()}")]


def test_a_wrong_expectation_does_not_decide_the_verdict(tmp_path: Path) -> None:
    """The same lost green segment, with a wrong hand-written expectation
    (the green part delivered): the outcome is judged at the end of the
    validated trace, where the model holds no green data, so the run passes
    and says the expectation is wrong (a verdict comes from the model only)."""
    scn = _scenario(
        "live-green-lost-wrong-expectation",
        [{"direction": "forward", "match": {"kind": "green_data", "offset": 2000}}],
        red=2000,
        green=1000,  # wrong: the green segment is lost and never resent
    )
    out = run_scenario(scn, get("licklider"), tmp_path / "run")
    assert out.verdict.status == "pass", out.verdict.reasons
    assert out.verdict.trace is not None and out.verdict.trace.ends
    assert {e.delivered.parts()["green_bytes_delivered"] for e in out.verdict.trace.ends} == {0}
    codes = {r.code for r in out.verdict.reasons}
    assert "expectation-disagrees" in codes
    assert out.result is not None
    delivered = out.result.receiver.delivered
    assert isinstance(delivered, LtpDelivery), delivered
    assert delivered.green_bytes_delivered == 0
    # The lost segment was the EOB: licklider never closes such a session
    # (suts/ltp/licklider/README.md), and its harness says so: "open", its
    # red part delivered, never "completed" (the model may leave it open:
    # 8.2 closes a receiver only after the EOB).
    assert out.result.receiver.outcome == "open", out.result.receiver
    assert delivered.red_bytes_delivered == 2000
    assert "still open at exit" in out.result.receiver.detail


def test_impairment_that_never_matches_is_inconclusive(tmp_path: Path) -> None:
    scn = _scenario(
        "live-unmet",
        [{"direction": "forward", "match": {"type": "CS"}}],  # licklider sends no cancel here
        red=2000,
        green=1000,
    )
    out = run_scenario(scn, get("licklider"), tmp_path / "run")
    assert out.verdict.status == "inconclusive"
    assert [r.code for r in out.verdict.reasons] == ["impairment-unmet", "observed-outcome"]
    # it says what the channel saw instead of the segment it waited for
    assert "0 matching [type=CS]" in out.verdict.reasons[0].message
    log = emulator.read_log(tmp_path / "run" / "channel.jsonl")
    assert all(r.decision == "pass" for r in log)


class _CrashingReceiver:
    """licklider as sender; a receiver that dies at once, or hangs."""

    def __init__(self, mode: str) -> None:
        self.real = get("licklider")
        self.mode = mode
        self.name, self.protocol, self.version = "crashy", "ltp", "0"

    def ensure_built(self) -> None:
        self.real.ensure_built()

    def sender_argv(self, scn: Scenario, ep: Endpoint) -> list[str]:
        return self.real.sender_argv(scn, ep)

    def receiver_argv(self, scn: Scenario, ep: Endpoint) -> list[str]:
        if self.mode == "crash":
            return ["sh", "-c", "echo 'receiver: segfault in decode' >&2; exit 139"]
        return ["sleep", "3600"]

    def parse_result(
        self, role: str, stdout: str, stderr: str, exit_code: int | None
    ) -> EndpointResult:
        return self.real.parse_result(role, stdout, stderr, exit_code)


@pytest.mark.parametrize("mode", ["crash", "hang"])
def test_crashing_or_hanging_sut_gives_error_with_logs(tmp_path: Path, mode: str) -> None:
    scn = _scenario(f"live-{mode}", [], red=2000, green=1000)
    scn.time_limit_s = 2
    out = run_scenario(scn, _CrashingReceiver(mode), tmp_path / "run")  # type: ignore[arg-type]
    assert out.verdict.status == "error"
    msg = " ".join(r.message for r in out.verdict.reasons)
    assert "receiver harness failed" in msg and "receiver.log" in msg
    if mode == "crash":
        assert "segfault in decode" in msg
    else:
        assert "hung" in msg
    # an error whatever the trace: it is not validated (no TLC for nothing)
    trace = out.verdict.trace
    assert trace is not None and trace.status == "unchecked", trace
    assert "receiver harness failed" in trace.message
    assert not [ns for ns in netns.ours() if ns.startswith(f"dtnc{__import__('os').getpid()}")]


def test_nominal_run_is_captured_whole(tmp_path: Path) -> None:
    """A lossless session lasts milliseconds; both captures must still hold
    every segment (libpcap's block buffering once left them empty)."""
    out = run_scenario(_scenario("live-nominal", [], red=2000, green=1000), get("licklider"),
                       tmp_path / "run")  # fmt: skip
    assert out.verdict.status == "pass", out.verdict.reasons
    fwd = [s.fields["type"] for s in out.segments if s.direction == "forward"]
    ret = [s.fields["type"] for s in out.segments if s.direction == "return"]
    assert fwd == ["RD", "RD-CP-EORP", "GD-EOB", "RA"] and ret == ["RS"]
    # the Session Start notice's session (§7.1) is the one on the wire
    first = next(s.fields for s in out.segments if s.direction == "forward")
    told = [first["session_originator"], first["session_number"]]
    assert out.result is not None and out.result.sender.told_session == told


def test_ctrl_c_leaves_no_namespaces_or_processes(tmp_path: Path) -> None:
    """Ctrl-C in the middle of a run: exit 130, a verdict 'error: interrupted'
    on disk, and nothing left behind."""
    import signal
    import subprocess
    import sys
    import time

    scn = _scenario(
        "live-interrupted",
        # every checkpoint lost, ten retransmissions allowed: a run of seconds
        [
            {"direction": "forward", "match": {"checkpoint": True}, "occurrence": k}
            for k in range(1, 12)
        ],
        red=0,
        green=0,
    )
    assert isinstance(scn.params, LtpBlock), scn.params
    scn.params.retransmission_limit = 10
    path = tmp_path / "scn.json"
    path.write_text(scn.model_dump_json(by_alias=True))
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance.cli", "run", str(path), "--sut", "licklider",
         "--out", str(run_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    tag = f"dtnc{proc.pid}x"
    assert netns.wait_for(lambda: (run_dir / "sender.cmd").exists(), 20)
    assert [ns for ns in netns.ours() if ns.startswith(tag)]
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 130
    assert not [ns for ns in netns.ours() if ns.startswith(tag)]
    sender_listen = (run_dir / "sender.cmd").read_text().split("--listen ")[1].split()[0]
    for pattern in (str(run_dir), sender_listen):  # tcpdump and the channel; the SUT
        left = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
        assert left.stdout.strip() == "", (pattern, left.stdout)
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["status"] == "error" and verdict["reasons"][0]["message"] == "interrupted"


def test_block_crosses_a_delayed_link_with_a_corrupted_checkpoint(tmp_path: Path) -> None:
    """The emulator's link model and a corrupt rule under a live LTP session:
    the corrupted checkpoint (UDP checksum left wrong) never reaches B's LTP
    engine, so the sender's checkpoint timer recovers it."""
    scn = _scenario(
        "live-delay-corrupt-checkpoint",
        [{"direction": "forward", "match": {"type": "RD-CP-EORP"}, "action": "corrupt",
          "bits": 3}],
        red=2000,
        green=1000,
    )  # fmt: skip
    scn.channel = scn.channel.model_validate(
        {"forward": {"link": {"delay_ms": 30, "rate_bps": 5e6}},
         "return": {"link": {"delay_ms": 30}}}
    )  # fmt: skip
    out = run_scenario(scn, get("licklider"), tmp_path / "run")
    assert out.verdict.status == "pass", out.verdict.reasons
    log = emulator.read_log(tmp_path / "run" / "channel.jsonl")
    corrupted = [r for r in log if r.decision == "corrupt"]
    assert len(corrupted) == 1 and corrupted[0].rule == 0
    assert len(corrupted[0].flipped) == 3
    # a checkpoint was sent again after the corrupted one
    cps = [r for r in log if r.fields.get("type") == "RD-CP-EORP"]
    assert len(cps) >= 2
    # the link delay held for every segment that crossed
    for r in log:
        if r.decision != "drop" and r.dir == "forward":
            assert r.release_ns is not None and r.release_ns - r.t_ns >= 30_000_000


def test_channel_crash_is_an_error_verdict_and_leaves_no_namespaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = emulator.binary()
    wrapper = tmp_path / "crashing-emu"
    # Starts the real emulator and kills it mid-run: once its decision log
    # (--log) shows it has carried a segment. A fixed pause does not do
    # under load: a kill before the emulator is up is a channel that never
    # started, another error. Only `run` crashes: the decoding's `classify`
    # is the real one.
    wrapper.write_text(
        f'#!/bin/sh\n[ "$1" = run ] || exec "{real}" "$@"\n"{real}" "$@" &\npid=$!\n'
        'log=""; prev=""\n'
        'for a in "$@"; do [ "$prev" = "--log" ] && log="$a"; prev="$a"; done\n'
        'i=0; while [ ! -s "$log" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done\n'
        "kill -KILL $pid\nexit 137\n"
    )
    wrapper.chmod(0o755)
    monkeypatch.setenv("DTNC_EMU", str(wrapper))
    # this process's namespaces only: another run may come and go meanwhile
    mine = f"dtnc{__import__('os').getpid()}"
    before = {ns for ns in netns.ours() if ns.startswith(mine)}
    scn = _scenario("live-channel-crash", [], red=2000, green=1000)
    scn.time_limit_s = 6
    scn.timers.linger_ms = 2000  # the endpoints are still up when the channel dies
    out = run_scenario(scn, get("licklider"), tmp_path / "run")
    assert out.verdict.status == "error"
    assert out.verdict.reasons[0].code == "channel-crash"
    assert "channel.stderr" in out.verdict.reasons[0].message
    assert (tmp_path / "run" / "verdict.json").exists()
    assert {ns for ns in netns.ours() if ns.startswith(mine)} == before, "namespaces left behind"


def test_an_alternative_reading_is_named_not_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """licklider configured to take RFC 5326 §6.11's MAY upper bound
    (report-upper-bound=max-seen): with the second red segment lost, its
    secondary report reaches past the retransmitted checkpoint, which the
    model's default reading (the SHOULD bound) rejects. The run passes under
    reading 2's alternative and says so; the same run with licklider's
    default needs no alternative."""
    scn = _scenario(
        "live-max-seen",
        [{"direction": "forward", "match": {"kind": "red_data", "offset": 1000}}],
        red=2000,
        green=1000,
    )
    assert isinstance(scn.params, LtpBlock), scn.params
    scn.params.red_len, scn.params.block_len = 3000, 4000
    scn.expect = outcomes.expectation_for(scn, tmp_path / "tlc")
    sut = get("licklider")
    sut.set_options(["report-upper-bound=max-seen"])
    out = run_scenario(scn, sut, tmp_path / "max-seen")
    assert out.verdict.status == "pass", out.verdict.reasons
    assert out.verdict.readings == ["2"]
    assert out.verdict.reasons[0].code == "reading-2"
    assert "[report-upper-bound=max-seen]" in out.verdict.sut
    # the verdicts table says so too, not a plain pass
    shown = io.StringIO()
    monkeypatch.setattr(cli, "console", Console(file=shown, width=200, highlight=False))
    cli.print_verdicts([out])
    assert "pass (reading 2)" in shown.getvalue()
    out = run_scenario(scn, get("licklider"), tmp_path / "default")
    assert out.verdict.status == "pass", out.verdict.reasons
    assert out.verdict.readings == []


@pytest.mark.parametrize(
    "tag", ["split-report-rs1-lost", "report-during-green-red3000", "green-only-green5000"]
)
def test_a_realistic_purpose_is_judged_from_its_trace(tmp_path: Path, tag: str) -> None:
    """Issue 29's LTP purposes at a realistic geometry (16 segments), past
    every outcome set TLC enumerates: licklider's run is judged at the end
    of its validated trace. In the split report, the report answering the
    checkpoint is two RSs of one claim each, the first lost and sent again
    by the receiver's report timer; in the other, the report comes back
    while the green part is still arriving; the green-only block has no
    report at all."""
    from generators.ltp.catalogue import realistic_scenarios

    (scn,) = [s for s in realistic_scenarios() if s.name == f"ltp-realistic-{tag}"]
    out = run_scenario(scn, get("licklider"), tmp_path / "run")
    assert out.verdict.status == "pass", out.verdict.reasons
    trace = out.verdict.trace
    assert trace is not None and trace.status == "accepted", trace
    (end,) = trace.ends
    assert out.result is not None
    assert end.delivered == out.result.receiver.delivered
    # a green-only block's receiver closes at the EOB with no notice (§8.2)
    receiver = "closed" if tag.startswith("green-only") else "completed"
    assert (end.sender_outcome, end.receiver_outcome) == ("completed", receiver)
    sent = [s for s in out.segments if s.direction == "return" and s.fields["type"] == "RS"]
    if tag.startswith("green-only"):
        assert sent == [] and end.delivered.model_dump()["green_bytes_delivered"] == 15000
    elif tag.startswith("split"):
        # RS [0, 5000) and [5000, 16000) answer the first checkpoint, one
        # claim each; the first, lost, is sent again, the same serial
        first = [s for s in sent if s.fields.get("checkpoint_serial") == sent[0].fields[
            "checkpoint_serial"]]  # fmt: skip
        bounds = {(s.fields["lower_bound"], s.fields["upper_bound"]) for s in first}
        assert bounds == {(0, 5000), (5000, 16000)}, bounds
        assert sent[0].dropped and not sent[-1].dropped
        assert sent[-1].fields["report_serial"] == sent[0].fields["report_serial"]
    else:
        # at the receiver, the first report left before the green EOB came
        # in (the forward link's rate keeps the green part in flight)
        from scapy.layers.inet import UDP
        from scapy.utils import rdpcap

        from dissectors.ltp.layer import LTP

        kinds = [
            LTP(bytes(p[UDP].payload)).sprintf("%type%")
            for p in rdpcap(str(tmp_path / "run" / "b.pcap"))
            if UDP in p
        ]
        assert kinds.index("RS") < kinds.index("GD-EOB"), kinds
