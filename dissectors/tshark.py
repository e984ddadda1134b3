"""Run tshark over a capture with our LTP dissector (``ltp.lua``) or with
Wireshark's built-in ``ltp`` dissector, and compare the two.

One tshark process per capture: tshark writes PDML (its XML packet-details
format, ``-T pdml``), which carries every field with its value *and* the
expert infos nested where they were raised, and this module turns it into
:class:`DecodedFrame` records.

Field vocabulary: ``DecodedFrame.fields`` is keyed by the leaf name of the
field, i.e. ``dtnltp.session_number`` → ``session_number``.  These are the
keys of :func:`conformance.ltp.classify`, except that ``type`` is the numeric
code here (the dissector's ``dtnltp.type``) and ``type_name`` is the name;
:meth:`DecodedFrame.match_fields` gives the exact ``classify()`` dictionary.

Values: integers (SDNVs, codes, counts) as ``int``, booleans as ``bool``,
strings as ``str``, byte strings (``data``, ``ext.value``) as lowercase hex
``str``.  Fields that may repeat (``claim.*``, ``ext.*``) are always lists; any
other field that unexpectedly occurs twice becomes a list too.

``summary`` is the one-line summary ``ltp.lua`` writes to the Info column; it
is read from the protocol item (``"... (dtnconform), <summary>"``) because
tshark 4.0 has no output format that carries both the packet tree and the
columns.  For the built-in dissector it is the built-in's protocol label.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from conformance.errors import DtncError

LUA_SCRIPT = Path(__file__).with_name("ltp.lua")
PROTO = "dtnltp"
BUILTIN_PROTO = "ltp"
ROOT_LABEL = "Licklider Transmission Protocol (dtnconform)"

FieldValue = int | str | bool | list[int | str | bool]

# Types of our fields (the ProtoFields registered in ltp.lua).
_BOOL_FIELDS = frozenset({"red", "checkpoint", "eorp", "eob"})
_STR_FIELDS = frozenset({"type_name", "kind"})
_BYTES_FIELDS = frozenset({"data", "ext.value"})
OUR_FIELDS: tuple[str, ...] = (
    "version", "type", "type_name", "kind", "red", "checkpoint", "eorp", "eob",
    "session_originator", "session_number", "hdr_ext_count", "trl_ext_count",
    "ext.tag", "ext.length", "ext.value", "client_service_id", "offset", "length",
    "checkpoint_serial", "report_serial", "upper_bound", "lower_bound", "claim_count",
    "claim.offset", "claim.length", "reason", "data",
)  # fmt: skip
OUR_REPEATED = frozenset({"ext.tag", "ext.length", "ext.value", "claim.offset", "claim.length"})

# Built-in dissector (Wireshark 4.0 packet-ltp.c).
_BUILTIN_BYTES = frozenset({"hdr.extn.val", "trl.extn.val"})
_BUILTIN_STR = frozenset({"partial_packet", "cancel_ack"})
BUILTIN_REPEATED = frozenset(
    {
        "hdr.extn.tag", "hdr.extn.len", "hdr.extn.val",
        "trl.extn.tag", "trl.extn.len", "trl.extn.val",
        "rpt.clm.off", "rpt.clm.len", "fragment",
    }
)  # fmt: skip

# epan/proto.h PI_* values as PDML shows them (_ws.expert.severity / .group).
SEVERITIES = {
    0x00100000: "comment",
    0x00200000: "chat",
    0x00400000: "note",
    0x00600000: "warning",
    0x00800000: "error",
}
GROUPS = {
    0x01000000: "checksum",
    0x02000000: "sequence",
    0x03000000: "response_code",
    0x04000000: "request_code",
    0x05000000: "undecoded",
    0x06000000: "reassemble",
    0x07000000: "malformed",
    0x08000000: "debug",
    0x09000000: "protocol",
    0x0A000000: "security",
    0x0B000000: "comments_group",
    0x0C000000: "decryption",
    0x0D000000: "assumption",
    0x0E000000: "deprecated",
}


class TsharkError(DtncError):
    """tshark is missing or failed on a capture (the CLI prints it as one line)."""

    exit_code = 2


class CaptureTruncated(TsharkError):
    """The capture file ends inside a frame; ``decoded`` holds what came before."""

    def __init__(self, pcap: Path, decoded: CaptureDecode) -> None:
        self.pcap = pcap
        self.decoded = decoded
        end = decoded.truncation
        where = end.describe() if end else "capture truncated"
        super().__init__(
            f"{pcap}: {where}; {decoded.frames_read} frames decoded, "
            f"{len(decoded.frames)} of them LTP segments"
        )


def find_tshark() -> str:
    """Path of the tshark binary; raises :class:`TsharkError` if it is absent."""
    path = shutil.which("tshark")
    if path is None:
        raise TsharkError(
            "tshark not found on PATH; install it with `apt-get install tshark` "
            "(Wireshark 4.0 or later, built with Lua)"
        )
    return path


@dataclass
class DecodedFrame:
    """One captured frame that carried an LTP segment."""

    number: int
    time_epoch: float
    ip_src: str | None
    ip_dst: str | None
    udp_srcport: int | None
    udp_dstport: int | None
    udp_payload_length: int | None
    fields: dict[str, FieldValue]
    summary: str
    experts: list[dict[str, str]] = field(default_factory=list)
    # one field dict per LTP protocol layer in the frame; ``fields`` is layers[0]
    layers: list[dict[str, FieldValue]] = field(default_factory=list)

    @property
    def expert_names(self) -> list[str]:
        return [e["name"] for e in self.experts]

    def match_fields(self) -> dict[str, int | str | bool]:
        """The fields in :func:`conformance.ltp.classify` vocabulary
        (``type`` = name, ``type_code`` = code; no header-only extras)."""
        from conformance.ltp import MATCH_FIELDS

        out: dict[str, int | str | bool] = {}
        for key, value in self.fields.items():
            if key in MATCH_FIELDS and not isinstance(value, list):
                out[key] = value
        if "type" in self.fields:
            out["type_code"] = self.fields["type"]  # type: ignore[assignment]
            out["type"] = self.fields.get("type_name", "")  # type: ignore[assignment]
        return out


# ---------------------------------------------------------------------------
# Running tshark and reading PDML
# ---------------------------------------------------------------------------


# tshark's words (stderr, non-zero exit) for a capture file that ends inside
# a record; it still writes the packets before the cut.
_CUT_SHORT = "appears to have been cut short"
_NOT_A_CAPTURE = "isn't a capture file"


def _stderr_lines(stderr: bytes) -> list[str]:
    """tshark's stderr without the "Running as user root" warning."""
    lines = stderr.decode(errors="replace").splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("Running as user")]


def _tshark_pdml(args: list[str]) -> tuple[ET.Element, bool]:
    """Run tshark with PDML output: the parsed document, and whether tshark
    said the capture was cut short (the packets before the cut are there)."""
    cmd = [find_tshark(), "-n", "-T", "pdml", *args]
    proc = subprocess.run(cmd, capture_output=True, check=False)
    errors = _stderr_lines(proc.stderr)
    truncated = proc.returncode != 0 and any(_CUT_SHORT in ln for ln in errors)
    if proc.returncode != 0 and not truncated:
        if any(_NOT_A_CAPTURE in ln for ln in errors):
            capture = args[args.index("-r") + 1] if "-r" in args else "the file"
            raise TsharkError(f"{capture}: not a capture file in a format tshark understands")
        raise TsharkError(f"{' '.join(cmd)} failed ({proc.returncode}): {'; '.join(errors)}")
    if truncated and not proc.stdout.strip():
        return ET.Element("pdml"), truncated  # cut inside the file header: no packets
    try:
        return ET.fromstring(proc.stdout), truncated
    except ET.ParseError as exc:
        raise TsharkError(f"tshark produced unreadable PDML: {exc}") from exc


def _run_pdml(args: list[str]) -> ET.Element:
    root, truncated = _tshark_pdml(args)
    if truncated:
        capture = args[args.index("-r") + 1] if "-r" in args else "the capture"
        raise TsharkError(f"{capture}: {capture_end(Path(capture)).describe()}")
    return root


# ---------------------------------------------------------------------------
# Where a truncated capture ends
# ---------------------------------------------------------------------------

_PCAP_MAGIC = {
    b"\xd4\xc3\xb2\xa1": "<",  # microseconds, little-endian
    b"\xa1\xb2\xc3\xd4": ">",
    b"\x4d\x3c\xb2\xa1": "<",  # nanoseconds
    b"\xa1\xb2\x3c\x4d": ">",
}
_PCAPNG_SHB = b"\x0a\x0d\x0d\x0a"
_PCAPNG_PACKET_BLOCKS = frozenset({2, 3, 6})  # packet, simple packet, enhanced packet


@dataclass(frozen=True)
class CaptureEnd:
    """How a capture file ends: ``frames`` whole frames, then (when
    ``truncated``) part of frame ``frames + 1``, which starts at byte
    ``frame_start``; ``size`` is the file's length in bytes."""

    frames: int
    size: int
    truncated: bool
    frame_start: int | None = None
    in_header: bool = False

    def describe(self) -> str:
        if not self.truncated:
            return f"capture complete: {self.frames} frames, {self.size} bytes"
        if self.in_header:
            return f"capture ends inside its file header at byte {self.size} (truncated)"
        frame = self.frames + 1
        start = f"; frame {frame} starts at byte {self.frame_start}" if self.frame_start else ""
        return f"capture ends inside frame {frame} at byte {self.size} (truncated{start})"


def capture_end(pcap: Path) -> CaptureEnd:
    """Walk the records of a pcap or pcapng file (headers only) to find
    where it ends: after a whole frame, or inside one. Other formats come
    back as not truncated with 0 frames (tshark reads more formats than this)."""
    data = pcap.read_bytes()
    size = len(data)
    magic = data[:4]
    if magic in _PCAP_MAGIC:
        order = _PCAP_MAGIC[magic]
        if size < 24:
            return CaptureEnd(0, size, True, in_header=True)
        pos, frames = 24, 0
        while pos < size:
            if pos + 16 > size:
                return CaptureEnd(frames, size, True, pos)
            (incl,) = struct.unpack_from(order + "I", data, pos + 8)
            if pos + 16 + incl > size:
                return CaptureEnd(frames, size, True, pos)
            pos += 16 + incl
            frames += 1
        return CaptureEnd(frames, size, False)
    if magic == _PCAPNG_SHB:
        pos, frames, order = 0, 0, "<"
        while pos < size:
            if pos + 12 > size:
                return CaptureEnd(frames, size, True, pos, in_header=frames == 0 and pos == 0)
            if data[pos : pos + 4] == _PCAPNG_SHB:
                bom = data[pos + 8 : pos + 12]
                order = "<" if bom == b"\x4d\x3c\x2b\x1a" else ">"
            btype, blen = struct.unpack_from(order + "II", data, pos)
            if blen < 12 or pos + blen > size:
                header = frames == 0 and pos == 0
                return CaptureEnd(frames, size, True, None if header else pos, in_header=header)
            if btype in _PCAPNG_PACKET_BLOCKS:
                frames += 1
            pos += blen
        return CaptureEnd(frames, size, False)
    return CaptureEnd(0, size, False)


def _int(text: str | None) -> int | None:
    if text is None or text == "":
        return None
    try:
        return int(text, 0)
    except ValueError:
        try:
            return int(text)
        except ValueError:
            return None


def _first(packet: ET.Element, name: str, attr: str = "show") -> str | None:
    for el in packet.iter("field"):
        if el.get("name") == name:
            return el.get(attr)
    return None


def _convert(leaf: str, el: ET.Element, *, builtin: bool) -> int | str | bool:
    show = el.get("show", "")
    if builtin:
        if leaf in _BUILTIN_BYTES:
            return el.get("value", "").lower()
        if leaf in _BUILTIN_STR:
            return show
    else:
        if leaf in _BYTES_FIELDS:
            return el.get("value", "").lower()
        if leaf in _STR_FIELDS:
            return show
        if leaf in _BOOL_FIELDS:
            return show in ("1", "True", "true")
    number = _int(show)
    return number if number is not None else show


def _collect_fields(
    proto_el: ET.Element, prefix: str, repeated: frozenset[str], *, builtin: bool
) -> dict[str, FieldValue]:
    out: dict[str, FieldValue] = {}
    for el in proto_el.iter("field"):
        name = el.get("name", "")
        if not name.startswith(prefix + ".") or name.startswith(prefix + ".expert."):
            continue
        leaf = name[len(prefix) + 1 :]
        value = _convert(leaf, el, builtin=builtin)
        if leaf in repeated:
            out.setdefault(leaf, [])
            out[leaf].append(value)  # type: ignore[union-attr]
        elif leaf in out:
            prior = out[leaf]
            out[leaf] = (prior if isinstance(prior, list) else [prior]) + [value]
        else:
            out[leaf] = value
    return out


def _collect_experts(proto_el: ET.Element) -> list[dict[str, str]]:
    experts = []
    for el in proto_el.iter("field"):
        if el.get("name") != "_ws.expert":
            continue
        name = message = ""
        severity = group = 0
        for child in el:
            cname = child.get("name", "")
            if cname == "_ws.expert.message":
                message = child.get("show", "")
            elif cname == "_ws.expert.severity":
                severity = _int(child.get("show")) or 0
            elif cname == "_ws.expert.group":
                group = _int(child.get("show")) or 0
            elif cname and not cname.startswith("_ws.") and not name:
                name = cname
        experts.append(
            {
                "name": name,
                "severity": SEVERITIES.get(severity, hex(severity)),
                "group": GROUPS.get(group, hex(group)),
                "message": message,
            }
        )
    return experts


def _frames(
    root: ET.Element, proto: str, repeated: frozenset[str], *, builtin: bool
) -> list[DecodedFrame]:
    frames = []
    for packet in root.iter("packet"):
        protos = [p for p in packet.iter("proto") if p.get("name") == proto]
        if not protos:
            continue  # ARP, other UDP, ...: not LTP
        layers = [_collect_fields(p, proto, repeated, builtin=builtin) for p in protos]
        experts = [e for p in protos for e in _collect_experts(p)]
        label = protos[0].get("showname", "")
        if builtin:
            summary = label
        else:
            summary = label[len(ROOT_LABEL) + 2 :] if label.startswith(ROOT_LABEL + ", ") else ""
        udp_length = _int(_first(packet, "udp.length"))
        frames.append(
            DecodedFrame(
                number=_int(_first(packet, "num")) or 0,
                time_epoch=float(_first(packet, "timestamp", "value") or 0.0),
                ip_src=_first(packet, "ip.src") or _first(packet, "ipv6.src"),
                ip_dst=_first(packet, "ip.dst") or _first(packet, "ipv6.dst"),
                udp_srcport=_int(_first(packet, "udp.srcport")),
                udp_dstport=_int(_first(packet, "udp.dstport")),
                udp_payload_length=udp_length - 8 if udp_length is not None else None,
                fields=layers[0],
                summary=summary,
                experts=experts,
                layers=layers,
            )
        )
    return frames


Ports = int | Iterable[int] | None


def port_list(port: Ports) -> list[int] | None:
    """``port`` (one port, several, or None) as a sorted list without repeats."""
    if port is None:
        return None
    ports = sorted({port} if isinstance(port, int) else set(port))
    for p in ports:
        if isinstance(p, bool) or not isinstance(p, int) or not 1 <= p <= 65535:
            raise ValueError(f"UDP port {p!r} is not 1-65535")
    return ports


def port_ranges(ports: Iterable[int]) -> str:
    """Ports as a Wireshark range preference: ``1113,4556,5000-5010``."""
    out: list[str] = []
    run: list[int] = []
    for p in sorted(set(ports)):
        if run and p == run[-1] + 1:
            run.append(p)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
        run = [p]
    if run:
        out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ",".join(out)


@dataclass
class CaptureDecode:
    """What :func:`decode_capture` got out of one capture."""

    frames: list[DecodedFrame]
    # UDP datagrams our dissector did not decode, by destination port
    skipped_udp: Counter[int]
    # every frame tshark read (LTP or not)
    frames_read: int
    # set when the file ends inside a frame: everything before it is decoded
    truncation: CaptureEnd | None = None

    def skipped_summary(self) -> str:
        """``12 UDP datagrams on other ports (53: 4, 5353: 8)``, or ""."""
        n = sum(self.skipped_udp.values())
        if not n:
            return ""
        ports = ", ".join(f"{p}: {c}" for p, c in sorted(self.skipped_udp.items()))
        return f"{n} UDP datagram{'s' if n != 1 else ''} on other ports ({ports})"


def _skipped_udp(root: ET.Element, proto: str) -> tuple[Counter[int], int]:
    """UDP datagrams without a ``proto`` layer, by destination port (only a
    packet's own UDP layer counts, not the copy inside an ICMP error), and
    the number of packets read."""
    skipped: Counter[int] = Counter()
    read = 0
    for packet in root.iter("packet"):
        read += 1
        top = packet.findall("proto")
        udp = next((p for p in top if p.get("name") == "udp"), None)
        if udp is None or any(p.get("name") == proto for p in packet.iter("proto")):
            continue
        port = next(
            (_int(f.get("show")) for f in udp.iter("field") if f.get("name") == "udp.dstport"),
            None,
        )
        skipped[port if port is not None else 0] += 1
    return skipped, read


def decode_capture(
    pcap: Path, *, port: Ports = None, prefs: dict[str, str] | None = None
) -> CaptureDecode:
    """Decode every LTP frame of ``pcap`` with ``ltp.lua`` (one tshark run),
    count the UDP datagrams it skipped, and say where a truncated capture
    ends instead of failing: the frames before the cut are decoded.

    ``port``: one UDP port or several (replacing the default 1113, the
    preference dtnltp.udp_ports); ``prefs`` sets further dtnltp preferences,
    e.g. ``{"heuristic": "TRUE"}``.
    """
    args = ["-X", f"lua_script:{LUA_SCRIPT}", "-r", str(pcap)]
    ports = port_list(port)
    if ports is not None:
        args += ["-o", f"{PROTO}.udp_ports:{port_ranges(ports)}"]
    for name, value in (prefs or {}).items():
        args += ["-o", f"{PROTO}.{name}:{value}"]
    root, truncated = _tshark_pdml(args)
    frames = _frames(root, PROTO, OUR_REPEATED, builtin=False)
    skipped, read = _skipped_udp(root, PROTO)
    end = None
    if truncated:
        end = capture_end(pcap)
        if not end.truncated:  # a format capture_end does not walk
            end = CaptureEnd(read, end.size, True)
    return CaptureDecode(frames, skipped, read, end)


def decode(
    pcap: Path, *, port: Ports = None, prefs: dict[str, str] | None = None
) -> list[DecodedFrame]:
    """Decode every LTP frame of ``pcap`` with ``ltp.lua`` (one tshark run).

    ``port``: one UDP port or several (an iterable), replacing the default
    1113 (preference dtnltp.udp_ports); ``prefs`` sets further dtnltp
    preferences, e.g. ``{"heuristic": "TRUE"}``. A truncated capture raises
    :class:`CaptureTruncated`, which carries the frames before the cut
    (:func:`decode_capture` returns them instead).
    """
    result = decode_capture(pcap, port=port, prefs=prefs)
    if result.truncation is not None:
        raise CaptureTruncated(pcap, result)
    return result.frames


def decode_builtin(pcap: Path, *, port: int | None = None) -> list[DecodedFrame]:
    """Decode every LTP frame of ``pcap`` with Wireshark's built-in ``ltp``
    dissector (no plugin); fields keyed by leaf name (``ltp.rpt.ub`` → ``rpt.ub``)."""
    args = ["-r", str(pcap)]
    if port is not None:
        args += ["-d", f"udp.port=={port},{BUILTIN_PROTO}"]
    return _frames(_run_pdml(args), BUILTIN_PROTO, BUILTIN_REPEATED, builtin=True)


# ---------------------------------------------------------------------------
# Comparison with the built-in dissector
# ---------------------------------------------------------------------------

ALL_TYPES = frozenset(range(16))
DATA_TYPES = frozenset(range(8))
CHECKPOINT_TYPES = frozenset({1, 2, 3})


@dataclass(frozen=True)
class Mapping:
    ours: str  # leaf name in DecodedFrame.fields, or hdr_ext.* / trl_ext.* (see below)
    theirs: str  # leaf name of the built-in field (without "ltp.")
    types: frozenset[int]  # segment type codes the pair applies to
    note: str = ""


# How each of our fields corresponds to a built-in one (Wireshark 4.0 packet-ltp.c).
# The built-in uses one field per (segment kind, role) where we use one per role,
# so report_serial / checkpoint_serial map to different built-in fields per type.
# hdr_ext.* and trl_ext.* are our ext.* lists split by hdr_ext_count: we use one
# ext.* field set in two subtrees, the built-in has separate hdr/trl fields.
MAPPINGS: tuple[Mapping, ...] = (
    Mapping("version", "version", ALL_TYPES),
    Mapping("type", "type", ALL_TYPES, "built-in shows it BASE_HEX; compared as integers"),
    Mapping("session_originator", "session.orig", ALL_TYPES),
    Mapping("session_number", "session.number", ALL_TYPES),
    Mapping("hdr_ext_count", "hdr.extn.cnt", ALL_TYPES),
    Mapping("trl_ext_count", "trl.extn.cnt", ALL_TYPES),
    Mapping("hdr_ext.tag", "hdr.extn.tag", ALL_TYPES),
    Mapping("hdr_ext.length", "hdr.extn.len", ALL_TYPES),
    Mapping("hdr_ext.value", "hdr.extn.val", ALL_TYPES, "hex strings"),
    Mapping("trl_ext.tag", "trl.extn.tag", ALL_TYPES),
    Mapping("trl_ext.length", "trl.extn.len", ALL_TYPES),
    Mapping("trl_ext.value", "trl.extn.val", ALL_TYPES, "hex strings"),
    Mapping("client_service_id", "data.client.id", DATA_TYPES),
    Mapping("offset", "data.offset", DATA_TYPES),
    Mapping("length", "data.length", DATA_TYPES),
    Mapping("checkpoint_serial", "data.chkp", CHECKPOINT_TYPES),
    Mapping("report_serial", "data.rpt", CHECKPOINT_TYPES),
    Mapping("report_serial", "rpt.sno", frozenset({8})),
    Mapping("checkpoint_serial", "rpt.chkp", frozenset({8})),
    Mapping("upper_bound", "rpt.ub", frozenset({8})),
    Mapping("lower_bound", "rpt.lb", frozenset({8})),
    Mapping("claim_count", "rpt.clm.cnt", frozenset({8})),
    Mapping("claim.offset", "rpt.clm.off", frozenset({8}), "both relative to the lower bound"),
    Mapping("claim.length", "rpt.clm.len", frozenset({8})),
    Mapping("report_serial", "rpt.ack.sno", frozenset({9})),
    Mapping("reason", "cancel.code", frozenset({12, 14})),
)

# Our fields without a built-in counterpart: derived from the type code
# (type_name, kind, red, checkpoint, eorp, eob) or not exposed by the built-in,
# which hands block data to the bundle dissector / reassembler (data).
OURS_UNMAPPED = frozenset({"type_name", "kind", "red", "checkpoint", "eorp", "eob", "data"})


@dataclass(frozen=True)
class Disagreement:
    frame: int
    field: str
    builtin_field: str
    ours: int | str | bool
    theirs: int | str | bool


@dataclass(frozen=True)
class OneSided:
    frame: int
    field: str  # ours for side == "ours", built-in leaf name for side == "builtin"
    side: str
    value: int | str | bool


@dataclass
class ComparisonReport:
    frames_compared: int = 0
    compared: int = 0
    agreed: int = 0
    disagreements: list[Disagreement] = field(default_factory=list)
    only_ours: list[OneSided] = field(default_factory=list)
    only_builtin: list[OneSided] = field(default_factory=list)
    frames_only_ours: list[int] = field(default_factory=list)
    frames_only_builtin: list[int] = field(default_factory=list)
    frames_builtin_duplicated: list[int] = field(default_factory=list)
    unmapped_ours: Counter[str] = field(default_factory=Counter)
    unmapped_builtin: Counter[str] = field(default_factory=Counter)

    @property
    def disagreed(self) -> int:
        return len(self.disagreements)

    def summary(self) -> str:
        lines = [
            f"frames compared {self.frames_compared}; fields compared {self.compared}, "
            f"agreed {self.agreed}, disagreed {self.disagreed}",
            f"mapped fields only ours {len(self.only_ours)}, only built-in "
            f"{len(self.only_builtin)}",
            f"frames LTP only for us {self.frames_only_ours}, only for built-in "
            f"{self.frames_only_builtin}, built-in layer duplicated "
            f"{self.frames_builtin_duplicated}",
        ]
        lines += [
            f"  frame {d.frame}: {d.field}={d.ours!r} vs ltp.{d.builtin_field}={d.theirs!r}"
            for d in self.disagreements
        ]
        lines += [f"  frame {o.frame}: only ours {o.field}={o.value!r}" for o in self.only_ours]
        lines += [
            f"  frame {o.frame}: only built-in ltp.{o.field}={o.value!r}" for o in self.only_builtin
        ]
        return "\n".join(lines)


def _as_list(value: FieldValue | None) -> list[int | str | bool]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _our_view(fields: dict[str, FieldValue]) -> dict[str, FieldValue]:
    """Our fields plus hdr_ext.* / trl_ext.* (ext.* split by hdr_ext_count)."""
    view = dict(fields)
    hcount = fields.get("hdr_ext_count")
    h = hcount if isinstance(hcount, int) and not isinstance(hcount, bool) else 0
    for part in ("tag", "length", "value"):
        values = _as_list(fields.get(f"ext.{part}"))
        if values[:h]:
            view[f"hdr_ext.{part}"] = values[:h]
        if values[h:]:
            view[f"trl_ext.{part}"] = values[h:]
    return view


def _compare_frame(ours: DecodedFrame, theirs: DecodedFrame, report: ComparisonReport) -> None:
    mine = _our_view(ours.fields)
    other = theirs.fields
    seg_type = mine.get("type", other.get("type"))
    used_theirs: set[str] = set()
    for m in MAPPINGS:
        if not isinstance(seg_type, int) or seg_type not in m.types:
            continue
        used_theirs.add(m.theirs)
        a, b = _as_list(mine.get(m.ours)), _as_list(other.get(m.theirs))
        for i in range(max(len(a), len(b))):
            if i < len(a) and i < len(b):
                report.compared += 1
                if a[i] == b[i]:
                    report.agreed += 1
                else:
                    report.disagreements.append(
                        Disagreement(ours.number, m.ours, m.theirs, a[i], b[i])
                    )
            elif i < len(a):
                report.only_ours.append(OneSided(ours.number, m.ours, "ours", a[i]))
            else:
                report.only_builtin.append(OneSided(ours.number, m.theirs, "builtin", b[i]))
    for key in ours.fields:
        if key in OURS_UNMAPPED:
            report.unmapped_ours[key] += 1
    mapped_theirs = {m.theirs for m in MAPPINGS}
    for key in other:
        if key not in mapped_theirs:
            report.unmapped_builtin[key] += 1


def compare_frames(
    ours: Iterable[DecodedFrame], builtin: Iterable[DecodedFrame]
) -> ComparisonReport:
    """Compare two decodes of the same capture field by field (see MAPPINGS)."""
    report = ComparisonReport()
    theirs_by_number = {f.number: f for f in builtin}
    ours_numbers = set()
    for frame in ours:
        ours_numbers.add(frame.number)
        other = theirs_by_number.get(frame.number)
        if other is None:
            report.frames_only_ours.append(frame.number)
            continue
        report.frames_compared += 1
        if len(other.layers) > 1:
            report.frames_builtin_duplicated.append(frame.number)
        _compare_frame(frame, other, report)
    report.frames_only_builtin = sorted(set(theirs_by_number) - ours_numbers)
    return report


def compare_with_builtin(pcap: Path, *, port: int | None = None) -> ComparisonReport:
    """Decode ``pcap`` with ours and with the built-in dissector and compare."""
    return compare_frames(decode(pcap, port=port), decode_builtin(pcap, port=port))
