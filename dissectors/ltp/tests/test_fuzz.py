"""Differential fuzzing of every LTP decoder we have, on segments Hypothesis
damages: the Scapy layer's strict parser, the Lua dissector in tshark, and
the channel emulator's Rust classifier (``dtnc-emu classify ltp``).

For each damaged payload:

- nothing crashes: the parser raises only LtpDecodeError, tshark reports no
  Lua error, the classifier answers every line;
- the three agree on acceptance: a payload the parser rejects gets a
  MALFORMED expert from the Lua dissector and no fields from the classifier;
- where the parser accepts, the Lua dissector's match fields and the
  classifier's fields equal the parser's, and no MALFORMED expert is shown.

Each Hypothesis example is a batch of payloads, so that one tshark run and
one classifier run serve many inputs; a failing batch shrinks to the
payload that disagrees.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.channel import control as emulator
from conformance.protocols.ltp import SPEC
from dissectors.ltp.layer import LtpDecodeError, classify, parse
from dissectors.ltp.tests.test_dissector import write_pcap
from dissectors.ltp.tests.test_layer import segments
from dissectors.tshark import decode

ROOT = Path(__file__).resolve().parents[3]
EMU = ROOT / "conformance" / "channel" / "emulator" / "target" / "release" / "dtnc-emu"

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed"),
]


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    """A well-formed segment, then one kind of damage (or none)."""
    whole = bytes(draw(segments())[0])
    how = draw(
        st.sampled_from(["none", "truncate", "flip", "insert", "append", "splice", "random"])
    )
    if how == "truncate" and len(whole) > 1:
        return whole[: draw(st.integers(1, len(whole) - 1))]
    if how == "flip":
        buf = bytearray(whole)
        for _ in range(draw(st.integers(1, 3))):
            i = draw(st.integers(0, len(buf) - 1))
            buf[i] ^= 1 << draw(st.integers(0, 7))
        return bytes(buf)
    if how == "insert":
        i = draw(st.integers(0, len(whole)))
        return whole[:i] + draw(st.binary(min_size=1, max_size=12)) + whole[i:]
    if how == "append":
        return whole + draw(st.binary(min_size=1, max_size=12))
    if how == "splice":
        i = draw(st.integers(0, len(whole) - 1))
        j = draw(st.integers(i, len(whole)))
        return whole[:i] + draw(st.binary(min_size=1, max_size=16)) + whole[j:]
    if how == "random":
        return draw(st.binary(min_size=1, max_size=64))
    return whole


def strict(payload: bytes) -> dict[str, Any] | None:
    try:
        return dict(classify(parse(payload)))
    except LtpDecodeError:
        return None


def lua_errors(pcap: Path) -> list[str]:
    proc = subprocess.run(
        ["tshark", "-X", f"lua_script:{SPEC.dissector.lua}", "-r", str(pcap), "-V"],
        capture_output=True,
        text=True,
        check=False,
    )
    text = proc.stdout + proc.stderr
    return [ln.strip() for ln in text.splitlines() if "Lua Error" in ln or "Lua: Error" in ln]


@settings(
    # DTNC_FUZZ_EXAMPLES=500 for a longer search than the default suite's
    max_examples=int(os.environ.get("DTNC_FUZZ_EXAMPLES", "6")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(damaged(), min_size=40, max_size=80))
def test_decoders_agree_on_damaged_segments(payloads: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        pcap = write_pcap(Path(tmp) / "fuzz.pcap", payloads)
        frames = decode(pcap, protocol="ltp")
        assert lua_errors(pcap) == []
    by_number = {f.number: f for f in frames}
    rust = emulator.classify("ltp", payloads) if EMU.exists() else [None] * len(payloads)
    for n, payload in enumerate(payloads, start=1):
        want = strict(payload)
        frame = by_number.get(n)
        assert frame is not None, f"frame {n} ({payload.hex()}) not decoded as LTP"
        malformed = [e for e in frame.experts if e["group"] == "malformed"]
        if want is None:
            assert malformed, f"{payload.hex()}: rejected by the parser, no MALFORMED from Lua"
        else:
            assert not malformed, (payload.hex(), malformed)
            assert frame.match_fields() == want, payload.hex()
        if EMU.exists():
            assert rust[n - 1] == want, payload.hex()
