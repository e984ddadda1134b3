"""Values written into a generated Robot Framework suite, read back as written.

Robot Framework's data is not inert text: ``${...}``, ``@{...}``, ``&{...}``
and ``%{...}`` are variables (``${{expr}}`` evaluates Python), ``#`` starts
a comment, two spaces or a tab end a cell, leading and trailing spaces are
dropped, ``\\`` escapes and ``name=value`` can be taken as a named argument.
A path, a scenario name or an adapter's reason goes into a suite through
:func:`cell`, which escapes all of that, so a folder name chosen by someone
else (``--out``, ``--resume DIR``) is data, never code.
"""

from __future__ import annotations

from collections.abc import Iterable

# Robot's cell separator in the space-separated format.
SEP = "    "

_VARIABLE_SIGILS = "$@&%"
_ESCAPED = {"\\": "\\\\", "#": "\\#", "=": "\\=", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def cell(value: str) -> str:
    """``value`` as one cell that Robot Framework reads back as exactly
    ``value``: variables, comments, escapes, named-argument syntax, tabs,
    newlines and runs of spaces (or a leading or trailing one) escaped."""
    if value == "":
        return "${EMPTY}"
    out: list[str] = []
    last = len(value) - 1
    for i, ch in enumerate(value):
        if ch in _ESCAPED:
            out.append(_ESCAPED[ch])
        elif ch in _VARIABLE_SIGILS and i < last and value[i + 1] == "{":
            out.append("\\" + ch)
        elif ch == " " and (i in (0, last) or value[i - 1] == " " or value[i + 1] == " "):
            out.append("${SPACE}")
        elif ch == "|" and i == 0:  # a row starting "| " is the pipe-separated format
            out.append("\\|")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


def row(*values: str, indent: bool = False) -> str:
    """One line of cells; ``indent``: a setting or step row of a test
    (``[Tags]``), which starts with an empty cell."""
    return (SEP if indent else "") + SEP.join(cell(v) for v in values)


def setting(name: str, values: Iterable[str]) -> str:
    """A test's setting row, e.g. ``[Tags]`` with its values."""
    return SEP + SEP.join([f"[{name}]", *(cell(v) for v in values)])


__all__ = ["SEP", "cell", "row", "setting"]
