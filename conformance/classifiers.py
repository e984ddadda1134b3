"""The channel emulator's field vocabulary, read from ``classifiers.json``.

The same file is compiled into the Rust emulator, so a scenario validated
here names only fields the emulator's classifiers produce.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

PATH = Path(__file__).with_name("classifiers.json")


@functools.cache
def _data() -> dict[str, Any]:
    return json.loads(PATH.read_text(encoding="utf-8"))


def protocols() -> list[str]:
    return sorted(_data()["protocols"])


def vocabulary(protocol: str) -> dict[str, str]:
    """Field name -> description, for one protocol ({} if it has no classifier)."""
    entry = _data()["protocols"].get(protocol)
    return dict(entry["fields"]) if entry else {}


def default_port(protocol: str) -> int | None:
    entry = _data()["protocols"].get(protocol)
    return entry.get("udp_port") if entry else None
