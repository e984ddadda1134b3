"""End-to-end tests of the cfdp-rs harness (suts/cfdp/cfdprs/harness, binary
dtnc-cfdprs): real cfdp-rs 0.3.0 transfers over 127.0.0.1, each role in its
own process, as dtnconform runs them.

Some tests put a small lossy UDP relay (a thread in this process) between
the two roles, to check the limit mappings of README.md against what
cfdp-rs does on the wire. The binary is built once per session with
``cargo build --release --locked``. Run with:

    .venv/bin/pytest suts/cfdp/cfdprs/tests -m integration
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from suts.cfdp.common import testing as ct
from suts.cfdp.common.testing import CANCEL_AFTER_FD_1024, Rule

pytestmark = pytest.mark.integration

SUT = Path(__file__).resolve().parents[1]
CRATE = SUT / "harness"
BINARY = CRATE / "target" / "release" / "dtnc-cfdprs"
REPO = SUT.parents[2]
CFDPPY_HARNESS = REPO / "suts" / "cfdp" / "cfdppy" / "harness.py"
VENV_PYTHON = REPO / ".venv" / "bin" / "python"
# 3000 octets in 1024-octet segments; short timers so that every limit is
# reached within a second or two.
PAIR = ct.Pair(
    [],
    after=ct.timers(250, time_limit_ms=10000, linger_ms=200),
    send=["--file-len", "3000", "--segment-size", "1024"],
    launch=ct.Launch(wait_s=20.0),
)


def find_cargo() -> str | None:
    found = shutil.which("cargo")
    if found:
        return found
    home = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo")) / "bin" / "cargo"
    return str(home) if home.exists() else None


@pytest.fixture(scope="session")
def binary() -> Path:
    """dtnc-cfdprs, built once per session (cargo is quick when it is
    already up to date)."""
    cargo = find_cargo()
    if cargo is None:
        pytest.skip(
            "cargo not found: the cfdp-rs harness is a Rust crate (suts/cfdp/cfdprs/harness)"
        )
    proc = subprocess.run(
        [cargo, "build", "--release", "--locked"],
        cwd=CRATE,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, f"cargo build failed:\n{proc.stderr[-4000:]}"
    assert BINARY.exists()
    return BINARY


def transfer(
    tmp_path: Path,
    binary: Path,
    common: list[str],
    sender_argv0: list[str] | None = None,
    receiver_argv0: list[str] | None = None,
    **options: Any,
) -> tuple[dict[str, Any], dict[str, Any] | None, ct.Relay | None]:
    """One transfer, cfdp-rs both ways unless another harness is given; the
    receiver starts first, as dtnconform starts it."""
    rs = [str(binary)]
    return PAIR.transfer(
        tmp_path,
        common,
        sender_prog=sender_argv0 or rs,
        receiver_prog=receiver_argv0 or rs,
        **options,
    )


# ---------------------------------------------------------------------------


def test_tables_match_the_spec() -> None:
    """The harness's Table 5-4/5-5 names are those of specs/cfdp/wire.json."""
    wire = ct.wire_tables()
    source = (CRATE / "src" / "wire.rs").read_text()
    conditions = [
        e["name"] for e in sorted(wire["condition_codes"]["entries"], key=lambda e: e["code"])
    ]
    assert [e["code"] for e in wire["condition_codes"]["entries"]] == list(range(16))
    table = source.split("pub const CONDITIONS: [&str; 16] = [")[1].split("];")[0]
    assert [s.strip().strip('",') for s in table.split() if s.strip()] == conditions
    for entry in wire["directives"]["entries"]:
        assert f'{entry["code"]} => "{entry["name"]}"' in source


@pytest.mark.parametrize("mode", ["class1", "class1-closure", "class2"])
def test_nominal_transfer_completes(tmp_path: Path, binary: Path, mode: str) -> None:
    sent, received, _ = transfer(tmp_path, binary, ["--mode", mode, "--seq-num", "77"])
    assert sent["outcome"] == "completed", sent
    assert sent["sender_condition"] == "no_error"
    assert sent["implementation"] == "cfdp-rs 0.3.0"
    assert sent["told_session"] == [1, 77]  # its Transaction.indication's ID
    ct.assert_delivered(received)
    assert received is not None  # its File-Segment-Recv.indications, as sent
    assert received["told_segments"] == [[0, 1024], [1024, 1024], [2048, 952]]
    assert sent["pdus_sent"]["file_data"] == 3  # 1024 + 1024 + 952
    assert (tmp_path / "r" / "dtnc-received.bin").stat().st_size == 3000
    # Class 1 without closure: nothing comes back; with closure a Finished;
    # Class 2: ACK(EOF) and Finished, and the sender ACKs the Finished.
    back = {"class1": {}, "class1-closure": {"finished(no_error)": 1}}.get(
        mode, {"ack(eof,no_error)": 1, "finished(no_error)": 1}
    )
    assert sent["pdus_received"] == back


@pytest.mark.parametrize("checksum", ["crc32", "crc32c", "null"])
def test_checksums_and_options(tmp_path: Path, binary: Path, checksum: str) -> None:
    common = ["--mode", "class2", "--checksum", checksum, "--pdu-crc", "1"]
    common += ["--entity-id-len", "1", "--seq-len", "8"]
    sent, received, _ = transfer(tmp_path, binary, common, send_args=["--seq-num", "300"])
    assert received is not None
    assert sent["outcome"] == received["outcome"] == "completed", (sent, received)
    assert received["payload_ok"] is True


def test_cancel_at_sender_class2(tmp_path: Path, binary: Path) -> None:
    """Cancel.request after File Data at 1024: cfdp-rs's SourceHandler sends
    EOF(cancel) at progress 2048 and runs the positive-ACK procedure; the
    DestinationHandler ACKs it, verifies the checksum over those 2048
    octets (CRC-32 covers exactly them) and answers Finished(cancel,
    complete); the sender ACKs that and indicates it. Nothing is
    delivered: the transaction did not end with no_error."""
    common = ["--mode", "class2", "--checksum", "crc32"]
    sent, received, _ = transfer(
        tmp_path, binary, common, send_args=["--request", CANCEL_AFTER_FD_1024]
    )
    assert received is not None
    assert sent["requests"][0]["made"] is True, sent
    assert sent["outcome"] == "cancelled", sent
    assert sent["sender_condition"] == "cancel_request_received"
    assert sent["pdus_sent"]["file_data"] == 2
    assert sent["pdus_sent"]["eof(cancel_request_received)"] == 1
    assert "Transaction-Finished.indication: cancel_request_received" in sent["detail"]
    assert received["outcome"] == "cancelled", received
    assert received["receiver_condition"] == "cancel_request_received"
    assert received["file_bytes_delivered"] == 0
    assert received["payload_ok"] is None


def test_cancel_at_sender_class1(tmp_path: Path, binary: Path) -> None:
    """In Class 1 the SourceHandler's notice of cancellation sends
    EOF(cancel) and resets at once, with no Transaction-Finished.indication
    (source.rs:1171-1175): the harness reports the EOF's condition."""
    common = ["--mode", "class1", "--checksum", "crc32"]
    sent, received, _ = transfer(
        tmp_path, binary, common, send_args=["--request", CANCEL_AFTER_FD_1024]
    )
    assert received is not None
    assert sent["outcome"] == "cancelled", sent
    assert sent["sender_condition"] == "cancel_request_received"
    assert "no Transaction-Finished.indication" in sent["detail"]
    assert received["outcome"] == "cancelled", received
    assert received["receiver_condition"] == "cancel_request_received"
    assert received["file_bytes_delivered"] == 0


def test_cancel_with_modular_checksum_ends_in_checksum_failure(
    tmp_path: Path, binary: Path
) -> None:
    """With the modular checksum cfdp-rs sums the whole file whatever length
    it is asked for (filestore.rs:279, 300-319): the EOF(cancel) carries the
    checksum of all 3000 octets, the receiver's 2048 do not match it, and
    its File Checksum Failure fault (notice of cancellation) replaces the
    cancel condition, in its Finished too."""
    sent, received, _ = transfer(
        tmp_path, binary, ["--mode", "class2"], send_args=["--request", CANCEL_AFTER_FD_1024]
    )
    assert received is not None
    assert received["outcome"] == "cancelled"
    assert received["receiver_condition"] == "file_checksum_failure"
    assert "notice_of_cancellation file_checksum_failure" in received["detail"]
    assert sent["outcome"] == "cancelled"
    assert sent["sender_condition"] == "file_checksum_failure"


def test_class2_without_receiver_abandons_at_ack_limit(tmp_path: Path, binary: Path) -> None:
    """No receiver: with ack limit 1 the EOF goes out twice (one
    retransmission), the 2nd expiry declares Positive ACK Limit Reached
    (notice of cancellation: EOF(cancel), twice), and a fault while
    sending the EOF(cancel) abandons the transaction (source.rs:1202-1208)."""
    sent, _, _ = transfer(
        tmp_path, binary, ["--mode", "class2", "--ack-limit", "1"], receiver=False
    )
    assert sent["outcome"] == "abandoned", sent
    assert sent["sender_condition"] == "positive_ack_limit_reached"
    assert sent["pdus_sent"]["eof(no_error)"] == 2
    assert sent["pdus_sent"]["eof(positive_ack_limit_reached)"] == 2
    assert sent["pdus_received"] == {}
    # 4 expiries of the 250 ms timer
    assert 0.9 <= sent["duration_s"] < 5


def test_class2_cancel_without_receiver_panics_in_cfdprs(tmp_path: Path, binary: Path) -> None:
    """A Cancel.request before the EOF, and no ACK(EOF(cancel)): at the first
    positive-ACK expiry cfdp-rs re-sends the EOF with the checksum of the
    completed file, which it never computed (checksum_completed_file is set
    only by eof_fsm, source.rs:802), and unwraps None (source.rs:719-725).
    The harness catches the panic and reports the entity stopped."""
    sent, _, _ = transfer(
        tmp_path,
        binary,
        ["--mode", "class2"],
        send_args=["--request", CANCEL_AFTER_FD_1024],
        receiver=False,
    )
    assert sent["requests"][0]["made"] is True
    assert sent["outcome"] == "open", sent
    assert sent["sender_condition"] == "cancel_request_received"
    assert "panicked" in sent["detail"] and "src/source.rs:724" in sent["detail"]
    assert sent["pdus_sent"]["eof(cancel_request_received)"] == 1


@pytest.mark.parametrize("limit", [0, 2])
def test_class1_closure_without_receiver_check_limit(
    tmp_path: Path, binary: Path, limit: int
) -> None:
    """The sender's check timer lasts (limit + 1) x check timer: cfdp-rs
    declares Check Limit Reached at its first expiry (source.rs:774-787)."""
    common = ["--mode", "class1-closure", "--check-limit", str(limit)]
    sent, _, _ = transfer(tmp_path, binary, common, receiver=False)
    assert sent["outcome"] == "cancelled", sent
    assert sent["sender_condition"] == "check_limit_reached"
    assert sent["pdus_sent"]["eof(check_limit_reached)"] == 1
    assert (limit + 1) * 0.25 <= sent["duration_s"] < (limit + 1) * 0.25 + 1.5


@pytest.mark.parametrize(
    ("nak_mode", "limit", "naks"),
    [("immediate", 0, 2), ("immediate", 1, 3), ("deferred", 0, 1), ("deferred", 2, 3)],
)
def test_nak_limit_mapping(
    tmp_path: Path, binary: Path, nak_mode: str, limit: int, naks: int
) -> None:
    """File Data at 1024 never arrives. Immediate mode NAKs the gap when it
    appears; then the EOF starts the deferred procedure, whose first NAK is
    not counted; each NAK-timer expiry re-sends it until the (limit+1)-th,
    which declares NAK Limit Reached (dest.rs:1216-1235)."""
    common = ["--mode", "class2", "--nak-mode", nak_mode, "--nak-limit", str(limit)]
    rules = [Rule("forward", "file_data", offset=1024)]
    sent, received, _ = transfer(tmp_path, binary, common, rules=rules)
    assert received is not None
    assert received["outcome"] == "cancelled", received
    assert received["receiver_condition"] == "nak_limit_reached"
    assert received["pdus_sent"]["nak"] == naks
    assert received["file_bytes_delivered"] == 0
    assert sent["outcome"] == "cancelled", sent
    assert sent["sender_condition"] == "nak_limit_reached"


def test_nak_retransmission_completes(tmp_path: Path, binary: Path) -> None:
    """Deferred NAKs: the NAK comes after the EOF. An immediate NAK can
    reach cfdp-rs between its last new segment and its EOF, now that the
    harness reads between sends; cfdp-rs then counts the resent segment as
    progress and its EOF gives the file size plus that segment's length (on
    loopback, 7 of 15 such runs ended in NAK Limit Reached: the finding
    cfdp-rs-0.3.0-retransmission-counted-as-progress)."""
    rules = [Rule("forward", "file_data", offset=1024, times=[1])]
    common = ["--mode", "class2", "--nak-mode", "deferred"]
    sent, received, _ = transfer(tmp_path, binary, common, rules=rules)
    assert received is not None
    assert received["outcome"] == "completed", received
    assert received["payload_ok"] is True
    assert received["pdus_sent"]["nak"] >= 1
    assert sent["outcome"] == "completed"


@pytest.mark.parametrize(
    ("handler", "limit", "condition"),
    [
        ("ignore", 0, "check_limit_reached"),
        ("ignore", 2, "check_limit_reached"),
        ("cancel", 0, "check_limit_reached"),
        # The model's handler for checksum failure (notice of cancellation)
        # ends the transaction at the first check-timer expiry that still
        # fails: checksum_verify's fault sets TransferCompletion before the
        # check count is looked at (dest.rs:1485-1490, 1540-1570).
        ("cancel", 1, "file_checksum_failure"),
    ],
)
def test_class1_check_limit(
    tmp_path: Path, binary: Path, handler: str, limit: int, condition: str
) -> None:
    common = ["--mode", "class1", "--check-limit", str(limit)]
    common += ["--checksum-fault-handler", handler]
    rules = [Rule("forward", "file_data", offset=1024)]
    _, received, _ = transfer(tmp_path, binary, common, rules=rules)
    assert received is not None
    assert received["outcome"] == "cancelled", received
    assert received["receiver_condition"] == condition
    if handler == "ignore":
        # the check fails at EOF and at each of the limit + 1 expiries
        assert f"ignore file_checksum_failure x{limit + 2}" in received["detail"]


def test_receiver_ack_limit(tmp_path: Path, binary: Path) -> None:
    """Every ACK(Finished) is lost: the receiver sends Finished and one
    retransmission (ack limit 1), declares Positive ACK Limit Reached
    (notice of cancellation: Finished(cancel), twice), then abandons. It
    had already indicated the transaction finished with no error and
    delivered the file (dest.rs:1687-1699, 1729-1777)."""
    common = ["--mode", "class2", "--ack-limit", "1"]
    rules = [Rule("forward", "ack")]
    sent, received, _ = transfer(tmp_path, binary, common, rules=rules)
    assert received is not None
    assert sent["outcome"] == "completed", sent
    assert received["outcome"] == "abandoned", received
    assert received["receiver_condition"] == "positive_ack_limit_reached"
    assert received["pdus_sent"]["finished(no_error)"] == 2
    assert received["pdus_sent"]["finished(positive_ack_limit_reached)"] == 2
    assert received["file_bytes_delivered"] == 3000
    assert received["payload_ok"] is True


def test_requests_cfdprs_cannot_make(tmp_path: Path, binary: Path) -> None:
    suspend = {
        "request": "suspend",
        "after": {"direction": "forward", "match": {"directive": "metadata"}},
    }
    prompt = {
        "request": "prompt_nak",
        "after": {"direction": "forward", "match": {"directive": "eof"}},
    }
    never = {"request": "cancel", "after": {"direction": "return", "match": {"directive": "nak"}}}
    args = [a for r in (suspend, prompt, never) for a in ("--request", json.dumps(r))]
    sent, received, _ = transfer(tmp_path, binary, ["--mode", "class2"], send_args=args)
    assert received is not None
    assert sent["outcome"] == received["outcome"] == "completed"
    reqs = {r["request"]: r for r in sent["requests"]}
    assert reqs["suspend"]["made"] is False
    assert "Suspend.request" in reqs["suspend"]["detail"]
    assert reqs["prompt_nak"]["made"] is False
    assert "Prompt" in reqs["prompt_nak"]["detail"]
    assert reqs["cancel"]["made"] is False
    assert "trigger never seen" in reqs["cancel"]["detail"]


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("--seq-len", "3", "sequence numbers of 1, 2, 4 or 8"),
        ("--entity-id-len", "5", "entity IDs of 1, 2, 4 or 8"),
        ("--segment-size", "5000", "buffer of 4096"),
    ],
)
def test_unsupported_widths_are_errors(
    tmp_path: Path, binary: Path, option: str, value: str, words: str
) -> None:
    result = ct.run_alone([str(binary)], "send", ["--file-len", "10", option, value], tmp_path)
    assert result["outcome"] == "error"
    assert words in result["detail"]


# ---------------------------------------------------------------------------
# cfdp-rs <-> cfdp-py (suts/cfdp/cfdppy/harness.py, same command line)


def cfdppy_argv0() -> list[str]:
    if not CFDPPY_HARNESS.exists():
        pytest.skip("suts/cfdp/cfdppy/harness.py not present")
    if not VENV_PYTHON.exists():
        pytest.skip(f"{VENV_PYTHON} not found")
    probe = subprocess.run(
        [str(VENV_PYTHON), "-c", "import cfdppy"], capture_output=True, timeout=60, check=False
    )
    if probe.returncode != 0:
        pytest.skip("cfdp-py is not importable in .venv")
    return [str(VENV_PYTHON), str(CFDPPY_HARNESS)]


@pytest.mark.parametrize("direction", ["rs-to-py", "py-to-rs"])
def test_cross_with_cfdppy_class2(tmp_path: Path, binary: Path, direction: str) -> None:
    py = cfdppy_argv0()
    rs = [str(binary)]
    tx, rx = (rs, py) if direction == "rs-to-py" else (py, rs)
    sent, received, _ = transfer(
        tmp_path, binary, ["--mode", "class2"], sender_argv0=tx, receiver_argv0=rx
    )
    assert received is not None
    assert sent["outcome"] == "completed", sent
    assert received["outcome"] == "completed", received
    assert received["file_bytes_delivered"] == 3000
    assert received["payload_ok"] is True


def test_a_nak_reaches_a_sender_still_sending(tmp_path: Path, binary: Path) -> None:
    """The harness reads the network between every PDU it sends: a NAK
    reaches cfdp-rs mid-transfer (suts/cfdp/common/testing.py). When the
    harness ran the state machine up to 256 times between socket reads, up
    to 256 new segments came first, and the finding below stayed hidden.

    cfdp-rs 0.3.0 counts a retransmitted segment as progress: its source
    handler sends new File Data at ``progress`` and adds each sent
    segment's length to it, and it answers a NAK through the same function
    (src/source.rs 1022-1053, prepare_and_send_file_data_pdu; called from
    handle_retransmission, 737-766). Once it has resent the NAKed segment,
    its next new segment starts one segment further on: one segment of the
    first pass is never sent before the EOF
    (reports/findings/cfdp/cfdp-rs-0.3.0-retransmission-counted-as-progress.md)."""
    seg, n = 256, 4000
    arrivals = ct.nak_reaches_sender_still_sending([str(binary)], PAIR, tmp_path, seg=seg, n=n)
    sent = {o for k, o, _ in arrivals if k == "file_data"}
    skipped = sorted(set(range(0, seg * n, seg)) - sent)
    assert len(skipped) == 1, skipped[:10]
    assert skipped[0] > 0  # the new segment after the resent one, never the NAKed one


def test_the_harness_socket_holds_a_burst(tmp_path: Path, binary: Path) -> None:
    """16 MiB of receive buffer (suts/sockbuf.rs, which licklider's harness
    shares)."""
    ct.assert_socket_holds_a_burst([str(binary)], tmp_path)
