"""Worker processes: start them (spawn, pinned to their GPUs), listen to them, stop them.

Runs in the API process but never blocks its event loop: each worker has a reader thread
that turns the child's messages into journal writes (progress throttled, epoch metrics
always) and posts the job's end back to the loop. A job ends when its final message has
arrived *and* (for fresh workers) its process has exited, so a lane is never released
while a process could still be using the GPU.

- fresh workers: one process per job (training), exits after it.
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
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import psutil

from gpu_service.errors import Cancelled, CarrilError, WorkerCrashed, error_from_dict
from gpu_service.journal import Job, Journal
from gpu_service.runtime.base import GpuRuntime
from gpu_service.settings import Settings
from gpu_service.worker_main import JobOrder, StopFlag, WorkerBoot, worker_entry
from gpu_service.workloads.base import Kind

log = logging.getLogger(__name__)

PROGRESS_INTERVAL_S = 0.25  # at most ~4 progress writes per second per job
HEARTBEAT_INTERVAL_S = 5.0


@dataclass(frozen=True)
class Outcome:
    job_id: str
    state: Literal["succeeded", "failed", "cancelled"]
    result: dict[str, Any] | None = None
    error: CarrilError | None = None


@dataclass(eq=False)
class Worker:
    process: Any  # multiprocessing.Process (spawn context)
    conn: Any
    stop: StopFlag
    gpu_ids: list[int]
    style: Literal["fresh", "resident"]
    job_id: str | None = None
    cancel_requested: bool = False
    final: dict[str, Any] | None = None

    @property
    def pid(self) -> int:
        return self.process.pid


@dataclass
class JobReporter:
    """Writes what one running job reports into the journal, from its reader thread."""

    journal: Journal
    job_id: str
    metrics: dict[str, Any]
    progress: dict[str, Any] = field(default_factory=dict)
    pending: bool = False
    last_write: float = 0.0

    def handle(self, message: dict[str, Any]) -> None:
        kind = message["t"]
        if kind == "progress":
            self.progress = message["progress"]
            self.pending = True
            self.flush()
        elif kind == "epoch":
            self.metrics.setdefault("epochs", []).append(message["record"])
            self.journal.job_metrics(job_id=self.job_id, metrics=self.metrics)
        elif kind == "metrics":
            self.metrics.update(message["fields"])
            self.journal.job_metrics(job_id=self.job_id, metrics=self.metrics)

    def flush(self, *, force: bool = False) -> None:
        now = time.monotonic()
        due = now - self.last_write >= PROGRESS_INTERVAL_S
        heartbeat = now - self.last_write >= HEARTBEAT_INTERVAL_S
        if (self.pending and (due or force)) or heartbeat:
            self.journal.job_progress(job_id=self.job_id, progress=self.progress)
            self.pending = False
            self.last_write = now


class Supervisor:
    def __init__(
        self,
        *,
        settings: Settings,
        runtime: GpuRuntime,
        journal: Journal,
        on_outcome: Callable[[Outcome], None],
        on_worker_restart: Callable[[int], None] = lambda gpu: None,
    ) -> None:
        self._settings = settings
        self._runtime = runtime
        self._journal = journal
        self._on_outcome = on_outcome
        self._on_worker_restart = on_worker_restart
        self._mp = multiprocessing.get_context("spawn")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._workers: dict[int, Worker] = {}  # pid -> worker
        self._by_job: dict[str, Worker] = {}
        self._resident: dict[int, Worker] = {}  # gpu -> its resident worker
        self._reporters: dict[str, JobReporter] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._closing = False

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    @property
    def closing(self) -> bool:
        return self._closing

    # ---- starting -------------------------------------------------------------------

    def job_start(self, *, job: Job, gpu_ids: list[int], kind: Kind) -> None:
        """Hand a just-admitted job to a worker. Must run on the event loop's thread:
        PR_SET_PDEATHSIG follows the thread that started the child."""
        order = JobOrder(
            job_id=job.id,
            kind=job.kind,
            spec=job.spec,
            attempt=job.attempt,
            simulate=job.simulate,
            progress=job.progress,
        )
        self._reporters[job.id] = JobReporter(
            journal=self._journal, job_id=job.id, metrics=dict(job.metrics)
        )
        resident = self._resident_idle(gpu_ids) if kind.worker == "resident" else None
        if resident is not None:
            resident.stop.clear()
            resident.job_id, resident.cancel_requested, resident.final = job.id, False, None
            self._by_job[job.id] = resident
            resident.conn.send(order)
            self._journal.worker_record(
                pid=resident.pid,
                create_time=_create_time(resident.pid),
                gpu_ids=gpu_ids,
                job_id=job.id,
            )
            return
        worker = self._spawn(gpu_ids=gpu_ids, style="fresh", first=order)
        worker.job_id = job.id
        self._by_job[job.id] = worker

    def _resident_idle(self, gpu_ids: list[int]) -> Worker | None:
        """The GPU's resident worker when it is free; else None (the job gets a fresh one)."""
        if len(gpu_ids) != 1:
            return None
        worker = self._resident.get(gpu_ids[0])
        if worker is None:
            worker = self._spawn(gpu_ids=gpu_ids, style="resident", first=None)
            self._resident[gpu_ids[0]] = worker
        return worker if worker.job_id is None and worker.process.is_alive() else None

    def _child_env(self, gpu_ids: list[int]) -> dict[str, str]:
        env = dict(self._runtime.child_env(gpu_ids=gpu_ids))
        try:
            from gpu_service.workloads.offline import offline_environment
        except ImportError:  # the workloads module is not there yet
            pass
        else:
            env.update(offline_environment(storage=self._settings.storage))
        env["CARRIL_INFER_CACHE_SIZE"] = str(self._settings.infer_cache_size)
        env["CARRIL_INFER_MAX_PIXELS"] = str(self._settings.infer_max_pixels)
        return env

    def _spawn(
        self, *, gpu_ids: list[int], style: Literal["fresh", "resident"], first: JobOrder | None
    ) -> Worker:
        boot = WorkerBoot(
            style=style,
            gpu_ids=list(gpu_ids),
            env=self._child_env(gpu_ids),
            storage=str(self._settings.storage),
            runtime=self._runtime.name,
            parent_pid=os.getpid(),
            log_level=self._settings.log_level.upper(),
            nice=self._settings.worker_nice,
            threads=self._settings.worker_threads if self._runtime.name == "simulated" else 0,
        )
        parent_conn, child_conn = self._mp.Pipe(duplex=True)
        stop_raw = self._mp.RawValue("b", 0)
        process = self._mp.Process(
            target=worker_entry,
            args=(boot, child_conn, stop_raw, first),
            name=f"carril-{style}-gpu{'-'.join(map(str, gpu_ids))}",
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
        self._journal.worker_record(
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
        reporter: JobReporter | None = None
        while True:
            try:
                if not worker.conn.poll(PROGRESS_INTERVAL_S):
                    # Quiet job (loading a model, a long step): still flush and heartbeat.
                    reporter = reporter or self._reporters.get(worker.job_id or "")
                    if reporter is not None:
                        reporter.flush()
                    continue
                message = worker.conn.recv()
            except (EOFError, OSError):
                break
            if reporter is None or reporter.job_id != message["job_id"]:
                reporter = self._reporters.get(message["job_id"])
            if reporter is None:
                continue
            if message["t"] in ("done", "error"):
                reporter.flush(force=True)
                reporter = None
                if worker.style == "resident":
                    self._post(self._resident_job_ended, worker, message)
                else:
                    worker.final = message
            else:
                reporter.handle(message)
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

    def _outcome(self, worker: Worker, final: dict[str, Any] | None) -> Outcome:
        job_id = worker.job_id
        assert job_id is not None
        if final is None:
            if worker.cancel_requested:
                return Outcome(job_id=job_id, state="cancelled")
            code = worker.process.exitcode
            details: dict[str, Any] = {"exitcode": code, "pid": worker.pid}
            if code is not None and code < 0:
                details["signal"] = signal.Signals(-code).name
            return Outcome(job_id=job_id, state="failed", error=WorkerCrashed(details=details))
        if final["t"] == "done":
            state = "cancelled" if worker.cancel_requested else "succeeded"
            return Outcome(job_id=job_id, state=state, result=final["result"])
        error = error_from_dict(final["error"])
        if worker.cancel_requested or error.code == Cancelled.code:
            return Outcome(job_id=job_id, state="cancelled")
        return Outcome(job_id=job_id, state="failed", error=error)

    def _end_job(self, worker: Worker, outcome: Outcome) -> None:
        self._by_job.pop(outcome.job_id, None)
        self._reporters.pop(outcome.job_id, None)
        worker.job_id, worker.cancel_requested, worker.final = None, False, None
        log.info("job %s %s", outcome.job_id, outcome.state)
        self._on_outcome(outcome)

    def _resident_job_ended(self, worker: Worker, message: dict[str, Any]) -> None:
        if self._closing or worker.job_id != message["job_id"]:
            return
        self._end_job(worker, self._outcome(worker, message))

    def _worker_exited(self, worker: Worker) -> None:
        self._workers.pop(worker.pid, None)
        self._journal.worker_forget(pid=worker.pid)
        with contextlib.suppress(OSError):
            worker.conn.close()
        if self._closing:
            return  # jobs still running are reconciled by the next start-up
        code = worker.process.exitcode
        (log.info if code == 0 else log.warning)("worker pid %s exited with %s", worker.pid, code)
        if worker.job_id is not None:
            self._end_job(worker, self._outcome(worker, worker.final))
        if worker.style == "resident" and self._resident.get(worker.gpu_ids[0]) is worker:
            del self._resident[worker.gpu_ids[0]]
            self._on_worker_restart(worker.gpu_ids[0])
            self._resident[worker.gpu_ids[0]] = self._spawn(
                gpu_ids=worker.gpu_ids, style="resident", first=None
            )

    # ---- cancelling ----------------------------------------------------------------

    def job_cancel(self, *, job_id: str) -> bool:
        """Ask the job to stop; escalate to SIGTERM, then SIGKILL, if it does not."""
        worker = self._by_job.get(job_id)
        if worker is None:
            return False
        worker.cancel_requested = True
        worker.stop.set()
        task = asyncio.get_running_loop().create_task(self._escalate(worker, job_id))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def _escalate(self, worker: Worker, job_id: str) -> None:
        grace = self._settings.cancel_grace_s
        for sig in (signal.SIGTERM, signal.SIGKILL):
            await asyncio.sleep(grace)
            if worker.job_id != job_id or not worker.process.is_alive():
                return
            log.warning(
                "job %s did not stop within %ss: %s to pid %s", job_id, grace, sig.name, worker.pid
            )
            _signal_group(worker.pid, sig)

    def job_pid(self, *, job_id: str) -> int | None:
        worker = self._by_job.get(job_id)
        return worker.pid if worker else None

    # ---- start-up and shutdown -----------------------------------------------------

    def orphans_stop(self) -> int:
        """Stop workers a previous run of the service left behind (it was SIGKILLed and
        the death signal did not reach them): no GPU may be held by an orphan."""
        stopped = 0
        for pid, create_time in self._journal.workers_recorded():
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
            self._journal.worker_forget(pid=pid)
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
            self._journal.worker_forget(pid=worker.pid)
        for task in list(self._tasks):
            task.cancel()


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
