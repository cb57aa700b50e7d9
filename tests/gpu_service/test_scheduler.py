"""The scheduler's submit-time rules and housekeeping, without starting workers."""

from __future__ import annotations

import asyncio
import time

import pytest

from gpu_service.api.schemas import JobSubmit
from gpu_service.errors import ResourceUnavailable, ValidationFailed
from gpu_service.journal import JobState, Journal
from gpu_service.metrics import ServiceMetrics
from gpu_service.runtime.base import GpuInfo, LaneLoad
from gpu_service.runtime.simulated import SimulatedRuntime
from gpu_service.scheduler import Scheduler
from gpu_service.settings import load_settings
from gpu_service.workloads.diagnostic import DIAGNOSTIC


class RealLookingRuntime:
    """Stands in for NVML: one 16 GiB GPU with 2 GiB free."""

    name = "real"

    def inventory(self) -> list[GpuInfo]:
        return [GpuInfo(0, "Fake", "GPU-x", 16384, 14336, 2048, 0.0, None, None)]

    def child_env(self, *, gpu_ids: list[int]) -> dict[str, str]:
        return {"CUDA_VISIBLE_DEVICES": ",".join(map(str, gpu_ids))}

    def observe_lanes(self, *, loads: dict[int, LaneLoad]) -> None:
        pass


@pytest.fixture
def make(tmp_path):
    made = []

    def build(runtime=None, kinds=None, **overrides):
        settings = load_settings(storage=tmp_path, gpu_service_token="t" * 32, **overrides)
        journal = Journal(path=settings.journal_path)
        scheduler = Scheduler(
            settings=settings,
            runtime=runtime or SimulatedRuntime.from_spec("2x24GiB"),
            journal=journal,
            kinds=kinds if kinds is not None else {"diagnostic": DIAGNOSTIC},
            metrics=ServiceMetrics(),
        )
        made.append(journal)
        return scheduler

    yield build
    for journal in made:
        journal.close()


def test_simulated_faults_are_refused_under_the_real_runtime(make):
    scheduler = make(runtime=RealLookingRuntime())
    body = JobSubmit(kind="diagnostic", simulate={"oom_at_step": 1})
    with pytest.raises(ValidationFailed, match="simulated"):
        scheduler.submit(body=body, request_id=None)


def test_a_kind_that_is_not_installed_is_refused(make):
    with pytest.raises(ValidationFailed, match="train"):
        make().submit(body=JobSubmit(kind="train"), request_id=None)


def test_an_impossible_request_is_refused_before_it_is_recorded(make):
    scheduler = make()
    with pytest.raises(ResourceUnavailable):
        scheduler.submit(body=JobSubmit(kind="diagnostic", gpus=4), request_id=None)
    assert scheduler.journal.jobs_list() == []


def test_under_the_real_runtime_a_job_waits_for_reported_free_memory(make):
    scheduler = make(runtime=RealLookingRuntime())
    body = JobSubmit(kind="diagnostic", memory_estimate_mib=4096)
    job, created = scheduler.submit(body=body, request_id="r1")
    assert created
    assert job.state is JobState.QUEUED  # fits the GPU, not what is free on it now
    assert job.memory_estimate_mib == 4096


def test_the_spec_is_stored_normalised(make):
    scheduler = make()
    scheduler.admission.hold(job_id="busy", gpu_ids=[0, 1], memory_mib=0)
    job, _ = scheduler.submit(
        body=JobSubmit(kind="diagnostic", spec={"seconds": 2}), request_id=None
    )
    assert job.spec == {"seconds": 2.0, "burn_cpu": False, "step_s": 1.0}
    assert [q["id"] for q in scheduler.queue_view()] == [job.id]


def test_a_queued_job_whose_kind_disappeared_fails_instead_of_starting(make):
    scheduler = make(kinds={})
    job, _ = scheduler.journal.job_create(
        kind="train", spec={}, gpus_requested=1, gpu_ids_requested=None
    )
    scheduler.pump()
    failed = scheduler.journal.job_get(job_id=job.id)
    assert failed.state is JobState.FAILED
    assert failed.error["code"] == "VALIDATION_ERROR"
    assert scheduler.admission.holding(job_id=job.id) == []


def test_old_finished_records_are_pruned(make):
    scheduler = make(journal_retention_days=1)
    old, _ = scheduler.journal.job_create(
        kind="diagnostic", spec={}, gpus_requested=1, gpu_ids_requested=None
    )
    scheduler.journal.job_cancel_queued(job_id=old.id, now=time.time() - 2 * 86_400)
    fresh, _ = scheduler.journal.job_create(
        kind="diagnostic", spec={}, gpus_requested=1, gpu_ids_requested=None
    )
    scheduler.journal.job_cancel_queued(job_id=fresh.id)
    assert scheduler.prune() == 1
    assert [j.id for j in scheduler.journal.jobs_list()] == [fresh.id]


def crashed(job_id: str):
    from gpu_service.errors import WorkerCrashed
    from gpu_service.supervisor import Outcome

    return Outcome(job_id=job_id, state="failed", error=WorkerCrashed(details={"exitcode": -9}))


def test_a_resumable_job_whose_worker_is_killed_resumes_until_its_attempts_run_out(
    make, monkeypatch
):
    import dataclasses

    resumable = dataclasses.replace(DIAGNOSTIC, resumable=True)
    scheduler = make(kinds={"diagnostic": resumable}, max_attempts=3)
    started: list[int] = []
    monkeypatch.setattr(
        scheduler.supervisor, "job_start", lambda *, job, gpu_ids, kind: started.append(job.attempt)
    )
    job, _ = scheduler.submit(body=JobSubmit(kind="diagnostic"), request_id=None)
    for _ in range(2):
        scheduler._job_ended(crashed(job.id))
    assert started == [1, 2, 3]
    assert scheduler.journal.job_get(job_id=job.id).state is JobState.RUNNING

    scheduler._job_ended(crashed(job.id))
    final = scheduler.journal.job_get(job_id=job.id)
    assert final.state is JobState.FAILED
    assert final.error["code"] == "WORKER_CRASHED"
    assert all(not lane.holders for lane in scheduler.admission.lanes.values())


def test_a_job_that_cannot_resume_fails_when_its_worker_is_killed(make, monkeypatch):
    scheduler = make()
    monkeypatch.setattr(scheduler.supervisor, "job_start", lambda **_: None)
    job, _ = scheduler.submit(body=JobSubmit(kind="diagnostic"), request_id=None)
    scheduler._job_ended(crashed(job.id))
    final = scheduler.journal.job_get(job_id=job.id)
    assert (final.state, final.attempt) == (JobState.FAILED, 1)
    assert final.error["code"] == "WORKER_CRASHED"


async def _with_started(scheduler, steps):
    await scheduler.start()
    try:
        return await steps()
    finally:
        await scheduler.stop()


def test_a_submit_for_a_free_lane_answers_running_and_starts_the_worker_after(make):
    scheduler = make()

    async def steps():
        body = JobSubmit(kind="diagnostic", spec={"seconds": 0, "step_s": 0.05})
        job, created = scheduler.submit(body=body, request_id=None)
        # Recorded running with its lane held, before any process exists.
        assert created
        assert job.state is JobState.RUNNING
        assert scheduler.admission.holding(job_id=job.id) == job.gpu_ids
        assert scheduler.supervisor.job_pid(job_id=job.id) is None
        await asyncio.sleep(0)
        assert scheduler.supervisor.job_pid(job_id=job.id) is not None
        for _ in range(600):
            if scheduler.journal.job_get(job_id=job.id).state is JobState.SUCCEEDED:
                break
            await asyncio.sleep(0.1)
        return scheduler.journal.job_get(job_id=job.id)

    assert asyncio.run(_with_started(scheduler, steps)).state is JobState.SUCCEEDED


def test_a_job_cancelled_before_its_worker_starts_ends_cancelled_without_a_worker(make):
    scheduler = make()

    async def steps():
        body = JobSubmit(kind="diagnostic", spec={"seconds": 30, "step_s": 0.05})
        job, _ = scheduler.submit(body=body, request_id=None)
        assert scheduler.cancel(job_id=job.id).state is JobState.CANCELLING
        await asyncio.sleep(0)
        assert scheduler.supervisor.job_pid(job_id=job.id) is None
        return scheduler.journal.job_get(job_id=job.id)

    ended = asyncio.run(_with_started(scheduler, steps))
    assert ended.state is JobState.CANCELLED
    assert scheduler.admission.holding(job_id=ended.id) == []
