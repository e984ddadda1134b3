"""Run tshark over a capture with one of our Lua dissectors and read what it
decoded. Protocol-free: the dissector of each protocol (its Lua file, Proto
name, tree label and field types) comes from the protocol registry
(``conformance/protocols/<proto>.py``).

One tshark process per capture: tshark writes PDML (its XML packet-details
format, ``-T pdml``), which carries every field with its value *and* the
expert infos nested where they were raised, and this module turns it into
:class:`DecodedFrame` records.

Field vocabulary: ``DecodedFrame.fields`` is keyed by the leaf name of the
field (``dtnltp.session_number`` → ``session_number``);
:meth:`DecodedFrame.match_fields` renames and filters them into the emulator
classifier's vocabulary (``fields`` of specs/<proto>/wire.json).

Values: integers as ``int``, booleans as ``bool``, strings as ``str``, byte
strings as lowercase hex ``str`` (by the dissector's declared field types).
Fields that may repeat are always lists; any other field that unexpectedly
occurs twice becomes a list too.

``summary`` is the one-line summary the dissector writes to the Info column;
it is read from the protocol item (``"<label>, <summary>"``) because tshark
4.0 has no output format that carries both the packet tree and the columns.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from conformance.core import registry as protocols
from conformance.core.contract import Dissector, FieldTypes
from conformance.core.errors import DtncError

FieldValue = int | str | bool | list[int | str | bool]


def dissector(protocol: str) -> Dissector:
    """Our dissector of a registered protocol (conformance/protocols/)."""
    return protocols.get(protocol).dissector


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
            f"{len(decoded.frames)} of them {decoded.units()}"
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
    """One captured frame that carried a unit (segment, PDU) of the protocol."""

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
    # one field dict per protocol layer in the frame; ``fields`` is layers[0]
    layers: list[dict[str, FieldValue]] = field(default_factory=list)
    protocol: str = ""
    # the emulator classifier's vocabulary and the dissector's names for it
    # (match_fields), looked up once per capture by frames_of
    vocabulary: frozenset[str] = field(default_factory=frozenset, repr=False, compare=False)
    renames: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def expert_names(self) -> list[str]:
        return [e["name"] for e in self.experts]

    def match_fields(self) -> dict[str, int | str | bool]:
        """The fields in the emulator classifier's vocabulary (``fields`` of
        specs/<proto>/wire.json), under the classifier's names (the
        dissector's ``match_renames``); no display-only extras."""
        out: dict[str, int | str | bool] = {}
        for key, value in self.fields.items():
            name = self.renames.get(key, key)
            if name in self.vocabulary and not isinstance(value, list):
                out[name] = value
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


def run_pdml(args: list[str]) -> ET.Element:
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


def _convert(leaf: str, el: ET.Element, types: FieldTypes) -> int | str | bool:
    show = el.get("show", "")
    if leaf in types.bytes_fields:
        return el.get("value", "").lower()
    if leaf in types.str_fields:
        return show
    if leaf in types.bool_fields:
        return show in ("1", "True", "true")
    number = _int(show)
    return number if number is not None else show


def _collect_fields(proto_el: ET.Element, prefix: str, types: FieldTypes) -> dict[str, FieldValue]:
    out: dict[str, FieldValue] = {}
    for el in proto_el.iter("field"):
        name = el.get("name", "")
        if not name.startswith(prefix + ".") or name.startswith(prefix + ".expert."):
            continue
        leaf = name[len(prefix) + 1 :]
        value = _convert(leaf, el, types)
        if leaf in types.repeated:
            items = out.setdefault(leaf, [])
            assert isinstance(items, list)  # a repeated field is only ever a list
            items.append(value)
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


def frames_of(
    root: ET.Element,
    proto: str,
    types: FieldTypes,
    *,
    label: str = "",
    protocol: str = "",
    renames: Mapping[str, str] | None = None,
) -> list[DecodedFrame]:
    """Every packet of a PDML document with a ``proto`` layer. ``label``: the
    dissector's tree label, which its summary follows (``label, summary``);
    empty: the whole label is the summary. ``protocol``: the registered
    protocol whose classifier vocabulary the frames' match_fields speak;
    ``renames``: its dissector's names for it, when the caller has them."""
    from conformance.core.classifiers import vocabulary

    known = frozenset(vocabulary(protocol)) if protocol else frozenset()
    if renames is None:
        renames = dissector(protocol).match_renames if protocol else {}
    frames = []
    for packet in root.iter("packet"):
        protos = [p for p in packet.iter("proto") if p.get("name") == proto]
        if not protos:
            continue  # ARP, other UDP, ...: not this protocol
        layers = [_collect_fields(p, proto, types) for p in protos]
        experts = [e for p in protos for e in _collect_experts(p)]
        head = protos[0].get("showname", "")
        if not label:
            summary = head
        else:
            summary = head[len(label) + 2 :] if head.startswith(label + ", ") else ""
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
                protocol=protocol,
                vocabulary=known,
                renames=renames,
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
    # every frame tshark read (the protocol's or not)
    frames_read: int
    # set when the file ends inside a frame: everything before it is decoded
    truncation: CaptureEnd | None = None
    protocol: str = ""

    def units(self) -> str:
        """``LTP segments``: what the frames carried."""
        return f"{self.protocol.upper()} {protocols.get(self.protocol).unit}s"

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
    pcap: Path,
    *,
    protocol: str,
    port: Ports = None,
    prefs: dict[str, str] | None = None,
    analysis: bool = False,
) -> CaptureDecode:
    """Decode every frame of ``protocol`` in ``pcap`` with our Lua dissector
    (one tshark run), count the UDP datagrams it skipped, and say where a
    truncated capture ends instead of failing: the frames before the cut are
    decoded.

    ``port``: one UDP port or several (replacing the protocol's default, the
    preference <proto>.udp_ports); ``prefs`` sets further preferences of the
    dissector, e.g. ``{"heuristic": "TRUE"}``. ``analysis``: the dissector's
    session analysis, with tshark's second pass so that links to later
    frames are known (off: one pass, no analysis; a protocol without
    analysis ignores it).
    """
    d = dissector(protocol)
    args = ["-X", f"lua_script:{d.lua}", "-r", str(pcap)]
    if d.analysis_pref:
        args += ["-o", f"{d.proto}.{d.analysis_pref}:{'TRUE' if analysis else 'FALSE'}"]
        if analysis:
            args.append("-2")
    ports = port_list(port)
    if ports is not None:
        args += ["-o", f"{d.proto}.udp_ports:{port_ranges(ports)}"]
    for name, value in (prefs or {}).items():
        args += ["-o", f"{d.proto}.{name}:{value}"]
    root, truncated = _tshark_pdml(args)
    frames = frames_of(
        root, d.proto, d.fields, label=d.label, protocol=protocol, renames=d.match_renames
    )
    skipped, read = _skipped_udp(root, d.proto)
    end = None
    if truncated:
        end = capture_end(pcap)
        if not end.truncated:  # a format capture_end does not walk
            end = CaptureEnd(read, end.size, True)
    return CaptureDecode(frames, skipped, read, end, protocol)


def decode(
    pcap: Path,
    *,
    protocol: str,
    port: Ports = None,
    prefs: dict[str, str] | None = None,
    analysis: bool = False,
) -> list[DecodedFrame]:
    """Decode every frame of ``protocol`` in ``pcap`` with our Lua dissector
    (one tshark run); ``port``, ``prefs`` and ``analysis`` as for
    :func:`decode_capture`. A truncated capture raises
    :class:`CaptureTruncated`, which carries the frames before the cut
    (:func:`decode_capture` returns them instead).
    """
    result = decode_capture(pcap, protocol=protocol, port=port, prefs=prefs, analysis=analysis)
    if result.truncation is not None:
        raise CaptureTruncated(pcap, result)
    return result.frames
