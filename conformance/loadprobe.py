"""The machine's load during a run, as the slowdown an endpoint meets.

Trace validation gives each endpoint a reaction window: the time it may
take to answer what reached it (conformance/tracecheck.py). An endpoint
declares how long it takes on an idle machine (its profile's
``processing-ms``, docs/implementers.md); on a loaded machine it takes
longer, and that is the machine's doing, not the implementation's.

The kernel's count of runnable tasks says how much longer. With ``R``
tasks runnable on ``C`` cores, the fair scheduler gives each at most
``C / R`` of a core, so work that takes ``p`` ms alone takes up to
``p × R / C``: the slowdown is ``max(1, R / C)``. The probe reads ``R``
from ``/proc/loadavg`` (its fourth field, "running/total"; the count
includes the probe itself, which stands in for an endpoint that has just
become runnable) every few milliseconds while the roles run, and the
run's slowdown is a high quantile of the readings: the load that held for
the worst tenth of the run, when a late answer would have come.

The harness's start-to-first-send latency, the other measure one could
take, includes an implementation's own start-up (about 1 s for an ION node)
and says nothing about the load once the session runs.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

LOADAVG = Path("/proc/loadavg")
# How often the probe reads the count, in seconds.
PERIOD_S = 0.01
# The quantile of the readings taken as the run's slowdown.
QUANTILE = 0.9
# The most a window is stretched: past it the retransmission timer's cap
# (tracecheck.windows_ms) binds on every scenario anyway.
MAX_SLOWDOWN = 16.0


def runnable(path: Path = LOADAVG) -> int | None:
    """The tasks runnable now (None where the kernel does not say)."""
    try:
        field = path.read_text().split()[3]
        return int(field.split("/")[0])
    except (OSError, IndexError, ValueError):
        return None


def slowdown_of(counts: list[int], cores: int) -> float:
    """The slowdown the readings ``counts`` show on ``cores`` cores: the
    QUANTILE-th of ``max(1, R / C)``, at most MAX_SLOWDOWN (1.0 with no
    readings)."""
    if not counts or cores < 1:
        return 1.0
    ranked = sorted(counts)
    r = ranked[min(len(ranked) - 1, int(QUANTILE * len(ranked)))]
    return min(MAX_SLOWDOWN, max(1.0, r / cores))


class LoadProbe:
    """Reads the runnable count in a thread from ``start()`` to ``stop()``,
    which returns the slowdown (conformance.runner runs one around the
    roles)."""

    def __init__(self, path: Path = LOADAVG, period_s: float = PERIOD_S) -> None:
        self.path, self.period_s = path, period_s
        self.counts: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dtnc-load-probe", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            r = runnable(self.path)
            if r is None:
                return
            self.counts.append(r)
            self._stop.wait(self.period_s)

    def start(self) -> LoadProbe:
        self._thread.start()
        return self

    def stop(self) -> float:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        return slowdown_of(self.counts, os.cpu_count() or 1)
