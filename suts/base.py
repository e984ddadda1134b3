"""What conformance/ needs from an implementation under test (SUT).

An adapter knows how to build the implementation, how to start each role with
every knob explicit, and how to turn what the role printed into an
:class:`~conformance.core.types.EndpointResult`.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, model_validator

from conformance.core import registry as protocols
from conformance.core.contract import Strict
from conformance.core.types import OUTCOMES, EndpointResult, ProbeResult, Scenario, outcome_alias

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Endpoint:
    """Where a role runs: its own address, its peer's, the protocol port."""

    ip: str
    peer_ip: str
    port: int


# Engine IDs (LTP) or entity IDs of each role: the sender runs in namespace
# A, the receiver in B. Adapters and the tester use the same ones.
ENGINES: dict[str, tuple[int, int]] = {"sender": (1, 2), "receiver": (2, 1)}

# A role's exit code for "this scenario is not supported" (docs/implementers.md,
# as the QUIC interop runner's endpoints): the cell is "not supported", no fail.
NOT_SUPPORTED = 127


@dataclass(frozen=True)
class SutOption:
    """A configuration choice an implementation offers beyond the scenario's
    knobs: the values it takes (the first is its default) and what it does;
    with ``folder``, any existing folder's absolute path."""

    values: tuple[str, ...]
    text: str
    folder: bool = False

    def describe(self) -> str:
        return (
            f"{'an absolute folder path' if self.folder else '|'.join(self.values)} ({self.text})"
        )


# The option of an implementation whose engine is a Python package: a folder
# put first on its harness's Python path, holding a copy of the package to run
# in place of the installed one (a mutant's: conformance/mutate).
ENGINE_OPTION = "engine"
ENGINE_FOLDER = SutOption(
    (),
    "a folder put first on the harness's Python path, holding a copy of the engine's package "
    "to run instead of the installed one (dtnconform mutate makes one per mutant)",
    folder=True,
)


class Mutate(Strict):
    """Where the engine's source comes from for mutation testing
    (conformance/mutate, docs/mutation.md), and which files are its
    protocol logic: a Rust crate mutated by cargo-mutants and built into a
    harness, or a Python package mutated by mutmut and run from a copy."""

    tool: Literal["cargo-mutants", "mutmut"]
    version: str
    files: list[str] = Field(
        min_length=1, description="the protocol-logic files (globs, relative to the source's root)"
    )
    exclude: list[str] = Field(
        default_factory=list,
        description="regular expressions on the tool's mutant names: code in those files the "
        "harness never links (another store's implementation, say), whose mutants measure nothing",
    )
    # cargo-mutants
    crate: str | None = Field(None, description="the crate, as the crate registry names it")
    harness: str | None = Field(None, description="the Cargo project the engine is built into")
    binary: str | None = Field(
        None, description="the harness's binary, as run.sender names it after {here}/"
    )
    # mutmut
    distribution: str | None = Field(None, description="the package, as PyPI names it")
    module: str | None = Field(None, description="the package's import name")
    python: str | None = Field(None, description="the interpreter the harness runs on")

    @model_validator(mode="after")
    def _tool_fields(self) -> Mutate:
        need = (
            ("crate", "harness", "binary")
            if self.tool == "cargo-mutants"
            else ("distribution", "module", "python")
        )
        missing = [n for n in need if getattr(self, n) is None]
        if missing:
            raise ValueError(f"tool {self.tool} needs {', '.join(missing)}")
        return self

    @property
    def package(self) -> str:
        """The engine's name in its registry."""
        return str(self.crate or self.distribution)


class SutAdapter(ABC):
    name: str
    protocol: str
    version: str
    # Configuration choices the implementation offers: `dtnconform run
    # --sut-option NAME=VALUE`, checked before any namespace or TLC run.
    OPTIONS: dict[str, SutOption] = {}
    # Seconds a role may spend starting before it takes its first step (a
    # JVM, a server): added to the run's deadlines, never to its time limit.
    startup_s: float = 0.0
    # How long it takes to answer what reached it on an idle machine, in
    # milliseconds (an endpoint file's profile processing-ms): its reaction
    # window in trace validation, stretched by the load (None: 250 ms,
    # conformance/tracecheck.py DEFAULT_PROCESSING_MS).
    processing_ms: float | None = None
    # built only from a source the user gives (docs/implementers.md): absent,
    # it is no error but a cell "not supported" (missing())
    optional: bool = False
    # its engine's source for mutation testing (None: not mutated)
    mutate: Mutate | None = None

    def __init__(self) -> None:
        self.options: dict[str, str] = {}

    @property
    def ref(self) -> str:
        """What ``suts.registry.get`` takes to make this adapter again (a
        Robot suite's, a child process's ``--sut``): its name, with the
        options set (:attr:`label`)."""
        return self.label

    @property
    def label(self) -> str:
        """Its name with the options set, "hdtn[session-number-bits=32]":
        what tells two configurations of one implementation apart (an
        interoperability matrix's rows and columns)."""
        return self.with_options(self.name)

    def with_options(self, base: str) -> str:
        """``base`` followed by the options set, as ``suts.registry.get``
        reads them back: ``base[NAME=VALUE,...]`` (``base`` alone if none)."""
        if not self.options:
            return base
        return base + "[" + ",".join(f"{k}={v}" for k, v in sorted(self.options.items())) + "]"

    def set_options(self, pairs: list[str]) -> None:
        """``NAME=VALUE`` pairs into :attr:`options` (InputError for a name
        the adapter does not offer, a value it does not take, or a pair
        without '=')."""
        from conformance.core.errors import InputError

        for pair in pairs:
            name, eq, value = pair.partition("=")
            if not eq or not name or not value:
                raise InputError(f"--sut-option {pair!r}: expected NAME=VALUE")
            if name not in self.OPTIONS:
                offered = "; ".join(f"{k}={v.describe()}" for k, v in self.OPTIONS.items())
                raise InputError(
                    f"--sut-option {name}: {self.name} has no such option (it offers: "
                    f"{offered or 'none'})"
                )
            if self.OPTIONS[name].folder:
                if not (Path(value).is_absolute() and Path(value).is_dir()):
                    raise InputError(f"--sut-option {name}={value}: not an absolute folder path")
            elif value not in self.OPTIONS[name].values:
                raise InputError(
                    f"--sut-option {name}={value}: {self.name} takes "
                    f"{' or '.join(self.OPTIONS[name].values)}"
                )
            self.options[name] = value

    def python_command(self, python: str | Path, script: Path) -> list[str]:
        """``python script``, the engine option's folder (ENGINE_OPTION)
        first on its Python path where it is set."""
        engine = self.options.get(ENGINE_OPTION)
        if not engine:
            return [str(python), str(script)]
        return ["env", f"PYTHONPATH={engine}", str(python), str(script)]

    def supports(self, params: Mapping[str, object], role: str) -> str:
        """Why this implementation cannot play ``role`` with these scenario
        parameters ('' if it can): an interoperability cell it cannot take
        is "not supported", not a fail."""
        return ""

    def profile_changes(
        self, params: Mapping[str, object], roles: Collection[str] = ("sender", "receiver")
    ) -> dict[str, tuple[object, object, str]]:
        """The scenario parameters the implementation's declared profile
        moves where it plays ``roles`` (conformance/adapt.py): name -> (the
        scenario's value, the profile's, why). Default: none."""
        return {}

    def missing(self) -> str:
        """Why an optional implementation cannot run here ('' if it can, and
        for every implementation that is not optional: its absence is an
        error, said when it is built)."""
        if not self.optional:
            return ""
        from conformance.core.errors import ToolMissing

        try:
            self.ensure_built()
        except ToolMissing as exc:
            return f"not built here ({exc})"
        return ""

    def check_contract(self, scn: Scenario) -> None:
        """Before the run, once its build is there: raise InputError if the
        implementation does not keep the process contract (an endpoint
        file's roles must refuse an unknown feature; default: nothing)."""
        return None

    def cleanup(self) -> None:
        """After a run, once its results are read: remove what the adapter
        left outside the run directory (default: nothing)."""
        return None

    @abstractmethod
    def ensure_built(self) -> None:
        """Build the implementation if needed; raise ToolMissing/DtncError on failure."""

    @abstractmethod
    def sender_argv(self, scn: Scenario, ep: Endpoint) -> list[str]: ...

    @abstractmethod
    def receiver_argv(self, scn: Scenario, ep: Endpoint) -> list[str]: ...

    def parse_result(
        self, role: str, stdout: str, stderr: str, exit_code: int | None
    ) -> EndpointResult:
        """Default: the role printed one JSON object as its last stdout line,
        whose ``outcome`` is one of :data:`~conformance.core.types.Outcome`
        ("completed", "cancelled", "closed", "open", "error"). The exit
        code is kept but not interpreted: the JSON line is the result. An
        optional ``stopped_at`` (seconds since the epoch) says when the role
        stopped taking protocol steps, if that is before its process ends
        (the tester's roles say it): it becomes ``exited_at`` where it is
        earlier than the process's end, and is the trace's exit."""
        lines = [ln for ln in stdout.strip().splitlines() if ln.strip().startswith("{")]
        tail = "\n".join(stderr.strip().splitlines()[-15:])
        if not lines:
            detail = f"no result on stdout (exit {exit_code})"
            return EndpointResult(
                role=role,  # type: ignore[arg-type]
                outcome="error",
                exit_code=exit_code,
                detail=f"{detail}; stderr tail:\n{tail}" if tail else detail,
            )
        try:
            data = json.loads(lines[-1])
        except ValueError:  # JSONDecodeError, or an integer of too many digits
            data = {"outcome": "error", "detail": f"unreadable result line: {lines[-1][:200]}"}
        if not isinstance(data, dict):
            data = {
                "outcome": "error",
                "detail": f"result line is not an object: {lines[-1][:200]}",
            }
        outcome = outcome_alias(data.get("outcome", "error"))
        detail = str(data.get("detail", ""))
        if outcome not in OUTCOMES:
            # "error" is the harness's own failure; an outcome word we do not
            # know is one too, and says so.
            detail = f"unknown outcome {outcome!r} (exit {exit_code}); {detail}"
            outcome = "error"
        # Every other key is one of the protocol's delivery counters.
        delivery = protocols.get(self.protocol).delivery
        counters = {k: v for k, v in data.items() if k in delivery.model_fields and k != "protocol"}
        try:
            delivered = delivery(protocol=self.protocol, **counters)
        except ValidationError as exc:
            detail = f"bad delivery counters {counters} ({exc.errors()[0]['msg']}); {detail}"
            outcome, delivered = "error", delivery(protocol=self.protocol)
        probes = []
        for i, raw in enumerate(data.get("probes") or []):
            try:
                probes.append(ProbeResult.model_validate(raw))
            except ValidationError as exc:
                detail = f"bad probe result {i} ({exc.errors()[0]['msg']}); {detail}"
                outcome = "error"
        stopped = data.get("stopped_at")
        # users' requests (CFDP's cancel, suspend, Prompt): each the result
        # lists with made false could not be made, and the run is not judged
        unmade = [
            f"{r.get('request', '?')}: {r.get('detail', '') or 'not made'}"
            for r in data.get("requests") or []
            if isinstance(r, dict) and r.get("made") is False
        ]
        told = data.get("told_session")
        if told is not None and not (
            isinstance(told, list) and all(type(x) is int and x >= 0 for x in told)
        ):
            detail = f"bad told_session {str(told)[:80]} (a list of IDs); {detail}"
            outcome, told = "error", None
        segs = data.get("told_segments")
        if segs is not None and not (
            isinstance(segs, list)
            and all(
                isinstance(s, list)
                and len(s) == 2
                and all(x is None or (type(x) is int and x >= 0) for x in s)
                for s in segs
            )
        ):
            detail = f"bad told_segments {str(segs)[:80]} (a list of [offset, length]); {detail}"
            outcome, segs = "error", None
        return EndpointResult(
            told_session=told,
            told_segments=segs,
            requests_unmade=unmade,
            role=role,  # type: ignore[arg-type]
            outcome=outcome,  # type: ignore[arg-type]  # one of OUTCOMES, checked above
            exited_at=float(stopped) if isinstance(stopped, int | float) else None,
            probes=probes,
            delivered=delivered,
            payload_ok=data.get("payload_ok"),
            duration_s=float(data.get("duration_s") or 0.0),
            exit_code=exit_code,
            detail=detail,
            crashed=str(data.get("crashed") or ""),
        )


def merge_knobs(
    sender: Mapping[str, int | str], receiver: Mapping[str, int | str]
) -> dict[str, int | str]:
    """Both roles' flags as one account: a flag both give one value is named
    once, else ``sender.FLAG`` and ``receiver.FLAG``."""
    out: dict[str, int | str] = {}
    for key in [*sender, *(k for k in receiver if k not in sender)]:
        if key in sender and key in receiver and sender[key] == receiver[key]:
            out[key] = sender[key]
            continue
        if key in sender:
            out[f"sender.{key}"] = sender[key]
        if key in receiver:
            out[f"receiver.{key}"] = receiver[key]
    return out


def cargo_build(crate: Path, binary: Path, what: str) -> None:
    """Build a Rust harness (release, locked) unless its binary is there
    (DTNC_REBUILD forces it); ToolMissing without cargo."""
    import os
    import shutil
    import subprocess

    from conformance.core.errors import DtncError, ToolMissing

    if binary.exists() and not os.environ.get("DTNC_REBUILD"):
        return
    if shutil.which("cargo") is None:
        raise ToolMissing(
            "cargo not found: install Rust with rustup (https://rustup.rs) or "
            "apt-get install cargo, then run `make setup`"
        )
    proc = subprocess.run(
        ["cargo", "build", "--release", "--locked", "--quiet"],
        cwd=crate,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0 or not binary.exists():
        raise DtncError(f"building the {what} harness failed:\n{proc.stderr[-2000:]}")
