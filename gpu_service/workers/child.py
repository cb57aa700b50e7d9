"""The child side of the workers: what runs inside a worker process (started with the
spawn method by `gpu_service.workers.parent`).

The child first makes itself safe to lose: its own process group (so a cancel can stop
everything it started), death with the service (PR_SET_PDEATHSIG plus a watchdog on
getppid), and the GPU environment before anything can import torch. Then it runs jobs:
one for a `fresh` worker, a stream of them for a `resident` one. It reports to the
parent over a Pipe: progress, epoch metrics, summary metrics, and one final message.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from gpu_service.errors import Cancelled, CarrilError, CudaOOM, JobFailed, ValidationFailed
from gpu_service.storage import PRIVATE_UMASK
from gpu_service.workloads.runners import RUNNERS
from gpu_service.workloads.simulated_oom import cuda_out_of_memory, out_of_memory_reason

PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class WorkerBoot:
    """Everything a worker needs, pickled across the spawn."""

    style: str  # "fresh" or "resident"
    gpu_ids: list[int]  # the host's GPU indices it is pinned to
    env: dict[str, str]  # CUDA_VISIBLE_DEVICES and the offline switches
    storage: str
    runtime: str
    parent_pid: int
    log_level: str = "INFO"
    nice: int = 0  # added to the inherited niceness at start
    threads: int = 0  # torch intra-op threads; 0 leaves torch's default
    sched: str = "other"  # CPU policy: other, batch or idle (inherited by its children)
    ioprio: str = "best-effort"  # I/O class: best-effort or idle


@dataclass
class JobOrder:
    """One job handed to a worker."""

    job_id: str
    kind: str
    spec: dict[str, Any]
    attempt: int
    simulate: dict[str, Any] | None = None
    progress: dict[str, Any] = field(default_factory=dict)


class StopFlag:
    """A lock-free shared byte: the parent sets it, the job polls it between steps.

    Lock-free on purpose: a worker killed while holding an Event's lock would leave the
    parent blocked forever on the next `set()`.
    """

    def __init__(self, raw: Any) -> None:
        self._raw = raw

    def set(self) -> None:
        self._raw.value = 1

    def clear(self) -> None:
        self._raw.value = 0

    def is_set(self) -> bool:
        return bool(self._raw.value)


# ---- process safety -----------------------------------------------------------------


def die_with_parent(*, parent_pid: int) -> None:
    """Make sure this process never outlives the service that started it."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)

    def watch() -> None:
        while True:
            if os.getppid() != parent_pid:
                os._exit(1)
            time.sleep(1.0)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


def _redirect_output(*, log_path: Path) -> None:
    """Send fd 1 and 2 (prints, C libraries, tracebacks) to the job's log file."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _job_logger(*, job_id: str, log_path: Path, level: str) -> logging.Logger:
    logger = logging.getLogger(f"carril.job.{job_id}")
    logger.handlers.clear()
    handler = logging.FileHandler(log_path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    return logger


# ---- the context a kind sees --------------------------------------------------------


class WorkerJobContext:
    """The `JobContext` of gpu_service.workloads.base, implemented over the Pipe."""

    def __init__(
        self, *, order: JobOrder, boot: WorkerBoot, conn: Connection, stop: StopFlag
    ) -> None:
        self.job_id = order.job_id
        self.kind = order.kind
        self.spec = order.spec
        self.attempt = order.attempt
        self.storage = Path(boot.storage)
        self.job_dir = self.storage / "jobs" / order.job_id
        self.job_dir.mkdir(parents=True, exist_ok=True)
        self.runtime = boot.runtime
        # Under the simulated runtime the worker sees no CUDA device at all.
        self.devices = list(range(len(boot.gpu_ids))) if boot.runtime == "real" else []
        self.logger = _job_logger(
            job_id=order.job_id, log_path=self.job_dir / "job.log", level=boot.log_level
        )
        self._conn = conn
        self._stop = stop
        self._faults = order.simulate or {}
        self._fired: set[str] = set()  # one-shot faults already raised in this attempt
        self._progress: dict[str, Any] = dict(order.progress)

    def _send(self, message: dict[str, Any]) -> None:
        # Tagged with the attempt, so the parent's manager can ignore a stale one.
        self._conn.send({"job_id": self.job_id, "attempt": self.attempt, **message})

    def progress(self, **fields: Any) -> None:
        self._progress.update(fields)
        self._send({"t": "progress", "progress": dict(self._progress)})

    def epoch_metrics(self, record: dict[str, Any]) -> None:
        self._send({"t": "epoch", "record": dict(record)})

    def set_metrics(self, **fields: Any) -> None:
        self._send({"t": "metrics", "fields": fields})

    def should_stop(self) -> bool:
        return self._stop.is_set()

    def fault_point(self, step: int, *, batch: int | None = None) -> None:
        if self.runtime != "simulated" or not self._faults:
            return
        why = out_of_memory_reason(faults=self._faults, step=step, batch=batch, fired=self._fired)
        if why:
            raise cuda_out_of_memory(why=why)
        # A resumed attempt passes the same step again; crashing it too would only
        # exhaust the attempts, so the simulated crash belongs to the first attempt.
        if self._faults.get("crash_at_step") == step and self.attempt == 1:
            self.logger.warning("simulated crash (%s) at step %s", self._faults, step)
            crash(mode=self._faults.get("crash_mode", "exit"))


def crash(*, mode: str) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    if mode == "abort":
        os.abort()
    if mode == "segfault":
        ctypes.string_at(0)
    os._exit(137)


# ---- running jobs -------------------------------------------------------------------


def _as_carril_error(exc: BaseException) -> CarrilError:
    if isinstance(exc, CarrilError):
        return exc
    text = str(exc)
    # torch.cuda.OutOfMemoryError, without importing torch here to ask.
    if type(exc).__name__ == "OutOfMemoryError" or "CUDA out of memory" in text:
        return CudaOOM(details={"detail": text[:500]})
    return JobFailed(f"{type(exc).__name__}: {text}"[:1000], details={"type": type(exc).__name__})


def run_order(*, order: JobOrder, boot: WorkerBoot, conn: Connection, stop: StopFlag) -> None:
    """Run one job and send exactly one final message: done or error."""
    # Whoever started this process (the service, a Ray node, a spare), what the job
    # writes is its owner's only (ADR 0057).
    os.umask(PRIVATE_UMASK)
    job_dir = Path(boot.storage) / "jobs" / order.job_id
    _redirect_output(log_path=job_dir / "job.log")
    ctx = WorkerJobContext(order=order, boot=boot, conn=conn, stop=stop)
    ctx.logger.info(
        "job %s (%s) attempt %s starting in pid %s",
        order.job_id,
        order.kind,
        order.attempt,
        os.getpid(),
    )
    try:
        delay = float((order.simulate or {}).get("start_delay_s") or 0)
        if delay and boot.runtime == "simulated":
            time.sleep(delay)
        run = RUNNERS.get(order.kind)
        if run is None:
            raise ValidationFailed(f"job kind {order.kind!r} is not available in this worker")
        result = run(ctx)
        ctx.logger.info("job %s finished (stopped=%s)", order.job_id, stop.is_set())
        conn.send(
            {"job_id": order.job_id, "t": "done", "result": result or {}, "stopped": stop.is_set()}
        )
    except Exception as exc:
        error = Cancelled() if stop.is_set() and not isinstance(exc, CarrilError) else None
        error = error or _as_carril_error(exc)
        ctx.logger.error("job %s failed: %s\n%s", order.job_id, error.code, traceback.format_exc())
        conn.send(
            {
                "job_id": order.job_id,
                "t": "error",
                "error": error.as_dict(),
                "stopped": stop.is_set(),
            }
        )
    finally:
        for handler in list(ctx.logger.handlers):
            handler.close()
            ctx.logger.removeHandler(handler)


def worker_entry(boot: WorkerBoot, conn: Connection, stop_raw: Any, first: JobOrder | None) -> None:
    """Target of the spawned process."""
    os.setsid()  # its own process group: cancel signals reach everything it starts
    die_with_parent(parent_pid=boot.parent_pid)
    os.environ.update(boot.env)
    _yield_cpu(boot=boot)
    stop = StopFlag(stop_raw)
    if boot.style == "fresh":
        if first is None:  # a spare: pay the imports now, then wait for its one job
            _import_ahead()
            try:
                conn.send({"t": "ready"})  # only a ready spare is handed a job
                first = conn.recv()
            except (EOFError, OSError):
                _exit(conn, code=0)
        run_order(order=first, boot=boot, conn=conn, stop=stop)
        _exit(conn, code=0)
    while True:  # resident: serve jobs until the parent closes the pipe
        try:
            order = conn.recv()
        except (EOFError, OSError):
            _exit(conn, code=0)
        run_order(order=order, boot=boot, conn=conn, stop=stop)


def _import_ahead() -> None:
    """What every job imports first (most of a worker's start-up), done while the spare
    waits. After the GPU environment is set, so a spare is pinned like any worker."""
    with contextlib.suppress(ImportError):
        import torch  # noqa: F401
        import ultralytics  # noqa: F401


def _yield_cpu(*, boot: WorkerBoot) -> None:
    """Let the API process come first: a busy worker (on the CPU under the simulated
    runtime, or feeding a GPU) must not make /healthz and submits wait for a core."""
    if boot.nice:
        with contextlib.suppress(OSError):
            os.nice(boot.nice)
    policy = {"batch": "SCHED_BATCH", "idle": "SCHED_IDLE"}.get(boot.sched)
    if policy and hasattr(os, policy):
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, getattr(os, policy), os.sched_param(0))
    if boot.ioprio == "idle":
        with contextlib.suppress(OSError, AttributeError):
            import psutil

            psutil.Process().ionice(psutil.IOPRIO_CLASS_IDLE)
    if boot.threads:
        # Read by torch when it is first imported; set_num_threads for when it already is.
        os.environ["OMP_NUM_THREADS"] = str(boot.threads)
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(boot.threads)


def _exit(conn: Connection, *, code: int) -> None:
    """Leave without atexit hooks or non-daemon threads (dataloaders) holding us up."""
    sys.stdout.flush()
    sys.stderr.flush()
    with contextlib.suppress(OSError):
        conn.close()
    os._exit(code)
