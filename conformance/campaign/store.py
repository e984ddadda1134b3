"""A campaign's database (SQLite, ``campaign.sqlite`` in its folder): the
plan, and one row per run, written as each run starts and ends, so that a
campaign killed at any moment loses nothing it finished.

A run's status is ``pending``, ``running`` or ``done``. Opening the
database again (``--resume``) turns every ``running`` row back into
``pending``: that run was cut mid-way, and is redone from scratch; a
``done`` row is never run again. The ``attempts`` column counts the starts.

:class:`RunStore` is that database for any kind of run (a mutation run's
(mutant, case) pairs, conformance.mutate), each run's spec kept as JSON;
:class:`Store` is a campaign's, its plan and its RunSpecs.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.campaign.plan import Plan, RunSpec, digest
from conformance.core.errors import InputError

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    seq INTEGER PRIMARY KEY,        -- the run order
    key TEXT UNIQUE NOT NULL,       -- RunSpec.key
    spec TEXT NOT NULL,             -- RunSpec as JSON
    status TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    lane TEXT,                      -- where it ran: host:pid:thread
    started REAL,                   -- seconds since the epoch
    finished REAL,
    phys_min_s REAL,                -- the physical minimum (metrics.physical_minimum)
    run_dir TEXT,
    verdict TEXT,                   -- pass, pass (reading N), fail, inconclusive, error, unsupported
    trace TEXT,                     -- accepted, rejected, unchecked, or ''
    metrics TEXT,                   -- JSON (metrics.Metrics)
    detail TEXT                     -- why an error or unsupported
);
"""


@dataclass
class Row:
    seq: int
    spec: RunSpec
    status: str
    attempts: int
    lane: str | None
    started: float | None
    finished: float | None
    phys_min_s: float | None
    run_dir: str | None
    verdict: str | None
    trace: str | None
    metrics: dict[str, Any]
    detail: str | None

    @property
    def wall_s(self) -> float | None:
        if self.started is None or self.finished is None:
            return None
        return self.finished - self.started


class RunStore:
    """The database of folder ``path.parent``: runs with their spec as JSON
    (``records``), and a digest of what made them, checked on resume."""

    # what a refusal to resume calls the folder's work, and what made it
    KIND, MADE_BY = "run", "run"

    def __init__(self, path: Path) -> None:
        self.path = path
        # the main thread alone reads and writes it (lanes and workers hand
        # their results back to it)
        self.db = sqlite3.connect(path, timeout=60, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(SCHEMA)

    @classmethod
    def create_runs(
        cls,
        path: Path,
        digest_: str,
        meta: Mapping[str, str],
        runs: Sequence[tuple[str, Mapping[str, Any], float | None]],
    ) -> Any:
        """A new database: ``meta`` and its digest, and the runs (key, spec,
        the physical minimum or None) in order."""
        st = cls(path)
        with st.tx():
            for k, v in meta.items():
                st.put(k, v)
            st.put("digest", digest_)
            st.put("created", str(time.time()))
            st.db.executemany(
                "INSERT INTO runs (seq, key, spec, phys_min_s) VALUES (?, ?, ?, ?)",
                [(i, key, json.dumps(dict(spec)), p) for i, (key, spec, p) in enumerate(runs, 1)],
            )
        return st

    @classmethod
    def reopen_runs(cls, path: Path, digest_: str, hint: str) -> tuple[Any, int]:
        """The database of an interrupted run of this digest; the runs it
        had cut mid-way are pending again (their number is returned).
        ``hint``: what to do when the digest is another's."""
        if not path.is_file():
            raise InputError(f"{path.parent}: no {cls.KIND} to resume (no {path.name})")
        st = cls(path)
        have = st.get("digest")
        if have != digest_:
            raise InputError(
                f"{path.parent}: that {cls.KIND} ran another {cls.MADE_BY} (digest {have}, "
                f"this {cls.MADE_BY}'s {digest_}); {hint}"
            )
        with st.tx():
            cut = st.db.execute("UPDATE runs SET status='pending' WHERE status='running'").rowcount
        return st, cut

    def records(self, status: str | None = None) -> list[Record]:
        """Each run with its spec as stored, in order."""
        q = (
            "SELECT seq, key, spec, status, attempts, run_dir, verdict, trace, detail FROM runs"
            + (" WHERE status=?" if status else "")
            + " ORDER BY seq"
        )
        return [
            Record(x[0], x[1], json.loads(x[2]), *x[3:])
            for x in self.db.execute(q, (status,) if status else ())
        ]

    def tx(self) -> Any:
        return _Tx(self.db)

    def put(self, k: str, v: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (k, v) VALUES (?, ?)", (k, v))

    def get(self, k: str) -> str | None:
        row = self.db.execute("SELECT v FROM meta WHERE k=?", (k,)).fetchone()
        return row[0] if row else None

    def start(self, seq: int, lane: str, run_dir: Path) -> None:
        with self.tx():
            self.db.execute(
                "UPDATE runs SET status='running', attempts=attempts+1, lane=?, started=?, "
                "finished=NULL, run_dir=?, verdict=NULL, trace=NULL, metrics=NULL, detail=NULL "
                "WHERE seq=?",
                (lane, time.time(), str(run_dir), seq),
            )

    def finish(
        self,
        seq: int,
        *,
        verdict: str,
        trace: str = "",
        metrics: dict[str, Any] | None = None,
        detail: str = "",
        lane: str = "",
    ) -> None:
        with self.tx():
            self.db.execute(
                "UPDATE runs SET status='done', finished=?, verdict=?, trace=?, metrics=?, "
                "detail=?, lane=COALESCE(NULLIF(?, ''), lane) WHERE seq=?",
                (time.time(), verdict, trace, json.dumps(metrics or {}), detail, lane, seq),
            )

    _COLUMNS = (
        "SELECT seq, spec, status, attempts, lane, started, finished, phys_min_s, run_dir, "
        "verdict, trace, metrics, detail FROM runs"
    )

    def counts(self) -> dict[str, int]:
        return dict(self.db.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall())

    def close(self) -> None:
        self.db.close()


class Store(RunStore):
    """A campaign's database: its plan, and a RunSpec per run."""

    KIND, MADE_BY = "campaign", "plan"

    @classmethod
    def create(
        cls, path: Path, plan: Plan, runs: Sequence[RunSpec], phys: Sequence[float]
    ) -> Store:
        st: Store = cls.create_runs(
            path,
            digest(plan),
            {"plan": json.dumps(plan.model_dump(mode="json", by_alias=True))},
            [(r.key, r.__dict__, p) for r, p in zip(runs, phys, strict=True)],
        )
        return st

    @classmethod
    def reopen(cls, path: Path, plan: Plan) -> tuple[Store, int]:
        """The database of an interrupted campaign; the runs it had cut
        mid-way are pending again (their number is returned)."""
        st, cut = cls.reopen_runs(
            path,
            digest(plan),
            "resume it with the plan it started with, or start anew elsewhere",
        )
        return st, cut

    def plan(self) -> Plan:
        return Plan.model_validate(json.loads(self.get("plan") or "{}"))

    def rows(self, status: str | None = None) -> list[Row]:
        if status is None:
            return [_row(x) for x in self.db.execute(self._COLUMNS + " ORDER BY seq")]
        q = self._COLUMNS + " WHERE status=? ORDER BY seq"
        return [_row(x) for x in self.db.execute(q, (status,))]

    def row(self, seq: int) -> Row:
        return _row(self.db.execute(self._COLUMNS + " WHERE seq=?", (seq,)).fetchone())


@dataclass
class Record:
    """A run of a RunStore, its spec as stored."""

    seq: int
    key: str
    spec: dict[str, Any]
    status: str
    attempts: int
    run_dir: str | None
    verdict: str | None
    trace: str | None
    detail: str | None


def _row(x: Sequence[Any]) -> Row:
    return Row(
        seq=x[0],
        spec=RunSpec(**json.loads(x[1])),
        status=x[2],
        attempts=x[3],
        lane=x[4],
        started=x[5],
        finished=x[6],
        phys_min_s=x[7],
        run_dir=x[8],
        verdict=x[9],
        trace=x[10],
        metrics=json.loads(x[11]) if x[11] else {},
        detail=x[12],
    )


class _Tx:
    """BEGIN IMMEDIATE ... COMMIT (or ROLLBACK on an exception)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, *_: object) -> None:
        self.db.execute("ROLLBACK" if kind else "COMMIT")
