"""Errors that end a command with a one-line reason instead of a traceback."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


class DtncError(Exception):
    """Base class: the message is the whole one-line reason."""

    exit_code = 1


class InputError(DtncError):
    """Bad input from the user: a file, a field, an argument (exit 2)."""

    exit_code = 2


class NotRun(DtncError):
    """Nothing was judged: no case matched, none could run, nothing was
    left to resume, or Robot Framework ran cases to no verdict (exit 2)."""

    exit_code = 2


class NotSupported(NotRun):
    """An implementation's role exited 127: it does not take the scenario
    (docs/implementers.md). A cell of a campaign is then "not supported"."""


class ToolMissing(DtncError):
    """An external tool is not installed; the message carries the install hint."""

    exit_code = 2


class NeedRoot(DtncError):
    """Network namespaces need root (CAP_NET_ADMIN)."""

    exit_code = 2


def first_error(exc: ValidationError) -> str:
    """pydantic's first complaint as "field: reason" (and how many more)."""
    first = exc.errors()[0]
    where = ".".join(str(x) for x in first["loc"]) or "(top)"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {str(first['msg']).removeprefix('Value error, ')}{more}"
