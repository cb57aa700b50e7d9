"""The supervisor with real spawned processes: resident workers and orphan clean-up."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

import psutil
import pytest

from gpu_service.journal import Journal
from gpu_service.runtime.simulated import SimulatedRuntime
from gpu_service.settings import load_settings
from gpu_service.supervisor import Outcome, Supervisor
from gpu_service.workloads.base import Kind
from gpu_service.workloads.diagnostic import DIAGNOSTIC, DiagnosticSpec, diagnostic_run

# The diagnostic workload, served the way inference is: by one long-lived worker per GPU.
RESIDENT = Kind(name="diagnostic", spec_model=DiagnosticSpec, run=diagnostic_run, worker="resident")


@pytest.fixture
def journal(tmp_path):
    journal = Journal(path=tmp_path / "journal.sqlite3")
    yield journal
    journal.close()


def queued_and_started(journal: Journal, *, seconds: float, gpu: int = 0, simulate=None):
    job, _ = journal.job_create(
        kind="diagnostic",
        spec={"seconds": seconds, "step_s": 0.1, "burn_cpu": False},
        gpus_requested=1,
        gpu_ids_requested=None,
        simulate=simulate,
    )
    journal.job_start(job_id=job.id, gpu_ids=[gpu])
    return journal.job_get(job_id=job.id)


async def run_jobs(tmp_path, journal, steps):
    """Run `steps(supervisor, outcomes)` with a live supervisor; shut it down after."""
    settings = load_settings(storage=tmp_path, gpu_service_token="t" * 32, cancel_grace_s=1)
    outcomes: asyncio.Queue[Outcome] = asyncio.Queue()
    restarts: list[int] = []
    supervisor = Supervisor(
        settings=settings,
        runtime=SimulatedRuntime.from_spec("1x8GiB"),
        journal=journal,
        on_outcome=outcomes.put_nowait,
        on_worker_restart=restarts.append,
    )
    supervisor.bind(asyncio.get_running_loop())
    try:
        return await steps(supervisor, outcomes), restarts
    finally:
        await supervisor.shutdown()


async def next_outcome(outcomes: asyncio.Queue[Outcome]) -> Outcome:
    return await asyncio.wait_for(outcomes.get(), timeout=60)


def test_a_resident_worker_serves_several_jobs_in_one_process(tmp_path, journal):
    async def steps(supervisor, outcomes):
        pids = []
        for _ in range(2):
            job = queued_and_started(journal, seconds=0.1)
            supervisor.job_start(job=job, gpu_ids=[0], kind=RESIDENT)
            outcome = await next_outcome(outcomes)
            assert outcome.state == "succeeded"
            pids.append(journal.job_get(job_id=job.id).metrics["worker_pid"])
        return pids

    pids, restarts = asyncio.run(run_jobs(tmp_path, journal, steps))
    assert pids[0] == pids[1]
    assert restarts == []
    assert not psutil.pid_exists(pids[0]) or psutil.Process(pids[0]).status() == "zombie"


def test_a_dead_resident_worker_fails_its_job_and_is_restarted(tmp_path, journal):
    async def steps(supervisor, outcomes):
        job = queued_and_started(journal, seconds=1.0, simulate={"crash_at_step": 2})
        supervisor.job_start(job=job, gpu_ids=[0], kind=RESIDENT)
        crashed = await next_outcome(outcomes)
        # The restart happens right after the crash; let the loop run it.
        await asyncio.sleep(0.1)
        nxt = queued_and_started(journal, seconds=0.1)
        supervisor.job_start(job=nxt, gpu_ids=[0], kind=RESIDENT)
        return crashed, await next_outcome(outcomes), job, nxt

    (crashed, after, job, nxt), restarts = asyncio.run(run_jobs(tmp_path, journal, steps))
    assert crashed.state == "failed"
    assert crashed.error.code == "WORKER_CRASHED"
    assert crashed.error.details["exitcode"] == 137
    assert after.state == "succeeded"
    assert restarts == [0]
    assert (
        journal.job_get(job_id=job.id).metrics["worker_pid"]
        != journal.job_get(job_id=nxt.id).metrics["worker_pid"]
    )


def test_cancel_asks_the_job_to_stop_between_steps(tmp_path, journal):
    async def steps(supervisor, outcomes):
        job = queued_and_started(journal, seconds=30)
        supervisor.job_start(job=job, gpu_ids=[0], kind=DIAGNOSTIC)
        for _ in range(600):  # the worker reports its pid once it is running
            if journal.job_get(job_id=job.id).metrics.get("worker_pid"):
                break
            await asyncio.sleep(0.05)
        journal.job_request_cancel(job_id=job.id)
        assert supervisor.job_cancel(job_id=job.id)
        return await next_outcome(outcomes)

    outcome, _ = asyncio.run(run_jobs(tmp_path, journal, steps))
    assert outcome.state == "cancelled"
    assert outcome.result["stopped"] is True


def test_progress_reaches_the_journal_while_the_job_runs(tmp_path, journal):
    async def steps(supervisor, outcomes):
        job = queued_and_started(journal, seconds=1.0)
        supervisor.job_start(job=job, gpu_ids=[0], kind=DIAGNOSTIC)
        seen = set()
        while outcomes.empty():
            seen.add(journal.job_get(job_id=job.id).progress.get("batch"))
            await asyncio.sleep(0.05)
        return seen

    seen, _ = asyncio.run(run_jobs(tmp_path, journal, steps))
    assert len(seen - {None, 0}) >= 2  # intermediate batches, not only the end


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

        async def steps(supervisor, outcomes):
            return supervisor.orphans_stop()

        stopped, _ = asyncio.run(run_jobs(tmp_path, journal, steps))
        assert stopped == 1
        assert not psutil.pid_exists(orphan.pid)  # killed and reaped
        assert stranger.poll() is None
        assert journal.workers_recorded() == []
    finally:
        for process in (orphan, stranger):
            if process.poll() is None:
                os.kill(process.pid, signal.SIGKILL)
                process.wait()


def test_a_worker_runs_at_a_lower_cpu_priority_than_the_service(tmp_path, journal):
    async def steps(supervisor, outcomes):
        job = queued_and_started(journal, seconds=3.0)
        supervisor.job_start(job=job, gpu_ids=[0], kind=DIAGNOSTIC)
        worker = psutil.Process(supervisor.job_pid(job_id=job.id))
        niceness = worker.nice()
        for _ in range(100):  # the child lowers its own priority as it starts
            niceness = worker.nice()
            if niceness != psutil.Process().nice():
                break
            await asyncio.sleep(0.1)
        supervisor.job_cancel(job_id=job.id)
        await next_outcome(outcomes)
        return niceness

    niceness, _ = asyncio.run(run_jobs(tmp_path, journal, steps))
    assert niceness == min(19, psutil.Process().nice() + 10)
