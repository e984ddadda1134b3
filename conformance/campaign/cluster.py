"""The distributed engine: Dask distributed (README, "Campaigns": why Dask).

``dtnconform campaign PLAN --dask ADDRESS|SCHEDULER_FILE`` hands each run to
a Dask worker (``dask worker``, run as root on each host that runs lanes,
with this repository installed at the same path); a worker thread is a
lane. The campaign's process keeps the database: each worker returns its
run's verdict and figures, which the campaign writes as they come, so
``--resume`` works whichever workers ran what. A run's folder stays on the
host that ran it (the database names the host).
"""

from __future__ import annotations

from concurrent.futures import Executor
from pathlib import Path
from typing import Any

from conformance.core.errors import InputError


def connect(target: str, timeout_s: float = 20.0) -> tuple[Any, Executor, int]:
    """(client, executor, lanes) of the Dask scheduler at ``target``: an
    address (tcp://host:port) or a scheduler file."""
    from distributed import Client

    try:
        if Path(target).is_file():
            client = Client(scheduler_file=target, timeout=timeout_s)
        else:
            client = Client(target, timeout=timeout_s)
    except (OSError, TimeoutError) as exc:
        raise InputError(f"--dask {target}: no Dask scheduler answers there ({exc})") from exc
    lanes = sum(client.nthreads().values())
    if lanes == 0:
        client.close()
        raise InputError(f"--dask {target}: the scheduler has no workers")
    return client, client.get_executor(pure=False), lanes
