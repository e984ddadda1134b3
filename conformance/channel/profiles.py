"""Link profiles: named channels from the literature, kept as data.

Each file in ``conformance/channel/profiles/`` holds one family of profiles:

    {"schema": "dtnconform/link-profiles/1", "family": ..., "source": ...,
     "profiles": [LinkProfile, ...]}

A scenario selects one with ``channel.profile``; ``dtnconform profiles``
lists them.
"""

from __future__ import annotations

import difflib
import functools
import json
from pathlib import Path

from pydantic import ValidationError

from conformance.core.errors import InputError
from conformance.core.types import LinkProfile

DIR = Path(__file__).with_name("profiles")
FAMILY_SCHEMA = "dtnconform/link-profiles/1"


def _load_file(path: Path) -> list[LinkProfile]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON: {exc.msg} at line {exc.lineno}") from None
    if raw.get("schema") != FAMILY_SCHEMA:
        raise InputError(f"{path}: field schema: expected {FAMILY_SCHEMA!r}")
    out = []
    for i, entry in enumerate(raw.get("profiles", [])):
        entry = {"source": raw.get("source", ""), **entry}
        try:
            out.append(LinkProfile.model_validate(entry))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            msg = err["msg"].removeprefix("Value error, ")
            raise InputError(f"{path}: field profiles[{i}].{where}: {msg}") from None
    return out


@functools.cache
def _all(directory: Path = DIR) -> dict[str, LinkProfile]:
    profiles: dict[str, LinkProfile] = {}
    for path in sorted(directory.glob("*.json")):
        for prof in _load_file(path):
            if prof.name in profiles:
                raise InputError(f"{path}: profile {prof.name!r} is defined twice")
            profiles[prof.name] = prof
    return profiles


def names() -> list[str]:
    return sorted(_all())


def all_profiles() -> list[LinkProfile]:
    return [_all()[n] for n in names()]


def load(name: str) -> LinkProfile:
    profiles = _all()
    if name not in profiles:
        close = difflib.get_close_matches(name, profiles, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise InputError(
            f"field channel.profile: unknown link profile {name!r}{hint}; "
            "`dtnconform profiles` lists them"
        )
    return profiles[name]
