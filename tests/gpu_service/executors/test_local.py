"""The local executor with real spawned worker processes: resident workers, cancel,
events tagged with their attempt, orphan clean-up."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

import psutil
import pytest

from gpu_service.executors.base import (
    Attempt,
    AttemptEnded,
    MetricsReported,
    ProgressReported,
    WorkerRestarted,
)
from gpu_service.executors.local import LocalExecutor
from gpu_service.journal import Journal
from gpu_service.runtime.simulated import SimulatedRuntime
from gpu_service.settings import load_settings


@pytest.fixture
def journal(tmp_path):
    journal = Journal(path=tmp_path / "journal.sqlite3")
    yield journal
    journal.close()


_ids = iter(range(1, 1_000_000))


def attempt(*, seconds: float, resident: bool = False, simulate=None, number: int = 1) -> Attempt:
    """A diagnostic attempt on GPU 0; `resident` serves it the way inference is served."""
    return Attempt(
        job_id=f"job-{next(_ids)}",
        attempt=number,
        kind="diagnostic",
        spec={"seconds": seconds, "step_s": 0.1, "burn_cpu": False},
        gpu_ids=[0],
        resident=resident,
        simulate=simulate,
    )


class Events:
    """The executor's sink: every event, and the ends as a queue to await."""

    def __init__(self) -> None:
        self.all: list = []
        self.ended: asyncio.Queue[AttemptEnded] = asyncio.Queue()
        self.loop = asyncio.get_running_loop()

    def __call__(self, event) -> None:
        self.all.append(event)
        if isinstance(event, AttemptEnded):
            self.loop.call_soon_threadsafe(self.ended.put_nowait, event)

    def worker_pid(self, job_id: str) -> int | None:
        for event in self.all:
            if isinstance(event, MetricsReported) and event.job_id == job_id:
                return event.fields.get("worker_pid")
        return None

    def restarts(self) -> list[int]:
        return [event.gpu for event in self.all if isinstance(event, WorkerRestarted)]


async def run_jobs(tmp_path, journal, steps, **overrides):
    """Run `steps(executor, events)` with a live local executor; close it after."""
    settings = load_settings(
        storage=tmp_path, gpu_service_token="t" * 32, cancel_grace_s=1, **overrides
    )
    executor = LocalExecutor(
        settings=settings, runtime=SimulatedRuntime.from_spec("1x8GiB"), records=journal
    )
    events = Events()
    await executor.open(sink=events)
    try:
        return await steps(executor, events), events
    finally:
        await executor.close()


async def next_end(events: Events) -> AttemptEnded:
    return await asyncio.wait_for(events.ended.get(), timeout=60)


def test_a_resident_worker_serves_several_jobs_in_one_process(tmp_path, journal):
    async def steps(executor, events):
        pids = []
        for _ in range(2):
            job = attempt(seconds=0.1, resident=True)
            executor.launch(job)
            ended = await next_end(events)
            assert (ended.job_id, ended.attempt, ended.state) == (job.job_id, 1, "succeeded")
            pids.append(events.worker_pid(job.job_id))
        return pids

    pids, events = asyncio.run(run_jobs(tmp_path, journal, steps))
    assert pids[0] == pids[1]
    assert events.restarts() == []
    assert not psutil.pid_exists(pids[0]) or psutil.Process(pids[0]).status() == "zombie"


def test_a_dead_resident_worker_fails_its_job_and_is_restarted(tmp_path, journal):
    async def steps(executor, events):
        job = attempt(seconds=1.0, resident=True, simulate={"crash_at_step": 2})
        executor.launch(job)
        crashed = await next_end(events)
        # The restart happens right after the crash; let the loop run it.
        await asyncio.sleep(0.1)
        nxt = attempt(seconds=0.1, resident=True)
        executor.launch(nxt)
        return crashed, await next_end(events), job, nxt

    (crashed, after, job, nxt), events = asyncio.run(run_jobs(tmp_path, journal, steps))
    assert crashed.state == "failed"
    assert crashed.error.code == "WORKER_CRASHED"
    assert crashed.error.details["exitcode"] == 137
    assert after.state == "succeeded"
    assert events.restarts() == [0]
    assert events.worker_pid(job.job_id) != events.worker_pid(nxt.job_id)


def test_cancel_asks_the_job_to_stop_between_steps(tmp_path, journal):
    async def steps(executor, events):
        job = attempt(seconds=30)
        executor.launch(job)
        for _ in range(600):  # the worker reports its pid once it is running
            if events.worker_pid(job.job_id):
                break
            await asyncio.sleep(0.05)
        assert not executor.cancel(job_id=job.job_id, attempt=2)  # not the attempt running
        assert executor.cancel(job_id=job.job_id, attempt=1)
        return await next_end(events)

    ended, _ = asyncio.run(run_jobs(tmp_path, journal, steps))
    assert ended.state == "cancelled"
    assert ended.result["stopped"] is True


def test_every_report_is_tagged_with_its_job_and_attempt(tmp_path, journal):
    async def steps(executor, events):
        job = attempt(seconds=1.0, number=3)
        executor.launch(job)
        await next_end(events)
        return job

    job, events = asyncio.run(run_jobs(tmp_path, journal, steps))
    progress = [e for e in events.all if isinstance(e, ProgressReported)]
    assert {(e.job_id, e.attempt) for e in events.all if hasattr(e, "job_id")} == {(job.job_id, 3)}
    batches = {e.progress.get("batch") for e in progress}
    assert len(batches - {None, 0}) >= 2  # intermediate batches, not only the end


def test_orphans_from_a_previous_run_are_stopped_but_strangers_are_not(tmp_path, journal):
    orphan = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )
    stranger = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )
    try:
        journal.worker_record(
            pid=orphan.pid,
            create_time=psutil.Process(orphan.pid).create_time(),
            gpu_ids=[0],
            job_id=None,
        )
        # A recorded pid whose start time does not match was reused by someone else.
        journal.worker_record(pid=stranger.pid, create_time=1.0, gpu_ids=[0], job_id=None)

        async def steps(executor, events):  # opening the executor stops the orphans
            return executor.reattach([attempt(seconds=1)])

        reattached, _ = asyncio.run(run_jobs(tmp_path, journal, steps))
        assert reattached == set()  # local workers never outlive the service
        assert not psutil.pid_exists(orphan.pid)  # killed and reaped
        assert stranger.poll() is None
        assert journal.workers_recorded() == []
    finally:
        for process in (orphan, stranger):
            if process.poll() is None:
                os.kill(process.pid, signal.SIGKILL)
                process.wait()


def test_a_worker_runs_at_a_lower_cpu_priority_than_the_service(tmp_path, journal):
    async def steps(executor, events):
        job = attempt(seconds=3.0)
        executor.launch(job)
        worker = psutil.Process(executor.pid(job_id=job.job_id))
        niceness = worker.nice()
        for _ in range(100):  # the child lowers its own priority as it starts
            niceness = worker.nice()
            if niceness != psutil.Process().nice():
                break
            await asyncio.sleep(0.1)
        executor.cancel(job_id=job.job_id, attempt=job.attempt)
        await next_end(events)
        return niceness

    niceness, _ = asyncio.run(run_jobs(tmp_path, journal, steps))
    assert niceness == min(19, psutil.Process().nice() + 10)


def test_the_inventory_names_this_host(tmp_path):
    import socket

    settings = load_settings(storage=tmp_path, gpu_service_token="t" * 32)
    executor = LocalExecutor(
        settings=settings, runtime=SimulatedRuntime.from_spec("2x8GiB"), records=None
    )
    assert [(g.index, g.host) for g in executor.inventory()] == [
        (0, socket.gethostname()),
        (1, socket.gethostname()),
    ]


async def spare_of(executor, gpu_ids=(0,)) -> int:
    for _ in range(600):
        pid = executor.pool.spare_pid(gpu_ids=list(gpu_ids))
        if pid:
            return pid
        await asyncio.sleep(0.05)
    raise AssertionError("no spare worker was started")


def test_a_spare_worker_takes_the_next_job_and_a_new_spare_replaces_it(tmp_path, journal):
    async def steps(executor, events):
        first = attempt(seconds=0.1)
        executor.launch(first)  # no spare yet: a worker of its own, and a spare is started
        await next_end(events)
        spare = await spare_of(executor)
        second = attempt(seconds=0.1)
        executor.launch(second)
        assert executor.pid(job_id=second.job_id) == spare
        assert (await next_end(events)).state == "succeeded"
        replacement = await spare_of(executor)
        return first, second, spare, replacement

    (first, second, spare, replacement), events = asyncio.run(run_jobs(tmp_path, journal, steps))
    assert events.worker_pid(second.job_id) == spare
    # One process per job: the spare served one job and exited, a new one waits.
    assert len({events.worker_pid(first.job_id), spare, replacement}) == 3
    assert not psutil.pid_exists(spare) or psutil.Process(spare).status() == "zombie"


def test_a_job_in_a_spare_that_crashes_fails_like_one_in_its_own_worker(tmp_path, journal):
    async def steps(executor, events):
        executor.launch(attempt(seconds=0.1))
        await next_end(events)
        spare = await spare_of(executor)
        job = attempt(seconds=1.0, simulate={"crash_at_step": 2})
        executor.launch(job)
        return spare, await next_end(events)

    (spare, crashed), _ = asyncio.run(run_jobs(tmp_path, journal, steps))
    assert crashed.state == "failed"
    assert crashed.error.code == "WORKER_CRASHED"
    assert crashed.error.details == {"exitcode": 137, "pid": spare}


def test_a_dead_spare_is_passed_over_and_the_job_still_runs(tmp_path, journal):
    async def steps(executor, events):
        executor.launch(attempt(seconds=0.1))
        await next_end(events)
        spare = await spare_of(executor)
        os.kill(spare, signal.SIGKILL)
        psutil.Process(spare).wait(timeout=10) if psutil.pid_exists(spare) else None
        job = attempt(seconds=0.1)
        executor.launch(job)
        return spare, job, await next_end(events)

    (spare, job, ended), events = asyncio.run(run_jobs(tmp_path, journal, steps))
    assert ended.state == "succeeded"
    assert events.worker_pid(job.job_id) != spare


def test_without_warm_workers_no_spare_is_kept(tmp_path, journal):
    async def steps(executor, events):
        executor.launch(attempt(seconds=0.1))
        await next_end(events)
        await asyncio.sleep(0.3)
        return [w for w in executor.pool._workers.values() if w.job_id is None]

    idle, _ = asyncio.run(run_jobs(tmp_path, journal, steps, warm_workers=False))
    assert idle == []  # no process waits for a job


def test_a_worker_takes_the_configured_cpu_policy_and_io_class(tmp_path, journal):
    async def steps(executor, events):
        job = attempt(seconds=3.0)
        executor.launch(job)
        pid = executor.pid(job_id=job.job_id)
        for _ in range(100):  # the child sets them as it starts
            seen = os.sched_getscheduler(pid), psutil.Process(pid).ionice().ioclass
            if seen == (os.SCHED_IDLE, psutil.IOPRIO_CLASS_IDLE):
                break
            await asyncio.sleep(0.1)
        executor.cancel(job_id=job.job_id, attempt=job.attempt)
        await next_end(events)
        return seen

    (policy, ioclass), _ = asyncio.run(
        run_jobs(tmp_path, journal, steps, worker_sched="idle", worker_ioprio="idle")
    )
    assert policy == os.SCHED_IDLE
    assert ioclass == psutil.IOPRIO_CLASS_IDLE
