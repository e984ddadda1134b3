"""The foundation's channel: a transparent userspace bridge with field-keyed drops.

Runs inside the middle namespace M, reads every frame on one interface through
an AF_PACKET socket and writes it to the other, so ARP, multicast and every
other frame cross unchanged. UDP datagrams on the protocol's port are decoded
(one segment per datagram) and counted; an impairment rule of the scenario
drops the ``occurrence``-th segment of its direction whose fields match.
IP fragments and non-UDP frames are forwarded but never counted.

Every counted segment gets one JSON line in the decision log:
``{"t_ns", "dir", "index", "len", "fields", "verdict", "rule"}``.

This relay is deliberately small; the Rust channel emulator replaces it.

Usage (inside M): python -m conformance.relay PLAN.json LOG.jsonl READY_FILE
"""

from __future__ import annotations

import json
import select
import signal
import socket
import struct
import sys
import time
from pathlib import Path

from conformance import ltp
from conformance.types import Impairment

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


class Rule:
    def __init__(self, index: int, imp: Impairment) -> None:
        self.index = index
        self.imp = imp
        self.seen = 0
        self.fired = False

    def decide(self, direction: str, fields: dict[str, int | str | bool]) -> bool:
        """Count a matching segment; True when this one is to be dropped."""
        if self.fired or direction != self.imp.direction or not ltp.matches(fields, self.imp.match):
            return False
        self.seen += 1
        if self.seen == self.imp.occurrence:
            self.fired = True
            return True
        return False


def udp_payload(frame: bytes) -> tuple[int, int, bytes] | None:
    """(src port, dst port, payload) of an unfragmented IPv4/UDP frame, else None."""
    if len(frame) < 14 + 20 + 8 or frame[12:14] != b"\x08\x00":
        return None
    ip = frame[14:]
    ihl = (ip[0] & 0x0F) * 4
    if ip[0] >> 4 != 4 or ip[9] != 17 or ihl < 20:
        return None
    flags_frag = struct.unpack("!H", ip[6:8])[0]
    if flags_frag & 0x3FFF:  # more-fragments flag or a fragment offset
        return None
    total = struct.unpack("!H", ip[2:4])[0]
    udp = ip[ihl:total]
    if len(udp) < 8:
        return None
    sport, dport, ulen = struct.unpack("!HHH", udp[:6])
    return sport, dport, bytes(udp[8:ulen])


class Relay:
    def __init__(self, if_a: str, if_b: str, port: int, rules: list[Rule], log_path: Path) -> None:
        self.port = port
        self.rules = rules
        self.log = log_path.open("w", encoding="utf-8", buffering=1)
        self.socks: dict[str, socket.socket] = {}
        for name in (if_a, if_b):
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            s.bind((name, 0))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            self.socks[name] = s
        self.other = {if_a: if_b, if_b: if_a}
        self.direction = {if_a: "forward", if_b: "return"}
        self.index = {"forward": 0, "return": 0}
        self.running = True

    def handle(self, ifname: str, frame: bytes) -> None:
        direction = self.direction[ifname]
        verdict, rule_no, fields = "pass", None, None
        udp = udp_payload(frame)
        if udp is not None and self.port in (udp[0], udp[1]):
            try:
                seg = ltp.parse(udp[2])
            except ltp.LtpDecodeError:
                seg = None
            if seg is not None:
                fields = ltp.classify(seg)
                self.index[direction] += 1
                # Every rule counts every segment it matches, whatever the
                # other rules decide: "the 2nd RS" is the 2nd RS sent.
                fired = [rule.index for rule in self.rules if rule.decide(direction, fields)]
                if fired:
                    verdict, rule_no = "drop", fired[0]
                record = {
                    "t_ns": time.time_ns(),
                    "dir": direction,
                    "index": self.index[direction],
                    "len": len(udp[2]),
                    "fields": fields,
                    "verdict": verdict,
                    "rule": rule_no,
                }
                self.log.write(json.dumps(record, separators=(",", ":")) + "\n")
        if verdict == "pass":
            self.socks[self.other[ifname]].send(frame)

    def serve(self) -> None:
        by_fd = {s.fileno(): name for name, s in self.socks.items()}
        poller = select.poll()
        for fd in by_fd:
            poller.register(fd, select.POLLIN)
        while self.running:
            for fd, _ in poller.poll(200):
                name = by_fd[fd]
                frame, addr = self.socks[name].recvfrom(65535)
                if addr[2] == PACKET_OUTGOING:  # our own transmission, seen again
                    continue
                self.handle(name, frame)
        self.log.close()


def main(argv: list[str]) -> int:
    plan = json.loads(Path(argv[0]).read_text())
    rules = [Rule(i, Impairment.model_validate(r)) for i, r in enumerate(plan["impairments"])]
    relay = Relay(plan["if_a"], plan["if_b"], int(plan["port"]), rules, Path(argv[1]))

    def stop(signum: int, frame: object) -> None:
        relay.running = False

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    Path(argv[2]).write_text("ready\n")
    relay.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
