"""A Robot Framework listener for suites that pabot splits over processes:
each ended test appends its name, one line, to the file given as the
listener's argument (``--listener path/ProgressFile.py:FILE``), which the
parent process polls for its progress bar (a listener object cannot cross
into pabot's child processes)."""

from __future__ import annotations

from pathlib import Path


class ProgressFile:
    ROBOT_LISTENER_API_VERSION = 3

    def __init__(self, path: str) -> None:
        self.path = Path(path)

    def end_test(self, data: object, result: object) -> None:
        # one short append per test: whole lines, whatever the processes' interleaving
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(str(getattr(data, "name", "")).replace("\n", " ") + "\n")
