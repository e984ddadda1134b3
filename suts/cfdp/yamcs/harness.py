#!/usr/bin/env python3
"""dtnconform system-under-test harness for Yamcs 5.13.2's CFDP service
(``org.yamcs.cfdp.CfdpService``, CCSDS 727.0-B-5).

One process plays one CFDP entity of one file transfer: ``send`` (an upload
from Yamcs) or ``recv`` (a download into Yamcs). Per run it writes a fresh
Yamcs configuration under ``--workdir``, starts ``org.yamcs.YamcsServer``
headless (java, ``suts/cfdp/yamcs/lib/*``), drives the transfer over Yamcs's HTTP
API and reads its outcome from the API and from Yamcs's own log.

Yamcs's CFDP PDUs go in and out through a ``UdpTmDataLink`` and a
``UdpTcDataLink`` (one raw PDU per datagram). Between them and the network
sits a small relay thread of this harness: it binds ``--listen``, forwards
every datagram unchanged in both directions (``--peer`` <-> Yamcs's links on
127.0.0.1), counts the PDUs, and makes the users' requests when their
trigger PDU passes. The harness has no CFDP logic.

The last stdout line is one JSON object: the result (README.md).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import logging
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# harnesskit (suts/cfdp/common/): the harnesses' command line, requests and result
sys.path.append(str(Path(__file__).resolve().parent.parent / "common"))
import harnesskit as common  # noqa: E402

YAMCS_VERSION = "5.13.2"
IMPLEMENTATION = f"Yamcs {YAMCS_VERSION} (org.yamcs.cfdp.CfdpService)"
HERE = Path(__file__).resolve().parent
LIB = Path(os.environ.get("DTNC_YAMCS_LIB", HERE / "lib"))
INSTANCE = "dtnc"
SERVICE = "cfdp"
BUCKET = "dtnc"
STARTUP_LIMIT_S = 120.0  # Yamcs must answer on its HTTP API within this
POLL_S = 0.02  # how often the transfer's state is read over HTTP
# Yamcs's sender emits one PDU per sleepBetweenPdus ms (a fixed-rate
# schedule, CfdpOutgoingTransfer.start). 1 ms normally; with a user's
# request the gap leaves room for the HTTP call the relay makes on the
# trigger PDU, so that the request reaches Yamcs before its next PDU.
PDU_INTERVAL_MS = 1
PDU_INTERVAL_WITH_REQUESTS_MS = 100
# CfdpIncomingTransfer reads checkAckTimeout/checkAckLimit (lines 153-157) but
# CfdpService's option spec does not declare them, and Yamcs refuses an
# undeclared option ("Unknown argument checkAckTimeout"): a Class 1
# receiver's check timer is always 10000 ms with 5 retries.
FIXED_CHECK_TIMER_MS = 10000
FIXED_CHECK_LIMIT = 5
JVM_OPTIONS = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k", "-Xmx512m"]

# Yamcs's org.yamcs.cfdp.pdu.ConditionCode names onto Table 5-5's; RESERVED
# is what Yamcs decodes codes 12 and 13 to.
YAMCS_CONDITIONS: dict[str, str] = {
    "NO_ERROR": "no_error",
    "ACK_LIMIT_REACHED": "positive_ack_limit_reached",
    "KEEP_ALIVE_LIMIT_REACHED": "keep_alive_limit_reached",
    "INVALID_TRANSMISSION_MODE": "invalid_transmission_mode",
    "FILESTORE_REJECTION": "filestore_rejection",
    "FILE_CHECKSUM_FAILURE": "file_checksum_failure",
    "FILE_SIZE_ERROR": "file_size_error",
    "NAK_LIMIT_REACHED": "nak_limit_reached",
    "INACTIVITY_DETECTED": "inactivity_detected",
    "INVALID_FILE_STRUCTURE": "invalid_file_structure",
    "CHECK_LIMIT_REACHED": "check_limit_reached",
    "UNSUPPORTED_CHECKSUM_TYPE": "unsupported_checksum_type",
    "SUSPEND_REQUEST_RECEIVED": "suspend_request_received",
    "CANCEL_REQUEST_RECEIVED": "cancel_request_received",
    "RESERVED": "",
}
YAMCS_CONDITION_RE = re.compile(r"\b(" + "|".join(YAMCS_CONDITIONS) + r")\b")
# The checksum types of the CLI onto Yamcs's org.yamcs.cfdp.ChecksumType
# names (its checksumType option); only MODULAR and NULL are implemented.
CHECKSUMS: dict[str, str] = {
    "modular": "MODULAR",
    "crc32c": "CRC32C",
    "crc32": "CRC32",
    "null": "NULL",
}
# Texts Yamcs puts in a transfer's failureReason without a condition name.
FAILURE_TEXTS: tuple[tuple[str, str], ...] = (
    ("Canceled by the Sender", "cancel_request_received"),
    ("Cancel request received", "cancel_request_received"),
    ("received metadata with file size", "file_size_error"),
    ("Received data file whose end offset", "file_size_error"),
)
FIN_NOT_ACKED = "Finished PDU has not been acknowledged"

LOG = logging.getLogger("dtnc-yamcs")


# --------------------------------------------------------------------------
# Command line (the same as suts/cfdp/cfdppy/harness.py's)
# --------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    return common.build_parser(
        IMPLEMENTATION,
        checksum_fault_handler=(
            "fault handler for File Checksum Failure (Yamcs has no ignore: an error result)"
        ),
    )


def check_file_len(args: argparse.Namespace) -> None:
    if args.role == "send" and args.file_len >= 1 << 31:
        raise common.UsageError(
            f"--file-len {args.file_len}: Yamcs reads the whole object into one Java byte[] "
            "(FilePutRequest.getFileLength is an int) and sends no large files"
        )


def check_segment_size(args: argparse.Namespace) -> None:
    if max_pdu_size(args) > 0xFFFF:
        raise common.UsageError(
            f"--segment-size {args.segment_size}: the PDU would exceed 65535 octets"
        )


def check_args(args: argparse.Namespace) -> None:
    # Entity IDs are Java longs in Yamcs (EntityConf.id, CfdpHeader): the
    # widths 1..8 all exist, but an ID must stay below 2^63.
    common.check_args(
        args, below=1 << 63, file_len_check=check_file_len, segment_check=check_segment_size
    )
    if args.role == "send" and args.pdu_crc:
        raise common.UsageError(
            "--pdu-crc 1: Yamcs never sends a PDU CRC: CfdpOutgoingTransfer has `withCrc = false; "
            "// no CRCs are used` (CfdpOutgoingTransfer.java:66) and no option changes it"
        )
    if args.checksum_fault_handler == "ignore":
        raise common.UsageError(
            "--checksum-fault-handler ignore: Yamcs's fault handlers are suspend, cancel and "
            "abandon only (OngoingCfdpTransfer.FaultHandlingAction, OngoingCfdpTransfer.java:66-89)"
        )


def max_pdu_size(args: argparse.Namespace) -> int:
    """Yamcs's maxPduSize for a File Data PDU carrying --segment-size
    octets: it cuts segments of maxPduSize - 4 - 2 * entityIdLength -
    sequenceNrLength - 4 (CfdpOutgoingTransfer.java:151-152)."""
    return int(args.segment_size) + 8 + 2 * int(args.entity_id_len) + int(args.seq_len)


# --------------------------------------------------------------------------
# Users' requests
# --------------------------------------------------------------------------


def parse_request(text: str, role: str) -> common.Request:
    """harnesskit's, and a Prompt is never made."""
    req = common.parse_request(text, role, common.Request)
    if req.made is None and req.kind in common.PROMPTS:
        req.not_made(
            "Yamcs cannot send a Prompt PDU: org.yamcs.cfdp.pdu has no Prompt PDU class, "
            "CfdpPacket.getCFDPPacket ignores a received one (CfdpPacket.java:117-118), and "
            "Yamcs's CFDP manual says 'Keep Alive PDU and Prompt PDU are not used'"
        )
        if role != "send":
            req.detail = "a Prompt is the sending entity's request; besides, " + req.detail
    return req


# --------------------------------------------------------------------------
# Yamcs's HTTP API (plain urllib)
# --------------------------------------------------------------------------


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


class Api:
    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}/api"
        self.lock = threading.Lock()  # the relay thread and the main thread share it

    def call(self, method: str, path: str, body: Any = None, timeout: float = 10.0) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            text = exc.read().decode(errors="replace")
            try:
                msg = str(json.loads(text).get("msg", text))
            except (json.JSONDecodeError, AttributeError):
                msg = text
            raise ApiError(exc.code, msg) from exc
        return json.loads(raw) if raw.strip() else {}

    def transfers_path(self, suffix: str = "") -> str:
        return f"/filetransfer/{INSTANCE}/{SERVICE}/transfers{suffix}"

    def transfer(self, tid: str) -> dict[str, Any]:
        return dict(self.call("GET", self.transfers_path(f"/{tid}")))

    def downloads(self) -> list[dict[str, Any]]:
        out = self.call("GET", self.transfers_path("?direction=DOWNLOAD&order=asc"))
        return list(out.get("transfers", []))


# --------------------------------------------------------------------------
# Yamcs: configuration, process, log
# --------------------------------------------------------------------------


def q(text: str | Path) -> str:
    """A YAML scalar (a JSON string is one)."""
    return json.dumps(str(text))


@dataclass
class Ports:
    http: int
    tm: int  # Yamcs's UdpTmDataLink: where the relay delivers incoming PDUs
    tc_target: int  # the relay's inner socket: where Yamcs's UdpTcDataLink sends


def free_port(kind: int, host: str) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def yamcs_config(
    args: argparse.Namespace, paths: dict[str, Path], ports: Ports, interval_ms: int
) -> dict[str, str]:
    """Every file of the run's etc/ directory, by name."""
    closure = args.mode == "class1-closure"
    # The sender's one timer for an EOF (CfdpOutgoingTransfer.eofTimer):
    # waiting for ACK(EOF) in Class 2, for the Finished in Class 1 with
    # closure, where the model has the check timer (README: limits).
    eof_timer, eof_limit = (
        (args.check_timer_ms, args.check_limit) if closure else (args.ack_timer_ms, args.ack_limit)
    )
    cancel = {
        "AckLimitReached": "cancel",
        "NakLimitReached": "cancel",
        "InactivityDetected": "cancel",
        "CheckLimitReached": "cancel",
        "FileChecksumFailure": "cancel",
    }
    handlers = "\n".join(f"        {k}: {v}" for k, v in cancel.items())
    yamcs_yaml = f"""\
# Written by suts/cfdp/yamcs/harness.py for one {args.role} run.
services:
  - class: org.yamcs.http.HttpServer
    args:
      address: 127.0.0.1
      port: {ports.http}
instances:
  - {INSTANCE}
dataDir: {q(paths["data"])}
cacheDir: {q(paths["cache"])}
secretKey: "dtnconform-yamcs-harness"
buckets:
  - name: {BUCKET}
    path: {q(paths["bucket"])}
    maxSize: 1099511627776
    maxObjects: 100000
"""
    instance_yaml = f"""\
# Written by suts/cfdp/yamcs/harness.py for one {args.role} run.
services:
  - class: org.yamcs.cfdp.CfdpService
    name: {SERVICE}
    args:
      inStream: cfdp_in
      outStream: cfdp_out
      incomingBucket: {BUCKET}
      allowDownloadOverwrites: true
      localEntities:
        - name: local
          id: {args.entity_id}
      remoteEntities:
        - name: peer
          id: {args.peer_entity_id}
      # outgoing PDU headers (a receiver copies the sender's widths)
      entityIdLength: {args.entity_id_len}
      sequenceNrLength: {args.seq_len}
      # segment = maxPduSize - 4 - 2 * entityIdLength - sequenceNrLength - 4
      maxPduSize: {max_pdu_size(args)}
      checksumType: {q(CHECKSUMS[args.checksum])}
      sleepBetweenPdus: {interval_ms}
      # sender: EOF retransmission; limit L = L retransmissions (Timer.java)
      eofAckTimeout: {eof_timer}
      eofAckLimit: {eof_limit}
      # receiver: Finished retransmission
      finAckTimeout: {args.ack_timer_ms}
      finAckLimit: {args.ack_limit}
      # receiver: NAKs; nakLimit N = N NAKs, the fault at the N-th expiry
      nakTimeout: {args.nak_timer_ms}
      nakLimit: {args.nak_limit + 1}
      immediateNak: {"true" if args.nak_mode == "immediate" else "false"}
      inactivityTimeout: {args.inactivity_ms}
      senderFaultHandlers:
{handlers}
      receiverFaultHandlers:
{handlers}
dataLinks:
  - name: cfdp_tm
    class: org.yamcs.tctm.UdpTmDataLink
    stream: cfdp_tm
    port: {ports.tm}
    maxLength: {common.MAX_DATAGRAM}
    packetPreprocessorClassName: org.yamcs.tctm.GenericPacketPreprocessor
    packetPreprocessorArgs:
      errorDetection: none
      useLocalGenerationTime: true
      seqCountOffset: -1
      timestampOffset: -1
  - name: cfdp_tc
    class: org.yamcs.tctm.UdpTcDataLink
    stream: cfdp_tc
    host: 127.0.0.1
    port: {ports.tc_target}
mdb: []
streamConfig:
  tm:
    - name: cfdp_tm
  tc: ["cfdp_tc"]
  event: ["events_realtime", "events_dump"]
  param: ["pp_realtime", "sys_param", "proc_param"]
  parameterAlarm: ["alarms_realtime"]
  eventAlarm: ["event_alarms_realtime"]
  cmdHist: ["cmdhist_realtime", "cmdhist_dump"]
  invalidTm: "invalid_tm_stream"
  sqlFile: {q(paths["etc"] / "cfdp_streams.sql")}
"""
    # As Yamcs's examples/cfdp-udp: a received datagram is one PDU; an
    # outgoing PDU is one command's binary, sent as is.
    streams_sql = "\n".join(
        [
            "create stream cfdp_in as select packet as pdu from cfdp_tm",
            "create stream cfdp_out (gentime TIMESTAMP, entityId long, seqNum int, pdu binary)",
            "insert into cfdp_tc select gentime, 'cfdp-service' as origin, seqNum,"
            " '/yamcs/cfdp/upload' as cmdName, pdu as binary from cfdp_out",
            "",
        ]
    )
    logging_properties = """\
handlers = java.util.logging.ConsoleHandler
java.util.logging.ConsoleHandler.level = ALL
java.util.logging.ConsoleHandler.formatter = java.util.logging.SimpleFormatter
java.util.logging.SimpleFormatter.format = %1$tH:%1$tM:%1$tS.%1$tL %4$s %3$s: %5$s%6$s%n
.level = INFO
org.yamcs.cfdp.level = FINE
org.yamcs.events.EventProducer.level = FINE
"""
    return {
        "yamcs.yaml": yamcs_yaml,
        f"yamcs.{INSTANCE}.yaml": instance_yaml,
        "cfdp_streams.sql": streams_sql,
        "logging.properties": logging_properties,
    }


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    """The JVM gets SIGTERM if the harness dies (PR_SET_PDEATHSIG)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)


class YamcsLog:
    """Yamcs's console log (a file), read as it grows; CFDP lines echoed."""

    def __init__(self, path: Path, verbose: bool) -> None:
        self.path = path
        self.verbose = verbose
        self.pos = 0
        self.lines: list[str] = []
        self.partial = ""

    def poll(self) -> None:
        try:
            with self.path.open("rb") as f:
                f.seek(self.pos)
                chunk = f.read()
        except FileNotFoundError:
            return
        if not chunk:
            return
        self.pos += len(chunk)
        text = self.partial + chunk.decode(errors="replace")
        *lines, self.partial = text.split("\n")
        for line in lines:
            self.lines.append(line)
            cfdp = ".cfdp." in line or "EventProducer" in line
            noisy = "sending PDU" in line or "received PDU" in line
            if self.verbose or (cfdp and not noisy) or " SEVERE " in line or " WARNING " in line:
                LOG.info("yamcs| %s", line)

    def tail(self, n: int = 12) -> str:
        self.poll()
        return "\n".join(self.lines[-n:])


class Yamcs:
    def __init__(self, args: argparse.Namespace, root: Path, bucket: Path) -> None:
        self.args = args
        self.root = root
        self.paths = {
            "etc": root / "etc",
            "data": root / "data",
            "cache": root / "cache",
            "bucket": bucket,
        }
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = YamcsLog(root / "yamcs.log", args.verbose)
        self.api: Api | None = None

    def write_config(self, ports: Ports, interval_ms: int) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        for key in ("etc", "data", "cache"):
            self.paths[key].mkdir(parents=True, exist_ok=True)
        for name, text in yamcs_config(self.args, self.paths, ports, interval_ms).items():
            (self.paths["etc"] / name).write_text(text)
        self.api = Api(ports.http)

    def start(self) -> None:
        java = os.environ.get("DTNC_YAMCS_JAVA") or shutil.which("java")
        if not java:
            raise common.UsageError("java not found (apt-get install default-jdk-headless)")
        argv = [
            java,
            *JVM_OPTIONS,
            "-cp",
            f"{LIB}/*",
            "org.yamcs.YamcsServer",
            "--etc-dir",
            str(self.paths["etc"]),
            "--data-dir",
            str(self.paths["data"]),
            "--cache-dir",
            str(self.paths["cache"]),
            "--log-config",
            str(self.paths["etc"] / "logging.properties"),
            "--no-color",
        ]
        LOG.info("starting Yamcs: %s", " ".join(argv))
        with (self.root / "yamcs.log").open("wb") as out:
            self.proc = subprocess.Popen(
                argv,
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ready(self) -> bool:
        """The instance runs and both links are up."""
        assert self.api is not None
        try:
            inst = self.api.call("GET", f"/instances/{INSTANCE}", timeout=2.0)
            if inst.get("state") != "RUNNING":
                return False
            links = self.api.call("GET", f"/links/{INSTANCE}", timeout=2.0).get("links", [])
        except (OSError, ApiError, ValueError):
            return False
        status = {lk.get("name"): lk.get("status") for lk in links}
        if any(v == "FAILED" for v in status.values()):
            raise common.UsageError(f"a Yamcs link failed to start: {status}\n{self.log.tail()}")
        return status.get("cfdp_tm") == "OK" and status.get("cfdp_tc") == "OK"

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                LOG.warning("Yamcs did not stop in 15 s: killing it")
                self.proc.kill()
                self.proc.wait()
        self.log.poll()


# --------------------------------------------------------------------------
# The relay
# --------------------------------------------------------------------------


class Relay(threading.Thread):
    """Forwards every datagram unchanged: from ``ext`` (bound to --listen)
    to Yamcs's UdpTmDataLink, and from ``inner`` (where Yamcs's
    UdpTcDataLink sends) to --peer. Counts PDUs and makes the requests."""

    def __init__(
        self,
        ext: socket.socket,
        inner: socket.socket,
        peer: tuple[str, int],
        yamcs_tm: tuple[str, int],
        harness: Harness,
    ) -> None:
        super().__init__(name="relay", daemon=True)
        self.ext = ext
        self.inner = inner
        self.peer = peer
        self.yamcs_tm = yamcs_tm
        self.h = harness
        self.stop_event = threading.Event()
        self.sent: dict[str, int] = {}
        self.received: dict[str, int] = {}
        self.first_in: float | None = None  # first datagram from the peer
        self.stopped_at: float | None = None  # epoch seconds
        self.error: str | None = None

    def run(self) -> None:
        try:
            while not self.stop_event.is_set():
                ready, _, _ = select.select([self.ext, self.inner], [], [], 0.05)
                # one datagram from each side per round, the peer's first:
                # its feedback reaches Yamcs between any two PDUs Yamcs
                # sends (docs/implementers.md)
                for sock in sorted(ready, key=lambda x: x is not self.ext):
                    try:
                        data, _addr = sock.recvfrom(common.MAX_DATAGRAM)
                    except (BlockingIOError, InterruptedError):
                        continue
                    except OSError as exc:  # e.g. ICMP port unreachable
                        LOG.debug("recvfrom: %s", exc)
                        continue
                    self.forward(sock, data)
        except Exception as exc:  # a harness bug: reported in the result
            self.error = f"relay failed: {type(exc).__name__}: {exc}"
            LOG.exception("relay failed")

    def forward(self, sock: socket.socket, data: bytes) -> None:
        outgoing = sock is self.inner  # from Yamcs
        now = time.monotonic()
        with contextlib.suppress(OSError):
            if outgoing:
                self.ext.sendto(data, self.peer)
            else:
                if self.first_in is None:
                    self.first_in = now
                self.inner.sendto(data, self.yamcs_tm)
        try:
            fields = common.pdu_fields(data)
            key = common.counter_key(fields)
            label = str(fields["label"])
        except (common.Undecodable, IndexError) as exc:
            fields, key, label = {}, "undecodable", f"undecodable ({exc})"
        table = self.sent if outgoing else self.received
        table[key] = table.get(key, 0) + 1
        LOG.debug("%s %s (%d B)", "->" if outgoing else "<-", label, len(data))
        if fields:
            sender = self.h.args.role == "send"
            direction = "forward" if outgoing == sender else "return"
            self.h.observe(direction, fields)

    def stop(self) -> None:
        self.stop_event.set()
        if self.is_alive():
            self.join(timeout=5)
        self.stopped_at = time.time()


# --------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------


class Harness:
    def __init__(self, args: argparse.Namespace, t0: float) -> None:
        self.args = args
        self.t0 = t0
        self.requests = [parse_request(r, args.role) for r in args.request]
        self.stop = common.StopSignal()
        self.transfer_id: str | None = None
        self.transfer_lock = threading.Lock()
        self.info: dict[str, Any] = {}  # the transfer's last TransferInfo
        self.states: list[str] = []
        self.started_at: float | None = None  # the transfer's start (monotonic)
        self.ended_at: float | None = None
        self.ready_at: float | None = None
        self.notes: list[str] = []
        self.yamcs: Yamcs | None = None
        self.relay: Relay | None = None
        self.resume_timers: list[threading.Timer] = []

    # -- what the result reports (harnesskit.Run) ----------------------------

    @property
    def sender(self) -> bool:
        return self.args.role == "send"

    @property
    def started(self) -> bool:
        return self.transfer_id is not None

    @property
    def sent(self) -> dict[str, int]:
        return self.relay.sent if self.relay is not None else {}

    @property
    def received(self) -> dict[str, int]:
        return self.relay.received if self.relay is not None else {}

    # -- requests (called in the relay thread, right after the PDU passed) --

    def observe(self, direction: str, fields: dict[str, Any]) -> None:
        for req in self.requests:
            if req.fired(direction, fields):
                self.make_request(req)

    def find_transfer(self, wait_s: float) -> str | None:
        """The transfer's id; a receiver's is looked up (Yamcs creates the
        transfer when it takes the first PDU, a moment after the relay)."""
        deadline = time.monotonic() + wait_s
        while True:
            with self.transfer_lock:
                if self.transfer_id is not None:
                    return self.transfer_id
            if self.args.role == "recv":
                self.lookup_download()
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.005)

    def lookup_download(self) -> None:
        assert self.yamcs is not None and self.yamcs.api is not None
        try:
            found = self.yamcs.api.downloads()
        except (OSError, ApiError, ValueError) as exc:
            LOG.debug("listing transfers: %s", exc)
            return
        with self.transfer_lock:
            if self.transfer_id is None and found:
                first = min(found, key=lambda t: int(t.get("id", 0)))
                self.transfer_id = str(first["id"])
                self.info = first
                LOG.info(
                    "incoming transfer id %s, transaction %s",
                    self.transfer_id,
                    first.get("transactionId"),
                )
                if len(found) > 1:
                    self.notes.append(f"Yamcs lists {len(found)} incoming transfers; judged: first")

    def make_request(self, req: common.Request) -> None:
        """One HTTP call, synchronously: the relay forwards nothing more
        until Yamcs has run the request (its cancel and pause return once
        its CFDP executor has, CfdpService.java:680-705)."""
        now = time.monotonic()
        base = self.started_at
        if base is None and self.relay is not None:
            base = self.relay.first_in
        what = f"{req.kind} after {req.describe_trigger()}"
        assert self.yamcs is not None and self.yamcs.api is not None
        api = self.yamcs.api
        tid = self.find_transfer(0.5)
        if tid is None:
            req.not_made("no transaction at the trigger: Yamcs lists no transfer")
            return
        state = str(self.info.get("state", ""))  # as last read by the main thread
        if state in ("COMPLETED", "FAILED"):
            req.not_made(f"no transaction active at the trigger (Yamcs's transfer is {state})")
            return
        verb = "cancel" if req.kind == "cancel" else "pause"
        path = api.transfers_path(f"/{tid}:{verb}")
        posted = time.monotonic()
        try:
            api.call("POST", path)
        except (OSError, ApiError, ValueError) as exc:
            req.not_made(f"POST {path} refused: {exc}")
            return
        req.made, req.made_at = True, now - (base if base is not None else self.t0)
        req.detail = f"POST {path} (answered in {(time.monotonic() - posted) * 1000:.0f} ms)"
        LOG.info("request made: %s: %s", what, req.detail)
        if req.kind == "suspend":
            req.detail += (
                "; Yamcs's pause is a local suspension: it stops sending and its timers, "
                "and tells the peer nothing (no remote suspend, Yamcs's CFDP manual)"
            )
            timer = threading.Timer(req.resume_after_ms / 1000.0, self.resume, (req, tid))
            timer.daemon = True
            self.resume_timers.append(timer)
            timer.start()

    def warm_up(self) -> None:
        """The first calls of a fresh JVM take 100 ms and more: exercise the
        API's routes for the requests (on a transfer that does not exist)
        so that a request's call answers within one PDU interval."""
        assert self.yamcs is not None and self.yamcs.api is not None
        for _ in range(3):
            for verb in ("cancel", "pause", "resume"):
                with contextlib.suppress(OSError, ApiError, ValueError):
                    self.yamcs.api.call("POST", self.yamcs.api.transfers_path(f"/999999:{verb}"))
            with contextlib.suppress(OSError, ApiError, ValueError):
                self.yamcs.api.call("GET", self.yamcs.api.transfers_path())

    def resume(self, req: common.Request, tid: str) -> None:
        assert self.yamcs is not None and self.yamcs.api is not None
        path = self.yamcs.api.transfers_path(f"/{tid}:resume")
        try:
            self.yamcs.api.call("POST", path)
            text = f"resumed after {req.resume_after_ms:g} ms: POST {path}"
        except (OSError, ApiError, ValueError) as exc:
            text = f"resume after {req.resume_after_ms:g} ms failed: {exc}"
        req.detail += "; " + text
        LOG.info("request: %s", text)

    # -- the run -----------------------------------------------------------

    def start_transfer(self) -> None:
        assert self.yamcs is not None and self.yamcs.api is not None
        api = self.yamcs.api
        # The transaction sequence number is the low seq-len octets of the
        # transfer's id, Yamcs's "cfdp" sequence (CfdpService.java:1006,
        # CfdpOutgoingTransfer.java:198-203): restart it at --seq-num.
        api.call(
            "POST",
            f"/archive/{INSTANCE}:executeSql",
            {"statement": f"alter sequence cfdp restart with {self.args.seq_num}"},
        )
        body = {
            "direction": "UPLOAD",
            "bucket": BUCKET,
            "objectName": common.SOURCE_FILE,
            "remotePath": common.DEST_FILE,
            "source": "local",
            "destination": "peer",
            "options": {
                "reliable": self.args.mode == "class2",
                "closureRequested": self.args.mode == "class1-closure",
            },
        }
        self.started_at = time.monotonic()
        try:
            info = api.call("POST", api.transfers_path(), body)
        except ApiError as exc:
            raise Refused(
                f"Yamcs refused the Put.request (POST {api.transfers_path()}): {exc}"
            ) from exc
        with self.transfer_lock:
            self.transfer_id = str(info["id"])
            self.info = info
        seq = info.get("transactionId", {}).get("sequenceNumber")
        LOG.info("transfer %s started: transaction %s", self.transfer_id, info.get("transactionId"))
        # (TransferInfo's sequenceNumber is a uint32)
        if seq is not None and int(seq) != self.args.seq_num & 0xFFFFFFFF:
            why = ""
            if self.args.seq_len == 8:
                why = (
                    ": with sequenceNrLength 8 Yamcs masks the id with (1l << 64) - 1 == 0 in "
                    "Java (CfdpOutgoingTransfer.java:199-200)"
                )
            self.notes.append(
                f"Yamcs's transaction sequence number is {seq}, not --seq-num "
                f"{self.args.seq_num}{why}"
            )

    def poll_transfer(self) -> None:
        assert self.yamcs is not None and self.yamcs.api is not None
        if self.transfer_id is None:
            if self.args.role == "recv":
                self.lookup_download()
            if self.transfer_id is None:
                return
        try:
            info = self.yamcs.api.transfer(self.transfer_id)
        except (OSError, ApiError, ValueError) as exc:
            LOG.debug("reading transfer %s: %s", self.transfer_id, exc)
            return
        self.info = info
        state = str(info.get("state", ""))
        if not self.states or self.states[-1] != state:
            self.states.append(state)
            LOG.info(
                "transfer %s: %s%s",
                self.transfer_id,
                state,
                f" ({info['failureReason']})" if info.get("failureReason") else "",
            )
        if state in ("COMPLETED", "FAILED") and self.ended_at is None:
            self.ended_at = time.monotonic()
            LOG.info("transaction ended; lingering %d ms", self.args.linger_ms)

    def loop(self) -> tuple[bool, str]:
        """Until the end plus the linger, the time limit or a signal:
        (timed out, why stopped)."""
        assert self.yamcs is not None and self.relay is not None
        limit = self.args.time_limit_ms / 1000.0
        while True:
            now = time.monotonic()
            self.yamcs.log.poll()
            if self.stop.name:
                return self.ended_at is None, f"stopped by {self.stop.name}"
            if self.relay.error:
                raise RuntimeError(self.relay.error)
            if not self.yamcs.alive():
                self.notes.append(
                    f"Yamcs exited ({self.yamcs.proc and self.yamcs.proc.returncode})"
                )
                return self.ended_at is None, "Yamcs exited"
            if self.ended_at is not None:
                if now >= self.ended_at + self.args.linger_ms / 1000.0:
                    return False, "ended"
            else:
                # A receiver's transfer starts with the first PDU it gets.
                if self.started_at is None and self.relay.first_in is not None:
                    self.started_at = self.relay.first_in
                start = self.started_at if self.started_at is not None else self.ready_at
                assert start is not None
                if now >= start + limit:
                    return True, f"time limit {self.args.time_limit_ms} ms"
            self.poll_transfer()
            time.sleep(POLL_S)


class Refused(Exception):
    """Yamcs refused to start the transfer."""


# --------------------------------------------------------------------------
# The result
# --------------------------------------------------------------------------


def failure_condition(reason: str) -> str | None:
    """The condition in a transfer's failureReason (Yamcs joins its errors
    with '; ' and appends the condition's name last when it has none,
    OngoingCfdpTransfer.failTransfer, CfdpIncomingTransfer.complete)."""
    names = YAMCS_CONDITION_RE.findall(reason)
    if names:
        return YAMCS_CONDITIONS[names[-1]]
    for text, cond in FAILURE_TEXTS:
        if text in reason:
            return cond
    return None


def log_conditions(lines: list[str], pattern_: str) -> list[str]:
    """The condition names logged after ``pattern_`` (e.g. "Handling fault X")."""
    out = []
    rx = re.compile(pattern_ + r"\s+(" + "|".join(YAMCS_CONDITIONS) + r")\b")
    for line in lines:
        m = rx.search(line)
        if m:
            out.append(YAMCS_CONDITIONS[m.group(1)])
    return out


def sent_conditions(cfdp: list[str], pdu: str) -> list[tuple[int, str]]:
    """(line index, condition) of each EOF or Finished PDU Yamcs logged as
    sent ("TXID.. sending PDU: EofPacket [conditionCode=X, ...", FINE,
    OngoingCfdpTransfer.sendPacket)."""
    rx = re.compile(r"sending PDU: " + pdu + r" \[conditionCode=(\w+)")
    out = []
    for i, line in enumerate(cfdp):
        m = rx.search(line)
        if m and m.group(1) in YAMCS_CONDITIONS:
            out.append((i, YAMCS_CONDITIONS[m.group(1)]))
    return out


def judge(h: Harness, timed_out: bool, why_stopped: str, log: list[str]) -> common.Outcome:
    """The outcome from what Yamcs reports: the transfer's state and
    failureReason (HTTP API) and its CFDP log (README: "The result")."""
    info = h.info
    state = str(info.get("state", ""))
    reason = str(info.get("failureReason", "") or "")
    sender = h.args.role == "send"
    cfdp = [ln for ln in log if ".cfdp." in ln]
    # the sender's EOF(cancel)s: its notices of cancellation; the
    # receiver's Finished PDUs; the sender's faults ("Handling fault X",
    # CfdpOutgoingTransfer.handleFault, FINE)
    eof_cancel = [(i, c) for i, c in sent_conditions(cfdp, "EofPacket") if c != "no_error"]
    fins = sent_conditions(cfdp, "FinishedPacket")
    fault_lines = [(i, ln) for i, ln in enumerate(cfdp) if "Handling fault" in ln]
    faults = log_conditions(cfdp, "Handling fault")
    out = common.Outcome("open", "no_error")
    if h.transfer_id is None:
        out.outcome = "open"
        out.condition = ""
        out.detail.append(f"no transaction reached this entity ({why_stopped})")
        warnings = [ln for ln in log if "UNEXPECTED_CFDP_PDU" in ln or "Error decoding PDU" in ln]
        warnings += [ln for ln in log if "LARGE_FILES_NOT_SUPPORTED" in ln]
        if warnings:
            out.detail.append("Yamcs: " + " | ".join(w.split(": ", 1)[-1] for w in warnings[:3]))
        return out
    out.detail.append(f"Yamcs transfer {h.transfer_id}: {' -> '.join(h.states) or state}")
    if reason:
        out.detail.append(f"failureReason {reason!r}")
    if state == "COMPLETED":
        out.outcome, out.condition = "completed", "no_error"
        if sender and eof_cancel:
            # Class 1: sendEof completes the transfer with NO_ERROR after
            # any EOF, an EOF(cancel) too (CfdpOutgoingTransfer.java:272-273)
            out.detail.append(
                f"Yamcs reports COMPLETED although it sent EOF({eof_cancel[-1][1]}): in Class 1 "
                "it completes every EOF with NO_ERROR (CfdpOutgoingTransfer.java:272-273)"
            )
    elif state == "FAILED":
        cond = failure_condition(reason)
        if cond is None and not sender and fins:
            cond = fins[-1][1]
        out.condition = cond if cond is not None else ""
        if cond is None:
            out.detail.append("no condition in Yamcs's failureReason")
        abandoned = False
        if sender:
            # A fault while the EOF(cancel) awaits its ACK: Yamcs ends the
            # transaction at once with that fault (handleFault in CANCELING,
            # CfdpOutgoingTransfer.java:479-480): abandonment (4.11.2.2.3).
            late = [ln for i, ln in fault_lines if eof_cancel and i > eof_cancel[0][0]]
            abandoned = bool(late)
            if abandoned:
                out.detail.append(
                    f"fault {faults[-1]} while its EOF({eof_cancel[0][1]}) was outstanding: "
                    "Yamcs ended the transaction without a further PDU"
                )
        elif FIN_NOT_ACKED in reason:
            # Finished unacknowledged at finAckLimit: Yamcs ends the
            # transaction at once (CfdpIncomingTransfer.java:478-489).
            abandoned = True
            out.condition = "positive_ack_limit_reached"
            if fins:
                out.detail.append(f"its Finished({fins[-1][1]}) never acknowledged")
        out.outcome = "abandoned" if abandoned else "cancelled"
    else:
        out.outcome = "open"
        if sender and eof_cancel:
            out.condition = eof_cancel[-1][1]
        elif not sender and fins:
            out.condition = fins[-1][1]
        out.detail.append(f"transaction not ended ({why_stopped}); Yamcs's transfer is {state}")
        if sender and h.args.mode == "class2":
            out.detail.append(
                "Yamcs's sender runs no inactivity timer (eofAckReceived is never set, "
                "CfdpOutgoingTransfer.java:93, 302-304)"
            )
    if faults:
        out.detail.append("faults: " + common.tally(faults))
    if eof_cancel:
        out.detail.append("EOF(cancel) sent: " + common.tally([c for _, c in eof_cancel]))
    if fins:
        out.detail.append("Finished sent: " + common.tally([c for _, c in fins]))
    if timed_out and out.outcome != "open":
        # The loop stopped before a poll saw the end, and the poll after it
        # did. The relay still forwarded until after that poll, so every PDU
        # Yamcs ended the transfer on is on the wire: the end is Yamcs's own
        # report, kept (reporting "open" here would contradict the wire).
        out.detail.append(f"Yamcs's end ({state}) was seen at the poll after the stop")
    return out


def request_ignored(h: Harness, req: common.Request, log: list[str]) -> str:
    """Why Yamcs did nothing with a request it accepted over HTTP ('' if it
    acted): a cancel or pause of a transaction that had ended is answered
    200 and ignored (CfdpOutgoingTransfer.cancel/suspend,
    CfdpIncomingTransfer.cancel/suspend)."""
    cfdp = [ln for ln in log if ".cfdp." in ln]
    if req.kind == "suspend":
        if any("suspending transfer" in ln for ln in cfdp):
            return ""
        return "Yamcs ignored the pause (its transfer had ended: 'suspend ignored')"
    if h.args.role == "send":
        sent = sent_conditions(cfdp, "EofPacket")
        if any(c == "cancel_request_received" for _, c in sent):
            return ""
        return "Yamcs sent no EOF(cancel_request_received): its transfer had ended"
    if any("ignoring cancel, wrong state" in ln for ln in cfdp):
        return "Yamcs ignored the cancel ('ignoring cancel, wrong state': Finished already sent)"
    if str(h.info.get("state")) == "COMPLETED":
        return "Yamcs's transfer had completed"
    return ""


def check_file(h: Harness, log: list[str]) -> tuple[int, bool | None, str]:
    """The receiver's delivered file, when Yamcs verified it and saved it
    (CfdpIncomingTransfer.onFileCompleted logs "file completed, checksum
    OK" and saves the file)."""
    if h.args.role == "send":
        return 0, None, ""
    name = str(h.info.get("objectName") or common.DEST_FILE)
    path = h.args.workdir.resolve() / "bucket" / name
    ok = any("file completed, checksum OK" in ln for ln in log)
    bad = any("file checksum failure" in ln for ln in log)
    if not ok:
        if bad and path.exists():
            data = path.read_bytes()
            return (
                0,
                None,
                f"Yamcs saved the file despite its checksum failure ({len(data)} B, "
                f"pattern {'ok' if common.is_pattern(data) else 'wrong'})",
            )
        return 0, None, ""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return 0, False, f"delivered file {path} unreadable: {exc}"
    return len(data), common.is_pattern(data), f"delivered file {path}: {len(data)} B"


def settle(h: Harness, timed_out: bool, why_stopped: str) -> dict[str, Any]:
    assert h.yamcs is not None
    log = h.yamcs.log.lines
    out = judge(h, timed_out, why_stopped, log)
    detail = out.detail
    delivered, payload_ok, file_note = check_file(h, log)
    if file_note:
        detail.append(file_note)
    detail.extend(h.notes)
    if h.args.role == "recv" and h.args.pdu_crc:
        detail.append(
            "Yamcs checks a received PDU CRC but sends its own PDUs without one "
            "(CfdpIncomingTransfer.java:164)"
        )
    if (
        h.args.role == "recv"
        and h.args.mode != "class2"
        and (
            h.args.check_timer_ms != FIXED_CHECK_TIMER_MS or h.args.check_limit != FIXED_CHECK_LIMIT
        )
    ):
        detail.append(
            f"Yamcs's Class 1 check timer is fixed at {FIXED_CHECK_TIMER_MS} ms, limit "
            f"{FIXED_CHECK_LIMIT} (checkAckTimeout/checkAckLimit are not options of CfdpService)"
        )
    severe = [ln for ln in log if " SEVERE " in ln or "Exception" in ln]
    if severe:
        detail.append("Yamcs log: " + " | ".join(s.strip()[:200] for s in severe[:3]))
    for req in h.requests:
        if not req.close() and req.made:
            ignored = request_ignored(h, req, log)
            if ignored:
                req.made = False
                req.made_at = None
                req.detail += f"; not made: {ignored}"
    if h.ready_at is not None:
        detail.append(f"Yamcs startup {h.ready_at - h.t0:.1f} s (not in duration_s)")
    start = h.started_at if h.started_at is not None else h.ready_at or h.t0
    end = h.ended_at if h.ended_at is not None else time.monotonic()
    extra: dict[str, Any] = {}
    if h.relay is not None and h.relay.stopped_at is not None:
        extra["stopped_at"] = round(h.relay.stopped_at, 3)
    if h.ready_at is not None:
        extra["startup_s"] = round(h.ready_at - h.t0, 3)
    return common.result_line(
        IMPLEMENTATION, h, out, max(0.0, end - start), (delivered, payload_ok), extra
    )


def run(args: argparse.Namespace, t0: float) -> dict[str, Any]:
    check_args(args)
    h = Harness(args, t0)
    if not (LIB / f"yamcs-core-{YAMCS_VERSION}.jar").exists():
        raise common.UsageError(
            f"Yamcs is not installed: {LIB}/yamcs-core-{YAMCS_VERSION}.jar missing "
            "(run suts/cfdp/yamcs/setup.sh)"
        )
    workdir: Path = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    bucket = workdir / "bucket"
    shutil.rmtree(bucket, ignore_errors=True)
    bucket.mkdir()
    if args.role == "send":
        (bucket / common.SOURCE_FILE).write_bytes(common.pattern(args.file_len))
    h.stop.install()
    inner = common.open_socket(("127.0.0.1", 0))
    ext: socket.socket | None = None
    yamcs = Yamcs(args, workdir / "yamcs", bucket)
    h.yamcs = yamcs
    try:
        if args.role == "send":  # the relay listens before the transfer can start
            ext = common.bind_listen(args.listen)
        ports = Ports(
            http=free_port(socket.SOCK_STREAM, "127.0.0.1"),
            tm=free_port(socket.SOCK_DGRAM, "0.0.0.0"),
            tc_target=int(inner.getsockname()[1]),
        )
        # a request this role can make: room between PDUs for its HTTP call
        makeable = any(r.made is None for r in h.requests)
        yamcs.write_config(ports, PDU_INTERVAL_WITH_REQUESTS_MS if makeable else PDU_INTERVAL_MS)
        yamcs.start()
        deadline = time.monotonic() + STARTUP_LIMIT_S
        while not yamcs.ready():
            yamcs.log.poll()
            if h.stop.name:
                return stopped_before_start(h, f"stopped by {h.stop.name} while Yamcs started")
            if not yamcs.alive():
                raise common.UsageError(f"Yamcs exited while starting:\n{yamcs.log.tail()}")
            if time.monotonic() > deadline:
                raise common.UsageError(
                    f"Yamcs not ready in {STARTUP_LIMIT_S:g} s:\n{yamcs.log.tail()}"
                )
            time.sleep(0.05)
        if makeable:
            h.warm_up()
        h.ready_at = time.monotonic()
        LOG.info("Yamcs ready in %.1f s", h.ready_at - t0)
        if ext is None:  # the receiver binds --listen once Yamcs can take PDUs
            ext = common.bind_listen(args.listen)
        relay = Relay(ext, inner, args.peer, ("127.0.0.1", ports.tm), h)
        h.relay = relay
        relay.start()
        common.log_listening(LOG, args, IMPLEMENTATION)
        if args.role == "send":
            try:
                h.start_transfer()
            except Refused as exc:
                relay.stop()
                yamcs.log.poll()
                result = common.error_result(IMPLEMENTATION, args.role, str(exc), t0)
                result["detail"] += "; no PDU was sent" if not relay.sent else ""
                result["pdus_sent"] = dict(sorted(relay.sent.items()))
                result["pdus_received"] = dict(sorted(relay.received.items()))
                result["duration_s"] = 0.0
                return result
        timed_out, why = h.loop()
        if h.ended_at is None:
            h.poll_transfer()
        for timer in h.resume_timers:
            timer.cancel()
        relay.stop()
        yamcs.stop()
        return settle(h, timed_out, why)
    finally:
        if h.relay is not None and h.relay.is_alive():
            h.relay.stop()
        yamcs.stop()
        inner.close()
        if ext is not None:
            ext.close()


def stopped_before_start(h: Harness, why: str) -> dict[str, Any]:
    result = common.error_result(IMPLEMENTATION, h.args.role, why, h.t0)
    result["outcome"] = "open"
    result["detail"] = f"no transaction: {why}"
    return result


def main(argv: list[str] | None = None) -> int:
    return common.main(argv, IMPLEMENTATION, build_parser, run, LOG)


if __name__ == "__main__":
    sys.exit(main())
