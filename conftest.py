"""Every test session sees the registered protocols, as the CLI does:
importing conformance.protocols registers them (conformance.core.registry).

Files marked ``first`` (a module fixture of minutes: a catalogue, every
bound of a model) are collected first, in the order of their mark's rank,
so that `make test`'s lanes start them at once instead of finishing on
them (the Makefile keeps pytest-xdist from reordering files by their
number of tests)."""

from __future__ import annotations

import os
import tempfile

import pytest

import conformance.protocols  # noqa: F401


def pytest_configure(config: pytest.Config) -> None:
    """A CLI run a test starts with no --out (one expected to stop on bad
    input, say) makes its folder in the session's scratch, not the
    repository's runs/ (conformance.cli's DTNC_RUNS_DIR)."""
    if "DTNC_RUNS_DIR" not in os.environ:
        os.environ["DTNC_RUNS_DIR"] = tempfile.mkdtemp(prefix="dtnc-test-runs-")


def _rank(item: pytest.Item) -> int:
    mark = item.get_closest_marker("first")
    return int(mark.args[0]) if mark else 1_000


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_rank)  # stable: a file's tests stay together, in order
