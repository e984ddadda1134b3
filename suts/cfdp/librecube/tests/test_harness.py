"""End-to-end tests of suts/cfdp/librecube/harness.py: real LibreCube cfdp 0.2.0
transfers over 127.0.0.1, each role in its own process (run by the venv of
suts/cfdp/librecube/setup.sh), and cross transfers with the cfdp-py harness
(suts/cfdp/cfdppy/harness.py, dtnconform's venv). Some tests put a small lossy UDP
relay (a thread in this process) between the roles. Run with:

    .venv/bin/pytest suts/cfdp/librecube/tests
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from suts.cfdp.common import testing as ct
from suts.cfdp.common.testing import CANCEL_AFTER_FD_1024, Rule

pytestmark = pytest.mark.integration

HERE = Path(__file__).resolve().parents[1]
REPO = HERE.parents[2]
HARNESS = HERE / "harness.py"
VENV_PY = HERE / ".venv" / "bin" / "python"
CFDPPY = [sys.executable, str(REPO / "suts" / "cfdp" / "cfdppy" / "harness.py")]
LIBRECUBE = [str(VENV_PY), str(HARNESS)]

if not VENV_PY.exists():
    pytest.skip(
        "suts/cfdp/librecube/.venv is missing: run suts/cfdp/librecube/setup.sh (LibreCube cfdp 0.2.0)",
        allow_module_level=True,
    )

# What LibreCube can take (README.md): 1-octet entity IDs (the fewest octets
# IDs 1 and 2 need), 1-octet sequence numbers, the modular checksum, deferred
# NAKs, no PDU CRC. Short timers so that every limit is reached within a second.
COMMON = [
    "--entity-id-len",
    "1",
    "--seq-len",
    "1",
    "--checksum",
    "modular",
    "--nak-mode",
    "deferred",
    "--segment-size",
    "1024",
    *ct.timers(250, time_limit_ms=8000, linger_ms=300),
    "--inactivity-ms",
    "3000",
]


def needs_cfdppy() -> None:
    if importlib.util.find_spec("cfdppy") is None:
        pytest.skip("cfdp-py is not installed in dtnconform's venv (make setup)")


# LibreCube both ways unless a test names a cfdp-py role, 3000 octets; up to
# 15 s to listen, and a role may end before it listens (an "error" result).
PAIR = ct.Pair(LIBRECUBE, before=COMMON, launch=ct.Launch(wait_s=15.0, exit_ok=True))
transfer = PAIR.transfer


def librecube_alone(tmp_path: Path, role: str, args: list[str]) -> dict[str, Any]:
    return ct.run_alone(LIBRECUBE, role, args, tmp_path / role)


# --------------------------------------------------------------------------


def test_tables_match_the_spec() -> None:
    """The harness's Table 5-4/5-5 names are those of specs/cfdp/wire.json."""
    ct.check_tables(ct.load_module("librecube_harness", HARNESS))


@pytest.mark.parametrize("mode", ["class1", "class2"])
def test_nominal_transfer_completes(tmp_path: Path, mode: str) -> None:
    sent, received, _ = transfer(tmp_path, ["--mode", mode])
    assert received is not None
    assert sent["outcome"] == "completed", sent
    assert sent["sender_condition"] == "no_error"
    ct.assert_delivered(received, tmp_path / "r")
    assert sent["pdus_sent"]["file_data"] == 3  # 1024 + 1024 + 952
    assert sent["implementation"] == "LibreCube cfdp 0.2.0"
    assert sent["told_session"] == [1, 1]  # its Transaction.indication's ID
    # its File-Segment-Recv.indications: one per File Data PDU, as sent
    assert received["told_segments"] == [[0, 1024], [1024, 1024], [2048, 952]]
    if mode == "class2":
        assert received["pdus_sent"] == {"ack(eof,no_error)": 1, "finished(no_error)": 1}
        assert sent["pdus_sent"]["ack(finished,no_error)"] == 1
    else:
        assert received["pdus_sent"] == {}


@pytest.mark.parametrize("role", ["send", "recv"])
def test_class1_closure_is_an_error(tmp_path: Path, role: str) -> None:
    """LibreCube 0.2.0 has no Class 1 closure (put's closure_requested is
    'not implemented', core.py:159): both roles refuse the configuration."""
    args = [*COMMON, "--mode", "class1-closure", "--file-len", "3000"]
    result = librecube_alone(tmp_path, role, args)
    assert result["outcome"] == "error"
    assert "closure_requested is 'not implemented' (core.py:159)" in result["detail"]


@pytest.mark.parametrize(
    ("role", "option", "value", "words"),
    [
        ("send", "--pdu-crc", "1", "PDUs with CRC are not yet supported"),
        ("recv", "--pdu-crc", "1", "pdu/header.py:132-134"),
        ("send", "--checksum", "crc32", "NotImplementedError"),
        ("send", "--checksum", "null", "always names the modular checksum"),
        ("recv", "--checksum", "null", "verifies every file with the modular checksum"),
        ("send", "--entity-id-len", "2", "in 1 octet(s) only"),
        ("recv", "--entity-id-len", "2", "in 1 octet(s) only"),
        ("send", "--seq-len", "4", "1-octet sequence numbers only"),
        ("recv", "--nak-mode", "immediate", "only the deferred procedure"),
    ],
)
def test_what_librecube_cannot_take_is_an_error(
    tmp_path: Path, role: str, option: str, value: str, words: str
) -> None:
    result = librecube_alone(tmp_path, role, [*COMMON, "--file-len", "10", option, value])
    assert result["outcome"] == "error", result
    assert words in result["detail"]


def test_what_librecube_can_take(tmp_path: Path) -> None:
    """A receiver's own --seq-len is ignored (it answers with the sender's
    number, here 255 in LibreCube's one octet; a wider one is cut to its low
    octet, the finding librecube-0.2.0-sequence-number-truncated-in-replies);
    entity IDs needing
    3 octets are sent in 3; a Class 1 receiver takes 2-octet IDs (it sends
    nothing); a sender may have an immediate --nak-mode (a receiver's knob)."""
    big = ["--entity-id-len", "3", "--seq-num", "255"]
    sent, received, _ = transfer(
        tmp_path,
        ["--mode", "class2"],
        send_args=[
            *big,
            "--entity-id",
            "70000",
            "--peer-entity-id",
            "9",
            "--nak-mode",
            "immediate",
        ],
        recv_args=[*big, "--entity-id", "9", "--peer-entity-id", "70000", "--seq-len", "8"],
    )
    assert received is not None
    assert sent["outcome"] == "completed", sent
    ct.assert_delivered(received, tmp_path / "r")


def test_cancel_at_sender_class1(tmp_path: Path) -> None:
    """CfdpEntity.cancel right after the File Data at 1024 was sent: the
    Cancel.request event is queued behind the next File Data event
    (sender1.py:53-63), so the last segment still goes out; then EOF(cancel)
    and Transaction-Finished.indication (sender1.py:69-72, 89-91). The Class 1
    receiver ends at that EOF with its condition (receiver1.py:125-128)."""
    sent, received, _ = transfer(
        tmp_path, ["--mode", "class1"], send_args=["--request", CANCEL_AFTER_FD_1024]
    )
    assert received is not None
    assert sent["requests"][0]["made"] is True
    assert (sent["outcome"], sent["sender_condition"]) == ("cancelled", "cancel_request_received")
    assert sent["pdus_sent"] == {"eof(cancel_request_received)": 1, "file_data": 3, "metadata": 1}
    assert received["outcome"] == "cancelled", received
    assert received["receiver_condition"] == "cancel_request_received"
    assert (received["file_bytes_delivered"], received["payload_ok"]) == (0, None)


def test_cancel_at_sender_class2(tmp_path: Path) -> None:
    """As in Class 1 the last segment still goes out. Then the event that
    would have entered SEND_EOF (sender2.py:77-80) is taken by
    TRANSACTION_CANCELLED, whose own entry event follows: EOF(cancel) is sent
    twice (sender2.py:253-260). The receiver acknowledges it and ends
    (receiver2.py:122-127); the sender ends at the ACK (sender2.py:281-284)."""
    sent, received, _ = transfer(
        tmp_path, ["--mode", "class2"], send_args=["--request", CANCEL_AFTER_FD_1024]
    )
    assert received is not None
    assert sent["requests"][0]["made"] is True
    assert (sent["outcome"], sent["sender_condition"]) == ("cancelled", "cancel_request_received")
    assert sent["pdus_sent"]["file_data"] == 3
    assert sent["pdus_sent"]["eof(cancel_request_received)"] == 2
    assert "eof(no_error)" not in sent["pdus_sent"]
    assert sent["pdus_received"]["ack(eof,cancel_request_received)"] >= 1
    assert received["outcome"] == "cancelled", received
    assert received["receiver_condition"] == "cancel_request_received"
    assert received["pdus_sent"]["ack(eof,cancel_request_received)"] >= 1
    assert (received["file_bytes_delivered"], received["payload_ok"]) == (0, None)


def test_class2_without_receiver_abandons(tmp_path: Path) -> None:
    """ACK limit L=1 -> expiration limit 2. Expiry 1: EOF again; expiry 2: the
    fault, and EOF(no error) once more (sender2.py:208-212); the cancel
    handler makes it a Cancel.request (base.py:142-144): EOF(cancel) with
    cancel_request_received (sender2.py:254-260). The ACK timer's count is
    never reset (timer.py:28-39), so its next expiry abandons
    (sender2.py:292-295): three expiries of the 250 ms timer in all."""
    t0 = time.monotonic()
    sent, _, _ = transfer(tmp_path, ["--mode", "class2", "--ack-limit", "1"], receiver=False)
    assert sent["outcome"] == "abandoned", sent
    assert sent["sender_condition"] == "cancel_request_received"
    assert sent["pdus_sent"]["eof(no_error)"] == 3
    assert sent["pdus_sent"]["eof(cancel_request_received)"] == 1
    assert "faults declared: positive_ack_limit_reached" in sent["detail"]
    assert 0.7 <= sent["duration_s"] <= 3.0
    assert time.monotonic() - t0 < 10


@pytest.mark.parametrize(("limit", "naks"), [(0, 2), (1, 3)])
def test_nak_limit_mapping(tmp_path: Path, limit: int, naks: int) -> None:
    """Every copy of the File Data at 1024 lost. NAK limit L -> expiration
    limit L+1: the NAK at EOF, one at each of the first L expiries, and at
    the (L+1)-th the fault plus one more NAK (receiver2.py:230-238). The
    cancel sends Finished(cancel_request_received) (receiver2.py:379-383)."""
    common = ["--mode", "class2", "--nak-limit", str(limit)]
    sent, received, _ = transfer(
        tmp_path, common, rules=[Rule("forward", "file_data", offset=1024)]
    )
    assert received is not None
    assert received["outcome"] == "cancelled", received
    assert received["receiver_condition"] == "cancel_request_received"
    assert "faults declared: nak_limit_reached" in received["detail"]
    assert received["pdus_sent"]["nak"] == naks
    assert received["pdus_sent"]["finished(cancel_request_received)"] == 1
    assert (sent["outcome"], sent["sender_condition"]) == ("cancelled", "cancel_request_received")


def test_nak_retransmission_completes(tmp_path: Path) -> None:
    """One File Data lost: the receiver NAKs after the EOF, the sender sends
    the whole gap back in one PDU (sender2.py:380-410), and the receiver
    completes at its next NAK-timer expiry (receiver2.py:230-234)."""
    rules = [Rule("forward", "file_data", offset=1024, times=[1])]
    sent, received, _ = transfer(tmp_path, ["--mode", "class2"], rules=rules)
    assert received is not None
    assert sent["outcome"] == "completed", sent
    ct.assert_delivered(received, tmp_path / "r")
    assert received["pdus_sent"]["nak"] >= 1  # 1 unless the gap is filled after 250 ms


@pytest.mark.parametrize("handler", ["cancel", "ignore"])
def test_class2_checksum_failure(tmp_path: Path, handler: str) -> None:
    """One File Data octet flipped. On entering SEND_FINISHED the receiver
    declares File Checksum Failure but goes on: it keeps the file and sends
    Finished(no error) (receiver2.py:279-296). With the cancel handler the
    queued Cancel.request sets cancel_request_received (receiver2.py:353-355)
    and then, unless the ACK of that Finished is handled first (a race in
    LibreCube's event queue), sends Finished(cancel_request_received)
    (receiver2.py:379-383); the sender completes on the first Finished, the
    receiver ends cancelled at the ACK (receiver2.py:330-332 or 410-413).
    With ignore both complete, the file corrupt."""
    rules = [Rule("forward", "file_data", offset=1024, times=[1], act="corrupt")]
    common = ["--mode", "class2", "--checksum-fault-handler", handler]
    sent, received, _ = transfer(tmp_path, common, rules=rules)
    assert received is not None
    assert "faults declared: file_checksum_failure" in received["detail"]
    assert received["pdus_sent"]["finished(no_error)"] == 1
    assert sent["outcome"] == "completed", sent
    if handler == "cancel":
        assert received["outcome"] == "cancelled", received
        assert received["receiver_condition"] == "cancel_request_received"
        assert received["pdus_sent"].get("finished(cancel_request_received)", 0) <= 1
        assert (received["file_bytes_delivered"], received["payload_ok"]) == (0, None)
    else:
        assert received["outcome"] == "completed", received
        assert (received["file_bytes_delivered"], received["payload_ok"]) == (3000, False)


@pytest.mark.parametrize("act", ["corrupt", "drop"])
def test_class1_checksum_failure_is_lost(tmp_path: Path, act: str) -> None:
    """Class 1, the File Data at 1024 corrupted or lost: Receiver1 declares
    File Checksum Failure at the EOF but completes in the same step, data
    complete (receiver1.py:104-123); the Cancel.request the fault queued
    reaches a COMPLETED machine and is dropped. Completed, the file corrupt
    (a lost segment is a hole of zeros in LibreCube's temporary file)."""
    rules = [Rule("forward", "file_data", offset=1024, times=[1], act=act)]
    _, received, _ = transfer(tmp_path, ["--mode", "class1"], rules=rules)
    assert received is not None
    assert received["outcome"] == "completed", received
    assert "faults declared: file_checksum_failure" in received["detail"]
    assert (received["file_bytes_delivered"], received["payload_ok"]) == (3000, False)


def test_class1_lost_eof_inactivity(tmp_path: Path) -> None:
    """No EOF: Receiver1's inactivity timer (restarted by every PDU,
    receiver1.py:32-33) declares Inactivity; its cancel ends the transaction
    with cancel_request_received (receiver1.py:130-136, 93-94)."""
    common = ["--mode", "class1", "--inactivity-ms", "400"]
    _, received, _ = transfer(tmp_path, common, rules=[Rule("forward", "eof")])
    assert received is not None
    assert received["outcome"] == "cancelled", received
    assert received["receiver_condition"] == "cancel_request_received"
    assert "faults declared: inactivity_detected" in received["detail"]


def test_class2_lost_metadata_and_data_stops_the_receiver(tmp_path: Path) -> None:
    """Metadata and every File Data lost once: the receiver's NAK after the
    EOF asks for the Metadata too (segment 0-0, base.py:289-301); the
    Metadata that comes back meets GET_MISSING_DATA with no file open, which
    calls a method Receiver2 does not have (``self.open_temp_file``,
    receiver2.py:208): AttributeError in LibreCube's event thread."""
    rules = [Rule("forward", "metadata", times=[1]), Rule("forward", "file_data", times=[1])]
    _, received, _ = transfer(
        tmp_path,
        ["--mode", "class2"],
        send_args=["--time-limit-ms", "1500"],
        rules=rules,
    )
    assert received is not None
    assert received["outcome"] == "open", received
    assert "AttributeError" in received["detail"]
    assert "machines/receiver2.py:208" in received["detail"]
    assert received["pdus_sent"] == {"ack(eof,no_error)": 1, "nak": 1}


def test_cancel_at_receiver_class2(tmp_path: Path) -> None:
    """CfdpEntity.cancel at the receiver after the File Data at 1024: it
    sends Finished(cancel_request_received) (receiver2.py:142-144, 379-383);
    the sender, acknowledging it (sender2.py:107-111 or 202-206), ends
    cancelled too."""
    sent, received, _ = transfer(
        tmp_path, ["--mode", "class2"], recv_args=["--request", CANCEL_AFTER_FD_1024]
    )
    assert received is not None
    assert received["requests"][0]["made"] is True
    assert (received["outcome"], received["receiver_condition"]) == (
        "cancelled",
        "cancel_request_received",
    )
    assert received["pdus_sent"]["finished(cancel_request_received)"] >= 1
    assert (sent["outcome"], sent["sender_condition"]) == ("cancelled", "cancel_request_received")


def test_requests_librecube_cannot_or_can_make(tmp_path: Path) -> None:
    """Suspend right after the Metadata (in SEND_FILE), resume 100 ms later:
    the file goes on and the transfer completes. No Prompt service."""
    send_args = ct.SUSPEND_PROMPT_AND_UNSEEN_CANCEL
    sent, received, _ = transfer(tmp_path, ["--mode", "class2"], send_args=send_args)
    assert received is not None
    assert sent["outcome"] == "completed", sent
    ct.assert_delivered(received, tmp_path / "r")
    made = {r["request"]: r for r in sent["requests"]}
    assert made["suspend"]["made"] is True and "CfdpEntity.resume" in made["suspend"]["detail"]
    assert "Suspended.indication x1, Resumed.indication x1" in sent["detail"]
    assert (
        made["prompt_nak"]["made"] is False and "no Prompt service" in made["prompt_nak"]["detail"]
    )
    assert made["cancel"]["made"] is False and "never seen" in made["cancel"]["detail"]


def test_resume_after_eof_stops_the_entity(tmp_path: Path) -> None:
    """Suspend after the EOF, no receiver: the Resume.request in SEND_EOF
    calls a method Sender2 does not have (``self._resume_inactivity_timer``,
    sender2.py:184): AttributeError in LibreCube's event thread, which ends,
    and the entity with it. The transaction never ends: ``timeout``."""
    suspend = {
        "request": "suspend",
        "after": {"direction": "forward", "match": {"directive": "eof"}},
        "resume_after_ms": 100,
    }
    sent, _, _ = transfer(
        tmp_path,
        ["--mode", "class2"],
        send_args=["--request", json.dumps(suspend)],
        receiver=False,
    )
    assert sent["outcome"] == "open", sent
    assert "AttributeError" in sent["detail"] and "machines/sender2.py:184" in sent["detail"]
    assert sent["requests"][0]["made"] is True


# --------------------------------------------------------------------------
# Cross transfers with cfdp-py 0.7.0 (suts/cfdp/cfdppy/harness.py), Class 2
# --------------------------------------------------------------------------


def test_cross_librecube_to_cfdppy(tmp_path: Path) -> None:
    needs_cfdppy()
    sent, received, _ = transfer(tmp_path, ["--mode", "class2"], receiver_prog=CFDPPY)
    assert received is not None
    assert received["implementation"] == "cfdp-py 0.7.0"
    assert sent["outcome"] == "completed", sent
    ct.assert_delivered(received, tmp_path / "r")
    assert sent["pdus_received"] == {"ack(eof,no_error)": 1, "finished(no_error)": 1}


def test_cross_cfdppy_to_librecube(tmp_path: Path) -> None:
    needs_cfdppy()
    sent, received, _ = transfer(tmp_path, ["--mode", "class2"], sender_prog=CFDPPY)
    assert received is not None
    assert sent["implementation"] == "cfdp-py 0.7.0"
    assert sent["outcome"] == "completed", sent
    ct.assert_delivered(received, tmp_path / "r")
    assert received["pdus_sent"] == {"ack(eof,no_error)": 1, "finished(no_error)": 1}


@pytest.mark.parametrize("direction", ["librecube_to_cfdppy", "cfdppy_to_librecube"])
def test_cross_nak_retransmission(tmp_path: Path, direction: str) -> None:
    """The File Data at 1024 lost once: each receiver NAKs after the EOF
    (deferred), each sender fills the gap, both complete."""
    needs_cfdppy()
    to_cfdppy = direction == "librecube_to_cfdppy"
    rules = [Rule("forward", "file_data", offset=1024, times=[1])]
    sent, received, _ = transfer(
        tmp_path,
        ["--mode", "class2"],
        rules=rules,
        sender_prog=None if to_cfdppy else CFDPPY,
        receiver_prog=CFDPPY if to_cfdppy else None,
    )
    assert received is not None
    assert sent["outcome"] == "completed", sent
    ct.assert_delivered(received, tmp_path / "r")
    assert received["pdus_sent"]["nak"] >= 1  # 1 unless the gap is filled after 250 ms
    assert sent["pdus_sent"]["file_data"] >= 4


def test_cross_cancel_librecube_to_cfdppy(tmp_path: Path) -> None:
    """LibreCube cancels; its EOF(cancel) is right on the wire (condition
    octet 0xF0, pdu/eof.py:52). cfdp-py deviates: spacepackets 0.32.0 reads
    the condition as ``octet & 0xF0`` without the shift (cfdp/pdu/eof.py:150),
    i.e. 240, and packing the ACK(EOF) with it raises ValueError
    (cfdp/pdu/ack.py:116): the cfdp-py receiver stops unanswering. LibreCube
    sends EOF(cancel) twice (see test_cancel_at_sender_class2), once more at
    the first ACK-timer expiry, and abandons at the second (ACK limit 1)."""
    needs_cfdppy()
    sent, received, _ = transfer(
        tmp_path,
        ["--mode", "class2"],
        send_args=["--request", CANCEL_AFTER_FD_1024],
        receiver_prog=CFDPPY,
    )
    assert received is not None
    assert (sent["outcome"], sent["sender_condition"]) == ("abandoned", "cancel_request_received")
    assert sent["pdus_sent"]["eof(cancel_request_received)"] == 3
    assert received["outcome"] == "open", received
    assert "ValueError" in received["detail"] and "condition_240" in received["detail"]


def test_cross_cancel_cfdppy_to_librecube(tmp_path: Path) -> None:
    """cfdp-py cancels; LibreCube acknowledges the EOF(cancel) and ends
    cancelled (receiver2.py:122-127), as the model has it. cfdp-py deviates:
    after any ACK(EOF) its SourceHandler waits for a Finished
    (cfdppy/handler/source.py:759-762), also after an EOF(cancel), whose
    ACK ends the transaction (4.11.2.2, specs/cfdp/CFDP.tla SenderRxCancelAck);
    with no inactivity timer it waits until the time limit."""
    needs_cfdppy()
    sent, received, _ = transfer(
        tmp_path,
        ["--mode", "class2"],
        send_args=["--request", CANCEL_AFTER_FD_1024, "--time-limit-ms", "2500"],
        sender_prog=CFDPPY,
    )
    assert received is not None
    assert received["outcome"] == "cancelled", received
    assert received["receiver_condition"] == "cancel_request_received"
    assert received["pdus_sent"] == {"ack(eof,cancel_request_received)": 1}
    assert sent["outcome"] == "open", sent
    assert sent["pdus_received"] == {"ack(eof,cancel_request_received)": 1}
    assert "WAITING_FOR_FINISHED" in sent["detail"]
