"""CFDP PDUs as the model's PDUs, for trace validation
(conformance/tracecheck.py, specs/cfdp/TraceCFDP.tla).

The model (specs/cfdp/CFDP.tla) abstracts the bytes: its file is NSeg File
Data segments of the scenario's segment size, so a File Data PDU must start
on that grid and be one segment long (the last may be shorter); a NAK is the
set of segments its requests cover, plus whether it asks for the Metadata
(the (0, 0) request); condition codes are the model's names of Table 5-5.
The file size a Metadata or an EOF(no error) states must be the file's
length (5.2.2, 5.2.5; see ``_stated_size``): the model's sender always
states it, so a PDU stating another is one no behaviour sends, and the trace
is rejected at its frame. What the model leaves out is not compared: entity
ids and widths, an EOF(cancel)'s file size and the checksum, a Keep Alive's
progress, a failed transaction's Finished delivery code, TLVs. Anything the model cannot
express raises Unrepresentable: the check is then 'unchecked', with the
reason, never a fail.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from functools import cache, partial
from typing import Any

from conformance.core.classifiers import frame_matches
from conformance.core.contract import (
    TraceModel,
    Unrepresentable,
    WireEvent,
    field_int,
    first_unrepresentable,
)
from conformance.core.types import Scenario, SegmentRecord
from conformance.protocols.cfdp import MODEL_CONDITIONS, MODEL_MODES, CfdpRequest, CfdpTransfer
from generators.cfdp import SPEC_DIR
from generators.cfdp.outcomes import constants as model_constants
from generators.cfdp.outcomes import n_segments, observed_constants, parse_outcomes
from generators.tlaval import Record
from generators.traps import action_comments, model_actions

SPEC = SPEC_DIR / "CFDP.tla"
TRACE_SPEC = SPEC_DIR / "TraceCFDP.tla"
# The disjunctions of CFDP.tla whose disjuncts are the model's actions.
NEXT_BLOCKS = ("SenderStep", "ReceiverStep", "UserStep", "ChannelFault", "Next")

# wire condition name -> the model's (CFDP.tla Conditions)
CONDITIONS = {v: k for k, v in MODEL_CONDITIONS.items()}
# the model's PDU kinds by directive (wire.json directives) or PDU type
KINDS = {
    "metadata": "MD",
    "eof": "EOF",
    "ack": "ACK",
    "nak": "NAK",
    "finished": "FIN",
    "prompt": "PROMPT",
    "keep_alive": "KA",
}
ACK_OF = {"eof": "EOF", "finished": "FIN"}
PROMPT_OF = {"nak": "NAK", "keep_alive": "KA"}


def _pdu(
    k: str,
    seg: int = 0,
    bad: bool = False,
    cc: str = "",
    of: str = "",
    segs: frozenset[int] = frozenset(),
    md: bool = False,
    ok: bool = False,
) -> Record:
    """A PDU as CFDP.tla's record (Pdu, with transaction 1: the trace model
    checks one transaction)."""
    return Record(k=k, t=1, seg=seg, bad=bad, cc=cc, of=of, segs=segs, md=md, ok=ok)


def blank_unit() -> Record:
    """The unit of a line that carries none (exit, end): CFDP.tla's NoPdu."""
    return Record(k="", t=0, seg=0, bad=False, cc="", of="", segs=frozenset(), md=False, ok=False)


_NONE = blank_unit()


def session_of(fields: Mapping[str, object]) -> Hashable:
    """A transaction: its source entity and sequence number (§5.1)."""
    return (fields.get("source_entity"), fields.get("transaction"))


@cache
def action_sections() -> dict[str, list[str]]:
    """Action -> the 727.0-B-5 sections its comment in CFDP.tla cites
    (anywhere in it: "\\* 4.7.1, 4.8: at the limit ..." or "... (4.7)");
    none for the actions whose procedure no source gives a section for."""
    out: dict[str, list[str]] = {}
    for name, comment in action_comments(SPEC).items():
        found = re.findall(r"(?<![\d.])(\d+\.\d+(?:\.\d+)*)(?![\d.]*\d)", comment)
        if found:
            out[name] = list(dict.fromkeys(found))
    return out


def _ints(v: object) -> list[int]:
    if isinstance(v, list):
        return [int(x) for x in v]
    return [] if v is None else [field_int(v)]


class _Grid:
    """The scenario's segment grid: File Data offsets and NAK ranges in
    segments."""

    def __init__(self, t: CfdpTransfer) -> None:
        self.size = t.segment_size
        self.file_len = t.file_len
        self.n = n_segments(t)

    def segment(self, offset: int, length: int, where: str) -> int:
        want = min(self.size, self.file_len - offset)
        if offset % self.size or offset >= max(self.file_len, 1) or length != want:
            raise Unrepresentable(
                f"{where}: file data [{offset}, {offset + length}) is not one segment of "
                f"{self.size} octets on the file's segment grid (the model counts data in "
                "whole segments)"
            )
        return offset // self.size

    def covered(self, starts: Sequence[int], ends: Sequence[int], where: str) -> frozenset[int]:
        """The segments a NAK's requests cover; a request that covers part of
        a segment is unrepresentable."""
        out: set[int] = set()
        for a, b in zip(starts, ends, strict=False):
            if a == b == 0:
                continue  # the Metadata
            for i in range(self.n):
                lo, hi = i * self.size, min((i + 1) * self.size, self.file_len)
                part = max(0, min(hi, b) - max(lo, a))
                if part == hi - lo:
                    out.add(i)
                elif part:
                    raise Unrepresentable(
                        f"{where}: the NAK's request [{a}, {b}) covers part of segment {i} "
                        f"([{lo}, {hi})); the model asks for whole segments"
                    )
        return frozenset(out)

    def overlaps(self, i: int, lo: int, hi: int) -> bool:
        """Whether segment ``i`` has an octet in [lo, hi)."""
        return max(lo, i * self.size) < min(hi, (i + 1) * self.size, self.file_len)


def _condition(f: Mapping[str, object], where: str) -> str:
    name = str(f.get("condition", ""))
    if name not in CONDITIONS:
        raise Unrepresentable(
            f"{where} carries condition {name or '?'}, which the model has no procedure for "
            f"(it has {', '.join(sorted(CONDITIONS))})"
        )
    return CONDITIONS[name]


def _stated_size(f: Mapping[str, object], k: str, cc: str, grid: _Grid) -> int | None:
    """The file size a Metadata or an EOF(no error) states where it is not
    the file's length, else None.

    The Metadata's file size is the file's length (5.2.5). The EOF's is
    "the total number of file data octets transmitted by the sender,
    regardless of the condition code" (5.2.2, as dariol83/ccsds quotes it:
    EndOfFilePduBuilder.java:79-81 at f3f8752). After EOF(no error) the
    sender has sent the whole file, and a receiver checks its progress and
    completeness against that size (4.6.1.2.7 c, 4.6.1.2.9: a File Size
    Error where they disagree), so it is the file's length: octets sent
    twice are the same file data octets, not more of them (cfdp-rs 0.3.0
    counts its retransmissions in it: reports/findings/cfdp). An
    EOF(cancel)'s size is what the sender had sent by then, which the
    model does not count: it is not compared."""
    if k == "MD" or (k == "EOF" and cc == "NoError"):
        size = f.get("file_size")
        if size is not None and field_int(size) != grid.file_len:
            return field_int(size)
    return None


def model_pdu(f: Mapping[str, object], grid: _Grid, where: str) -> Record:
    """One PDU's fields as the model's PDU. A Metadata or EOF(no error)
    stating a file size other than the file's is marked ``bad``, with the
    size it states in ``seg``: the model's sender sends no such PDU."""
    if f.get("pdu_type") == "file_data":
        return _pdu("FD", seg=grid.segment(field_int(f["offset"]), field_int(f["length"]), where))
    directive = str(f.get("directive", ""))
    k = KINDS.get(directive)
    if k is None:
        raise Unrepresentable(f"{where}: directive {directive or '?'} is not in the model")
    if k in ("MD", "EOF"):
        cc = _condition(f, where) if k == "EOF" else ""
        size = _stated_size(f, k, cc, grid)
        if size is None:
            return _pdu(k, cc=cc)
        return _pdu(k, cc=cc, bad=True, seg=size)
    if k == "ACK":
        of = ACK_OF.get(str(f.get("ack_of", "")))
        if of is None:
            raise Unrepresentable(f"{where}: an ACK of {f.get('ack_of')!r}")
        return _pdu("ACK", of=of, cc=_condition(f, where))
    if k == "NAK":
        starts, ends = _ints(f.get("segment.start")), _ints(f.get("segment.end"))
        md = any(a == b == 0 for a, b in zip(starts, ends, strict=False))
        return _pdu("NAK", segs=grid.covered(starts, ends, where), md=md)
    if k == "FIN":
        cc = _condition(f, where)
        # a failed transaction's delivery code is not compared: the receiver
        # may have the whole file when it is cancelled (the model says "no")
        ok = cc == "NoError" and f.get("delivery_code") == "data_complete"
        return _pdu("FIN", cc=cc, ok=ok)
    if k == "PROMPT":
        return _pdu("PROMPT", of=PROMPT_OF.get(str(f.get("response_required", "")), "?"))
    return _pdu(k)  # KA (its progress is not compared: TraceKaPdu)


def _no_immediate_nak_scoped_past_a_gap(
    units: Mapping[int, Record],
    events: Sequence[WireEvent],
    scopes: Mapping[int, tuple[int, int]],
    grid: _Grid,
) -> None:
    """Each NAK's segment requests name every extent of its scope not yet
    received (4.6.4.3.3; specs/cfdp/README.md quotes the text). The model's
    immediate NAK has no scope of its own: it asks for every gap below the
    File Data that opened a new one, i.e. its scope starts at 0. A NAK that
    leaves out a gap still missing inside its scope is judged by the model,
    which rejects it (cfdp-py and cfdp-rs ask for the new gap only, scope
    0). One whose scope starts past the gaps it leaves out, which an earlier
    NAK asked for, is what the text allows (spacepackets-py documents such
    scopes) and the model cannot express: that trace is not judged."""
    got: set[int] = set()
    asked: set[int] = set()
    for e in events:
        u = units.get(e.record, _NONE)
        if e.kind == "arrive" and e.dir == "forward" and u["k"] == "FD":
            got.add(int(u["seg"]))
        elif e.kind == "send" and u["k"] == "NAK":
            segs = set(u["segs"])
            top = max(segs, default=-1)
            left_out = {o for o in range(top) if o not in got and o not in segs}
            lo, hi = scopes.get(e.record, (0, grid.file_len))
            inside = {o for o in left_out if grid.overlaps(o, lo, hi)}
            if left_out and left_out <= asked and not inside:
                raise Unrepresentable(
                    f"the receiver's NAK asks for segment(s) {sorted(segs)} with scope "
                    f"[{lo}, {hi}), past {sorted(left_out)}, still missing, which an earlier "
                    "NAK asked for; 4.6.4.3.3 allows such a scope, and the model's NAKs have "
                    "no scope (its immediate NAK asks for every gap below)",
                    at=e.t,
                )
            asked |= segs


def _no_repeated_immediate_nak(units: Mapping[int, Record], events: Sequence[WireEvent]) -> None:
    """The model's receiver sends a NAK before the EOF only when File Data
    opens a new gap (its immediate NAK) or a Prompt(NAK) asks for one. A
    receiver may also repeat a NAK for gaps it asked for already, say one
    per arriving PDU: no source reached quotes the immediate NAK mode's text
    (OpenC3's tests label it 4.6.4.4.2), and 4.11.1.2.1 a) speaks of NAKs
    sent "in response to NAK timer expiration or in response to any other
    events" (dariol83/ccsds quotes it), so such a trace is not judged past
    that NAK, rather than failed on a rule the text may not make. After the
    EOF the model's own NAKs (4.6.4.6) already ask again for what is
    missing, so only NAKs before the EOF arrived are concerned."""
    asked: set[int] = set()  # segments an earlier NAK asked for
    md_asked = eof = False
    prompts = 0  # Prompt(NAK)s arrived and not yet answered
    for e in events:
        u = units.get(e.record, _NONE)
        if e.kind == "arrive" and e.dir == "forward" and u["k"] == "EOF":
            eof = True
        elif e.kind == "arrive" and e.dir == "forward" and u["k"] == "PROMPT" and u["of"] == "NAK":
            prompts += 1
        elif e.kind == "send" and u["k"] == "NAK":
            segs = {int(g) for g in u["segs"]}
            again = bool(segs or u["md"]) and segs <= asked and (md_asked or not u["md"])
            if again and prompts:  # a Prompt's answer may repeat what was asked
                prompts -= 1
            elif again and not eof:
                raise Unrepresentable(
                    f"the receiver's NAK (frame {e.frame} of {e.side}.pcap), before the EOF "
                    f"arrived, asks again for segment(s) {sorted(segs)}, which an earlier NAK "
                    "asked for, with no new gap and no Prompt (NAK); the model's immediate NAK "
                    "answers a new gap only, and whether 727.0-B-5's immediate NAK mode lets a "
                    "receiver repeat a NAK cannot be read here",
                    at=e.t,
                )
            asked |= segs
            md_asked = md_asked or bool(u["md"])


def _no_paced_immediate_nak(
    units: Mapping[int, Record], events: Sequence[WireEvent], within_s: float
) -> None:
    """The model's immediate NAK answers each new gap at once (4.6.4.3.1 as
    CFDP.tla reads it: the File Data that opens a gap is answered by a NAK
    of the gaps below). Yamcs paces its immediate NAKs: at most one per NAK
    timer interval (its ``nakTimeout``), so a gap opened soon after a NAK
    waits for the next one, or for the NAK after the EOF. Whether the
    immediate NAK mode (4.6.4.4.2, as OpenC3's tests label it) allows that
    cannot be read here: no source reached quotes its text. Such a trace is
    not judged, rather than failed on a deadline the text may not set.

    A gap is paced when the receiver does send immediate NAKs (one before
    the EOF arrived), yet its first NAK naming the gap comes later than
    ``within_s`` (the late pass's reaction window) after the File Data that
    opened it, before the EOF arrived, and before the gap's segment arrived.
    A receiver that sends no NAK before the EOF, and a gap no NAK ever
    names, are left to the model, which judges them."""
    got: dict[int, float] = {}  # segment -> when it first arrived
    opened: dict[int, WireEvent] = {}  # gap -> the File Data arrival above it
    named: dict[int, float] = {}  # gap -> when a NAK first named it
    naks: list[tuple[float, set[int]]] = []  # each NAK sent: when, the segments it names
    eof = early = False  # the EOF arrived; a NAK went before it did
    for e in events:
        u = units.get(e.record, _NONE)
        if e.kind == "arrive" and e.dir == "forward" and u["k"] == "FD" and not e.corrupt:
            seg = int(u["seg"])
            if not eof:
                for g in range(seg):
                    if g not in got and g not in named:
                        opened.setdefault(g, e)
            got.setdefault(seg, e.t)
        elif e.kind == "arrive" and e.dir == "forward" and u["k"] == "EOF":
            eof = True
        elif e.kind == "send" and u["k"] == "NAK":
            early = early or not eof
            naks.append((e.t, {int(g) for g in u["segs"]}))
            for g in u["segs"]:
                named.setdefault(int(g), e.t)
    if not early:
        return
    for g, at in sorted(opened.items(), key=lambda x: x[1].t):
        due = at.t + within_s
        if g in named and due < named[g] < got.get(g, float("inf")):
            # the model follows the trace up to the first NAK after the gap
            # opened that leaves it out, or up to when one was due
            left_out = [t for t, segs in naks if at.t < t < due and g not in segs]
            raise Unrepresentable(
                f"the receiver names segment {g}, missing since File Data above it arrived "
                f"(frame {at.frame} of {at.side}.pcap), in no NAK for "
                f"{(named[g] - at.t) * 1000:.0f} ms, past the {within_s * 1000:.0f} ms a late "
                "answer is given: it paces its immediate NAKs (Yamcs sends at most one per NAK "
                "timer interval). The model's immediate NAK answers each new gap at once, and "
                "whether 727.0-B-5's immediate NAK mode allows pacing cannot be read here",
                at=min([due, *left_out]),
            )


def _no_reopened_transaction(units: Mapping[int, Record], events: Sequence[WireEvent]) -> None:
    """The model's receiver discards what reaches a transaction that is
    over (``ReceiverRxRedundantPdu``). cfdp-py and cfdp-rs keep no record of
    it: a File Data PDU of the same transaction that arrives once its
    Finished was acknowledged opens it again, as a new transaction whose
    NAK asks for the Metadata and the whole file below. 727.0-B-5 4.7.2 Note
    2, as the readings quote it, names "terminated" and "unrecognized" as
    two states a transaction can be in at an entity, and 4.6.1.2.2 takes the
    mode from "the first received PDU of a transaction", so forgetting it
    may be allowed; the model has no such reading yet, and such a trace is
    not judged. It takes a Finished the receiver sent and saw acknowledged,
    then File Data or Metadata reaching it, then its NAK."""
    finished = closed = again = False  # its Finished sent; acknowledged; data after
    for e in events:
        u = units.get(e.record, _NONE)
        if e.kind == "send" and e.dir == "return" and u["k"] == "FIN":
            finished = True
        elif e.kind == "arrive" and e.dir == "forward" and u["k"] == "ACK" and u["of"] == "FIN":
            closed = finished
        elif closed and e.kind == "arrive" and e.dir == "forward" and u["k"] in ("FD", "MD"):
            again = True
        elif again and e.kind == "send" and e.dir == "return" and u["k"] == "NAK":
            raise Unrepresentable(
                f"the receiver sends a NAK (frame {e.frame} of {e.side}.pcap) after its Finished "
                "was acknowledged: it opened the transaction again as a new one, where the model "
                "discards what reaches a transaction that is over; whether 727.0-B-5 lets an "
                "entity forget a terminated transaction is not yet a reading of the model",
                at=e.t,
            )


def _late_window_s(scn: Scenario) -> float:
    """The longest reaction time trace validation grants (its late pass:
    conformance.timers.LATE_SHARE of the retransmission interval)."""
    from conformance import timers

    return timers.LATE_SHARE * timers.derive(scn).retransmission_ms / 1000


def _no_finished_after_cancel_eof(units: Mapping[int, Record], events: Sequence[WireEvent]) -> None:
    """The model's receiver answers the sender's EOF(cancel) with its ACK
    only (4.6.6, as CFDP.tla reads it); cfdp-rs also sends a Finished. The
    book's text on that cannot be read here, so such a trace is not judged
    until it is settled (a reading, or a finding)."""
    acked = False  # the receiver acknowledged an EOF (cancel): the model's answer is given
    for e in events:
        u = units.get(e.record, _NONE)
        if e.kind == "send" and u["k"] == "ACK" and u["of"] == "EOF" and u["cc"] != "NoError":
            acked = True
        elif acked and e.kind == "send" and u["k"] == "FIN":
            raise Unrepresentable(
                "the receiver sends a Finished after the sender's EOF (cancel) reached it; the "
                "model answers that EOF with its ACK only, and whether 727.0-B-5 allows the "
                "Finished too is not settled here",
                at=e.t,
            )


def _kind(pdu: Mapping[str, Any]) -> str:
    """A model PDU's kind ("FD", "EOF", "FIN", ...: readings.json's
    acts_on_arrival_of)."""
    return str(pdu["k"])


def describe_pdu(pdu: Mapping[str, Any]) -> str:
    """A one-line summary of a model PDU: its kind and the fields it uses."""
    k = str(pdu["k"])
    tx = f"t{pdu['t']}"
    if k == "FD":
        return f"FD {tx} seg={pdu['seg']}" + (" corrupt" if pdu["bad"] else "")
    wrong = f" stating file size {pdu['seg']}, not the file's length" if pdu["bad"] else ""
    if k == "EOF":
        return f"EOF {tx} {pdu['cc']}{wrong}"
    if k == "ACK":
        return f"ACK({pdu['of']}) {tx} {pdu['cc']}"
    if k == "NAK":
        segs = ",".join(str(o) for o in sorted(pdu["segs"]))
        return f"NAK {tx} {{{segs}}}" + (" +metadata" if pdu["md"] else "")
    if k == "FIN":
        return f"Finished {tx} {pdu['cc']} " + ("complete" if pdu["ok"] else "incomplete")
    if k == "PROMPT":
        return f"Prompt({pdu['of']}) {tx}"
    if k == "KA":
        return f"KeepAlive {tx} progress={pdu['seg']}"
    if k == "NAKDUE":  # TraceCFDP's NakDue: any NAK of the transaction
        return f"NAK of {tx}'s missing data that its EOF called for"
    return f"Metadata {tx}{wrong}" if k == "MD" else k


# What an entity's harness adds to a suspension's length: the request is
# made once the harness has seen its trigger, and the resume once its timer
# has run (Yamcs's pause and resume are HTTP calls).
SUSPEND_MARGIN_MS = 250.0
# How much earlier than the capture a harness may see its entity's PDU.
HARNESS_SKEW_MS = 20.0
# The sender's first pass, which a resumed sender carries on with
# (TraceCFDP's SenderCarriesOn).
FIRST_PASS = frozenset({"SenderTxMetadata", "SenderTxFileData", "SenderTxEof"})


def suspension_us(t: CfdpTransfer) -> dict[str, int]:
    """Entity -> the longest its user's suspend requests may hold it, in
    microseconds: while suspended it processes nothing and sends nothing
    (the model's Sender/ReceiverSuspendTransaction), so what reaches it then
    is answered up to that much later than the reaction window allows."""
    out: dict[str, int] = {}
    for r in t.requests:
        if r.request == "suspend":
            extra = r.resume_after_ms + SUSPEND_MARGIN_MS
            out[r.entity] = out.get(r.entity, 0) + int(extra * 1000)
    return out


def trigger_seen(
    t: CfdpTransfer,
    r: CfdpRequest,
    records: Mapping[int, SegmentRecord],
    events: Sequence[WireEvent],
) -> float | None:
    """When (seconds since the epoch) the trace shows request ``r``'s
    trigger reaching its entity's harness; None if it never does.  A
    harness counts the trigger's occurrences among the PDUs its entity
    sends and takes in (harnesskit Request.fired): one in the entity's own
    direction is seen as it is sent, one in the other direction as it
    arrives; a copy lost, or corrupted where a PDU CRC makes the entity drop
    it, is not seen."""
    own = "forward" if r.entity == "sender" else "return"
    seen_as = "send" if r.after.direction == own else "arrive"
    seen = 0
    for e in events:
        if e.kind != seen_as or e.dir != r.after.direction or e.record not in records:
            continue
        if e.corrupt and t.pdu_crc:
            continue
        if frame_matches(records[e.record].fields, r.after.match):
            seen += 1
            if seen == r.after.occurrence:
                return e.t
    return None


def resume_due(
    t: CfdpTransfer,
    records: Mapping[int, SegmentRecord],
    events: Sequence[WireEvent],
) -> dict[str, tuple[float, float]]:
    """Entity -> (earliest, latest) time (seconds since the epoch) its
    user's Resume.request can come, for each entity with a suspend request
    whose trigger the trace shows (TraceCFDP's HoldEnds).  Its harness
    makes it ``resume_after_ms`` after it saw the trigger (trigger_seen):
    the latest adds SUSPEND_MARGIN_MS, the earliest takes HARNESS_SKEW_MS
    off (a harness sees its own PDU a little before the capture does).
    With several, the earliest of the earliest and the latest of the
    latest."""
    out: dict[str, tuple[float, float]] = {}
    for r in t.requests:
        at = trigger_seen(t, r, records, events) if r.request == "suspend" else None
        if at is None:
            continue
        span = (
            at + max(0.0, r.resume_after_ms - HARNESS_SKEW_MS) / 1000.0,
            at + (r.resume_after_ms + SUSPEND_MARGIN_MS) / 1000.0,
        )
        if r.entity in out:
            span = (min(out[r.entity][0], span[0]), max(out[r.entity][1], span[1]))
        out[r.entity] = span
    return out


def trace_model(
    scn: Scenario,
    records: Sequence[SegmentRecord],
    index: Sequence[int],
    events: Sequence[WireEvent],
) -> TraceModel:
    """The model's PDU for each record of one transaction (``index`` gives
    each record's number in the run), and the TLC constants."""
    t = scn.params
    assert isinstance(t, CfdpTransfer)
    grid = _Grid(t)
    units: dict[int, Record] = {}
    arrived: dict[int, Record | None] = {}
    scopes: dict[int, tuple[int, int]] = {}
    for k, rec in zip(index, records, strict=True):
        where = f"{rec.summary or 'PDU'} (frame {rec.frame})"
        units[k] = unit = model_pdu(rec.fields, grid, where)
        if unit["k"] == "NAK":
            f = rec.fields
            scopes[k] = (field_int(f["start_of_scope"]), field_int(f["end_of_scope"]))
        if rec.corrupted:
            if t.pdu_crc:
                arrived[k] = None  # its CRC fails: the receiver discards it, a loss (§5.1)
            elif unit["k"] == "FD":
                arrived[k] = Record(**{**unit, "bad": True})
            else:
                raise Unrepresentable(
                    f"{where} was corrupted with no PDU CRC to catch it; the model corrupts "
                    "File Data only"
                )
    checks: list[Callable[[], None]] = [
        lambda: _no_reopened_transaction(units, events),
        lambda: _no_finished_after_cancel_eof(units, events),
    ]
    if t.nak_mode == "immediate":
        checks += [
            lambda: _no_immediate_nak_scoped_past_a_gap(units, events, scopes, grid),
            lambda: _no_repeated_immediate_nak(units, events),
            lambda: _no_paced_immediate_nak(units, events, _late_window_s(scn)),
        ]
    first_unrepresentable(checks)
    corrupt = sum(1 for v in arrived.values() if v is not None)
    losses = sum(1 for e in events if e.kind == "lose") + sum(
        1 for v in arrived.values() if v is None
    )
    by_index = dict(zip(index, records, strict=True))
    # a suspend request whose trigger the trace never shows was never made:
    # the model does not take it either
    made = [
        r
        for r in t.requests
        if r.request != "suspend" or trigger_seen(t, r, by_index, events) is not None
    ]
    consts = model_constants(t, losses=losses, corrupt=corrupt, requests=made)
    # timers are configuration (PrematureTimeouts), so is the receiver's
    # keep-alive period (4.6.5.2.1: it "may periodically send" one)
    consts |= {
        "Modes": {MODEL_MODES[t.mode]},
        "PrematureTimeouts": True,
        "KeepAliveTimer": True,
        "MaxLate": 0,
    }
    consts |= observed_constants(None)
    return TraceModel(
        module=TRACE_SPEC,
        constants=consts,
        units=units,
        arrived=arrived,
        actions=model_actions(SPEC, NEXT_BLOCKS),
        sections=action_sections(),
        describe=describe_pdu,
        unit_kind=_kind,
        # premature timeouts (above) duplicate an EOF or a Finished with no
        # loss: the loss count rules out no reading
        unbounding=frozenset({"MaxLoss"}),
        hold_us=suspension_us(t),
        hold_ends=resume_due(t, by_index, events),
        carries_on=FIRST_PASS,
        end_outcomes=partial(parse_outcomes, t=t),
        observe=observed_constants,
        overrides={
            "Arrivals": "TraceArrivals",
            "Losable": "TraceLosable",
            "KaPdu": "TraceKaPdu",
            "OwesAfter": "NakOwes",
            "OwesMet": "NakMet",
            "OnTheWay": ON_THE_WAY,
            "OwnLineOnly": "KeepAliveOwnLineOnly",
            "AsksFor": "NakAsksFor",
        },
        # the actions that cancel or abandon the transaction (a user's
        # request, a fault, the sender's notice of cancellation reaching the
        # receiver): what the entity still had queued for it need not go out
        purging=sorted(
            a
            for a in model_actions(SPEC, NEXT_BLOCKS)
            if "Cancel" in a or a.startswith(("SenderFault", "ReceiverFault"))
        ),
        foreseeable=timer_actions(),
        on_demand=on_demand_actions(),
        lazy_arrivals=LAZY_ARRIVALS,
    )


def timer_actions() -> list[str]:
    """The model's actions a timer's expiry takes: the timeouts, and the
    faults a timer raises at its limit (ack, check, NAK, inactivity; not a
    checksum failure, which the file's arrival raises). PrematureTimeouts
    lets them fire at any time; trace validation holds those that emit to
    the trace's next sends (TraceCore's SentSoon)."""
    return sorted(
        a
        for a in model_actions(SPEC, NEXT_BLOCKS)
        if "Timeout" in a or re.fullmatch(r"(Sender|Receiver)Fault(\w+Limit|Inactivity)", a)
    )


# Where the wire shows the sender sending what nothing waiting shows, new
# data is emitted ahead of it only on the way there (TraceCFDP's
# FileDataOnTheWay; TraceCore's AnyOnTheWay puts no bound).
ON_THE_WAY = "FileDataOnTheWay"

# Arrivals processed only where the trace needs it (TraceCore's Needs): the
# model's CFDP entities read no state of each other's.
LAZY_ARRIVALS = True


def on_demand_actions() -> list[str]:
    """The model's actions that emit without consuming and are no timer's:
    the sender's Metadata, new data, EOF, resends and Prompts, the
    receiver's NAKs and Finished. Trace validation takes one only where the
    trace needs it (TraceCore's Wanted): emitted early, their PDUs would
    wait unsent in every order."""
    return [a for a in model_actions(SPEC, NEXT_BLOCKS) if "Tx" in a]
