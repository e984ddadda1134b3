"""Our LTP dissector against Wireshark's built-in one (packet-ltp.c, as in
tshark 4.0): decode the same capture with both and compare field by field.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from conformance.core.contract import FieldTypes
from dissectors.tshark import DecodedFrame, FieldValue, decode, frames_of, run_pdml

# Wireshark 4.0's own LTP dissector (packet-ltp.c): its Proto name and how to
# read its fields.
BUILTIN_PROTO = "ltp"
BUILTIN_FIELDS = FieldTypes(
    str_fields=frozenset({"partial_packet", "cancel_ack"}),
    bytes_fields=frozenset({"hdr.extn.val", "trl.extn.val"}),
    repeated=frozenset(
        {
            "hdr.extn.tag", "hdr.extn.len", "hdr.extn.val",
            "trl.extn.tag", "trl.extn.len", "trl.extn.val",
            "rpt.clm.off", "rpt.clm.len", "fragment",
        }
    ),
)  # fmt: skip


def decode_builtin(pcap: Path, *, port: int | None = None) -> list[DecodedFrame]:
    """Decode every LTP frame of ``pcap`` with Wireshark's built-in ``ltp``
    dissector (no plugin); fields keyed by leaf name (``ltp.rpt.ub`` → ``rpt.ub``)."""
    args = ["-r", str(pcap)]
    if port is not None:
        args += ["-d", f"udp.port=={port},{BUILTIN_PROTO}"]
    return frames_of(run_pdml(args), BUILTIN_PROTO, BUILTIN_FIELDS, protocol="ltp")


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
    return compare_frames(decode(pcap, protocol="ltp", port=port), decode_builtin(pcap, port=port))
