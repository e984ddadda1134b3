"""An implementation described by an endpoint file, the process-boundary
contract of docs/implementers.md: one small TOML file says how to build it,
the command of each role, how the scenario's knobs reach that command
(environment variables ``DTNC_<KNOB>`` and ``{knob}`` in its arguments),
how it reports, and what it supports. Exit code 127 from a role means "this
scenario is not supported" (:data:`suts.base.NOT_SUPPORTED`).

No Python is written for such an implementation: ``--sut`` takes the file's
path, and the registered implementations' own files are
``suts/<proto>/<impl>/endpoint.toml``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import tomllib
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationError

from conformance import timers
from conformance.core import registry as protocols
from conformance.core.classifiers import default_port
from conformance.core.contract import Strict
from conformance.core.errors import DtncError, InputError, ToolMissing, first_error
from conformance.core.types import EndpointResult, Scenario
from suts.base import NOT_SUPPORTED, Endpoint, Mutate, SutAdapter, SutOption, merge_knobs

Knobs = dict[str, int | str | list[str]]
_TEMPLATE = re.compile(r"\{([a-z0-9][a-z0-9_-]*)\}")
# the endpoint files (by content) whose roles already showed, in this
# process, that they refuse a feature they cannot know (check_contract)
_COMPLIANT: set[tuple[str, str]] = set()


class Build(Strict):
    """How to build it: ``command`` in ``dir`` (relative to the file) when
    ``makes`` is absent, or always with DTNC_REBUILD set."""

    command: list[str] = Field(min_length=1)
    dir: str = "."
    makes: str
    requires: list[str] = Field(
        [], description="files (relative to the file) the build needs: absent, ToolMissing"
    )
    hint: str = Field("", description="how to install what the build needs, said if it is missing")


class Run(Strict):
    """Each role's command, then ``args`` (both roles'), then every knob as
    ``--<knob> <value>`` if ``knob-flags``."""

    sender: list[str] = Field(min_length=1)
    receiver: list[str] = Field(min_length=1)
    args: list[str] = []
    knob_flags: bool = Field(False, alias="knob-flags")
    report: Literal["stdout"] | Annotated[str, Field(pattern=r"^file:[^/]+$")] = "stdout"
    # when the receiver can take data: its UDP port bound (the default), or
    # a file it writes in its workdir
    ready: Literal["port"] | Annotated[str, Field(pattern=r"^file:[^/]+$")] = "port"


class Limit(Strict):
    """What a scenario parameter may be: one of ``in``, at least ``min``, at
    most ``max``; in a profile, ``role`` binds it to the side the
    implementation plays (HDTN cancels stalled sessions as a receiver)."""

    in_: list[int | str | bool] | None = Field(None, alias="in")
    min: int | None = None
    max: int | None = None
    role: Literal["sender", "receiver"] | None = None
    why: str


class Supports(Strict):
    features: list[str] | None = Field(
        None, description="every feature it has; a scenario needing another is not supported"
    )
    params: dict[str, Limit] = {}


class Profile(Strict):
    """What the standard leaves to the implementation and it fixes (ION's
    retransmission limit of at least 3): a scenario outside it is adapted,
    its parameter moved to the nearest value the profile takes and its
    outcome set computed again (conformance/adapt.py), not refused."""

    params: dict[str, Limit] = {}
    processing_ms: float | None = Field(
        None,
        alias="processing-ms",
        gt=0,
        description="how long it takes to answer what reached it on an idle machine: its "
        "reaction window, stretched by the load (conformance/loadprobe.py); 250 ms if absent",
    )


class Option(Strict):
    values: list[str] = Field(min_length=1)
    text: str
    args: list[str] = Field(min_length=1, description="appended when set; {value} is the value")


class EndpointSpec(Strict):
    name: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")]
    protocol: str
    version: str
    startup_s: float = Field(0.0, alias="startup-s", ge=0)
    # built from a source the user gives (ION): where it was not built, it
    # is left out of the default sets (interop, a plan's "all") and a cell
    # naming it is "not supported", saying why
    optional: bool = False
    build: Build | None = None
    run: Run
    supports: Supports = Supports()
    profile: Profile = Profile()
    options: dict[str, Option] = {}
    mutate: Mutate | None = None


def load(path: Path) -> EndpointSpec:
    """An endpoint file, checked (InputError naming the file and the field)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read the endpoint file: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not TOML: {exc}") from None
    try:
        spec = EndpointSpec.model_validate(data)
    except ValidationError as exc:
        raise InputError(f"{path}: {first_error(exc)}") from None
    protocols.get(spec.protocol)  # InputError naming the registered ones
    return spec


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EndpointFile(SutAdapter):
    """A :class:`~suts.base.SutAdapter` read from an endpoint file."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path.resolve()
        self.spec = load(self.path)
        # the file as read: the contract check is kept per content
        self._key = hashlib.sha256(self.path.read_bytes()).hexdigest()
        self.name = self.spec.name
        self.protocol = self.spec.protocol
        self.version = self.spec.version
        self.startup_s = self.spec.startup_s
        self.processing_ms = self.spec.profile.processing_ms
        self.optional = self.spec.optional
        self.mutate = self.spec.mutate
        self.OPTIONS = {k: SutOption(tuple(o.values), o.text) for k, o in self.spec.options.items()}
        self._workdirs: dict[str, str] = {}  # role -> its folder in the run under way

    @property
    def ref(self) -> str:
        """The file's path: what ``--sut`` takes for it, registered or not
        (with the options set, SutAdapter.with_options)."""
        return self.with_options(str(self.path))

    def __repr__(self) -> str:
        return f"EndpointFile({self.path})"

    # ------------------------------------------------------------ building
    def ensure_built(self) -> None:
        b = self.spec.build
        if b is None or (
            (self.path.parent / b.makes).exists() and not os.environ.get("DTNC_REBUILD")
        ):
            return
        lacking = [r for r in b.requires if not (self.path.parent / r).exists()]
        if lacking:
            raise ToolMissing(f"{self.name}: {lacking[0]} not found, needed to build it. {b.hint}")
        if shutil.which(b.command[0]) is None:
            raise ToolMissing(
                f"{self.name}: {b.command[0]} not found, needed to build it. {b.hint}"
            )
        proc = subprocess.run(
            b.command, cwd=self.path.parent / b.dir, capture_output=True, text=True
        )
        if proc.returncode != 0 or not (self.path.parent / b.makes).exists():
            raise DtncError(
                f"{self.name}: building it ({shlex.join(b.command)} in {b.dir}) failed "
                f"(exit {proc.returncode}):\n{(proc.stderr or proc.stdout)[-2000:]}"
            )

    # ------------------------------------------------------------ support
    def supports(self, params: Mapping[str, object], role: str) -> str:
        sup = self.spec.supports
        why = []
        for key, lim in sup.params.items():
            value = params.get(key)
            outside = lim.in_ is not None and value not in lim.in_
            over = lim.max is not None and isinstance(value, int) and value > lim.max
            under = lim.min is not None and isinstance(value, int) and value < lim.min
            if outside or over or under:
                why.append(f"{key} {value}: {lim.why}")
        if params.get("protocol", self.protocol) != self.protocol:
            return f"it plays {self.protocol}, not {params.get('protocol')}"
        if sup.features is not None:
            model = protocols.get(self.protocol).params.model_validate(dict(params))
            lacking = [f for f in model.features(role) if f not in sup.features]
            if lacking:
                why.append(f"it does not declare {', '.join(lacking)}")
        return "; ".join(why)

    def profile_changes(
        self, params: Mapping[str, object], roles: Collection[str] = ("sender", "receiver")
    ) -> dict[str, tuple[object, object, str]]:
        """The parameters its profile moves where it plays ``roles``: name
        -> (the scenario's value, the profile's, why)."""
        out: dict[str, tuple[object, object, str]] = {}
        for key, lim in self.spec.profile.params.items():
            if lim.role is not None and lim.role not in roles:
                continue
            value = params.get(key)
            new = value
            if isinstance(value, int) and lim.min is not None and value < lim.min:
                new = lim.min
            elif isinstance(value, int) and lim.max is not None and value > lim.max:
                new = lim.max
            elif lim.in_ is not None and value not in lim.in_:
                new = lim.in_[0]
            if new != value:
                out[key] = (value, new, lim.why)
        return out

    # ------------------------------------------------------------ the roles
    def role_knobs(self, scn: Scenario, role: str) -> Knobs:
        """The protocol's knobs of ``role`` for this scenario."""
        return protocols.get(self.protocol).endpoint_knobs(scn, role)

    def _fill(self, token: str, values: Mapping[str, object], where: str) -> str:
        def one(m: re.Match[str]) -> str:
            if m.group(1) not in values:
                raise InputError(
                    f"{self.path}: {where}: {{{m.group(1)}}} is no knob of {self.protocol} "
                    f'(docs/implementers.md, "Knobs"; these are: {", ".join(values)})'
                )
            return str(values[m.group(1)])

        return _TEMPLATE.sub(one, token)

    def role_argv(
        self, scn: Scenario, ep: Endpoint, role: str, *, features: str | None = None
    ) -> list[str]:
        """The role's command line, behind ``env`` with every DTNC_ variable,
        so that the run's ``<role>.cmd`` reproduces it. ``features``
        replaces the scenario's (the contract check)."""
        workdir = tempfile.mkdtemp(prefix=f"dtnc-{self.name}-{role}-")
        self._workdirs[role] = workdir
        (Path(workdir) / "scenario.json").write_text(scn.model_dump_json(), encoding="utf-8")
        knobs = self.role_knobs(scn, role)
        fixed: dict[str, object] = {
            "role": role,
            "protocol": self.protocol,
            "testcase": scn.name,
            "listen": f"{ep.ip}:{ep.port}",
            "peer": f"{ep.peer_ip}:{ep.port}",
            "listen-ip": ep.ip,
            "peer-ip": ep.peer_ip,
            "port": ep.port,
            "workdir": workdir,
            "scenario": f"{workdir}/scenario.json",
            "features": ",".join(scn.params.features(role)) if features is None else features,
        }
        scalars = {k: v for k, v in knobs.items() if not isinstance(v, list)}
        values = {**fixed, **scalars, "here": str(self.path.parent)}
        run = self.spec.run
        argv = [self._fill(t, values, f"run.{role}") for t in getattr(run, role)]
        if shutil.which(argv[0]) is None:
            # else `env` would exit 127 itself: "not supported" for a typo
            raise ToolMissing(
                f"{self.name} ({self.path}): run.{role}: {argv[0]} is not an executable; "
                f"{self.spec.build.hint if self.spec.build else ''}".rstrip("; ")
            )
        argv += [self._fill(t, values, "run.args") for t in run.args]
        if run.knob_flags:
            for k, v in knobs.items():
                argv += [
                    x for one in (v if isinstance(v, list) else [v]) for x in (f"--{k}", str(one))
                ]
        for name, value in self.options.items():
            argv += [t.replace("{value}", value) for t in self.spec.options[name].args]
        env = [
            f"DTNC_{k.upper().replace('-', '_')}="
            + (json.dumps(v) if isinstance(v, list) else str(v))
            for k, v in {**fixed, **knobs}.items()
        ]
        return ["env", *env, *argv]

    def sender_argv(self, scn: Scenario, ep: Endpoint) -> list[str]:
        return self.role_argv(scn, ep, "sender")

    def receiver_argv(self, scn: Scenario, ep: Endpoint) -> list[str]:
        return self.role_argv(scn, ep, "receiver")

    def knobs(self, scn: Scenario) -> dict[str, int | str]:
        """Both roles' knobs (lists as JSON), the options set and the port."""

        def flat(role: str) -> dict[str, int | str]:
            return {
                k: json.dumps(v) if isinstance(v, list) else v
                for k, v in self.role_knobs(scn, role).items()
            }

        out = merge_knobs(flat("sender"), flat("receiver"))
        out.update(self.options)
        out["udp-port"] = default_port(self.protocol) or 0
        # whether each timer was derived from the channel or set by the scenario
        tm = timers.derive(scn).as_dict()
        out.update({f"timers.{k}": str(v) for k, v in tm.items() if k.endswith(".source")})
        return out

    def parse_result(
        self, role: str, stdout: str, stderr: str, exit_code: int | None
    ) -> EndpointResult:
        report = self.spec.run.report
        if report != "stdout" and role in self._workdirs:
            f = Path(self._workdirs[role]) / report.removeprefix("file:")
            stdout = f.read_text(errors="replace") if f.is_file() else ""
        return super().parse_result(role, stdout, stderr, exit_code)

    def ready_file(self) -> Path | None:
        """The file whose existence says the receiver can take data (None:
        its port bound says it)."""
        ready = self.spec.run.ready
        if ready == "port" or "receiver" not in self._workdirs:
            return None
        return Path(self._workdirs["receiver"]) / ready.removeprefix("file:")

    def cleanup(self) -> None:
        for workdir in self._workdirs.values():
            shutil.rmtree(workdir, ignore_errors=True)
        self._workdirs.clear()

    # ------------------------------------------------------------ the contract
    def check_contract(self, scn: Scenario) -> None:
        """Each role, given a feature no implementation can know, must exit
        127 before it does anything (docs/implementers.md, "Not
        supported"): else its 127 could not be trusted, nor its silence. Run
        once per process and role, on loopback, outside the run."""
        for role in ("sender", "receiver"):
            if (self._key, role) in _COMPLIANT:
                continue
            bogus = f"dtnc-compliance-{secrets.token_hex(4)}"
            ep = Endpoint(ip="127.0.0.1", peer_ip="127.0.0.1", port=_free_port())
            argv = self.role_argv(scn.model_copy(update={"name": bogus}), ep, role, features=bogus)
            # its own process group: a role that runs on is stopped whole
            proc = subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
            )
            try:
                _, err = proc.communicate(timeout=5 + self.startup_s)
                said = bogus in err.decode(errors="replace")
                got = f"exit {proc.returncode}" + ("" if said else ", not naming it on stderr")
                ok = proc.returncode == NOT_SUPPORTED and said
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                got, ok = f"still running after {5 + self.startup_s:g} s", False
            finally:
                self.cleanup()
            if not ok:
                raise InputError(
                    f"{self.name} ({self.path}): its {role}, given DTNC_FEATURES={bogus}, did "
                    f"not exit 127 naming it on stderr ({got}): an endpoint must refuse a feature "
                    "it does not know "
                    '(docs/implementers.md, "Not supported")'
                )
            _COMPLIANT.add((self._key, role))


def registered(root: Path) -> dict[str, Path]:
    """The registered implementations' endpoint files: name -> path."""
    out: dict[str, Path] = {}
    for path in sorted(root.glob("*/*/endpoint.toml")):
        name = load(path).name
        if name in out:
            raise InputError(f"{path}: name {name!r} is {out[name]}'s already")
        out[name] = path
    return out


__all__ = ["EndpointFile", "EndpointSpec", "load", "registered"]
