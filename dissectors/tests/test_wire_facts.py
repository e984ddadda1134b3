"""The wire facts (``specs/<proto>/wire.json``) against the text of their spec.

Every ``section`` (and ``<fact>_section``) of a wire.json, and every ``§x.y``
reference in its strings (field descriptions, notes), must be a section
heading of the spec the file names in ``spec_text`` (``RFC NNNN §x.y`` is
looked up in ``rfcNNNN.txt`` instead). For LTP the facts themselves are
checked against the text of their section: the segment type table of RFC 5326
§3.1.2 (code, nature and the flags the nature implies), the §3.1.3 mnemonics,
the reason codes of §3.2.4 and the reserved range, the extension tags of
§3.1.4, the version of §3.1, the SDNV of §2 and the UDP port of §10.1.

The spec texts are reference copies, not part of the repository: they are
looked for in ``$DTNC_SPECS``, ``/work/shared/specs``, ``../shared/specs``
(beside the repository) and ``.tools/rfc/``, in that order; a test whose text
is in none of them is skipped, naming the file. CFDP (CCSDS 727.0-B-5) has no
text available (no ``spec_text``), so only the RFC-based protocols are checked.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from conformance.core import wire

REPO = Path(__file__).resolve().parents[2]


def spec_dirs() -> list[Path]:
    dirs = [Path(os.environ["DTNC_SPECS"])] if os.environ.get("DTNC_SPECS") else []
    return dirs + [
        Path("/work/shared/specs"),
        REPO.parent / "shared" / "specs",
        REPO / ".tools" / "rfc",
    ]


def find_text(name: str) -> Path | None:
    for d in spec_dirs():
        if (d / name).is_file():
            return d / name
    return None


def need_text(name: str) -> Path:
    path = find_text(name)
    if path is None:
        where = ", ".join(str(d) for d in spec_dirs())
        pytest.skip(f"spec text {name} not found (looked in {where})")
    return path


# ---------------------------------------------------------------------------
# Reading an RFC / Internet-Draft text into sections
# ---------------------------------------------------------------------------

# "3.1.2.  Segment Type Codes" at column 0; the table of contents is indented
_HEADING = re.compile(r"^(\d+(?:\.\d+)*)\.?\s+([A-Z_].*)$")
_PAGE_FURNITURE = re.compile(
    r"\[Page \d+\]\s*$"  # footer
    r"|^(RFC \d+|Internet-Draft) {2,}"  # running header
)


def _body_lines(text: str) -> Iterator[str]:
    for line in text.splitlines():
        if "\f" in line or _PAGE_FURNITURE.search(line):
            continue
        yield line.rstrip()


@cache
def sections(path: Path) -> dict[str, list[str]]:
    """Section number -> its lines (heading excluded, up to the next heading)."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in _body_lines(path.read_text(encoding="utf-8", errors="replace")):
        m = _HEADING.match(line)
        if m:
            current = out.setdefault(m.group(1), [])
        elif current is not None:
            current.append(line)
    return out


def norm(s: str) -> str:
    return " ".join(s.split())


def section_text(path: Path, number: str) -> str:
    return norm(" ".join(sections(path)[number]))


def table_rows(lines: list[str], row: re.Pattern[str]) -> list[tuple[tuple[str, ...], str]]:
    """Rows of a text table: ``row`` matches a row's first line with the
    last group being the wrapped text column; an indented line right under a
    row (no blank line between) continues that text."""
    rows: list[tuple[tuple[str, ...], str]] = []
    open_row = False
    for line in lines:
        m = row.match(line)
        if m:
            rows.append((m.groups()[:-1], m.groups()[-1]))
            open_row = True
        elif open_row and line.strip() and line.startswith(" " * 20):
            keys, text = rows[-1]
            rows[-1] = (keys, f"{text} {line.strip()}")
        else:
            open_row = False
    return [(keys, norm(text)) for keys, text in rows]


# ---------------------------------------------------------------------------
# Section references in a wire.json
# ---------------------------------------------------------------------------

# "§3.2.1", "RFC 5510 §4.1/§5.1", "§3.2.1-§3.2.3", "(§4.3.1, §4.3.2)"
_REF = re.compile(r"(?:\b(RFC \d+)\s+)?§(\d+(?:\.\d+)*)((?:\s*(?:/|,|-|–)\s*§\d+(?:\.\d+)*)*)")


def references(text: str) -> list[tuple[str | None, str]]:
    """(document, section) for each § reference in ``text``; document is
    ``"RFC NNNN"`` when the reference names one, else None (the file's spec)."""
    out = []
    for m in _REF.finditer(text):
        doc = m.group(1)
        out.append((doc, m.group(2)))
        out += [(doc, n) for n in re.findall(r"§(\d+(?:\.\d+)*)", m.group(3))]
    return out


def cited_sections(facts: Any, where: str = "") -> Iterator[tuple[str, str | None, str]]:
    """(json path, document or None, section) for every ``section`` /
    ``*_section`` value and every § reference in a string."""
    if isinstance(facts, dict):
        for key, value in facts.items():
            path = f"{where}.{key}" if where else key
            if (key == "section" or key.endswith("_section")) and isinstance(value, str):
                if "§" in value:  # a section of another document: "RFC 5327 §2.1"
                    yield from ((path, doc, n) for doc, n in references(value))
                else:
                    yield path, None, value
            else:
                yield from cited_sections(value, path)
    elif isinstance(facts, list):
        for i, value in enumerate(facts):
            yield from cited_sections(value, f"{where}[{i}]")
    elif isinstance(facts, str):
        for doc, number in references(facts):
            yield where, doc, number


def test_reference_parsing() -> None:
    """The reference parser sees ranges, lists and other RFCs (so the
    existence check below covers every § in the files)."""
    assert references("report serial (§3.2.1-§3.2.3)") == [(None, "3.2.1"), (None, "3.2.3")]
    assert references("from RFC 5510 §4.1/§5.1, RFC 5445 §5") == [
        ("RFC 5510", "4.1"),
        ("RFC 5510", "5.1"),
        ("RFC 5445", "5"),
    ]
    assert references("(§4.3.1, §4.3.2); bits 17-19, App. A") == [(None, "4.3.1"), (None, "4.3.2")]
    found = list(cited_sections({"a": {"section": "3.1", "x_section": "10.1"}, "f": ["§2"]}))
    assert found == [("a.section", None, "3.1"), ("a.x_section", None, "10.1"), ("f[0]", None, "2")]


@pytest.mark.parametrize("protocol", wire.protocols())
def test_every_cited_section_is_a_heading(protocol: str) -> None:
    facts = wire.load(protocol)
    if not facts.get("spec_text"):
        pytest.skip(
            f"{protocol}: no spec_text in its wire.json ({facts.get('spec')} text unavailable)"
        )
    main = need_text(facts["spec_text"])
    missing, no_text = [], set()
    cited = list(cited_sections(facts))
    assert cited, f"{protocol}: wire.json cites no section"
    for where, doc, number in cited:
        if doc is None:
            text = main
        else:
            name = f"rfc{doc.split()[1]}.txt"
            found = find_text(name)
            if found is None:
                no_text.add(name)
                continue
            text = found
        if number not in sections(text):
            missing.append(f"{where}: §{number} is not a section heading of {text.name}")
    assert not missing, f"{wire.path(protocol)}:\n" + "\n".join(missing)
    if no_text:
        pytest.skip(f"{protocol}: not checked against {', '.join(sorted(no_text))} (not found)")


def test_heading_reader_rejects_what_is_not_there() -> None:
    """The check above can fail: a section that does not exist is absent,
    and a table-of-contents line is not taken for a heading."""
    rfc = sections(need_text("rfc5326.txt"))
    assert {"2", "3.1", "3.1.2", "3.2.4", "10.1"} <= set(rfc)
    assert "3.2.5" not in rfc and "3.1.5" not in rfc and "13" not in rfc
    assert not any(line.strip().startswith("3.2.4.") for line in rfc["3.1"])


# ---------------------------------------------------------------------------
# LTP: the facts against the text of their section
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ltp() -> tuple[dict[str, Any], Path]:
    facts = wire.load("ltp")
    return facts, need_text(facts["spec_text"])


def _nature_flags(nature: str) -> dict[str, Any]:
    """What RFC 5326 §3.1.2's "Nature of segment" says of a type."""
    positive = nature.split("NOT")[0]
    kinds = [
        ("Red data", "red_data"),
        ("Green data", "green_data"),
        ("Report segment", "report"),
        ("Report-acknowledgment segment", "report_ack"),
        ("Cancel segment", "cancel"),
        ("Cancel-acknowledgment segment", "cancel_ack"),
        ("Control segment, undefined", "undefined"),
    ]
    kind = next(k for prefix, k in kinds if nature.startswith(prefix))
    return {
        "kind": kind,
        "defined": "undefined" not in nature,
        "red": kind == "red_data",
        "checkpoint": "Checkpoint" in positive,
        "eorp": "EORP" in positive,
        "eob": "EOB" in positive,
    }


def test_ltp_segment_types_match_rfc_table(ltp: tuple[dict[str, Any], Path]) -> None:
    facts, text = ltp
    table = facts["segment_types"]
    assert table["section"] == "3.1.2"
    row = re.compile(r"^\s+([01])\s+([01])\s+([01])\s+([01])\s+(\d+)\s+(\S.*)$")
    rows = table_rows(sections(text)["3.1.2"], row)
    by_code = {int(keys[4]): (keys[:4], nature) for keys, nature in rows}
    assert sorted(by_code) == list(range(16)), rows
    entries = {e["code"]: e for e in table["entries"]}
    assert sorted(entries) == list(range(16))
    for code, (bits, nature) in by_code.items():
        assert int("".join(bits), 2) == code, (code, bits)  # CTRL EXC Flag1 Flag0
        entry = entries[code]
        assert norm(entry["nature"]) == nature, (code, entry["nature"], nature)
        flags = {k: entry[k] for k in ("kind", "defined", "red", "checkpoint", "eorp", "eob")}
        assert flags == _nature_flags(nature), (code, nature)
        assert entry["kind"] in facts["kinds"]


def test_ltp_control_mnemonics_match_rfc_class_masks(ltp: tuple[dict[str, Any], Path]) -> None:
    """RS, RA, CS, CAS, CR, CAR are the RFC 5326 §3.1.3 mnemonics of their codes."""
    facts, text = ltp
    row = re.compile(r"^\s+([01])\s+([01])\s+([01])\s+([01])\s+([A-Z]+)\s+(\S.*)$")
    mnemonics = {
        keys[4]: int("".join(keys[:4]), 2) for keys, _ in table_rows(sections(text)["3.1.3"], row)
    }
    assert set(mnemonics) == {"RS", "RA", "CS", "CAS", "CR", "CAR"}
    names = wire.names("ltp", "segment_types")
    assert {m: names[code] for m, code in mnemonics.items()} == {m: m for m in mnemonics}


def test_ltp_cancel_reasons_match_rfc_table(ltp: tuple[dict[str, Any], Path]) -> None:
    facts, text = ltp
    table = facts["cancel_reasons"]
    lines = sections(text)[table["section"]]
    rows = table_rows(lines, re.compile(r"^\s+([0-9A-F]{2})\s+([A-Z_]+)\s+(\S.*)$"))
    in_rfc = {int(keys[0], 16): keys[1] for keys, _ in rows}
    assert in_rfc == {e["code"]: e["name"] for e in table["entries"]}
    reserved = [re.match(r"^\s+([0-9A-F]{2})-FF\s+Reserved\s*$", ln) for ln in lines]
    starts = [int(m.group(1), 16) for m in reserved if m]
    assert starts == [table["reserved_from"]], starts


def test_ltp_extension_tags_match_rfc_registry(ltp: tuple[dict[str, Any], Path]) -> None:
    facts, text = ltp
    table = facts["extension_tags"]
    rows = table_rows(
        sections(text)[table["section"]], re.compile(r"^\s+0x([0-9A-F]{2})\s+(\S.*)$")
    )

    def bare(s: str) -> str:  # without the trailing reference: (RFC 5327) / [LTPEXT]
        return re.sub(r"\s*[(\[][^)\]]*[)\]]$", "", s)

    in_rfc = {int(keys[0], 16): bare(meaning) for keys, meaning in rows}
    assert in_rfc == {e["code"]: bare(e["name"]) for e in table["entries"]}
    assert set(in_rfc) == {0x00, 0x01}


def test_ltp_scalar_facts_match_rfc_text(ltp: tuple[dict[str, Any], Path]) -> None:
    facts, text = ltp
    port = facts["udp_port"]
    assert re.search(rf"\bUDP port number {port}\b", section_text(text, facts["udp_port_section"]))
    version = facts["version"]
    assert f"binary value {version['value']:04b}" in section_text(text, version["section"])
    sdnv = facts["sdnv"]
    terminology = section_text(text, sdnv["section"])
    assert sdnv["term"] in terminology
    assert f"{sdnv['max_bytes']}-octet SDNV" in terminology  # a 64-bit value's width
