"""The durable job journal: one SQLite file in WAL mode under CARRIL_STORAGE.

A job's record is written before anything runs, and it is the source of truth after a
restart. Every state change is one named function whose UPDATE only matches the states
it may come from (`WHERE id = ? AND state IN (...)`): zero rows changed means the job
was somewhere else, and the caller learns it instead of overwriting a newer state.
"""

from __future__ import annotations

import enum
import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpu_service.contract import is_job_id
from gpu_service.errors import Cancelled, CarrilError, NotFound, state_conflict


class JobState(enum.StrEnum):
    QUEUED = "queued"  # recorded, waiting for its lanes
    RUNNING = "running"  # holds its lanes; a worker process is (or is being) started
    CANCELLING = "cancelling"  # asked to stop; still holds its lanes until the process exits
    SUCCEEDED = "succeeded"  # the kind returned a result
    FAILED = "failed"  # ended with an error code (CUDA_OOM, WORKER_CRASHED, INTERRUPTED...)
    CANCELLED = "cancelled"  # stopped on request; its lanes are free


TERMINAL = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})
ACTIVE = frozenset({JobState.RUNNING, JobState.CANCELLING})


@dataclass(frozen=True)
class Job:
    id: str  # the client's job id when it gave one; also the folder jobs/<id>
    kind: str
    spec: dict[str, Any]
    priority: int
    state: JobState
    gpus_requested: int
    gpu_ids_requested: list[int] | None
    gpu_ids: list[int]
    memory_estimate_mib: int
    simulate: dict[str, Any] | None
    attempt: int
    progress: dict[str, Any]
    metrics: dict[str, Any]
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    submitted_at: float
    started_at: float | None
    finished_at: float | None
    heartbeat_at: float | None
    request_id: str | None
    # One record per attempt that held lanes (gpu_service.accounting), in attempt order.
    usage: list[dict[str, Any]] = field(default_factory=list)
    fair_share_rank: float = 0.0  # the client's; lower goes first among equal priorities


_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    spec TEXT NOT NULL,
    priority INTEGER NOT NULL,
    state TEXT NOT NULL,
    gpus_requested INTEGER NOT NULL,
    gpu_ids_requested TEXT,
    gpu_ids TEXT NOT NULL DEFAULT '[]',
    memory_estimate_mib INTEGER NOT NULL DEFAULT 0,
    simulate TEXT,
    attempt INTEGER NOT NULL DEFAULT 1,
    progress TEXT NOT NULL DEFAULT '{}',
    metrics TEXT NOT NULL DEFAULT '{}',
    result TEXT,
    error TEXT,
    submitted_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    heartbeat_at REAL,
    request_id TEXT,
    usage TEXT NOT NULL DEFAULT '[]',
    fair_share_rank REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs (state, priority, submitted_at);
CREATE INDEX IF NOT EXISTS jobs_finished ON jobs (finished_at);
-- Worker processes this service started, so a later start can stop any survivors.
CREATE TABLE IF NOT EXISTS workers (
    pid INTEGER PRIMARY KEY,
    create_time REAL NOT NULL,
    gpu_ids TEXT NOT NULL,
    job_id TEXT
);
"""

_JSON_COLUMNS = (
    "spec",
    "gpu_ids_requested",
    "gpu_ids",
    "simulate",
    "progress",
    "metrics",
    "usage",
)


_JOB_FIELDS = frozenset(Job.__dataclass_fields__)


def _row_to_job(row: sqlite3.Row) -> Job:
    # Journals written before issue 11 keep an unused idempotency_key column.
    data = {key: value for key, value in dict(row).items() if key in _JOB_FIELDS}
    for column in (*_JSON_COLUMNS, "result", "error"):
        data[column] = json.loads(data[column]) if data[column] is not None else None
    data["state"] = JobState(data["state"])
    return Job(**data)


def _states(states: Iterable[JobState]) -> tuple[str, str]:
    values = [s.value for s in states]
    return ",".join("?" * len(values)), values  # type: ignore[return-value]


class Journal:
    """Thread-safe: the event loop and the worker reader threads share one connection."""

    def __init__(self, *, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Owner-only whatever the umask: SQLite gives its -wal and -shm files the same mode.
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        # NORMAL under WAL: a power cut may lose the last commits but never corrupts.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.executescript(_SCHEMA)
        self._add_usage_column()
        self._adopt_client_ids(jobs_dir=path.parent / "jobs")

    def _add_usage_column(self) -> None:
        """Journals from before issue 16 lack its columns: add them, empty."""
        columns = {row["name"] for row in self._db.execute("PRAGMA table_info(jobs)")}
        if "usage" not in columns:
            self._db.execute("ALTER TABLE jobs ADD COLUMN usage TEXT NOT NULL DEFAULT '[]'")
        if "fair_share_rank" not in columns:
            self._db.execute("ALTER TABLE jobs ADD COLUMN fair_share_rank REAL NOT NULL DEFAULT 0")

    def _adopt_client_ids(self, *, jobs_dir: Path) -> None:
        """Journals from before issue 11 named jobs by a generated id and kept the web's
        job id as `idempotency_key`. Rename those jobs to the client's id, and link the
        folder under the new name, so one id finds the record, the folder and the logs.
        The old folder stays: results written then hold paths inside it."""
        columns = {row["name"] for row in self._db.execute("PRAGMA table_info(jobs)")}
        if "idempotency_key" not in columns:
            return
        rows = self._db.execute(
            "SELECT id, idempotency_key FROM jobs"
            " WHERE idempotency_key IS NOT NULL AND idempotency_key != id"
        ).fetchall()
        for old, new in ((row["id"], row["idempotency_key"]) for row in rows):
            if not is_job_id(new):
                continue  # not a job id a client could have chosen: keep the old one
            with self._db:
                self._db.execute("BEGIN")
                self._db.execute("UPDATE OR IGNORE jobs SET id = ? WHERE id = ?", (new, old))
                self._db.execute("UPDATE workers SET job_id = ? WHERE job_id = ?", (new, old))
            link, target = jobs_dir / new, jobs_dir / old
            if target.is_dir() and not link.exists():
                link.symlink_to(old, target_is_directory=True)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _write(self, sql: str, params: Iterable[Any]) -> int:
        with self._lock:
            return self._db.execute(sql, tuple(params)).rowcount

    def _read(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, tuple(params)).fetchall()

    # ---- reads -------------------------------------------------------------------

    def job_get(self, *, job_id: str) -> Job:
        rows = self._read("SELECT * FROM jobs WHERE id = ?", (job_id,))
        if not rows:
            raise NotFound(f"no job {job_id}")
        return _row_to_job(rows[0])

    def jobs_get(self, *, job_ids: list[str]) -> list[Job]:
        if not job_ids:
            return []
        marks = ",".join("?" * len(job_ids))
        rows = self._read(f"SELECT * FROM jobs WHERE id IN ({marks})", job_ids)  # noqa: S608
        by_id = {row["id"]: _row_to_job(row) for row in rows}
        return [by_id[i] for i in job_ids if i in by_id]

    def jobs_list(
        self, *, states: Iterable[JobState] = (), kind: str | None = None, limit: int = 100
    ) -> list[Job]:
        where, params = [], []
        states = list(states)
        if states:
            marks, values = _states(states)
            where.append(f"state IN ({marks})")
            params.extend(values)
        if kind:
            where.append("kind = ?")
            params.append(kind)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = self._read(
            f"SELECT * FROM jobs {clause} ORDER BY submitted_at DESC LIMIT ?",  # noqa: S608
            [*params, limit],
        )
        return [_row_to_job(row) for row in rows]

    def jobs_queued(self) -> list[Job]:
        """Queued jobs in admission order: priority, then submission time."""
        rows = self._read(
            "SELECT * FROM jobs WHERE state = ? ORDER BY priority DESC, submitted_at, rowid",
            (JobState.QUEUED.value,),
        )
        return [_row_to_job(row) for row in rows]

    # ---- transitions -------------------------------------------------------------

    def job_create(
        self,
        *,
        kind: str,
        spec: dict[str, Any],
        gpus_requested: int,
        gpu_ids_requested: list[int] | None,
        priority: int = 0,
        memory_estimate_mib: int = 0,
        job_id: str | None = None,
        simulate: dict[str, Any] | None = None,
        request_id: str | None = None,
        now: float | None = None,
        fair_share_rank: float = 0.0,
    ) -> tuple[Job, bool]:
        """Record a queued job under `job_id` (generated when None). With a known id,
        return that job and False: the job id is the idempotency key."""
        job_id = job_id or str(uuid.uuid4())
        try:
            self._write(
                "INSERT INTO jobs (id, kind, spec, priority, state,"
                " gpus_requested, gpu_ids_requested, memory_estimate_mib, simulate,"
                " submitted_at, request_id, fair_share_rank) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    job_id,
                    kind,
                    json.dumps(spec),
                    priority,
                    JobState.QUEUED.value,
                    gpus_requested,
                    json.dumps(gpu_ids_requested) if gpu_ids_requested is not None else None,
                    memory_estimate_mib,
                    json.dumps(simulate) if simulate is not None else None,
                    now if now is not None else time.time(),
                    request_id,
                    fair_share_rank,
                ),
            )
        except sqlite3.IntegrityError:
            return self.job_get(job_id=job_id), False
        return self.job_get(job_id=job_id), True

    def _transition(
        self, *, job_id: str, from_states: Iterable[JobState], sets: dict[str, Any]
    ) -> bool:
        marks, values = _states(from_states)
        assignments = ", ".join(f"{column} = ?" for column in sets)
        changed = self._write(
            f"UPDATE jobs SET {assignments} WHERE id = ? AND state IN ({marks})",  # noqa: S608
            [*sets.values(), job_id, *values],
        )
        return changed == 1

    def _must(self, changed: bool, *, job_id: str, action: str) -> None:
        if not changed:
            state = self.job_get(job_id=job_id).state
            raise state_conflict(state=state, consequence=f"it cannot {action}")

    def job_start(self, *, job_id: str, gpu_ids: list[int], now: float | None = None) -> None:
        now = now if now is not None else time.time()
        changed = self._transition(
            job_id=job_id,
            from_states=[JobState.QUEUED],
            sets={
                "state": JobState.RUNNING.value,
                "gpu_ids": json.dumps(gpu_ids),
                "started_at": now,
                "heartbeat_at": now,
                "error": None,
            },
        )
        self._must(changed, job_id=job_id, action="start")

    def job_request_cancel(self, *, job_id: str) -> bool:
        """running -> cancelling. False when the job was not running."""
        return self._transition(
            job_id=job_id,
            from_states=[JobState.RUNNING],
            sets={"state": JobState.CANCELLING.value},
        )

    def job_cancel_queued(self, *, job_id: str, now: float | None = None) -> bool:
        """queued -> cancelled, at once: nothing runs yet, so nothing needs stopping."""
        return self._transition(
            job_id=job_id,
            from_states=[JobState.QUEUED],
            sets={
                "state": JobState.CANCELLED.value,
                "finished_at": now if now is not None else time.time(),
                "error": json.dumps(_cancelled_error()),
            },
        )

    def job_succeed(self, *, job_id: str, result: dict[str, Any], now: float | None = None) -> bool:
        return self._transition(
            job_id=job_id,
            from_states=ACTIVE,
            sets={
                "state": JobState.SUCCEEDED.value,
                "result": json.dumps(result),
                "finished_at": now if now is not None else time.time(),
            },
        )

    def job_fail(self, *, job_id: str, error: CarrilError, now: float | None = None) -> bool:
        return self._transition(
            job_id=job_id,
            from_states=ACTIVE,
            sets={
                "state": JobState.FAILED.value,
                "error": json.dumps(error.as_dict()),
                "finished_at": now if now is not None else time.time(),
            },
        )

    def job_finish_cancelled(
        self, *, job_id: str, result: dict[str, Any] | None = None, now: float | None = None
    ) -> bool:
        """running|cancelling -> cancelled, once the job's process has stopped."""
        sets: dict[str, Any] = {
            "state": JobState.CANCELLED.value,
            "error": json.dumps(_cancelled_error()),
            "finished_at": now if now is not None else time.time(),
        }
        if result is not None:
            sets["result"] = json.dumps(result)
        return self._transition(job_id=job_id, from_states=ACTIVE, sets=sets)

    def job_requeue(self, *, job_id: str) -> bool:
        """running -> queued with attempt + 1: the kind resumes from its job dir."""
        marks, values = _states([JobState.RUNNING])
        changed = self._write(
            "UPDATE jobs SET state = ?, attempt = attempt + 1, gpu_ids = '[]', started_at = NULL,"  # noqa: S608
            f" heartbeat_at = NULL WHERE id = ? AND state IN ({marks})",
            [JobState.QUEUED.value, job_id, *values],
        )
        return changed == 1

    # ---- what a running job reports ----------------------------------------------

    def job_progress(
        self, *, job_id: str, progress: dict[str, Any], now: float | None = None
    ) -> bool:
        return self._transition(
            job_id=job_id,
            from_states=ACTIVE,
            sets={
                "progress": json.dumps(progress),
                "heartbeat_at": now if now is not None else time.time(),
            },
        )

    def job_metrics(self, *, job_id: str, metrics: dict[str, Any]) -> bool:
        return self._transition(
            job_id=job_id, from_states=ACTIVE, sets={"metrics": json.dumps(metrics)}
        )

    def job_usage_add(self, *, job_id: str, usage: dict[str, Any]) -> bool:
        """Append one attempt's usage (while the job still holds its lanes); an attempt
        already recorded is not recorded twice."""
        with self._lock:
            rows = self._db.execute(
                "SELECT usage, state FROM jobs WHERE id = ?", (job_id,)
            ).fetchall()
            if not rows or JobState(rows[0]["state"]) not in ACTIVE:
                return False
            recorded = json.loads(rows[0]["usage"])
            if any(item["attempt"] == usage["attempt"] for item in recorded):
                return False
            self._db.execute(
                "UPDATE jobs SET usage = ? WHERE id = ?",
                (json.dumps([*recorded, usage]), job_id),
            )
            return True

    # ---- housekeeping ------------------------------------------------------------

    def jobs_prune(self, *, finished_before: float) -> int:
        """Delete terminal records that finished before the cutoff; return how many."""
        marks, values = _states(TERMINAL)
        return self._write(
            f"DELETE FROM jobs WHERE state IN ({marks}) AND finished_at < ?",  # noqa: S608
            [*values, finished_before],
        )

    def worker_record(
        self, *, pid: int, create_time: float, gpu_ids: list[int], job_id: str | None
    ) -> None:
        self._write(
            "INSERT OR REPLACE INTO workers (pid, create_time, gpu_ids, job_id) VALUES (?,?,?,?)",
            (pid, create_time, json.dumps(gpu_ids), job_id),
        )

    def worker_forget(self, *, pid: int) -> None:
        self._write("DELETE FROM workers WHERE pid = ?", (pid,))

    def workers_recorded(self) -> list[tuple[int, float]]:
        return [(row["pid"], row["create_time"]) for row in self._read("SELECT * FROM workers")]


def _cancelled_error() -> dict[str, Any]:
    return Cancelled().as_dict()
