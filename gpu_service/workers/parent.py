"""The parent side of the workers: start them (spawn, pinned to their GPUs), listen to
them, stop them. The child side is `gpu_service.workers.child`.

Runs in the API process but never blocks its event loop: each worker has a reader thread
that turns the child's messages into executor events (progress, epoch metrics, summary
metrics, heartbeats while it is quiet) and posts the attempt's end back to the loop. An
attempt ends when its final message has arrived *and* (for fresh workers) its process
has exited, so a lane is never released while a process could still be using the GPU.

- fresh workers: one process per job (training), exits after it. With `warm` on, a
  spare per GPU set is started ahead, imports done, and takes the next job on those
  GPUs; a new spare replaces it at once. A job still never shares its process.
- resident workers: one long-lived process per GPU (inference), keeps models loaded
  between jobs; restarted when it dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import psutil

from gpu_service.errors import Cancelled, WorkerCrashed, error_from_dict
from gpu_service.executors.base import (
    Attempt,
    AttemptEnded,
    AttemptHeartbeat,
    EpochReported,
    EventSink,
    MetricsReported,
    ProgressReported,
    WorkerRestarted,
)
from gpu_service.workers.child import JobOrder, StopFlag, WorkerBoot, worker_entry

log = logging.getLogger(__name__)

QUIET_POLL_S = 0.25  # a quiet worker still produces a heartbeat event this often


class WorkerRecords(Protocol):
    """Where the pids of started workers are kept (the journal's `workers` table), so
    the next start of the service can stop any that outlived this one."""

    def worker_record(
        self, *, pid: int, create_time: float, gpu_ids: list[int], job_id: str | None
    ) -> None: ...

    def worker_forget(self, *, pid: int) -> None: ...

    def workers_recorded(self) -> list[tuple[int, float]]: ...


@dataclass(frozen=True)
class PoolConfig:
    """What every worker is started with; built once from the settings."""

    storage: str
    runtime: str  # "real" or "simulated"
    log_level: str
    nice: int
    threads: int
    cancel_grace_s: float
    warm: bool = False  # keep a spare fresh worker per GPU set
    sched: str = "other"
    ioprio: str = "best-effort"


@dataclass(eq=False)
class Worker:
    process: Any  # multiprocessing.Process (spawn context)
    conn: Any
    stop: StopFlag
    gpu_ids: list[int]
    style: Literal["fresh", "resident"]
    job_id: str | None = None
    attempt: int = 0
    cancel_requested: bool = False
    final: dict[str, Any] | None = None
    ready: bool = False  # a spare whose imports are done

    @property
    def pid(self) -> int:
        return self.process.pid


class WorkerPool:
    """The spawned workers of this service: fresh ones per job, one resident per GPU."""

    def __init__(
        self,
        *,
        config: PoolConfig,
        records: WorkerRecords,
        env: Callable[[list[int]], dict[str, str]],
    ) -> None:
        self._config = config
        self._records = records
        self._env = env  # the environment of a worker pinned to these GPUs
        self._mp = multiprocessing.get_context("spawn")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sink: EventSink = lambda event: None
        self._workers: dict[int, Worker] = {}  # pid -> worker
        self._by_job: dict[str, Worker] = {}
        self._resident: dict[int, Worker] = {}  # gpu -> its resident worker
        self._spares: dict[tuple[int, ...], Worker] = {}  # GPU set -> its waiting spare
        self.spares_limit = 4  # GPU sets with a spare at once; the least recent goes
        self._tasks: set[asyncio.Task[None]] = set()
        self._closing = False

    def bind(self, loop: asyncio.AbstractEventLoop, sink: EventSink) -> None:
        self._loop = loop
        self._sink = sink

    # ---- starting -------------------------------------------------------------------

    def job_start(self, attempt: Attempt) -> None:
        """Hand a just-admitted attempt to a worker. Must run on the event loop's thread:
        PR_SET_PDEATHSIG follows the thread that started the child."""
        order = JobOrder(
            job_id=attempt.job_id,
            kind=attempt.kind,
            spec=attempt.spec,
            attempt=attempt.attempt,
            simulate=attempt.simulate,
            progress=attempt.progress,
        )
        gpu_ids = list(attempt.gpu_ids)
        resident = self._resident_idle(gpu_ids) if attempt.resident else None
        if resident is not None:
            resident.stop.clear()
            resident.job_id, resident.attempt = attempt.job_id, attempt.attempt
            resident.cancel_requested, resident.final = False, None
            self._by_job[attempt.job_id] = resident
            resident.conn.send(order)
            self._records.worker_record(
                pid=resident.pid,
                create_time=_create_time(resident.pid),
                gpu_ids=gpu_ids,
                job_id=attempt.job_id,
            )
            return
        worker = self._spare_take(gpu_ids, attempt=attempt, order=order)
        if worker is None:
            worker = self._spawn(gpu_ids=gpu_ids, style="fresh", first=order)
            worker.job_id, worker.attempt = attempt.job_id, attempt.attempt
        self._by_job[attempt.job_id] = worker
        if self._config.warm and self._loop is not None:
            # On a later turn of the loop: this one is the job's start.
            self._loop.call_soon(self._spare_ensure, tuple(gpu_ids))

    # ---- spares (warm fresh workers) --------------------------------------------------

    def _spare_take(
        self, gpu_ids: list[int], *, attempt: Attempt, order: JobOrder
    ) -> Worker | None:
        """Hand the order to the GPU set's spare if it is ready; None when there is no
        ready one. One still importing is kept for a later job: waiting for its imports
        could take longer than starting a worker without them."""
        key = tuple(gpu_ids)
        spare = self._spares.get(key)
        if spare is None or not spare.ready or not spare.process.is_alive():
            return None
        del self._spares[key]
        spare.job_id, spare.attempt = attempt.job_id, attempt.attempt
        try:
            spare.conn.send(order)
        except OSError:  # it died just now: the job gets a process of its own
            spare.job_id, spare.attempt = None, 0
            return None
        self._records.worker_record(
            pid=spare.pid,
            create_time=_create_time(spare.pid),
            gpu_ids=gpu_ids,
            job_id=attempt.job_id,
        )
        return spare

    def _spare_ensure(self, key: tuple[int, ...]) -> None:
        if self._closing or key in self._spares:
            return
        while len(self._spares) >= self.spares_limit:
            oldest = next(iter(self._spares))
            self._spare_drop(oldest)
        self._spares[key] = self._spawn(gpu_ids=list(key), style="fresh", first=None)

    def _spare_drop(self, key: tuple[int, ...]) -> None:
        spare = self._spares.pop(key, None)
        if spare is not None:
            with contextlib.suppress(OSError):
                spare.conn.close()  # it sees EOF and exits; its reader cleans up

    def _resident_idle(self, gpu_ids: list[int]) -> Worker | None:
        """The GPU's resident worker when it is free; else None (the job gets a fresh one)."""
        if len(gpu_ids) != 1:
            return None
        worker = self._resident.get(gpu_ids[0])
        if worker is None:
            worker = self._spawn(gpu_ids=gpu_ids, style="resident", first=None)
            self._resident[gpu_ids[0]] = worker
        return worker if worker.job_id is None and worker.process.is_alive() else None

    def _spawn(
        self, *, gpu_ids: list[int], style: Literal["fresh", "resident"], first: JobOrder | None
    ) -> Worker:
        config = self._config
        boot = WorkerBoot(
            style=style,
            gpu_ids=list(gpu_ids),
            env=self._env(list(gpu_ids)),
            storage=config.storage,
            runtime=config.runtime,
            parent_pid=os.getpid(),
            log_level=config.log_level,
            nice=config.nice,
            threads=config.threads,
            sched=config.sched,
            ioprio=config.ioprio,
        )
        parent_conn, child_conn = self._mp.Pipe(duplex=True)
        stop_raw = self._mp.RawValue("b", 0)
        process = self._mp.Process(
            target=worker_entry,
            args=(boot, child_conn, stop_raw, first),
            name=f"carril-{style if first or style == 'resident' else 'spare'}-gpu"
            f"{'-'.join(map(str, gpu_ids))}",
        )
        process.start()
        child_conn.close()  # so the parent sees EOF when the child dies
        worker = Worker(
            process=process,
            conn=parent_conn,
            stop=StopFlag(stop_raw),
            gpu_ids=list(gpu_ids),
            style=style,
        )
        self._workers[worker.pid] = worker
        self._records.worker_record(
            pid=worker.pid,
            create_time=_create_time(worker.pid),
            gpu_ids=list(gpu_ids),
            job_id=first.job_id if first else None,
        )
        threading.Thread(
            target=self._read, args=(worker,), name=f"reader-{worker.pid}", daemon=True
        ).start()
        log.info("started %s worker pid %s on GPUs %s", style, worker.pid, gpu_ids)
        return worker

    # ---- listening (reader threads) ------------------------------------------------

    def _read(self, worker: Worker) -> None:
        while True:
            try:
                if not worker.conn.poll(QUIET_POLL_S):
                    # Quiet job (loading a model, a long step): it is still alive.
                    job_id = worker.job_id
                    if job_id is not None:
                        self._sink(AttemptHeartbeat(job_id=job_id, attempt=worker.attempt))
                    continue
                message = worker.conn.recv()
            except (EOFError, OSError):
                break
            if message["t"] == "ready":
                worker.ready = True
                log.info("spare worker pid %s ready on GPUs %s", worker.pid, worker.gpu_ids)
            elif message["t"] in ("done", "error"):
                if worker.style == "resident":
                    self._post(self._resident_job_ended, worker, message)
                else:
                    worker.final = message
            else:
                self._sink(_event(message))
        worker.process.join(timeout=30)
        if worker.process.is_alive():  # closed its pipe but lingers: finish it
            _signal_group(worker.pid, signal.SIGKILL)
            worker.process.join(timeout=10)
        self._post(self._worker_exited, worker)

    def _post(self, fn: Callable[..., None], *args: Any) -> None:
        if self._loop is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                self._loop.call_soon_threadsafe(fn, *args)

    # ---- ending (event loop) -------------------------------------------------------

    def _outcome(self, worker: Worker, final: dict[str, Any] | None) -> AttemptEnded:
        job_id = worker.job_id
        assert job_id is not None
        tag = {"job_id": job_id, "attempt": worker.attempt}
        if final is None:
            if worker.cancel_requested:
                return AttemptEnded(**tag, state="cancelled")
            code = worker.process.exitcode
            details: dict[str, Any] = {"exitcode": code, "pid": worker.pid}
            if code is not None and code < 0:
                details["signal"] = signal.Signals(-code).name
            return AttemptEnded(**tag, state="failed", error=WorkerCrashed(details=details))
        if final["t"] == "done":
            state = "cancelled" if worker.cancel_requested else "succeeded"
            return AttemptEnded(**tag, state=state, result=final["result"])
        error = error_from_dict(final["error"])
        if worker.cancel_requested or error.code == Cancelled.code:
            return AttemptEnded(**tag, state="cancelled")
        return AttemptEnded(**tag, state="failed", error=error)

    def _end_job(self, worker: Worker, ended: AttemptEnded) -> None:
        self._by_job.pop(ended.job_id, None)
        worker.job_id, worker.attempt = None, 0
        worker.cancel_requested, worker.final = False, None
        log.info("job %s attempt %s %s", ended.job_id, ended.attempt, ended.state)
        self._sink(ended)

    def _resident_job_ended(self, worker: Worker, message: dict[str, Any]) -> None:
        if self._closing or worker.job_id != message["job_id"]:
            return
        self._end_job(worker, self._outcome(worker, message))

    def _worker_exited(self, worker: Worker) -> None:
        self._workers.pop(worker.pid, None)
        self._records.worker_forget(pid=worker.pid)
        with contextlib.suppress(OSError):
            worker.conn.close()
        if self._closing:
            return  # jobs still running are reconciled by the next start-up
        code = worker.process.exitcode
        (log.info if code == 0 else log.warning)("worker pid %s exited with %s", worker.pid, code)
        key = tuple(worker.gpu_ids)
        if self._spares.get(key) is worker:  # a spare died before any job: the next
            del self._spares[key]  # job on these GPUs spawns its own, and a new spare
        if worker.job_id is not None:
            self._end_job(worker, self._outcome(worker, worker.final))
        if worker.style == "resident" and self._resident.get(worker.gpu_ids[0]) is worker:
            del self._resident[worker.gpu_ids[0]]
            self._sink(WorkerRestarted(gpu=worker.gpu_ids[0]))
            self._resident[worker.gpu_ids[0]] = self._spawn(
                gpu_ids=worker.gpu_ids, style="resident", first=None
            )

    # ---- cancelling ----------------------------------------------------------------

    def job_cancel(self, *, job_id: str, attempt: int) -> bool:
        """Ask the job to stop; escalate to SIGTERM, then SIGKILL, if it does not."""
        worker = self._by_job.get(job_id)
        if worker is None or worker.attempt != attempt:
            return False
        worker.cancel_requested = True
        worker.stop.set()
        task = asyncio.get_running_loop().create_task(self._escalate(worker, job_id))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def _escalate(self, worker: Worker, job_id: str) -> None:
        grace = self._config.cancel_grace_s
        for sig in (signal.SIGTERM, signal.SIGKILL):
            await asyncio.sleep(grace)
            if worker.job_id != job_id or not worker.process.is_alive():
                return
            log.warning(
                "job %s did not stop within %ss: %s to pid %s", job_id, grace, sig.name, worker.pid
            )
            _signal_group(worker.pid, sig)

    def spare_pid(self, *, gpu_ids: list[int]) -> int | None:
        """The pid of the ready spare waiting for the next job on these GPUs, if any."""
        spare = self._spares.get(tuple(gpu_ids))
        return spare.pid if spare and spare.ready else None

    def job_pid(self, *, job_id: str) -> int | None:
        worker = self._by_job.get(job_id)
        return worker.pid if worker else None

    # ---- start-up and shutdown -----------------------------------------------------

    def orphans_stop(self) -> int:
        """Stop workers a previous run of the service left behind (it was SIGKILLed and
        the death signal did not reach them): no GPU may be held by an orphan."""
        stopped = 0
        for pid, create_time in self._records.workers_recorded():
            try:
                process = psutil.Process(pid)
                # Same pid and same start time: really ours, not a reused pid.
                if abs(process.create_time() - create_time) < 1.0:
                    _signal_group(pid, signal.SIGKILL)
                    process.wait(timeout=10)
                    stopped += 1
                    log.warning("stopped orphan worker pid %s", pid)
            except (psutil.NoSuchProcess, psutil.TimeoutExpired):
                pass
            self._records.worker_forget(pid=pid)
        return stopped

    async def shutdown(self) -> None:
        """Stop every worker and wait for them: none may outlive the service."""
        self._closing = True
        workers = list(self._workers.values())
        for worker in workers:
            worker.stop.set()
            _signal_group(worker.pid, signal.SIGTERM)
        # Joined in threads: the loop keeps answering /healthz while workers stop.
        await asyncio.gather(*(asyncio.to_thread(w.process.join, 5.0) for w in workers))
        for worker in workers:
            if worker.process.is_alive():
                _signal_group(worker.pid, signal.SIGKILL)
        await asyncio.gather(*(asyncio.to_thread(w.process.join, 5.0) for w in workers))
        for worker in workers:
            self._records.worker_forget(pid=worker.pid)
        for task in list(self._tasks):
            task.cancel()


def _event(message: dict[str, Any]) -> ProgressReported | EpochReported | MetricsReported:
    """A child's report (see child.WorkerJobContext) as the event it means."""
    tag = {"job_id": message["job_id"], "attempt": message["attempt"]}
    if message["t"] == "progress":
        return ProgressReported(**tag, progress=message["progress"])
    if message["t"] == "epoch":
        return EpochReported(**tag, record=message["record"])
    return MetricsReported(**tag, fields=message["fields"])


def _signal_group(pid: int, sig: signal.Signals) -> None:
    """Signal the worker's process group (it called setsid), or the pid if it had not yet."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _create_time(pid: int) -> float:
    try:
        return psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        return 0.0
