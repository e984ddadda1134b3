"""Errors that end a command with a one-line reason instead of a traceback."""

from __future__ import annotations


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


class ToolMissing(DtncError):
    """An external tool is not installed; the message carries the install hint."""

    exit_code = 2


class NeedRoot(DtncError):
    """Network namespaces need root (CAP_NET_ADMIN)."""

    exit_code = 2
