"""Imports go one way, checked by location over every Python file (AST).

* A protocol's own packages are ``generators/<p>/``, ``suts/<p>/``,
  ``dissectors/<p>/``, ``conformance/protocols/<p>.py`` and
  ``conformance/tester/<p>.py``. Nothing outside them imports them, except
  the registries' entry points (``conformance/protocols/__init__.py``, one
  import per protocol; ``suts/registry.py``, one per implementation).
  Tests are exempt from this rule: a test may exercise any protocol.
* The core (``conformance/core/``) imports nothing of dtnconform above it.
* ``generators/``, ``suts/``, ``dissectors/`` and ``reports/`` import, of
  ``conformance``, only the floor below the application: the core, the
  channel (``conformance/channel/``, whose profiles and timers a scenario's
  time limits come from: ``conformance/timers.py``) and their own
  protocol's packages.

The protocols are found on disk (every ``specs/<p>/wire.json``), not from a
list kept by hand. ``KNOWN`` holds the crossings still to be removed, each
with what removes it; the test fails on any other crossing, and on a known
one that has gone (so the list only shrinks).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROTOCOLS = sorted(p.parent.name for p in (ROOT / "specs").glob("*/wire.json"))
FLOOR = ("conformance.core", "conformance.channel", "conformance.timers")
LOWER = ("generators", "suts", "dissectors", "reports")
# the registries' entry points: one import per protocol, one per implementation
REGISTRY_ENTRIES = ("conformance/protocols/__init__.py", "suts/registry.py")

# file -> modules it may still import across a line above, and why.
KNOWN: dict[str, tuple[set[str], str]] = {}


def python_files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return sorted(f for f in out if (ROOT / f).is_file())


def owner_of_file(path: str) -> str | None:
    parts = Path(path).parts
    if parts[0] in ("generators", "suts", "dissectors") and len(parts) > 2:
        return parts[1] if parts[1] in PROTOCOLS else None
    if parts[:2] in (("conformance", "protocols"), ("conformance", "tester")):
        return Path(path).stem if Path(path).stem in PROTOCOLS else None
    return None


def owner_of_module(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] in ("generators", "suts", "dissectors") and len(parts) > 1:
        return parts[1] if parts[1] in PROTOCOLS else None
    if parts[:2] in (["conformance", "protocols"], ["conformance", "tester"]) and len(parts) > 2:
        return parts[2] if parts[2] in PROTOCOLS else None
    return None


def _is_module(module: str) -> bool:
    """Does ``module`` name a module or package of the repository (not a
    function or class imported from one)?"""
    rel = Path(*module.split("."))
    return (ROOT / rel.with_suffix(".py")).is_file() or (ROOT / rel / "__init__.py").is_file()


def imported(text: str) -> Iterator[str]:
    """Every module of the repository a file imports, anywhere in it
    (function-local imports too): ``from a.b import c`` imports ``a.b.c``
    when c is a module, else ``a.b``."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                yield sub if _is_module(sub) else node.module
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def crossings(path: str, text: str) -> set[str]:
    """The modules that the file at ``path``, holding ``text``, imports
    across a line it must not cross."""
    if "/tests/" in path or path == "conftest.py" or path in REGISTRY_ENTRIES:
        return set()
    own = owner_of_file(path)
    out: set[str] = set()
    for module in imported(text):
        if not _is_module(module):
            continue  # not ours: the standard library or a third party
        owner = owner_of_module(module)
        if owner is not None:
            if owner != own:
                out.add(module)
        elif path.startswith("conformance/core/"):
            if module.startswith(("conformance.", *(f"{x}." for x in LOWER))) and not (
                module.startswith("conformance.core")
            ):
                out.add(module)
        elif (
            path.split("/")[0] in LOWER
            and module.startswith("conformance.")
            and not module.startswith(FLOOR)
        ):
            out.add(module)
    return out


def test_protocols_are_found_on_disk() -> None:
    assert {"ltp", "cfdp"} <= set(PROTOCOLS)


@pytest.mark.parametrize("path", python_files())
def test_imports_go_one_way(path: str) -> None:
    allowed, why = KNOWN.get(path, (set(), ""))
    found = crossings(path, (ROOT / path).read_text(encoding="utf-8"))
    assert found <= allowed, f"{path} imports {sorted(found - allowed)} across a layer"
    assert allowed <= found, (
        f"{path} no longer imports {sorted(allowed - found)}: drop it from KNOWN"
    )


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("conformance/judge.py", "from generators.ltp import purposes\n"),
        ("conformance/core/types.py", "def f():\n    from conformance import runner\n"),
        ("suts/cfdp/cfdppy/__init__.py", "import dissectors.ltp.layer\n"),
        ("generators/outcomes.py", "from conformance.runner import run_scenario\n"),
        ("dissectors/tshark.py", "from conformance import protocols\n"),
    ],
)
def test_the_check_sees_a_crossing(path: str, line: str) -> None:
    """Each rule fires: one import added to a real file is caught."""
    text = (ROOT / path).read_text(encoding="utf-8")
    assert crossings(path, text) == KNOWN.get(path, (set(), ""))[0]
    assert crossings(path, text + "\n" + line) - crossings(path, text)


def _protocol_modules() -> list[str]:
    """Every module of a protocol's generators and tester."""
    out = []
    for p in PROTOCOLS:
        for f in sorted((ROOT / "generators" / p).glob("*.py")):
            out.append(f"generators.{p}" + ("" if f.stem == "__init__" else f".{f.stem}"))
        if (ROOT / "conformance" / "tester" / f"{p}.py").is_file():
            out.append(f"conformance.tester.{p}")
    return out


@pytest.mark.parametrize("module", _protocol_modules())
def test_any_module_may_be_imported_first(module: str) -> None:
    """A protocol's capabilities build on the types its spec module defines,
    and the spec names them: whichever is imported first, a fresh
    interpreter gets every protocol's capabilities."""
    code = (
        f"import {module}\n"
        "from conformance import protocols\n"
        "for spec in protocols.all_specs():\n"
        "    spec.capabilities\n"
        "print(protocols.names())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    specs = {p for p in PROTOCOLS if (ROOT / "conformance" / "protocols" / f"{p}.py").is_file()}
    assert specs <= set(eval(proc.stdout)), proc.stdout  # noqa: S307
