"""What runs on a Ray node: one attempt of one job, inside a Ray actor.

The actor is the node-side twin of a local worker process. It runs the job with the
same `run_order` as a local worker (same kinds, same job context, same log file in
shared storage) on a thread of its own, so the actor keeps answering while the job
computes. Nothing here writes the journal: the GPU service on the head polls `poll()`
and is the one writer. Every message carries the job id and the attempt, so the head
can drop what a stale attempt says.

Kept free of Ray imports at module level: the class is plain Python (unit-testable),
and `gpu_service.executors.ray` wraps it with `ray.remote`.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import asdict
from typing import Any

from gpu_service.workers.child import JobOrder, WorkerBoot, run_order


class _ThreadStop:
    """The StopFlag interface over a threading.Event (the job runs on a thread here)."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    def clear(self) -> None:
        self._event.clear()

    def is_set(self) -> bool:
        return self._event.is_set()


class _EventLog:
    """The Connection `run_order` sends to: numbered messages kept until polled."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._messages: list[dict[str, Any]] = []
        self.ended = False  # the final message (done or error) has been sent

    def send(self, message: dict[str, Any]) -> None:
        with self._changed:
            self._messages.append(message)
            self.ended = self.ended or message["t"] in ("done", "error")
            self._changed.notify_all()

    def after(self, seq: int, *, wait_s: float = 0.0) -> tuple[list[dict[str, Any]], int, bool]:
        """Messages after the `seq`-th; waits up to `wait_s` for one when there is none
        yet (a long poll: the head hears of a message when it is sent, not a tick later)."""
        with self._changed:
            if wait_s > 0:
                self._changed.wait_for(
                    lambda: len(self._messages) > seq or self.ended, timeout=wait_s
                )
            return list(self._messages[seq:]), len(self._messages), self.ended


_PREPARED = False


def _prepare_process(boot: WorkerBoot) -> None:
    """Once per actor process, before any kind imports torch: the GPUs it may see (Ray
    set CUDA_VISIBLE_DEVICES; the simulated runtime hides them all, a resident actor is
    pinned to its GPU), the offline switches, the niceness."""
    global _PREPARED
    if _PREPARED:
        return
    os.environ.update(boot.env)
    if boot.nice:
        os.nice(boot.nice)
    if boot.threads:
        os.environ["OMP_NUM_THREADS"] = str(boot.threads)
    _PREPARED = True


class AttemptRunner:
    """One attempt of one job on this node. `start()` once, then `poll()` until final."""

    def __init__(self, *, order: dict[str, Any], boot: dict[str, Any]) -> None:
        self.order = JobOrder(**order)
        self.boot = WorkerBoot(**boot)
        self._log = _EventLog()
        self._stop = _ThreadStop()
        self._thread: threading.Thread | None = None
        self._acked = 0
        self.started_at = time.time()

    def start(self) -> dict[str, Any]:
        if self._thread is None:
            _prepare_process(self.boot)
            self._thread = threading.Thread(target=self._run, name="carril-job", daemon=True)
            self._thread.start()
        return self.describe()

    def _run(self) -> None:
        run_order(order=self.order, boot=self.boot, conn=self._log, stop=self._stop)

    def poll(self, after: int = 0, wait_s: float = 0.0) -> dict[str, Any]:
        """Messages after the `after`-th, the new cursor, and whether the job has ended;
        when there is nothing new, waits up to `wait_s` for it (the actor is threaded, so
        a waiting poll never holds up a cancel).

        Asking from `after` acknowledges every message before it. `after=-1` (a restarted
        GPU service that does not know its cursor) resumes from the last acknowledged
        message, so no epoch is recorded twice.
        """
        if after < 0:
            after = self._acked
        self._acked = max(self._acked, after)
        messages, seq, ended = self._log.after(after, wait_s=wait_s)
        return {
            "job_id": self.order.job_id,
            "attempt": self.order.attempt,
            "messages": messages,
            "seq": seq,
            "ended": ended,
        }

    def cancel(self) -> bool:
        self._stop.set()
        return True

    def describe(self) -> dict[str, Any]:
        node_id, gpu_ids = "", []
        try:
            import ray

            context = ray.get_runtime_context()
            node_id = context.get_node_id()
            gpu_ids = [int(g) for g in ray.get_gpu_ids()]
        except Exception:  # noqa: S110 - outside Ray (unit tests): nothing to describe
            pass
        return {
            "job_id": self.order.job_id,
            "attempt": self.order.attempt,
            "pid": os.getpid(),
            "node_id": node_id,
            "node_gpu_ids": gpu_ids,
            "started_at": self.started_at,
        }


class ResidentRunner:
    """A long-lived actor pinned to one GPU of one node, running inference attempts one
    after another in the same process, so the models it loaded stay loaded (the same
    bounded cache as a local resident worker: CARRIL_INFER_CACHE_SIZE)."""

    def __init__(self, *, boot: dict[str, Any]) -> None:
        self.boot = boot
        self._runs: dict[tuple[str, int], AttemptRunner] = {}

    def start_job(self, order: dict[str, Any]) -> dict[str, Any]:
        key = (order["job_id"], order["attempt"])
        if key not in self._runs:
            self._runs[key] = AttemptRunner(order=order, boot=self.boot)
        return self._runs[key].start()

    def poll_job(
        self, job_id: str, attempt: int, after: int, wait_s: float = 0.0
    ) -> dict[str, Any]:
        return self._runs[(job_id, attempt)].poll(after, wait_s)

    def cancel_job(self, job_id: str, attempt: int) -> bool:
        run = self._runs.get((job_id, attempt))
        return run.cancel() if run is not None else False

    def forget_job(self, job_id: str, attempt: int) -> None:
        self._runs.pop((job_id, attempt), None)

    def jobs(self) -> list[tuple[str, int]]:
        return list(self._runs)


def order_dict(order: JobOrder) -> dict[str, Any]:
    return asdict(order)


def boot_dict(boot: WorkerBoot) -> dict[str, Any]:
    return asdict(boot)
