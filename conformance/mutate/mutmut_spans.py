"""mutmut's mutants of some files of a Python package, as spans to replace:
run by mutmut's own venv's Python (``make mutate-tools``), not
dtnconform's, from the folder that holds a copy of the package::

    .tools/mutmut/bin/python mutmut_spans.py PACKAGE FILE...

mutmut writes every mutant of a file into one module, each a copy of the
function it mutates (``xǁClassǁmethod__mutmut_3``), selected at run time by
its own trampolines. We run none of that. Each mutant is put back in the
place of its function in the original source, and its one change is cut
out of that text: the lines that differ, as a span and its replacement,
the shape cargo-mutants gives (conformance.mutate.mutants.Mutant). A
mutant then runs as a plain copy of the package with nothing of mutmut's
in it. Prints a JSON list on stdout.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import libcst as cst
from mutmut.mutation.file_mutation import mutate_file_contents
from mutmut.utils.format_utils import parse_mutant_key

MARK = "__mutmut_"


def _function(module: Any, name: str, cls: str | None) -> Any:
    """The function ``name`` at the top of ``module``, or the method of
    class ``cls`` (None if there is none)."""
    for node in module.body:
        if cls is None and isinstance(node, cst.FunctionDef) and node.name.value == name:
            return node
        if cls is not None and isinstance(node, cst.ClassDef) and node.name.value == cls:
            body = node.body.body if isinstance(node.body, cst.IndentedBlock) else []
            for item in body:
                if isinstance(item, cst.FunctionDef) and item.name.value == name:
                    return item
    return None


def _mutated_function(module: Any, generated: str) -> Any:
    """The generated function ``generated`` anywhere at the top of the
    module or in a class."""
    for node in module.body:
        if isinstance(node, cst.FunctionDef) and node.name.value == generated:
            return node
        if isinstance(node, cst.ClassDef) and isinstance(node.body, cst.IndentedBlock):
            for item in node.body.body:
                if isinstance(item, cst.FunctionDef) and item.name.value == generated:
                    return item
    return None


def _span(before: str, after: str) -> tuple[int, int, int, int, str, str, str] | None:
    """The lines of ``before`` that ``after`` changes: (first line, column,
    end line, end column exclusive, replacement, the first old line, the
    first new line); None if nothing changed."""
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    if head == len(a) == len(b):
        return None
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    old, new = a[head : len(a) - tail], b[head : len(b) - tail]
    if tail:
        end_line, end_col = len(a) - tail + 1, 1
    else:
        end_line, end_col = len(a), len(a[-1]) + 1
    first_old = old[0].strip() if old else ""
    first_new = new[0].strip() if new else ""
    return head + 1, 1, end_line, end_col, "".join(new), first_old, first_new


def mutants_of(package: str, rel: str) -> list[dict[str, object]]:
    path = Path(package) / rel
    source = path.read_text(encoding="utf-8")
    made = mutate_file_contents(str(path), source)
    generated = cst.parse_module(made.code)
    original = cst.parse_module(source)
    module = ".".join([package, *Path(rel).with_suffix("").parts])
    out: list[dict[str, object]] = []
    for name in made.mutant_names:
        func, cls = parse_mutant_key(name.split(MARK)[0])
        orig = _function(original, func, cls)
        mutant = _mutated_function(generated, name)
        if orig is None or mutant is None:
            raise SystemExit(f"{rel}: mutmut's {name} has no function to replace")
        placed = mutant.with_changes(
            name=cst.Name(func), decorators=orig.decorators, leading_lines=orig.leading_lines
        )
        after = original.deep_replace(orig, placed).code
        span = _span(source, after)
        if span is None:
            continue  # a mutant that changes no text
        line, col, end_line, end_col, repl, old, new = span
        out.append(
            {
                "file": rel,
                "line": line,
                "column": col,
                "end_line": end_line,
                "end_column": end_col,
                "replacement": repl,
                "genre": "mutmut",
                "name": f"{rel}:{line}: {module}.{name}: {old[:90]} => {new[:90]}",
                "function": f"{cls}.{func}" if cls else func,
            }
        )
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    package, files = argv[0], argv[1:]
    print(json.dumps([m for rel in files for m in mutants_of(package, rel)]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
