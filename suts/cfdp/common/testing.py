"""What the tests of dtnconform's CFDP harnesses share (suts/cfdp/cfdppy,
suts/cfdp/librecube, suts/cfdp/yamcs and suts/cfdp/cfdprs: tests/test_harness.py): free
ports on 127.0.0.1, a sender and a receiver harness process as dtnconform
runs them, their result lines, a small lossy UDP relay between the two, and
the checks of a harness's tables against specs/cfdp/wire.json.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import select
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from suts.cfdp.common.harnesskit import DIRECTIVE_NAMES, pattern
from suts.sockbuf import RCVBUF, raise_receive_buffer

LOOP = "127.0.0.1"
REPO = Path(__file__).resolve().parents[3]
WIRE_JSON = REPO / "specs" / "cfdp" / "wire.json"
# The file every harness sends: harnesskit's pattern, specs/cfdp/wire.json's
# payload (conformance/tests/test_tester_cfdp.py pins its bytes).
PATTERN_3000 = pattern(3000)

Result = dict[str, Any]


def timers(ms: int, time_limit_ms: int, linger_ms: int) -> list[str]:
    """Short ACK, NAK and check timers, so that every limit is reached
    within a second or two, and the run's time limit and linger."""
    out: list[str] = []
    for option, value in (
        ("--ack-timer-ms", ms),
        ("--nak-timer-ms", ms),
        ("--check-timer-ms", ms),
        ("--time-limit-ms", time_limit_ms),
        ("--linger-ms", linger_ms),
    ):
        out += [option, str(value)]
    return out


def request(kind: str, direction: str, match: dict[str, Any], **more: Any) -> dict[str, Any]:
    """A user's request (README: "Users' requests"): ``kind`` after the PDU
    of ``direction`` that ``match``es; ``more``: "resume_after_ms" etc."""
    return {"request": kind, "after": {"direction": direction, "match": match}, **more}


def request_args(*requests: dict[str, Any]) -> list[str]:
    """The --request options of ``requests``."""
    return [a for r in requests for a in ("--request", json.dumps(r))]


def cancel_after(direction: str, match: dict[str, Any], occurrence: int = 1) -> str:
    """A --request: cancel after the ``occurrence``-th PDU that ``match``es."""
    req = request("cancel", direction, match)
    req["after"]["occurrence"] = occurrence
    return json.dumps(req)


CANCEL_AFTER_FD_1024 = cancel_after("forward", {"pdu_type": "file_data", "offset": 1024})
# A sender's suspend after the Metadata (resumed 100 ms later), Prompt (NAK)
# after the ACK(EOF), and cancel after a NAK (none comes if nothing is lost).
SUSPEND_PROMPT_AND_UNSEEN_CANCEL = request_args(
    request("suspend", "forward", {"directive": "metadata"}, resume_after_ms=100),
    request("prompt_nak", "return", {"directive": "ack", "ack_of": "eof"}),
    request("cancel", "return", {"directive": "nak"}),
)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((LOOP, 0))
        return int(s.getsockname()[1])


def last_result(stdout: str) -> Result:
    """The result: the last line of stdout that is a JSON object."""
    lines = [ln for ln in stdout.strip().splitlines() if ln.startswith("{")]
    assert lines, f"no result line in {stdout!r}"
    result = json.loads(lines[-1])
    assert isinstance(result, dict)
    return result


def result_of(proc: subprocess.Popen[str], timeout: float = 30.0) -> Result:
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, out
    return last_result(out)


@dataclass
class Launch:
    """How long a test file waits for its harness: for the "listening on"
    line (``wait_s``, looking every ``poll_s``) and for the result
    (``timeout``); ``exit_ok``: a role may exit before it listens (an
    "error" result), else that fails the test."""

    wait_s: float = 10.0
    poll_s: float = 0.02
    timeout: float = 30.0
    exit_ok: bool = False


def start_role(
    prog: list[str],
    role: str,
    listen: int,
    peer: int,
    args: list[str],
    workdir: Path,
    launch: Launch,
) -> subprocess.Popen[str]:
    """One harness process (``prog``: its argv before the role); returns
    once it listens. Its stderr goes to <workdir>/../<role>.log."""
    log = workdir.parent / f"{role}.log"
    argv = [*prog, role, "--listen", f"{LOOP}:{listen}", "--peer", f"{LOOP}:{peer}"]
    argv += ["--workdir", str(workdir), *args]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=log.open("w"), text=True, cwd=workdir.parent
    )
    deadline = time.monotonic() + launch.wait_s
    while "listening on" not in log.read_text():
        if launch.exit_ok and proc.poll() is not None:
            return proc
        assert proc.poll() is None, f"{role} exited early: {log.read_text()}"
        assert time.monotonic() < deadline, f"{role} never started listening"
        time.sleep(launch.poll_s)
    return proc


def receive_buffer(port: int) -> int:
    """The receive buffer, in octets, of the UDP socket bound to ``port``
    on this host's loopback (``ss``'s skmem ``rb``: what the kernel holds
    for it, twice what setsockopt asked for)."""
    out = subprocess.run(
        ["ss", "-uanmH", "sport", "=", f":{port}"], capture_output=True, text=True, check=True
    ).stdout
    found = re.search(r"\brb(\d+)", out)
    assert found, f"no socket on port {port}: {out!r}"
    return int(found.group(1))


def assert_socket_holds_a_burst(prog: list[str], tmp_path: Path) -> None:
    """A harness (``prog``) raises its socket's receive buffer to 16 MiB: a
    burst it has not read yet waits in the kernel instead of being dropped
    there, which would make a run an error (conformance/runner.py
    ``socket_overflowed``). As root (a run's namespaces, this suite), past
    net.core.rmem_max; the kernel reports twice what was asked for."""
    if os.geteuid() != 0:
        pytest.skip("SO_RCVBUFFORCE needs CAP_NET_ADMIN: run as root, as dtnconform runs are")
    work = tmp_path / "r"
    work.mkdir()
    listen = free_port()
    args = ["--file-len", "3000", "--segment-size", "1024"]
    args += timers(250, time_limit_ms=3000, linger_ms=0)
    proc = start_role(prog, "recv", listen, free_port(), args, work, Launch())
    try:
        assert receive_buffer(listen) >= 2 * RCVBUF
    finally:
        proc.kill()
        proc.communicate()


def run_alone(
    prog: list[str], role: str, args: list[str], workdir: Path, timeout: float = 30.0
) -> Result:
    """One harness process with no peer, to its result (an "error" one, say)."""
    argv = [*prog, role, "--listen", f"{LOOP}:{free_port()}", "--peer", f"{LOOP}:{free_port()}"]
    argv += ["--workdir", str(workdir), *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, done.stderr
    return last_result(done.stdout)


def assert_delivered(received: Result | None, workdir: Path | None = None) -> None:
    """The receiver completed with no error and delivered the 3000 octets of
    the pattern (the file in ``workdir`` too, if given)."""
    assert received is not None
    assert received["outcome"] == "completed", received
    assert received["receiver_condition"] == "no_error"
    assert received["file_bytes_delivered"] == 3000
    assert received["payload_ok"] is True
    if workdir is not None:
        assert (workdir / "dtnc-received.bin").read_bytes() == PATTERN_3000


# --------------------------------------------------------------------------
# A lossy relay
# --------------------------------------------------------------------------


@dataclass
class Rule:
    """Drop (or corrupt) the ``times``-th PDUs of one kind in one direction
    ("all": every one)."""

    direction: str  # "forward" or "return"
    kind: str  # "file_data" or a directive name
    offset: int | None = None
    times: list[int] | str = "all"
    act: str = "drop"  # or "corrupt": one octet of the file data flipped


@dataclass
class Relay:
    """A UDP relay between the roles: the sender sends to ``forward_port``,
    the receiver to ``return_port``; ``seen``: (direction, kind, offset,
    what the relay did) of every datagram."""

    rules: list[Rule]
    forward_port: int = 0
    return_port: int = 0
    seen: list[tuple[str, str, int | None, str]] = field(default_factory=list)


def pdu_kind(data: bytes) -> tuple[str, int | None]:
    """("file_data", offset) or (directive name, None) of a raw PDU."""
    header = 4 + 2 * (((data[3] >> 4) & 7) + 1) + (data[3] & 7) + 1
    if (data[0] >> 4) & 1:  # PDU type 1: file data
        return "file_data", int.from_bytes(data[header : header + 4], "big")
    return DIRECTIVE_NAMES.get(data[header], "?"), None


@contextmanager
def relay(rules: list[Rule], send_port: int, recv_port: int) -> Iterator[Relay]:
    fwd = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rtn = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    fwd.bind((LOOP, 0))
    rtn.bind((LOOP, 0))
    state = Relay(rules, fwd.getsockname()[1], rtn.getsockname()[1])
    counts: dict[tuple[str, str, int | None], int] = {}
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            ready, _, _ = select.select([fwd, rtn], [], [], 0.02)
            for sock in ready:
                try:
                    data, _ = sock.recvfrom(65535)
                except OSError:  # e.g. ICMP port unreachable: a role has ended
                    continue
                direction = "forward" if sock is fwd else "return"
                kind, offset = pdu_kind(data)
                key = (direction, kind, offset)
                counts[key] = counts.get(key, 0) + 1
                act = "pass"
                for r in rules:
                    hit = (r.direction, r.kind) == (direction, kind) and r.offset in (None, offset)
                    if hit and (r.times == "all" or counts[key] in r.times):
                        act = r.act
                state.seen.append((direction, kind, offset, act))
                if act == "drop":
                    continue
                if act == "corrupt":  # flip one octet of the file data
                    data = data[:-5] + bytes([data[-5] ^ 0xFF]) + data[-4:]
                out, port = (rtn, recv_port) if direction == "forward" else (fwd, send_port)
                out.sendto(data, (LOOP, port))

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        stop.set()
        thread.join()
        fwd.close()
        rtn.close()


def run_transfer(
    tmp_path: Path,
    sender: list[str],
    receiver: list[str] | None,
    args: list[str],
    send_args: list[str],
    recv_args: list[str],
    rules: list[Rule] | None = None,
    launch: Launch | None = None,
) -> tuple[Result, Result | None, Relay | None]:
    """One transfer: ``receiver`` (none: no receiver) starts first, as
    dtnconform starts it, in tmp_path/r, then ``sender`` in tmp_path/s; both
    take ``args``; through a relay if there are ``rules``. The results of
    the sender and the receiver, and the relay."""
    launch = launch or Launch()
    tmp_path.mkdir(parents=True, exist_ok=True)
    send_port, recv_port = free_port(), free_port()
    channel = relay(rules, send_port, recv_port) if rules is not None else nullcontext()
    with channel as path:
        to_recv = path.forward_port if path is not None else recv_port
        to_send = path.return_port if path is not None else send_port
        rx = None
        if receiver is not None:
            rx_args = [*args, *recv_args]
            rx = start_role(receiver, "recv", recv_port, to_send, rx_args, tmp_path / "r", launch)
        tx_args = [*args, *send_args]
        tx = start_role(sender, "send", send_port, to_recv, tx_args, tmp_path / "s", launch)
        sent = result_of(tx, launch.timeout)
        received = result_of(rx, launch.timeout) if rx is not None else None
    return sent, received, path


@dataclass
class Pair:
    """How a test file runs a transfer: ``prog`` for both roles (a test may
    name another per role), the options both roles take ``before`` and
    ``after`` the test's own, the sender's ``send`` options before the
    test's, and the ``launch`` waits."""

    prog: list[str]
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)
    send: list[str] = field(default_factory=lambda: ["--file-len", "3000"])
    launch: Launch = field(default_factory=Launch)

    def transfer(
        self,
        tmp_path: Path,
        common: list[str],
        send_args: list[str] | None = None,
        recv_args: list[str] | None = None,
        receiver: bool = True,
        rules: list[Rule] | None = None,
        sender_prog: list[str] | None = None,
        receiver_prog: list[str] | None = None,
    ) -> tuple[Result, Result | None, Relay | None]:
        """run_transfer with this file's programs and options; ``receiver``
        False: no receiver."""
        return run_transfer(
            tmp_path,
            sender_prog or self.prog,
            (receiver_prog or self.prog) if receiver else None,
            [*self.before, *common, *self.after],
            [*self.send, *(send_args or [])],
            recv_args or [],
            rules,
            self.launch,
        )


# --------------------------------------------------------------------------
# A harness's tables
# --------------------------------------------------------------------------


def wire_tables() -> dict[str, Any]:
    """specs/cfdp/wire.json (the test is skipped without it)."""
    if not WIRE_JSON.exists():
        pytest.skip("specs/cfdp/wire.json not found")
    return dict(json.loads(WIRE_JSON.read_text()))


def load_module(name: str, path: Path) -> Any:
    """A harness imported by path, under a name of its own (every harness
    is a harness.py); registered, as dataclasses look their module up."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def check_tables(harness: Any) -> None:
    """A Python harness's Tables 5-4/5-5 (harnesskit's) are those of
    specs/cfdp/wire.json, the fields its requests match are wire.json
    fields, and its file is the pattern."""
    wire = wire_tables()
    common = harness.common
    conds = {e["code"]: e["name"] for e in wire["condition_codes"]["entries"]}
    assert conds == common.CONDITION_NAMES
    assert {e["code"]: e["name"] for e in wire["directives"]["entries"]} == common.DIRECTIVE_NAMES
    for name in ("directive", "ack_of", "pdu_type", "offset", "condition"):
        assert name in wire["fields"]
    assert common.pattern(300)[:3] == bytes([7, 38, 69])
    assert common.pattern(300)[256:259] == bytes([7, 38, 69])


# --------------------------------------------------------------------------
# Feedback mid-transfer
# --------------------------------------------------------------------------


def nak_reaches_sender_still_sending(
    prog: list[str], pair: Pair, tmp_path: Path, *, seg: int = 256, n: int = 4000
) -> list[tuple[str, int | None, int]]:
    """A harness reads the network between every PDU it sends
    (docs/implementers.md), so a NAK that arrives while its sender is still
    sending new data reaches the implementation at once, as it would in
    flight. A stand-in receiver NAKs the first segment of an ``n``-segment
    Class 2 transfer as soon as it arrives; that segment must come again
    before the EOF, after fewer than 32 new segments sent after the NAK (by
    the kernel's receive timestamps). Returns what the stand-in received up
    to the EOF: each PDU's kind, offset and kernel time (ns)."""
    from dissectors.cfdp.layer import CFDP, CFDPNak

    stand_in = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    raise_receive_buffer(stand_in)
    # Linux's SO_TIMESTAMPNS, which Python does not name
    stand_in.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_TIMESTAMPNS", 35), 1)
    stand_in.bind((LOOP, 0))
    stand_in.settimeout(pair.launch.timeout)
    send_port = free_port()
    args = [*pair.before, "--mode", "class2", *pair.after,
            "--file-len", str(seg * n), "--segment-size", str(seg)]  # fmt: skip
    (tmp_path / "s").mkdir(parents=True)
    arrivals: list[tuple[str, int | None, int]] = []  # kind, offset, kernel time (ns)
    naked: list[int] = []  # when the NAK left (ns)

    def receive() -> None:
        # reading from before the sender starts: the NAK leaves as soon as
        # the first segment arrives
        while not any(k == "eof" for k, _, _ in arrivals):
            try:
                data, anc, _, _ = stand_in.recvmsg(65535, 64)
            except OSError:
                return
            sec, nsec = struct.unpack("qq", anc[0][2][:16])
            kind, offset = pdu_kind(data)
            arrivals.append((kind, offset, sec * 1_000_000_000 + nsec))
            if kind == "file_data" and offset == 0 and not naked:
                first = CFDP(data)
                nak = CFDPNak(start_of_scope=0, end_of_scope=seg * 8, segment_requests=[(0, seg)])
                for f in ("source_entity", "dest_entity", "transaction", "entity_id_length",
                          "sequence_number_length", "mode", "crc"):  # fmt: skip
                    nak.setfieldval(f, first.getfieldval(f))
                stand_in.sendto(bytes(nak), (LOOP, send_port))
                naked.append(time.time_ns())

    reader = threading.Thread(target=receive, daemon=True)
    reader.start()
    tx = start_role(prog, "send", send_port, stand_in.getsockname()[1], args, tmp_path / "s",
                    pair.launch)  # fmt: skip
    try:
        reader.join(pair.launch.timeout)
    finally:
        tx.kill()
        tx.wait()
        stand_in.close()
    assert naked, "no File Data at offset 0 arrived"
    nak_at = naked[0]
    again = [i for i, (k, o, _) in enumerate(arrivals) if k == "file_data" and o == 0][1:]
    eof = next(i for i, (k, _, _) in enumerate(arrivals) if k == "eof")
    assert again and again[0] < eof, "the NAKed segment came only after the EOF"
    after_nak = [a for a in arrivals[: again[0]] if a[2] > nak_at and a[0] == "file_data"]
    assert len(after_nak) < 32, f"{len(after_nak)} new segments sent after the NAK came first"
    return arrivals
