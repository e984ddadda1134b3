"""The endpoint contract (suts/endpoint.py, docs/implementers.md): endpoint
files read and checked, knobs reaching a role's command, exit 127 as "not
supported" before and during a run, and the compliance check, with real
processes: licklider's and cfdp-rs's own files, and small shell endpoints."""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from conformance import timers
from conformance.core.errors import InputError, NotSupported, ToolMissing
from conformance.core.types import Scenario, dump_model, load_scenario
from conformance.runner import run_scenario
from suts.base import REPO, Endpoint
from suts.endpoint import EndpointFile
from suts.registry import get

NOMINAL = REPO / "reports" / "findings" / "ltp" / "scenarios" / "ltp-two-reports-lost.json"
CFDP = min((REPO / "reports" / "findings" / "cfdp" / "scenarios").glob("*.json"))
EP = Endpoint(ip="127.0.0.1", peer_ip="127.0.0.1", port=1113)


REFUSE = 'echo "no $DTNC_FEATURES" >&2; exit 127'


def _file(tmp_path: Path, sender: str, receiver: str = REFUSE, extra: str = "") -> Path:
    """An LTP endpoint file whose roles are the shell commands given."""
    path = tmp_path / "endpoint.toml"
    path.write_text(
        'name = "shell"\nprotocol = "ltp"\nversion = "0"\n[run]\n'
        f"sender = {json.dumps(['sh', '-c', sender])}\n"
        f"receiver = {json.dumps(['sh', '-c', receiver])}\n" + extra,
        encoding="utf-8",
    )
    return path


def _nominal() -> Scenario:
    return load_scenario(NOMINAL).model_copy(update={"impairments": []})


def test_the_registered_files_load_and_name_their_implementations() -> None:
    for name, proto in (("licklider", "ltp"), ("cfdp-rs", "cfdp")):
        sut = get(name)
        assert isinstance(sut, EndpointFile) and sut.protocol == proto
        # a path to the same file is the same implementation
        assert get(sut.ref).name == name and sut.ref.endswith("endpoint.toml")


def test_a_name_with_options_makes_that_configuration_again() -> None:
    """ "licklider[report-upper-bound=max-seen]" is licklider with that
    option set, wherever a name is taken; its label and ref keep the
    options, so an interop matrix tells two configurations apart and a
    Robot suite makes the same one again; a bad option is refused."""
    plain = get("licklider")
    sut = get("licklider[report-upper-bound=max-seen]")
    assert sut.name == plain.name == "licklider"
    assert sut.options == {"report-upper-bound": "max-seen"} and plain.options == {}
    assert sut.label == "licklider[report-upper-bound=max-seen]" and plain.label == "licklider"
    again = get(sut.ref)
    assert again.options == sut.options and again.ref == sut.ref
    with pytest.raises(InputError, match="report-upper-bound"):
        get("licklider[speed=fast]")


def test_a_bad_file_is_refused_naming_the_file_and_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nprotocol = "ltp"\nversion = "1"\n[run]\nsender = []\n')
    with pytest.raises(InputError, match=r"bad\.toml: run\.sender"):
        get(str(bad))
    bad.write_text('name = "x"\nprotocol = "nope"\nversion = "1"\n[run]\nsender=["a"]\n'
                   'receiver=["b"]\n')  # fmt: skip
    with pytest.raises(InputError, match="unknown protocol 'nope'"):
        get(str(bad))
    with pytest.raises(InputError, match="no such endpoint file"):
        get(str(tmp_path / "absent.toml"))
    typo = _file(tmp_path, "exit 0", extra='args = ["--block", "{blok-len}"]\n')
    with pytest.raises(InputError, match=r"\{blok-len\} is no knob of ltp .*block-len"):
        get(str(typo)).sender_argv(_nominal(), EP)


def test_every_knob_reaches_the_role_as_a_variable_and_a_template(tmp_path: Path) -> None:
    # the role prints what it was given: the environment and its arguments
    path = _file(tmp_path, 'echo "$DTNC_BLOCK_LEN $DTNC_RED_LEN $DTNC_FEATURES $0 $1"',
                 extra='args = ["{segment-size}", "{retransmission-limit}"]\n')  # fmt: skip
    sut = get(str(path))
    scn = _nominal()
    argv = sut.sender_argv(scn, EP)
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout.split()
    assert out == ["4000", "3000", "red,green", "1000", "1"]
    sut.cleanup()


def test_declared_limits_and_features_make_a_cell_not_supported() -> None:
    rs = get("cfdp-rs")
    assert "entity_id_len 3: 1, 2, 4 or 8 octets only" in rs.supports(
        {"entity_id_len": 3, "sequence_number_len": 2, "segment_size": 100}, "sender"
    )
    assert rs.supports({"entity_id_len": 2, "sequence_number_len": 2, "segment_size": 5000},
                       "sender").startswith("segment_size 5000")  # fmt: skip
    assert (
        rs.supports({"entity_id_len": 2, "sequence_number_len": 2, "segment_size": 100}, "") == ""
    )


def test_declared_features_are_the_protocols(tmp_path: Path) -> None:
    only_red = get(str(_file(tmp_path, "exit 0", extra='[supports]\nfeatures = ["red"]\n')))
    params = _nominal().params.model_dump(mode="json")
    assert only_red.supports(params, "sender") == "it does not declare green"
    assert get("licklider").supports(params, "sender") == ""


@pytest.mark.parametrize("name", ["licklider", "cfdp-rs"])
def test_our_harnesses_refuse_an_unknown_feature(name: str) -> None:
    sut = get(name)
    sut.ensure_built()
    scn = _nominal() if sut.protocol == "ltp" else load_scenario(CFDP)
    sut.check_contract(scn)  # raises unless both roles exit 127


def test_an_endpoint_that_ignores_features_is_refused(tmp_path: Path) -> None:
    sut = get(str(_file(tmp_path, "exit 0")))
    with pytest.raises(InputError, match="its sender, given DTNC_FEATURES=dtnc-compliance-"):
        sut.check_contract(_nominal())
    hangs = get(str(_file(tmp_path, REFUSE, receiver="sleep 30")))
    t0 = time.monotonic()
    with pytest.raises(InputError, match="its receiver.*still running after 5 s"):
        hangs.check_contract(_nominal())
    assert time.monotonic() - t0 < 10
    # its whole process group was stopped, the shell's sleep too
    ps = subprocess.run(["pgrep", "-f", "^sleep 30$"], capture_output=True, text=True)
    assert ps.stdout == ""
    # 127 without naming the feature: a missing command looks just so
    mute = get(str(_file(tmp_path, "exit 127")))
    with pytest.raises(InputError, match="its sender.*exit 127, not naming it on stderr"):
        mute.check_contract(_nominal())


def test_a_command_that_does_not_exist_is_missing_not_unsupported(tmp_path: Path) -> None:
    path = tmp_path / "typo.toml"
    path.write_text('name = "typo"\nprotocol = "ltp"\nversion = "0"\n[run]\n'
                    'sender = ["{here}/no-such-binary"]\nreceiver = ["true"]\n')  # fmt: skip
    with pytest.raises(ToolMissing, match=r"run\.sender: .*no-such-binary is not an executable"):
        get(str(path)).sender_argv(_nominal(), EP)


@pytest.mark.netns
@pytest.mark.integration
def test_a_role_that_exits_127_makes_the_run_not_supported(tmp_path: Path) -> None:
    # the sender refuses every scenario except the contract check's (which
    # it refuses too); the receiver is licklider's, already running
    path = _file(tmp_path, 'echo "no LTP today: $DTNC_FEATURES" >&2; exit 127')
    run_dir = tmp_path / "run"
    t0 = time.monotonic()
    with pytest.raises(NotSupported, match=r"shell's sender: no LTP today"):
        run_scenario(_nominal(), get(str(path)), run_dir, receiver_sut=get("licklider"))
    # the receiver was stopped, not waited for to its time limit
    assert time.monotonic() - t0 < timers.derive(_nominal()).time_limit_s
    assert "no LTP today" in (run_dir / "unsupported.txt").read_text()
    assert not (run_dir / "verdict.json").exists()
    # the command as run, its variables with it
    assert shlex.split((run_dir / "sender.cmd").read_text())[:2] == ["env", "DTNC_ROLE=sender"]


@pytest.mark.netns
@pytest.mark.integration
def test_127_after_taking_part_is_judged_not_unsupported(tmp_path: Path) -> None:
    """licklider's sender behind a wrapper whose last command fails with 127
    (a missing post-step): the role sent the whole block, so its 127 is no
    refusal, and the run is judged on what it did."""
    lick = get("licklider")
    assert isinstance(lick, EndpointFile)
    spec = lick.spec.run
    here = str(lick.path.parent)
    wrapped = [w.replace("{here}", here) for w in ["sh", "-c", '"$0" "$@"; exit 127', *spec.sender]]
    receiver = [w.replace("{here}", here) for w in spec.receiver]
    path = tmp_path / "wrapped.toml"
    path.write_text(
        'name = "wrapped"\nprotocol = "ltp"\nversion = "0"\n[run]\n'
        f"sender = {json.dumps(wrapped)}\nreceiver = {json.dumps(receiver)}\n"
        f"args = {json.dumps(spec.args)}\n",
        encoding="utf-8",
    )
    out = run_scenario(_nominal(), get(str(path)), tmp_path / "run", receiver_sut=lick)
    assert out.verdict.status == "pass", out.verdict.reasons
    assert out.result is not None and out.result.sender.exit_code == 127
    assert not (tmp_path / "run" / "unsupported.txt").exists()


@pytest.mark.netns
@pytest.mark.integration
def test_a_declared_processing_time_is_the_roles_reaction_window(tmp_path: Path) -> None:
    """licklider's file with a processing time declared (its profile's
    processing-ms): the run keeps it and the load it met, and trace
    validation gives the sender that window, stretched by the load, and the
    receiver, which declares none, 250 ms (docs/implementers.md)."""
    lick = get("licklider")
    assert isinstance(lick, EndpointFile)
    text = lick.path.read_text(encoding="utf-8").replace("{here}", str(lick.path.parent))
    # built already (get("licklider") built it): the copy has no [build]
    head, _build, tail = text.partition("[build]")
    path = tmp_path / "slow.toml"
    path.write_text(
        head.replace('name = "licklider"', 'name = "slow"')
        + tail[tail.index("[run]") :]
        + "\n[profile]\nprocessing-ms = 40\n",
        encoding="utf-8",
    )
    sut = get(str(path))
    assert sut.processing_ms == 40
    scn = _nominal()
    out = run_scenario(scn, sut, tmp_path / "run", receiver_sut=lick)
    assert out.result is not None and out.result.processing_ms == {"sender": 40.0}
    load = out.result.slowdown
    assert load >= 1.0
    tc = out.verdict.trace
    assert tc is not None and tc.status == "accepted", tc
    cap = timers.derive(scn).retransmission_ms / 2
    assert tc.slowdown == round(load, 3)
    assert tc.windows_ms == {
        "sender": round(min(cap, 40 * load), 3),
        "receiver": round(min(cap, 250 * load), 3),
    }


def test_a_scenario_the_profile_leaves_no_outcome_is_said_and_not_run(tmp_path: Path) -> None:
    """A catalogue pattern whose losses cannot all happen under the
    profile's limit (the RAs of the second and third copy, at a limit of 3)
    has no outcome set to be judged by: certify says so and leaves the case
    out, instead of stopping the whole certification (ION's sample did)."""
    from conformance.certify import Case, _adapted

    prof = tmp_path / "prof.toml"
    prof.write_text(
        'name = "prof"\nprotocol = "ltp"\nversion = "0"\n[run]\nsender = ["true"]\n'
        'receiver = ["true"]\n[profile.params.retransmission_limit]\nmin = 3\nwhy = "three"\n'
    )
    path = Path(__file__).parent / "data" / "ltp-r1g0l1-CAR.1-RA.1-RA.2.json"
    kept, moved = _adapted(get(str(prof)), [Case(path, None), Case(path, "sender")], tmp_path)
    assert kept == []
    (said,) = moved["ltp-r1g0l1-CAR.1-RA.1-RA.2"]
    assert said.startswith("not run: the model has no outcome for it under the profile"), said


def test_a_profile_adapts_the_scenario_and_the_model_judges_it_again(tmp_path: Path) -> None:
    """ION's profile: a retransmission limit of at least 3. The demo's limit
    of 1 runs as 3, with the outcome set TLC computes for 3 (two lost
    reports no longer exhaust the limit: the block may complete)."""
    from conformance import adapt

    prof = tmp_path / "prof.toml"
    prof.write_text(
        'name = "prof"\nprotocol = "ltp"\nversion = "0"\n[run]\nsender = ["true"]\n'
        'receiver = ["true"]\n[profile.params.retransmission_limit]\nmin = 3\nwhy = "three"\n'
    )
    scn = load_scenario(NOMINAL)  # two RSs lost, limit 1: both sides cancel
    assert {o.sender_outcome for o in scn.expect.outcomes} == {"cancelled"}
    plays = [(get(str(prof)), "sender"), (get("licklider"), "receiver")]
    new, said = adapt.adapt(scn, plays, tmp_path / "tlc")
    assert said == ["retransmission_limit 1 -> 3 (prof: three)"]
    assert new.params.retx_limit() == 3 and new.name == scn.name
    assert new.description.startswith("Adapted to the implementation's profile")
    assert "completed" in {o.sender_outcome for o in new.expect.outcomes}
    # nothing to move: the scenario itself
    same, none = adapt.adapt(new, [(get(str(prof)), "sender")], tmp_path / "tlc")
    assert same is new and none == []
    # a pair whose profiles ask for two values is refused
    other = tmp_path / "other.toml"
    other.write_text(prof.read_text().replace('"prof"', '"other"').replace("min = 3", "min = 4"))
    with pytest.raises(InputError, match="the profiles of the pair ask for 3 and 4"):
        adapt.changes(scn, [(get(str(prof)), "sender"), (get(str(other)), "receiver")])


def test_a_profile_bound_to_a_side_moves_only_the_cases_where_it_plays_it(
    tmp_path: Path,
) -> None:
    """HDTN's receiver cancels a stalled session (receiver_cancels_idle, a
    profile bound to the receiver): where it receives (both sides, or the
    tester sending) the scenario runs with the model's IdleCancels and its
    outcome set gains the receiver's cancel; where it only sends, the
    scenario is run as it is, and the feature is asked of no sender."""
    from conformance.certify import Case, _adapted
    from conformance.protocols.ltp import LtpBlock

    prof = tmp_path / "prof.toml"
    prof.write_text(
        'name = "prof"\nprotocol = "ltp"\nversion = "0"\n[run]\nsender = ["true"]\n'
        'receiver = ["true"]\n[profile.params.receiver_cancels_idle]\nin = [true]\n'
        'role = "receiver"\nwhy = "idle"\n'
    )
    # the demo's: the green EOB lost, so the receiver waits for it
    path = Path(__file__).parent / "data" / "ltp-green-data-3-lost.json"
    scn = load_scenario(path)
    both, rx, tx = Case(path, None), Case(path, "sender"), Case(path, "receiver")
    kept, moved = _adapted(get(str(prof)), [both, rx, tx], tmp_path / "cert")
    assert [c.tester for c in kept] == [None, "sender", "receiver"]
    assert kept[2].path == path  # it sends only: not moved
    # both cases where it receives are moved alike: one copy, one TLC run
    assert kept[0].path == kept[1].path == tmp_path / "cert" / "adapted" / path.name
    new = load_scenario(kept[0].path)
    assert isinstance(new.params, LtpBlock) and isinstance(scn.params, LtpBlock)
    assert new.params.receiver_cancels_idle and not scn.params.receiver_cancels_idle
    ends = {(o.sender_outcome, o.receiver_outcome) for o in new.expect.outcomes}
    assert ("completed", "cancelled") in ends
    assert ("completed", "cancelled") not in {
        (o.sender_outcome, o.receiver_outcome) for o in load_scenario(path).expect.outcomes
    }
    (said,) = set(moved[scn.name])
    assert said.startswith("receiver_cancels_idle False -> True (prof: idle)"), said
    # a stalled session only: with nothing lost, the receiver that has the
    # EOB and the red part closes, and no cancel is allowed
    whole = scn.model_copy(update={"impairments": [], "name": "whole"})
    dump_model(whole, tmp_path / "whole.json")
    (moved_whole,), _said = _adapted(
        get(str(prof)), [Case(tmp_path / "whole.json", None)], tmp_path / "cert2"
    )
    rx_ends = {o.receiver_outcome for o in load_scenario(moved_whole.path).expect.outcomes}
    assert rx_ends == {"completed"}, rx_ends
    # the feature is the receiver's: a sender is never asked for it
    assert "idle-cancel" in new.params.features("receiver")
    assert "idle-cancel" not in new.params.features("sender")


def test_a_sample_scenario_with_no_outcome_under_the_profile_is_replaced(
    tmp_path: Path,
) -> None:
    """``certify --sample N``: a drawn scenario the profile leaves no outcome
    (limit 3) is replaced by the next one in the seed's draw order, so N
    scenarios run; the draw record names what was replaced."""
    import shutil

    from conformance.certify import SUT_ROLES, _adapted, _draw, _scenarios, _topped_up, cases
    from conformance.protocols import get as get_spec

    prof = tmp_path / "prof.toml"
    prof.write_text(
        'name = "prof"\nprotocol = "ltp"\nversion = "0"\n[run]\nsender = ["true"]\n'
        'receiver = ["true"]\n[profile.params.retransmission_limit]\nmin = 3\nwhy = "three"\n'
    )
    data = Path(__file__).parent / "data"
    out = tmp_path / "cert"
    cat = out / "scenarios" / "catalogue"
    cat.mkdir(parents=True)
    for name in ("ltp-r1g0l1-CAR.1-RA.1-RA.2", "ltp-green-data-3-lost"):
        shutil.copy(data / f"{name}.json", cat / f"{name}.json")
    pool = sorted(cat.glob("*.json"))
    # a seed whose draw starts with the scenario that cannot run
    seed = next(s for s in range(100) if next(_draw(pool, s)).stem.startswith("ltp-r1g0l1"))
    assert sorted(_draw(pool, seed)) == pool  # every one, once
    spec, sut = get_spec("ltp"), get(str(prof))
    drawn = _scenarios(out, False, (1, seed))
    assert [p.stem for p in drawn] == ["ltp-r1g0l1-CAR.1-RA.1-RA.2"]
    kept, moved = _adapted(sut, cases(spec, drawn, SUT_ROLES), out)
    assert kept == [] and moved
    more = _topped_up(spec, sut, out, kept, moved, SUT_ROLES)
    assert {c.path.stem for c in more} == {"ltp-green-data-3-lost"}
    assert len(more) == 3  # both sides, and each against the tester
    record = json.loads((out / "scenarios" / "catalogue-sample.json").read_text())
    assert record["replaced"] == ["ltp-r1g0l1-CAR.1-RA.1-RA.2"]
    assert record["scenarios"] == ["ltp-r1g0l1-CAR.1-RA.1-RA.2", "ltp-green-data-3-lost"]
    assert "ltp-green-data-3-lost" in moved  # its adaptation is said too
