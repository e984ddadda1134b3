"""NRL libnorm 1.5.9 in our harness (suts/norm/libnorm/harness/dtnc-norm):
built against Debian's libnorm-dev, each role run in its own network
namespace joined by a veth pair, a real multicast transfer; what each role
reports comes from libnorm's own events."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.core import wire

HARNESS = Path(__file__).resolve().parents[1] / "harness"
BINARY = HARNESS / "dtnc-norm"
GROUP, PORT = "239.1.2.3", 6003

pytestmark = [pytest.mark.integration]


@pytest.fixture(scope="module")
def binary() -> Path:
    """The harness, built by its Makefile (skips, saying why, where the
    compiler, the header or root is missing)."""
    if not Path("/usr/include/normApi.h").is_file():
        pytest.skip("libnorm-dev is not installed (apt-get install libnorm-dev; make setup does)")
    if shutil.which("c++") is None or shutil.which("make") is None:
        pytest.skip("no C++ compiler or make (apt-get install build-essential)")
    done = subprocess.run(["make", "-s", "-C", str(HARNESS)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return BINARY


@pytest.fixture
def pair() -> Iterator[tuple[tuple[str, str], tuple[str, str]]]:
    """Two namespaces, A and B, on one veth pair with a multicast route:
    named as conformance/netns.py names its own, so that a crash leaves
    nothing its sweep would not remove."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 (network namespaces)")
    a, b = f"dtnc{os.getpid()}x90a", f"dtnc{os.getpid()}x90b"
    va, vb = f"n{os.getpid()}a"[-15:], f"n{os.getpid()}b"[-15:]

    def ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True)

    try:
        ip("netns", "add", a)
        ip("netns", "add", b)
        ip("link", "add", va, "netns", a, "type", "veth", "peer", "name", vb, "netns", b)
        for ns, dev, addr in ((a, va, "10.213.250.1/24"), (b, vb, "10.213.250.2/24")):
            ip("-n", ns, "addr", "add", addr, "dev", dev)
            ip("-n", ns, "link", "set", "lo", "up")
            ip("-n", ns, "link", "set", dev, "up")
            ip("-n", ns, "route", "add", "224.0.0.0/4", "dev", dev)
        yield (a, va), (b, vb)
    finally:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _knobs(length: int, limit_ms: int) -> list[str]:
    p = wire.load("norm")["payload"]
    return [
        "--addr", GROUP, "--port", str(PORT), "--object-len", str(length),
        "--payload", f"{p['multiplier']},{p['increment']},{p['modulus']}",
        "--grtt-initial-s", "0.05", "--grtt-max-s", "1", "--backoff-factor", "4",
        "--group-size", "2", "--robust-factor", "5", "--time-limit-ms", str(limit_ms),
    ]  # fmt: skip


SENDER = [
    "--node-id", "1", "--tx-rate-bps", "20000000", "--segment-size", "1024",
    "--block-size", "64", "--parity", "8", "--grtt-probing", "none",
]  # fmt: skip


def _start(binary: Path, ns: tuple[str, str], role: str, args: list[str]) -> subprocess.Popen[str]:
    cmd = ["ip", "netns", "exec", ns[0], str(binary), role, "--iface", ns[1], *args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(proc: subprocess.Popen[str]) -> dict[str, object]:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    result: dict[str, object] = json.loads(lines[0])
    return result


def test_an_object_crosses_and_the_watermark_is_acknowledged(
    binary: Path, pair: tuple[tuple[str, str], tuple[str, str]]
) -> None:
    """100 kB to one receiver, the FLUSH asking it to acknowledge: the
    receiver has the object whole and in the payload pattern, the sender
    its watermark acknowledged (NORM_TX_WATERMARK_COMPLETED, §5.5.3)."""
    a, b = pair
    rx = _start(binary, b, "recv", [*_knobs(100_000, 20_000), "--node-id", "2",
                                    "--unicast-nack", "off", "--linger-ms", "1000"])  # fmt: skip
    time.sleep(0.3)
    tx = _start(binary, a, "send", [*_knobs(100_000, 20_000), *SENDER, "--acking-nodes", "2",
                                    "--linger-ms", "300"])  # fmt: skip
    sent, got = _result(tx), _result(rx)
    assert got["outcome"] == "completed" and got["payload_ok"] is True, got
    assert got["object_bytes"] == 100_000
    assert got["events"]["rx_object_completed"] == 1  # type: ignore[index]
    assert sent["outcome"] == "completed", sent
    assert sent["events"]["tx_watermark_completed"] == 1  # type: ignore[index]


def test_without_acknowledgment_the_sender_reports_no_delivery(
    binary: Path, pair: tuple[tuple[str, str], tuple[str, str]]
) -> None:
    """No acking node: the sender's flush completes, but nothing told it
    the object arrived, so it says open, never completed."""
    a, b = pair
    rx = _start(binary, b, "recv", [*_knobs(20_000, 10_000), "--node-id", "2",
                                    "--unicast-nack", "off", "--linger-ms", "500"])  # fmt: skip
    time.sleep(0.3)
    tx = _start(binary, a, "send", [*_knobs(20_000, 10_000), *SENDER, "--linger-ms", "100"])
    sent, got = _result(tx), _result(rx)
    assert got["outcome"] == "completed" and got["payload_ok"] is True, got
    assert sent["outcome"] == "open" and "TX_FLUSH_COMPLETED" in str(sent["detail"]), sent


def test_a_receiver_with_no_sender_stays_open(
    binary: Path, pair: tuple[tuple[str, str], tuple[str, str]]
) -> None:
    _, b = pair
    got = _result(_start(binary, b, "recv", [*_knobs(1000, 700), "--node-id", "2",
                                             "--unicast-nack", "off"]))  # fmt: skip
    assert got["outcome"] == "open" and got["object_bytes"] == 0
    assert got["detail"] == "no end notice before the time limit"


def test_bad_or_unsupported_settings_exit_as_the_contract_says(binary: Path) -> None:
    """A missing knob exits 2 (nothing falls back to libnorm's defaults); a
    block of more than 255 symbols with FEC id 5 exits 127, not supported."""
    missing = subprocess.run([str(binary), "send", "--addr", GROUP], capture_output=True, text=True)
    assert missing.returncode == 2 and "required" in missing.stderr
    big = subprocess.run(
        [str(binary), "send", *_knobs(1000, 1000), *SENDER[:-6], "--block-size", "250",
         "--parity", "10", "--grtt-probing", "none"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert big.returncode == 127 and "not supported" in big.stdout
    fec7 = subprocess.run(
        [str(binary), "send", *_knobs(1000, 1000), *SENDER, "--fec-id", "7"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert fec7.returncode == 127 and json.loads(fec7.stdout)["outcome"] == "error"
    # a value its field cannot hold, and an option of the other role, are refused
    wide = [*_knobs(1000, 1000), *SENDER[:-8], "--segment-size", "66560", *SENDER[-6:]]
    too_wide = subprocess.run([str(binary), "send", *wide], capture_output=True, text=True)
    assert too_wide.returncode == 2 and "outside 1..65535" in too_wide.stderr
    other = subprocess.run(
        [str(binary), "recv", *_knobs(1000, 1000), "--node-id", "2", "--acking-nodes", "5"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert other.returncode == 2 and "not an option of recv" in other.stderr
