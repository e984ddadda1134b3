"""Mutants of an implementation's protocol engine, made by a mutation tool
and built into its harness (docs/mutation.md).

An implementation's endpoint file says where its engine comes from and
which of its files are protocol logic (its ``[mutate]`` table):

- ``tool = "cargo-mutants"``: a Rust crate from the crate registry
  (``crate``, ``version``), taken from cargo's registry cache. The tool
  lists its mutants (``cargo mutants --list --json``); one is applied by
  replacing its span with its replacement, in a scratch copy of the
  crate's source, and built into the harness (``harness``, a Cargo
  project) through ``[patch.crates-io]`` in a scratch copy of that. The
  harness's binary (``binary``, the path the endpoint file runs) is then
  the mutant's, and the mutant is an endpoint file like any other.
- ``tool = "mutmut"``: a Python package from PyPI (``distribution``,
  ``version``, imported as ``module``), as installed for the interpreter
  its harness runs on (``python``). mutmut, in a venv of its own, makes the
  mutants (mutmut_spans.py turns each into a span and its replacement, as
  cargo-mutants gives them); one is applied to a scratch copy of the
  package, and the implementation runs with that copy first on its Python
  path (its ``engine`` option, suts.base.ENGINE_OPTION).

Nothing of the engine's source is written into the repository: the scratch
folder is the mutation run's (``--out``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from fnmatch import fnmatch
from pathlib import Path

from conformance.core.errors import DtncError, InputError, ToolMissing
from suts.base import ENGINE_OPTION, REPO, SutAdapter

CARGO_MUTANTS = "cargo-mutants"
# the version CI installs and the figures in docs/mutation.md came from
CARGO_MUTANTS_VERSION = "27.1.0"
INSTALL_HINT = (
    f"install it with `cargo install --locked {CARGO_MUTANTS}@{CARGO_MUTANTS_VERSION}` "
    "(the Rust crate registry), or `make mutate-tools`"
)
MUTMUT = "mutmut"
MUTMUT_VERSION = "3.8.1"
# mutmut's own venv (make mutate-tools), apart from dtnconform's and the
# implementations'
MUTMUT_VENV = REPO / ".tools" / "mutmut"
SPANS = Path(__file__).with_name("mutmut_spans.py")


@dataclass(frozen=True)
class Mutant:
    """One mutant as the tool names it: the file, the span it replaces
    (1-based lines and columns, the end exclusive) and the replacement."""

    file: str
    line: int
    column: int
    end_line: int
    end_column: int
    replacement: str
    genre: str
    name: str  # the tool's own name of it ("src/x.rs:12:5: replace f -> bool with true")
    function: str = ""

    @property
    def key(self) -> str:
        """A short stable id: the same mutant of the same source has it."""
        return hashlib.sha256(self.name.encode()).hexdigest()[:10]

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class Engine:
    """What an implementation's ``mutate`` (an endpoint file's [mutate]
    table, a Python adapter's attribute) says, resolved."""

    sut: SutAdapter
    tool: str
    package: str  # the crate or the PyPI distribution
    version: str
    files: tuple[str, ...]
    exclude: tuple[str, ...]
    harness: Path | None = None  # cargo-mutants: the Cargo project
    binary: str = ""  # cargo-mutants: the harness's binary
    module: str = ""  # mutmut: the import name
    python: str = ""  # mutmut: the interpreter the package is installed for

    @classmethod
    def of(cls, sut: SutAdapter) -> Engine:
        m = sut.mutate
        if m is None:
            where = f"its endpoint file ({sut.path})" if hasattr(sut, "path") else "its adapter"
            raise InputError(
                f"{sut.name}: {where} has no [mutate] table, so there is no engine source to "
                "mutate (docs/mutation.md)"
            )
        path = getattr(sut, "path", None)
        return cls(
            sut,
            m.tool,
            m.package,
            m.version,
            tuple(m.files),
            tuple(m.exclude),
            harness=path.parent / m.harness if path is not None and m.harness else None,
            binary=m.binary or "",
            module=m.module or "",
            python=m.python or "",
        )

    def source(self) -> Path:
        """The engine's source: the crate in cargo's registry cache (the
        harness's build put it there), or the package as installed."""
        if self.tool == MUTMUT:
            return self._installed()
        home = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo"))
        found = sorted((home / "registry" / "src").glob(f"*/{self.package}-{self.version}"))
        if not found:
            raise ToolMissing(
                f"{self.package} {self.version} is not in cargo's registry cache ({home}); build "
                f"{self.sut.name} once (`make setup`) so that cargo fetches it"
            )
        return found[0]

    def _installed(self) -> Path:
        code = (
            "import importlib.metadata as m, importlib.util as u, sys\n"
            f"s = u.find_spec({self.module!r})\n"
            f"print(m.version({self.package!r}))\n"
            "print(s.submodule_search_locations[0] if s and s.submodule_search_locations else '')"
        )
        proc = subprocess.run(
            [self.python, "-c", code], capture_output=True, text=True, env=_without_engine()
        )
        lines = proc.stdout.split("\n")
        if proc.returncode != 0 or len(lines) < 2 or not lines[1]:
            raise ToolMissing(
                f"{self.package} is not installed for {self.python} (`make setup`): "
                + (proc.stderr.strip().splitlines() or ["no package folder"])[-1]
            )
        if lines[0] != self.version:
            raise ToolMissing(
                f"{self.python} has {self.package} {lines[0]}, not {self.version}: `make setup`"
            )
        return Path(lines[1])


def _without_engine() -> dict[str, str]:
    """The environment less PYTHONPATH: the installed package, not a copy."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _tool() -> str:
    exe = shutil.which(CARGO_MUTANTS)
    if exe is None:
        raise ToolMissing(f"{CARGO_MUTANTS} not found: {INSTALL_HINT}")
    return exe


def listed(engine: Engine, scratch: Path) -> list[Mutant]:
    """The tool's mutants of the engine's protocol-logic files, in its
    order (cached in ``scratch/mutants.json``)."""
    cache = scratch / "mutants.json"
    if cache.is_file():
        return [Mutant(**m) for m in json.loads(cache.read_text(encoding="utf-8"))]
    out = _mutmut_listed(engine, scratch) if engine.tool == MUTMUT else _cargo_listed(engine)
    out = [
        m
        for m in out
        if any(fnmatch(m.file, f) for f in engine.files)
        and not any(re.search(r, m.name) for r in engine.exclude)
    ]
    scratch.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps([m.as_dict() for m in out], indent=1) + "\n", encoding="utf-8")
    return out


def _mutmut_python() -> Path:
    exe = MUTMUT_VENV / "bin" / "python"
    if not exe.is_file():
        raise ToolMissing(
            f"{MUTMUT} {MUTMUT_VERSION} not found in {MUTMUT_VENV}: `make mutate-tools` makes "
            "its venv (PyPI)"
        )
    return exe


def _mutmut_listed(engine: Engine, scratch: Path) -> list[Mutant]:
    """mutmut's mutants of the package's protocol-logic files, made in a
    copy of it (mutmut reads its configuration from the folder it runs in)."""
    exe = _mutmut_python()
    src = engine.source()
    work = scratch / "mutmut"
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(src, work / engine.module, ignore=shutil.ignore_patterns("__pycache__"))
    (work / "setup.cfg").write_text(f"[mutmut]\nsource_paths={engine.module}\n", encoding="utf-8")
    files = sorted(
        {
            str(p.relative_to(work / engine.module))
            for g in engine.files
            for p in (work / engine.module).glob(g)
            if p.suffix == ".py"
        }
    )
    if not files:
        raise InputError(f"{engine.sut.name}: no Python file of {src} matches {engine.files}")
    proc = subprocess.run(
        [str(exe), str(SPANS), engine.module, *files],
        cwd=work,
        capture_output=True,
        text=True,
        env=_without_engine(),
    )
    if proc.returncode != 0:
        raise DtncError(f"mutmut failed (exit {proc.returncode}): {proc.stderr[-800:]}")
    return [Mutant(**m) for m in json.loads(proc.stdout)]


def _cargo_listed(engine: Engine) -> list[Mutant]:
    src = engine.source()
    proc = subprocess.run(
        ["cargo", "mutants", "--list", "--json", "--dir", str(src)]
        + [x for f in engine.files for x in ("--file", f)]
        + [x for r in engine.exclude for x in ("--exclude-re", r)],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{Path(_tool()).parent}:{os.environ.get('PATH', '')}"},
    )
    if proc.returncode != 0:
        raise DtncError(
            f"cargo mutants --list failed (exit {proc.returncode}): {proc.stderr[-800:]}"
        )
    out = []
    for m in json.loads(proc.stdout):
        span = m["span"]
        fn = m.get("function") or {}
        out.append(
            Mutant(
                file=m["file"],
                line=span["start"]["line"],
                column=span["start"]["column"],
                end_line=span["end"]["line"],
                end_column=span["end"]["column"],
                replacement=m["replacement"],
                genre=m.get("genre", ""),
                name=m.get("name") or _name(m),
                function=fn.get("function_name", "") if isinstance(fn, dict) else str(fn),
            )
        )
    return out


def _name(m: dict[str, object]) -> str:
    span = m["span"]
    assert isinstance(span, dict)
    return f"{m['file']}:{span['start']['line']}:{span['start']['column']}: {m['replacement']}"


def apply(mutant: Mutant, src: Path) -> None:
    """Replace the mutant's span in ``src`` (a copy of the crate) by its
    replacement; refuses a span that is not in the file."""
    path = src / mutant.file
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    if not (1 <= mutant.line <= mutant.end_line <= len(lines)):
        raise DtncError(f"{mutant.name}: its span is not in {path}")

    def at(line: int, col: int) -> int:
        # columns count characters from 1
        return sum(len(x) for x in lines[: line - 1]) + col - 1

    text = "".join(lines)
    a, b = at(mutant.line, mutant.column), at(mutant.end_line, mutant.end_column)
    path.write_text(text[:a] + mutant.replacement + text[b:], encoding="utf-8")


def build(engine: Engine, mutant: Mutant | None, scratch: Path) -> tuple[str | None, str]:
    """The implementation with the mutant (None: the engine as published),
    made in ``scratch/builds/<key>``: (what ``--sut`` takes to run it, '')
    or (None, why) where it does not build: a harness built against it
    (its endpoint file's path), or a copy of the package with it, on the
    implementation's path (``<name>[engine=<folder>]``)."""
    if engine.tool == MUTMUT:
        return _copied(engine, mutant, scratch)
    assert engine.harness is not None  # Mutate's validator: cargo-mutants has one
    key = mutant.key if mutant else "original"
    home = scratch / "builds" / key
    made = home / "endpoint.toml"
    if made.is_file():
        return str(made), ""
    if home.exists():
        shutil.rmtree(home)
    src = home / "src" / f"{engine.package}-{engine.version}"
    shutil.copytree(engine.source(), src)
    if mutant is not None:
        apply(mutant, src)
    proj = _mirror(engine.harness, home / "tree")
    with (proj / "Cargo.toml").open("a", encoding="utf-8") as fh:
        fh.write(f'\n[patch.crates-io]\n{engine.package} = {{ path = "{src}" }}\n')
    lock = engine.harness / "Cargo.lock"
    if lock.is_file():
        shutil.copy(lock, proj / "Cargo.lock")
    # one target folder for every build of the run: the dependencies are
    # built once (taken from the harness's own build where there is one),
    # the engine and the harness again for each mutant
    target = scratch / "target"
    if not target.exists() and (engine.harness / "target").is_dir():
        shutil.copytree(engine.harness / "target", target, symlinks=True)
    env = {**os.environ, "CARGO_TARGET_DIR": str(target)}
    proc = subprocess.run(
        ["cargo", "build", "--release", "--offline", "--quiet"],
        cwd=proj,
        capture_output=True,
        text=True,
        env=env,
    )
    exe = scratch / "target" / "release" / Path(engine.binary).name
    if proc.returncode != 0 or not exe.is_file():
        return None, _complaint(proc.stderr)
    binary = home / Path(engine.binary).name
    shutil.copy2(exe, binary)
    made.write_text(_endpoint_text(engine, binary, key), encoding="utf-8")
    return str(made), ""


def _copied(engine: Engine, mutant: Mutant | None, scratch: Path) -> tuple[str | None, str]:
    """A copy of the package with the mutant, compiled (a mutant that is
    not Python does not build)."""
    key = mutant.key if mutant else "original"
    site = scratch / "builds" / key / "site"
    ref = f"{engine.sut.name}[{ENGINE_OPTION}={site}]"
    ready = site.parent / "ready"
    if ready.is_file():
        return ref, ""
    if site.parent.exists():
        shutil.rmtree(site.parent)
    pkg = site / engine.module
    shutil.copytree(engine.source(), pkg, ignore=shutil.ignore_patterns("__pycache__"))
    if mutant is not None:
        apply(mutant, pkg)
    proc = subprocess.run(
        [engine.python, "-m", "compileall", "-q", str(pkg)],
        capture_output=True,
        text=True,
        env=_without_engine(),
    )
    if proc.returncode != 0:
        return None, (proc.stdout + proc.stderr).strip().splitlines()[-1][:300]
    ready.write_text(key + "\n", encoding="utf-8")
    return ref, ""


def _mirror(harness: Path, dest: Path) -> Path:
    """A copy of the harness's Cargo project at the same place in a mirror
    of the repository (the rest of it symlinked), so that what it takes by
    a relative path (licklider's harness: ``../../../../payload.rs``,
    ``specs/ltp/wire.json``) is found; the copy's path. A harness outside
    the repository is copied alone."""
    base = REPO if harness.is_relative_to(REPO) else harness.parent
    src, dst = base, dest
    for part in harness.relative_to(base).parts:
        dst.mkdir(parents=True, exist_ok=True)
        for entry in src.iterdir():
            if entry.name not in (part, ".git"):
                (dst / entry.name).symlink_to(entry)
        src, dst = src / part, dst / part
    shutil.copytree(harness, dst, ignore=shutil.ignore_patterns("target", "Cargo.lock"))
    return dst


def _complaint(stderr: str) -> str:
    """The compiler's first error, in one line."""
    first = next((ln for ln in stderr.splitlines() if ln.startswith("error")), "")
    return (first or stderr.strip().splitlines()[-1:][0] if stderr.strip() else "")[:300]


_TABLE = re.compile(r"^\[([A-Za-z0-9_.-]+)\]\s*$")


def _without_tables(text: str, names: Sequence[str]) -> str:
    """``text`` (TOML) less the tables ``names`` and their sub-tables."""
    out, skipping = [], False
    for line in text.splitlines(keepends=True):
        m = _TABLE.match(line.strip())
        if m:
            skipping = any(m.group(1) == n or m.group(1).startswith(n + ".") for n in names)
        if not skipping:
            out.append(line)
    return "".join(out)


def _endpoint_text(engine: Engine, binary: Path, key: str) -> str:
    """The implementation's endpoint file, running ``binary``: no build, no
    [mutate], named ``<name>.<key>`` (``licklider.original``,
    ``licklider.8049ab7931``)."""
    from suts.endpoint import EndpointFile

    assert isinstance(engine.sut, EndpointFile)  # cargo-mutants' engines have one
    path = engine.sut.path
    text = path.read_text(encoding="utf-8")
    text = text.replace("{here}/" + engine.binary, str(binary))
    text = text.replace("{here}", str(path.parent))
    text = re.sub(
        r'^name = "([^"]+)"', lambda m: f'name = "{m.group(1)}.{key}"', text, count=1, flags=re.M
    )
    return _without_tables(text, ["build", "mutate"])
