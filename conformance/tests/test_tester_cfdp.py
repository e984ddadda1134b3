"""The CFDP model-driven tester (conformance/tester/cfdp.py) on loopback:
its two roles against each other through a lossy socket pair, its file
checksums against known values, and what it refuses to play. Its runs
against the four implementations, between namespaces and through trace
validation, are in test_live_tester_cfdp.py."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import zlib
from pathlib import Path
from typing import Any

import pytest

from conformance.core.types import Scenario
from conformance.tester import cfdp
from conformance.tester.core import CannotPlay, Context, Limits, serve
from dissectors.cfdp.layer import parse


def scenario(**params: Any) -> Scenario:
    return Scenario.model_validate(
        {
            "name": "tester-loopback",
            "protocol": "cfdp",
            "params": {"protocol": "cfdp", "file_len": 2500, "segment_size": 1000, **params},
            "expect": {"outcomes": [{"sender_outcome": "completed",
                                     "receiver_outcome": "completed",
                                     "delivered": {"protocol": "cfdp",
                                                   "file_bytes_delivered": 2500}}]},
        }
    )  # fmt: skip


# sha256 of the first 4096 octets of the file every CFDP run sends, as every
# run before the pattern moved into specs/cfdp/wire.json sent them (and as the
# captures in reports/findings hold them). The cfdp-rs harness's unit test pins
# it too.
CFDP_PAYLOAD_4096_SHA256 = "d41d438c379110c7f7b2c561b1f04f26c1b4549110791f8e022f48974280c13e"


def test_file_is_the_pattern_every_run_has_sent() -> None:
    """specs/cfdp/wire.json's payload, as harnesskit reads it for the tester
    and the Python harnesses, gives the octets it always gave, whatever the
    length asked for."""
    file = cfdp.pattern(4096)
    assert hashlib.sha256(file).hexdigest() == CFDP_PAYLOAD_4096_SHA256
    for length in (0, 1, 255, 256, 257, 3000):
        assert cfdp.pattern(length) == file[:length]


def test_checksums_match_known_values() -> None:
    assert cfdp.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    assert cfdp.file_checksum("crc32", b"123456789") == zlib.crc32(b"123456789") == 0xCBF43926
    # modular: 4-octet big-endian words from offset 0, the last zero-padded
    assert cfdp.modular(b"\x00\x00\x00\x01\x00\x00\x00\x02\x01") == 3 + 0x01000000
    assert cfdp.modular(b"\xff\xff\xff\xff\x00\x00\x00\x02") == 1  # modulo 2^32
    assert cfdp.file_checksum("null", b"anything") == 0


def test_refuses_an_empty_file_naming_the_field() -> None:
    scn = scenario()
    cfdp.check(scn, "sender")
    empty = scn.model_copy(update={"params": scn.params.model_copy(update={"file_len": 0})})
    with pytest.raises(CannotPlay, match=r"^params\.file_len: "):
        cfdp.check(empty, "receiver")


class _Lossy(Context):
    """A context whose ``drop`` predicate withholds some of what it sends."""

    def __init__(self, *a: Any, drop: Any = None) -> None:
        super().__init__(*a)
        self.drop = drop or (lambda data: False)
        self.dropped = 0

    def send(self, data: bytes, action: str, **fields: Any) -> None:
        if self.drop(data):
            self.dropped += 1
            self.sent += 1
            self.log(action, **fields, octets=len(data), dropped=True)
            return
        super().send(data, action, **fields)


def exchange(tmp: Path, scn: Scenario, drop_fwd: Any = None) -> dict[str, dict[str, Any]]:
    """Both tester roles over loopback, one thread each; their results."""
    socks = {r: socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for r in ("sender", "receiver")}
    for s in socks.values():
        s.bind(("127.0.0.1", 0))
    addr = {r: s.getsockname() for r, s in socks.items()}
    out: dict[str, dict[str, Any]] = {}

    def play(role: str) -> None:
        peer = addr["receiver" if role == "sender" else "sender"]
        engine, peer_engine = (1, 2) if role == "sender" else (2, 1)
        with (tmp / f"{role}.jsonl").open("w") as log:
            ctx = _Lossy(socks[role], peer, log, drop=drop_fwd if role == "sender" else None)
            cls = cfdp.ROLES[role]
            assert issubclass(cls, cfdp.CfdpSender if role == "sender" else cfdp.CfdpReceiver)
            r = cls(ctx, scn, engine=engine, peer_engine=peer_engine,
                    retransmission_s=0.3, close_wait_s=0.3)  # fmt: skip
            out[role] = serve(r, socks[role], Limits(linger_s=0.5, time_limit_s=15))

    threads = [threading.Thread(target=play, args=(r,)) for r in ("receiver", "sender")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in socks.values():
        s.close()
    return out


def actions(tmp: Path, role: str) -> list[str]:
    return [json.loads(x)["action"] for x in (tmp / f"{role}.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("checksum", ["modular", "crc32", "crc32c", "null"])
def test_class2_transfer_completes(tmp_path: Path, checksum: str) -> None:
    out = exchange(tmp_path, scenario(checksum_type=checksum, pdu_crc=checksum == "crc32"))
    assert out["sender"]["outcome"] == "completed"
    assert out["sender"]["sender_condition"] == "no_error"
    assert out["receiver"]["outcome"] == "completed"
    assert out["receiver"]["file_bytes_delivered"] == 2500
    assert out["receiver"]["payload_ok"] is True
    assert actions(tmp_path, "sender") == [
        "SenderTxMetadata", *["SenderTxFileData"] * 3, "SenderTxEof",
        "SenderRxEofAck", "SenderRxFinished",
    ]  # fmt: skip
    assert actions(tmp_path, "receiver") == [
        "ReceiverRxMetadata", *["ReceiverRxFileData"] * 3, "ReceiverRxEof",
        "ReceiverTxFinished", "ReceiverRxFinishedAck",
    ]  # fmt: skip


def test_lost_segment_is_naked_and_resent(tmp_path: Path) -> None:
    first = {"dropped": False}

    def drop(data: bytes) -> bool:
        pdu = parse(data)
        if pdu.directive_name is None and pdu.offset == 1000 and not first["dropped"]:
            first["dropped"] = True
            return True
        return False

    out = exchange(tmp_path, scenario(), drop_fwd=drop)
    assert out["receiver"]["outcome"] == "completed" and out["receiver"]["payload_ok"] is True
    got = actions(tmp_path, "receiver")
    # segment 2 opens the gap: the immediate NAK (4.6.4.3.1), then the resent segment
    log = [json.loads(x) for x in (tmp_path / "receiver.jsonl").read_text().splitlines()]
    naks = [x for x in log if "NAK" in str(x.get("tx", ""))]
    assert naks and naks[0]["action"] == "ReceiverRxFileData"
    assert "SenderTxRetransmittedData" in actions(tmp_path, "sender")
    assert got.count("ReceiverRxFileData") == 3  # 0, 2, then 1 again


def test_class1_lost_segment_ends_at_the_check_limit(tmp_path: Path) -> None:
    def drop(data: bytes) -> bool:
        pdu = parse(data)
        return pdu.directive_name is None and pdu.offset == 0

    out = exchange(tmp_path, scenario(mode="class1", check_limit=1), drop_fwd=drop)
    assert out["sender"]["outcome"] == "completed"  # Class 1: done at its EOF
    assert out["receiver"]["outcome"] == "cancelled"
    assert out["receiver"]["receiver_condition"] == "check_limit_reached"
    assert out["receiver"]["file_bytes_delivered"] == 0
    assert actions(tmp_path, "receiver")[-2:] == ["ReceiverTimeoutCheck", "ReceiverFaultCheckLimit"]


def test_cancel_from_the_sender_after_the_first_segment(tmp_path: Path) -> None:
    after = {"direction": "forward", "match": {"pdu_type": "file_data", "offset": 0}}
    scn = scenario(requests=[{"entity": "sender", "request": "cancel", "after": after}])
    out = exchange(tmp_path, scn)
    assert actions(tmp_path, "sender") == [
        "SenderTxMetadata", "SenderTxFileData", "SenderCancelTransaction", "SenderRxCancelAck",
    ]  # fmt: skip
    assert out["sender"]["outcome"] == out["receiver"]["outcome"] == "cancelled"
    assert out["sender"]["sender_condition"] == "cancel_request_received"
    assert out["receiver"]["receiver_condition"] == "cancel_request_received"
    assert out["receiver"]["file_bytes_delivered"] == 0
    assert out["sender"]["requests"][0]["made"] is True


def test_request_the_model_has_no_action_for_is_not_made(tmp_path: Path) -> None:
    # a Prompt before the EOF: SenderTxPrompt is enabled only after it
    after = {"direction": "forward", "match": {"directive": "metadata"}}
    scn = scenario(requests=[{"entity": "sender", "request": "prompt_nak", "after": after}])
    out = exchange(tmp_path, scn)
    req = out["sender"]["requests"][0]
    assert req["made"] is False and "SenderTxPrompt is not enabled" in req["detail"]
    assert out["sender"]["outcome"] == "completed"


def test_prompt_after_the_eof_is_answered_by_a_nak(tmp_path: Path) -> None:
    after = {"direction": "forward", "match": {"directive": "eof"}}
    scn = scenario(requests=[{"entity": "sender", "request": "prompt_nak", "after": after}])

    def drop(data: bytes) -> bool:  # the middle segment, once
        pdu = parse(data)
        gone = (
            pdu.directive_name is None
            and pdu.offset == 1000
            and not tmp_path.joinpath("x").exists()
        )
        if gone:
            tmp_path.joinpath("x").touch()
        return gone

    out = exchange(tmp_path, scn, drop_fwd=drop)
    sent = actions(tmp_path, "sender")
    # the Prompt is a step of its own, after the EOF's (CFDP.tla SenderTxPrompt)
    assert sent.index("SenderTxPrompt") == sent.index("SenderTxEof") + 1
    assert out["sender"]["requests"][0]["made"] is True
    assert "ReceiverRxPrompt" in actions(tmp_path, "receiver")
    assert out["receiver"]["outcome"] == "completed" and out["receiver"]["payload_ok"] is True


def test_suspended_sender_pauses_and_resumes_its_transmission(tmp_path: Path) -> None:
    after = {"direction": "forward", "match": {"directive": "metadata"}}
    scn = scenario(requests=[{"entity": "sender", "request": "suspend", "after": after,
                              "resume_after_ms": 400}])  # fmt: skip
    out = exchange(tmp_path, scn)
    assert actions(tmp_path, "sender") == [
        "SenderTxMetadata", "SenderSuspendTransaction", "SenderResumeTransaction",
        *["SenderTxFileData"] * 3, "SenderTxEof", "SenderRxEofAck", "SenderRxFinished",
    ]  # fmt: skip
    log = [json.loads(x) for x in (tmp_path / "sender.jsonl").read_text().splitlines()]
    at = {x["action"]: x["t"] for x in log}
    assert at["SenderResumeTransaction"] - at["SenderSuspendTransaction"] >= 0.4
    assert out["sender"]["requests"][0]["made"] is True
    assert out["sender"]["outcome"] == out["receiver"]["outcome"] == "completed"
    assert out["receiver"]["payload_ok"] is True


def test_suspended_receiver_holds_what_reaches_it_and_its_timers(tmp_path: Path) -> None:
    # suspended after the first File Data: the rest of the file and the EOF
    # wait; the sender's EOF timer (0.3 s) expires meanwhile and resends it,
    # and the receiver's answers come only after its resumption
    after = {"direction": "forward", "match": {"pdu_type": "file_data", "offset": 0}}
    scn = scenario(requests=[{"entity": "receiver", "request": "suspend", "after": after,
                              "resume_after_ms": 500}])  # fmt: skip
    out = exchange(tmp_path, scn)
    got = actions(tmp_path, "receiver")
    i, j = got.index("ReceiverSuspendTransaction"), got.index("ReceiverResumeTransaction")
    assert got[:i] == ["ReceiverRxMetadata", "ReceiverRxFileData"]
    assert set(got[i + 1 : j]) == {"HeldWhileSuspended"}
    assert got[j + 1 : j + 4] == ["ReceiverRxFileData", "ReceiverRxFileData", "ReceiverRxEof"]
    assert "SenderTimeoutEof" in actions(tmp_path, "sender")
    assert out["receiver"]["requests"][0]["made"] is True
    assert out["sender"]["outcome"] == out["receiver"]["outcome"] == "completed"
    assert out["receiver"]["payload_ok"] is True


def test_suspend_where_the_model_has_none_is_not_made(tmp_path: Path) -> None:
    # the receiver's first PDU: ReceiverSuspendTransaction needs an open
    # transaction, which a Class 1 receiver without closure ends at its EOF
    after = {"direction": "forward", "match": {"directive": "eof"}}
    scn = scenario(mode="class1", requests=[{"entity": "receiver", "request": "suspend",
                                              "after": after}])  # fmt: skip
    out = exchange(tmp_path, scn)
    req = out["receiver"]["requests"][0]
    assert req["made"] is False and "ReceiverSuspendTransaction is not enabled" in req["detail"]
