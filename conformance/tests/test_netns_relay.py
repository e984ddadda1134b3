"""The A-M-B namespaces and the relay channel, with real UDP traffic."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance import ltp, netns

pytestmark = pytest.mark.netns

RECEIVER = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 1113)); s.settimeout(1.5)
got = []
try:
    while True:
        got.append(s.recv(9000).hex())
except OSError:
    pass
print("\\n".join(got))
"""


def _segments() -> list[bytes]:
    """Three data segments, an RS, the same RS again (a retransmission), an RA."""
    data = [
        ltp.Segment(type_code=t, session_originator=1, session_number=9, client_service_id=1,
                    offset=i * 100, data=bytes([i]) * 100,
                    checkpoint_serial=4 if t else None, report_serial=0 if t else None)
        for i, t in enumerate((0, 0, 3))
    ]  # fmt: skip
    rs = ltp.Segment(type_code=8, session_originator=1, session_number=9, report_serial=7,
                     checkpoint_serial=4, upper_bound=300, lower_bound=0, claims=[(0, 300)])  # fmt: skip
    ra = ltp.Segment(type_code=9, session_originator=1, session_number=9, report_serial=7)
    return [s.encode() for s in (*data, rs, rs, ra)]


def _send(topo: netns.Topology, payloads: list[bytes]) -> None:
    code = (
        "import socket,sys\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
        f"for h in {[p.hex() for p in payloads]!r}: s.sendto(bytes.fromhex(h),('{topo.ip_b}',1113))"
    )
    subprocess.run(["ip", "netns", "exec", topo.ns_a, sys.executable, "-c", code], check=True)


def _relay(topo: netns.Topology, tmp: Path, impairments: list[dict[str, object]]) -> None:
    plan = {"if_a": topo.if_ma, "if_b": topo.if_mb, "port": 1113, "impairments": impairments}
    (tmp / "plan.json").write_text(json.dumps(plan))
    ready = tmp / "ready"
    topo.spawn(topo.ns_m, [sys.executable, "-m", "conformance.relay", str(tmp / "plan.json"),
                           str(tmp / "log.jsonl"), str(ready)])  # fmt: skip
    assert netns.wait_for(ready.exists, 10)


def test_field_keyed_drops_and_clean_teardown(tmp_path: Path) -> None:
    payloads = _segments()
    with netns.topology() as topo:
        names = {topo.ns_a, topo.ns_m, topo.ns_b}
        assert names <= set(netns.ours())
        _relay(topo, tmp_path, [
            {"direction": "forward", "match": {"kind": "red_data", "offset": 100}},
            {"direction": "forward", "match": {"type": "RS"}, "occurrence": 2},
            {"direction": "return", "match": {"type": "RA"}},  # wrong direction: never fires
            {"direction": "forward", "match": {"type": "RS"}, "occurrence": 1},
        ])  # fmt: skip
        rx = topo.spawn(topo.ns_b, [sys.executable, "-c", RECEIVER])
        assert netns.wait_for(
            lambda: ":0459 " in subprocess.run(["ip", "netns", "exec", topo.ns_b, "cat",
                                                "/proc/net/udp"], capture_output=True,
                                               text=True).stdout, 5)  # fmt: skip
        _send(topo, payloads)
        out, _ = rx.communicate(timeout=10)
    received = [bytes.fromhex(h) for h in out.decode().split()]
    # ARP crossed the bridge (else nothing arrives); the 2nd data segment and
    # both copies of the RS were dropped (each rule counts every RS, whatever
    # another rule did with it), everything else arrived.
    assert received == [payloads[0], payloads[2], payloads[5]]
    log = [json.loads(ln) for ln in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [r["verdict"] for r in log] == ["pass", "drop", "pass", "drop", "drop", "pass"]
    assert [r["rule"] for r in log if r["verdict"] == "drop"] == [0, 3, 1]
    assert all(r["dir"] == "forward" for r in log)
    assert [r["index"] for r in log] == list(range(1, 7))
    time.sleep(0.5)
    assert not names & set(netns.ours()), "namespaces left behind"


def test_stale_namespaces_of_a_killed_run_are_swept() -> None:
    code = (
        "from conformance import netns\nimport os, time\n"
        "t = netns.create()\nprint(t.tag, flush=True)\ntime.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    tag = proc.stdout.readline().strip() if proc.stdout else ""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert f"{tag}m" in netns.ours()
    removed = netns.sweep_stale()
    assert {f"{tag}a", f"{tag}m", f"{tag}b"} <= set(removed)
    assert not [ns for ns in netns.ours() if ns.startswith(tag)]


def test_pyroute2_children_never_run_our_sigterm_handler(tmp_path: Path) -> None:
    """Robot Framework installs a SIGTERM handler; pyroute2 forks helpers and
    stops them with SIGTERM. A helper that ran the handler would live on as a
    second copy of the caller (seen as a duplicated Robot run). Regression test."""
    hits = tmp_path / "hits"
    code = (
        "import os, signal\nfrom conformance import netns\n"
        f"signal.signal(signal.SIGTERM, lambda *a: open({str(hits)!r}, 'a').write(f'{{os.getpid()}}\\n'))\n"
        "for _ in range(2):\n    t = netns.create()\n    netns.destroy(t)\n"
        "print('done', os.getpid())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("done") == 1, out.stdout
    assert not hits.exists(), hits.read_text()
