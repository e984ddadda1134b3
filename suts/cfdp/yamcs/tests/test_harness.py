"""End-to-end tests of suts/cfdp/yamcs/harness.py: real Yamcs 5.13.2 CFDP
transfers over 127.0.0.1, each role in its own process as dtnconform runs
them, against cfdp-py 0.7.0 (suts/cfdp/cfdppy/harness.py) and against Yamcs.

Each Yamcs role starts its own JVM (~2-4 s). Some tests put a small lossy
UDP relay (a thread in this process) between the roles. Run with:

    .venv/bin/pytest suts/cfdp/yamcs/tests -m integration
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from suts.cfdp.common import testing as ct
from suts.cfdp.common.testing import PATTERN_3000, Rule, cancel_after

pytestmark = pytest.mark.integration

HERE = Path(__file__).resolve().parents[1]
YAMCS = HERE / "harness.py"
CFDPPY = HERE.parent / "cfdppy" / "harness.py"
PROGS = {"yamcs": [sys.executable, str(YAMCS)], "cfdppy": [sys.executable, str(CFDPPY)]}
LIB = HERE / "lib"
# 3000 octets in 1024-octet segments; short timers: every limit is reached
# within a second or two. A Yamcs receiver binds --listen only once Yamcs is
# up (a JVM, ~2-4 s), as dtnconform waits for the receiver's port.
PAIR = ct.Pair(
    [],
    after=ct.timers(300, time_limit_ms=8000, linger_ms=300),
    send=["--file-len", "3000", "--segment-size", "1024"],
    launch=ct.Launch(wait_s=60.0, poll_s=0.05, timeout=60.0),
)


def _missing() -> str:
    if shutil.which("java") is None:
        return "java not found (apt-get install default-jdk-headless)"
    if not (LIB / "yamcs-core-5.13.2.jar").exists():
        return f"Yamcs not installed: {LIB} has no yamcs-core-5.13.2.jar (run suts/cfdp/yamcs/setup.sh)"
    return ""


if _missing():
    pytest.skip(_missing(), allow_module_level=True)


def transfer(
    tmp_path: Path, sender: str, receiver: str | None, common: list[str], **options: Any
) -> tuple[dict[str, Any], dict[str, Any] | None, ct.Relay | None]:
    """One transfer, ``sender`` and ``receiver`` "yamcs" or "cfdppy" (None:
    no receiver); the receiver starts first."""
    rx = PROGS[receiver] if receiver is not None else None
    return PAIR.transfer(
        tmp_path,
        common,
        receiver=rx is not None,
        sender_prog=PROGS[sender],
        receiver_prog=rx,
        **options,
    )


# --------------------------------------------------------------------------
# No Yamcs needed
# --------------------------------------------------------------------------


def test_tables_match_the_spec() -> None:
    """The harness's Table 5-4/5-5 names are those of specs/cfdp/wire.json,
    and every Yamcs ConditionCode maps onto one of them."""
    harness = ct.load_module("dtnc_yamcs_harness", YAMCS)
    ct.check_tables(harness)
    assert set(harness.YAMCS_CONDITIONS.values()) - {""} <= set(
        harness.common.CONDITION_NAMES.values()
    )
    # failureReason texts Yamcs writes (OngoingCfdpTransfer.failTransfer etc.)
    assert harness.failure_condition("Cancel request received; ACK_LIMIT_REACHED") == (
        "positive_ack_limit_reached"
    )
    assert harness.failure_condition("Canceled by the Sender") == "cancel_request_received"
    assert harness.failure_condition("service shutdown") is None


def test_unsupported_knobs_are_errors(tmp_path: Path) -> None:
    """Knobs Yamcs cannot take are refused before Yamcs starts."""
    for role, args, text in (
        ("send", ["--file-len", "10", "--pdu-crc", "1"], "never sends a PDU CRC"),
        ("recv", ["--checksum-fault-handler", "ignore"], "abandon only"),
        ("send", ["--file-len", "10", "--request", '{"request": "prompt_nak"}'], "after"),
    ):
        result = ct.run_alone(PROGS["yamcs"], role, args, tmp_path)
        assert result["outcome"] == "error", result
        assert text in result["detail"], result


# --------------------------------------------------------------------------
# Nominal transfers
# --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["class2", "class1"])
def test_yamcs_sends_to_cfdppy(tmp_path: Path, mode: str) -> None:
    """Yamcs -> cfdp-py, 3000 octets in 1024-octet segments: both complete."""
    sent, received, _ = transfer(tmp_path, "yamcs", "cfdppy", ["--mode", mode])
    assert received is not None
    assert (sent["outcome"], sent["sender_condition"]) == ("completed", "no_error"), sent
    assert received["outcome"] == "completed", received
    assert received["receiver_condition"] == "no_error"
    assert (received["file_bytes_delivered"], received["payload_ok"]) == (3000, True)
    assert (tmp_path / "r" / "dtnc-received.bin").read_bytes() == PATTERN_3000
    assert sent["pdus_sent"]["file_data"] == 3  # 1024 + 1024 + 952
    assert sent["pdus_sent"]["metadata"] == 1 and sent["pdus_sent"]["eof(no_error)"] == 1
    assert sent["implementation"].startswith("Yamcs 5.13.2")
    assert sent["startup_s"] > 0 and "stopped_at" in sent
    if mode == "class2":
        assert received["pdus_sent"] == {"ack(eof,no_error)": 1, "finished(no_error)": 1}
        assert sent["pdus_sent"]["ack(finished,no_error)"] == 1
        assert sent["pdus_received"] == received["pdus_sent"]
    else:
        assert received["pdus_sent"] == {} and sent["pdus_received"] == {}


@pytest.mark.parametrize("mode", ["class2", "class1"])
def test_cfdppy_sends_to_yamcs(tmp_path: Path, mode: str) -> None:
    """cfdp-py -> Yamcs: both complete; Yamcs saves the file in its bucket
    (a folder, --workdir/bucket)."""
    sent, received, _ = transfer(tmp_path, "cfdppy", "yamcs", ["--mode", mode])
    assert received is not None
    assert (sent["outcome"], sent["sender_condition"]) == ("completed", "no_error"), sent
    assert received["outcome"] == "completed", received
    assert received["receiver_condition"] == "no_error"
    assert (received["file_bytes_delivered"], received["payload_ok"]) == (3000, True)
    assert (tmp_path / "r" / "bucket" / "dtnc-received.bin").read_bytes() == PATTERN_3000
    assert received["pdus_received"]["file_data"] == 3
    if mode == "class2":
        # Yamcs acknowledges each EOF it gets. cfdp-py sends its EOF again
        # when the ACK is later than its timer (a loaded machine: CI saw
        # two), so one ACK per EOF received, not exactly one.
        eofs = received["pdus_received"]["eof(no_error)"]
        assert eofs >= 1
        assert received["pdus_sent"] == {"ack(eof,no_error)": eofs, "finished(no_error)": 1}
        assert received["pdus_received"]["ack(finished,no_error)"] == 1
    else:
        assert received["pdus_sent"] == {}
        # the check timer cannot be configured (README)
        assert "check timer is fixed at 10000 ms" in received["detail"]


def test_class1_closure_both_ways(tmp_path: Path) -> None:
    """Class 1 with closure. Yamcs -> cfdp-py: both complete, but Yamcs
    answers the Finished with an ACK (it acknowledges every Finished,
    CfdpOutgoingTransfer.java:346), which a Class 1 receiver drops.
    cfdp-py -> Yamcs: Yamcs's receiver runs its Finished-ACK timer in Class 1
    too (needsFinish, CfdpIncomingTransfer.java:305, sendFin 475-490): it
    sends Finished(no_error) ack-limit + 1 times, no ACK comes, and it ends
    the transaction FAILED 'File was received OK but the Finished PDU has not
    been acknowledged': abandoned, although the file was delivered."""
    common = ["--mode", "class1-closure"]
    sent, received, _ = transfer(tmp_path / "a", "yamcs", "cfdppy", common)
    assert received is not None
    assert (sent["outcome"], received["outcome"]) == ("completed", "completed"), (sent, received)
    assert sent["pdus_sent"]["ack(finished,no_error)"] == 1
    assert received["pdus_sent"] == {"finished(no_error)": 1}
    sent, received, _ = transfer(tmp_path / "b", "cfdppy", "yamcs", [*common, "--ack-limit", "1"])
    assert received is not None
    assert (sent["outcome"], sent["sender_condition"]) == ("completed", "no_error"), sent
    assert received["outcome"] == "abandoned", received
    assert received["receiver_condition"] == "positive_ack_limit_reached"
    assert received["pdus_sent"] == {"finished(no_error)": 2}
    assert (received["file_bytes_delivered"], received["payload_ok"]) == (3000, True)
    assert "Finished PDU has not been acknowledged" in received["detail"]


def test_yamcs_to_yamcs_class2(tmp_path: Path) -> None:
    """Two JVMs on two shared cores: the sender's 300 ms EOF timer may expire
    before the ACK comes (then EOF twice); Yamcs acknowledges every EOF."""
    sent, received, _ = transfer(tmp_path, "yamcs", "yamcs", ["--mode", "class2"])
    assert received is not None
    assert (sent["outcome"], received["outcome"]) == ("completed", "completed"), (sent, received)
    assert (received["file_bytes_delivered"], received["payload_ok"]) == (3000, True)
    assert sent["pdus_sent"] == received["pdus_received"]
    assert received["pdus_sent"] == sent["pdus_received"]
    eofs = sent["pdus_sent"]["eof(no_error)"]
    assert received["pdus_sent"] == {"ack(eof,no_error)": eofs, "finished(no_error)": 1}
    assert sent["pdus_sent"]["ack(finished,no_error)"] == 1


# --------------------------------------------------------------------------
# Checksums
# --------------------------------------------------------------------------


def test_yamcs_sender_cannot_send_crc32(tmp_path: Path) -> None:
    """Yamcs's outgoing transfers take checksumType MODULAR or NULL only: the
    CfdpOutgoingTransfer constructor throws (CfdpOutgoingTransfer.java:
    163-167), so the Put.request is refused (HTTP 500) and no PDU leaves.
    The cfdp-py receiver sees no transaction."""
    common = ["--mode", "class2", "--checksum", "crc32", "--time-limit-ms", "3000"]
    sent, received, _ = transfer(tmp_path, "yamcs", "cfdppy", common)
    assert received is not None
    assert sent["outcome"] == "error", sent
    assert "Checksump type CRC32 not supported" in sent["detail"]
    assert "no PDU was sent" in sent["detail"] and sent["pdus_sent"] == {}
    assert received["outcome"] == "open" and received["receiver_condition"] == ""
    assert received["pdus_received"] == {}


def test_cfdppy_crc32_to_yamcs_is_unsupported(tmp_path: Path) -> None:
    """A Metadata PDU naming CRC32 is answered with the fault Unsupported
    Checksum Type (CfdpIncomingTransfer.java:266-270), notice of
    cancellation: Finished(unsupported_checksum_type), at once. cfdp-py's
    sender ignores a Finished during its file transmission
    (cfdppy/handler/source.py:685-700), so it takes Yamcs's retransmission
    after one ACK timer; both end cancelled with condition 11."""
    sent, received, _ = transfer(tmp_path, "cfdppy", "yamcs", ["--checksum", "crc32"])
    assert received is not None
    assert received["outcome"] == "cancelled", received
    assert received["receiver_condition"] == "unsupported_checksum_type"
    assert received["pdus_sent"]["finished(unsupported_checksum_type)"] == 2
    assert received["file_bytes_delivered"] == 0 and received["payload_ok"] is None
    assert (sent["outcome"], sent["sender_condition"]) == (
        "cancelled",
        "unsupported_checksum_type",
    ), sent


# --------------------------------------------------------------------------
# Limits (README: the model's L onto Yamcs)
# --------------------------------------------------------------------------


def test_yamcs_sender_without_receiver_abandons(tmp_path: Path) -> None:
    """ACK limit L = 2 -> eofAckLimit 2: EOF(no_error) three times (two
    retransmissions), the fault at the third expiry, notice of cancellation:
    EOF(positive_ack_limit_reached). Its timer restarts inside the expiring
    timer's own callback, whose numAttempts++ then runs on the new timer
    (Timer.java:36-44): the EOF(cancel) gets one retransmission only (L-1),
    and the fault during the cancellation ends the transaction at once
    (CfdpOutgoingTransfer.java:479-480): abandoned."""
    common = ["--mode", "class2", "--ack-limit", "2", "--ack-timer-ms", "200"]
    sent, _, _ = transfer(tmp_path, "yamcs", None, common)
    assert sent["outcome"] == "abandoned", sent
    assert sent["sender_condition"] == "positive_ack_limit_reached"
    assert sent["pdus_sent"]["eof(no_error)"] == 3
    assert sent["pdus_sent"]["eof(positive_ack_limit_reached)"] == 2
    assert 0.9 <= sent["duration_s"] <= 3.0  # five expiries of the 200 ms timer


def test_yamcs_receiver_nak_limit(tmp_path: Path) -> None:
    """NAK limit L = 1 -> nakLimit 2: the relay drops every copy of the
    File Data PDU at offset 1024. Yamcs NAKs at the gap (immediate mode),
    once more at the first NAK-timer expiry, and declares NAK Limit Reached
    at the second (CfdpIncomingTransfer.java:211-223): Finished
    (nak_limit_reached), which cfdp-py acknowledges."""
    rules = [Rule("forward", "file_data", offset=1024)]
    common = ["--mode", "class2", "--nak-limit", "1"]
    sent, received, path = transfer(tmp_path, "cfdppy", "yamcs", common, rules=rules)
    assert received is not None and path is not None
    assert received["outcome"] == "cancelled", received
    assert received["receiver_condition"] == "nak_limit_reached"
    assert received["pdus_sent"]["nak"] == 2
    assert received["pdus_sent"]["finished(nak_limit_reached)"] == 1
    assert (sent["outcome"], sent["sender_condition"]) == ("cancelled", "nak_limit_reached")
    assert sent["pdus_sent"]["file_data"] == 5  # 3 + one retransmission per NAK


# --------------------------------------------------------------------------
# Users' requests
# --------------------------------------------------------------------------


def test_cancel_at_yamcs_receiver(tmp_path: Path) -> None:
    """Cancel at the Yamcs receiver after the File Data PDU at 1024: the
    relay holds the rest of the burst until Yamcs has run the request; Yamcs
    sends Finished(cancel_request_received), still acknowledges the EOF
    that follows (CfdpIncomingTransfer.java:358-360), and the cfdp-py
    sender acknowledges the Finished (its first copy ignored during file
    transmission, as above)."""
    req = cancel_after("forward", {"pdu_type": "file_data", "offset": 1024})
    sent, received, _ = transfer(
        tmp_path, "cfdppy", "yamcs", ["--mode", "class2"], recv_args=["--request", req]
    )
    assert received is not None
    assert received["requests"][0]["made"] is True, received
    assert received["outcome"] == "cancelled", received
    assert received["receiver_condition"] == "cancel_request_received"
    assert received["pdus_sent"]["finished(cancel_request_received)"] >= 1
    assert (sent["outcome"], sent["sender_condition"]) == ("cancelled", "cancel_request_received")


def test_cancel_at_yamcs_sender_class1(tmp_path: Path) -> None:
    """Class 1, cancel after the File Data PDU at 1024: Yamcs sends
    EOF(cancel_request_received) and then reports the transfer COMPLETED:
    sendEof completes every Class 1 EOF with NO_ERROR
    (CfdpOutgoingTransfer.java:272-273). The cfdp-py receiver reads that
    EOF's condition as 240 (spacepackets 0.32.0, suts/cfdp/cfdppy/README.md)."""
    req = cancel_after("forward", {"pdu_type": "file_data", "offset": 1024})
    sent, received, _ = transfer(
        tmp_path, "yamcs", "cfdppy", ["--mode", "class1"], send_args=["--request", req]
    )
    assert received is not None
    assert sent["requests"][0]["made"] is True, sent
    # the request lands between two PDUs 50 ms apart (README: requests)
    assert sent["pdus_sent"]["file_data"] in (2, 3), sent
    assert sent["pdus_sent"]["eof(cancel_request_received)"] == 1
    assert "eof(no_error)" not in sent["pdus_sent"]
    assert (sent["outcome"], sent["sender_condition"]) == ("completed", "no_error"), sent
    assert (
        "Yamcs reports COMPLETED although it sent EOF(cancel_request_received)" in (sent["detail"])
    )
    assert received["outcome"] == "cancelled" and received["receiver_condition"] == ""


def test_suspend_and_prompt_at_yamcs_sender(tmp_path: Path) -> None:
    """Suspend (Yamcs's pause) after the first File Data PDU, resumed 400 ms
    later: the transfer completes; a Prompt cannot be made."""
    suspend = json.dumps(
        {
            "request": "suspend",
            "after": {"direction": "forward", "match": {"pdu_type": "file_data", "offset": 0}},
            "resume_after_ms": 400,
        }
    )
    prompt = json.dumps(
        {"request": "prompt_nak", "after": {"direction": "forward", "match": {"directive": "eof"}}}
    )
    sent, received, _ = transfer(
        tmp_path,
        "yamcs",
        "cfdppy",
        ["--mode", "class2"],
        send_args=["--request", suspend, "--request", prompt],
    )
    assert received is not None
    assert (sent["outcome"], received["outcome"]) == ("completed", "completed"), (sent, received)
    assert received["payload_ok"] is True
    made = {r["request"]: r for r in sent["requests"]}
    assert made["suspend"]["made"] is True and "resumed after 400 ms" in made["suspend"]["detail"]
    assert made["prompt_nak"]["made"] is False and "Prompt" in made["prompt_nak"]["detail"]
    assert "PAUSED" in sent["detail"]
    assert sent["duration_s"] >= 0.4
