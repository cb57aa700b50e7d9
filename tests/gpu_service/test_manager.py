"""The job manager's submit-time rules, ends and housekeeping, mostly without workers."""

from __future__ import annotations

import asyncio
import time

import pytest

from gpu_service.errors import ResourceUnavailable, ValidationFailed, WorkerCrashed
from gpu_service.executors.base import AttemptEnded, AttemptHeartbeat, ProgressReported
from gpu_service.journal import JobState
from gpu_service.manager import AttemptReport, Submission
from gpu_service.runtime.base import GpuInfo, LaneLoad
from gpu_service.workloads.diagnostic.spec import DIAGNOSTIC


class RealLookingRuntime:
    """Stands in for NVML: one 16 GiB GPU with 2 GiB free."""

    name = "real"

    def inventory(self) -> list[GpuInfo]:
        return [GpuInfo(0, "Fake", "GPU-x", 16384, 14336, 2048, 0.0, None, None)]

    def child_env(self, *, gpu_ids: list[int]) -> dict[str, str]:
        return {"CUDA_VISIBLE_DEVICES": ",".join(map(str, gpu_ids))}

    def observe_lanes(self, *, loads: dict[int, LaneLoad]) -> None:
        pass


def test_simulated_faults_are_refused_under_the_real_runtime(make):
    scheduler = make(runtime=RealLookingRuntime())
    body = Submission(kind="diagnostic", simulate={"oom_at_step": 1})
    with pytest.raises(ValidationFailed, match="simulated"):
        scheduler.manager.submit(body, request_id=None)


def test_a_kind_that_is_not_installed_is_refused(make):
    with pytest.raises(ValidationFailed, match="train"):
        make().manager.submit(Submission(kind="train"), request_id=None)


def test_an_impossible_request_is_refused_before_it_is_recorded(make):
    scheduler = make()
    with pytest.raises(ResourceUnavailable):
        scheduler.manager.submit(Submission(kind="diagnostic", gpus=4), request_id=None)
    assert scheduler.manager.journal.jobs_list() == []


def test_gpus_that_appear_after_start_up_get_lanes_and_make_bigger_jobs_possible(make):
    from gpu_service.runtime.simulated import SimulatedRuntime

    runtime = SimulatedRuntime.from_spec("2x24GiB")
    scheduler = make(runtime=runtime)
    manager = scheduler.manager
    assert manager.lanes_refresh() == []
    with pytest.raises(ResourceUnavailable):
        manager.submit(Submission(kind="diagnostic", gpus=4), request_id=None)

    runtime._memory.extend([24 * 1024, 24 * 1024])  # as when GPUs join
    assert manager.lanes_refresh() == [2, 3]

    assert sorted(manager.admission.lanes) == [0, 1, 2, 3]
    _, created = manager.submit(Submission(kind="diagnostic", gpus=4), request_id=None)
    assert created  # no longer refused: four GPUs on one host now exist


def test_under_the_real_runtime_a_job_waits_for_reported_free_memory(make):
    scheduler = make(runtime=RealLookingRuntime())
    body = Submission(kind="diagnostic", memory_estimate_mib=4096)
    job, created = scheduler.manager.submit(body, request_id="r1")
    assert created
    assert job.state is JobState.QUEUED  # fits the GPU, not what is free on it now
    assert job.memory_estimate_mib == 4096


def test_the_spec_is_stored_normalised(make):
    scheduler = make()
    scheduler.manager.admission.hold(job_id="busy", gpu_ids=[0, 1], memory_mib=0)
    job, _ = scheduler.manager.submit(
        Submission(kind="diagnostic", spec={"seconds": 2}), request_id=None
    )
    assert job.spec == {"seconds": 2.0, "burn_cpu": False, "step_s": 1.0, "worker": "fresh"}
    assert [q["id"] for q in scheduler.manager.queue_view()] == [job.id]


def test_a_queued_job_whose_kind_disappeared_fails_instead_of_starting(make):
    job, _ = make(kinds={}).manager.journal.job_create(
        kind="train", spec={}, gpus_requested=1, gpu_ids_requested=None
    )
    scheduler = make(kinds={})  # restarted without the kind; the queue is the journal's
    scheduler.pump()
    failed = scheduler.manager.journal.job_get(job_id=job.id)
    assert failed.state is JobState.FAILED
    assert failed.error["code"] == "VALIDATION_ERROR"
    assert scheduler.manager.admission.holding(job_id=job.id) == []


def test_old_finished_records_are_pruned(make):
    scheduler = make(journal_retention_days=1)
    old, _ = scheduler.manager.journal.job_create(
        kind="diagnostic", spec={}, gpus_requested=1, gpu_ids_requested=None
    )
    scheduler.manager.journal.job_cancel_queued(job_id=old.id, now=time.time() - 2 * 86_400)
    fresh, _ = scheduler.manager.journal.job_create(
        kind="diagnostic", spec={}, gpus_requested=1, gpu_ids_requested=None
    )
    scheduler.manager.journal.job_cancel_queued(job_id=fresh.id)
    assert scheduler.prune() == 1
    assert [j.id for j in scheduler.manager.journal.jobs_list()] == [fresh.id]


def crash(scheduler, job_id: str) -> None:
    """The executor reports that the live attempt's worker was killed."""
    attempt = scheduler.manager.journal.job_get(job_id=job_id).attempt
    scheduler.manager.on_event(
        AttemptEnded(
            job_id=job_id,
            attempt=attempt,
            state="failed",
            error=WorkerCrashed(details={"exitcode": -9}),
        )
    )


def test_a_resumable_job_whose_worker_is_killed_resumes_until_its_attempts_run_out(
    make, monkeypatch
):
    import dataclasses

    resumable = dataclasses.replace(DIAGNOSTIC, resumable=True)
    scheduler = make(kinds={"diagnostic": resumable}, max_attempts=3)
    started: list[int] = []
    monkeypatch.setattr(
        scheduler.manager.executor, "launch", lambda attempt: started.append(attempt.attempt)
    )
    job, _ = scheduler.manager.submit(Submission(kind="diagnostic"), request_id=None)
    for _ in range(2):
        crash(scheduler, job.id)
    assert started == [1, 2, 3]
    assert scheduler.manager.journal.job_get(job_id=job.id).state is JobState.RUNNING

    crash(scheduler, job.id)
    final = scheduler.manager.journal.job_get(job_id=job.id)
    assert final.state is JobState.FAILED
    assert final.error["code"] == "WORKER_CRASHED"
    assert all(not lane.holders for lane in scheduler.manager.admission.lanes.values())


def test_a_job_that_cannot_resume_fails_when_its_worker_is_killed(make, monkeypatch):
    scheduler = make()
    monkeypatch.setattr(scheduler.manager.executor, "launch", lambda attempt: None)
    job, _ = scheduler.manager.submit(Submission(kind="diagnostic"), request_id=None)
    crash(scheduler, job.id)
    final = scheduler.manager.journal.job_get(job_id=job.id)
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
        body = Submission(kind="diagnostic", spec={"seconds": 0, "step_s": 0.05})
        job, created = scheduler.manager.submit(body, request_id=None)
        # Recorded running with its lane held, before any process exists.
        assert created
        assert job.state is JobState.RUNNING
        assert scheduler.manager.admission.holding(job_id=job.id) == job.gpu_ids
        assert scheduler.manager.executor.pid(job_id=job.id) is None
        await asyncio.sleep(0)
        assert scheduler.manager.executor.pid(job_id=job.id) is not None
        for _ in range(600):
            if scheduler.manager.journal.job_get(job_id=job.id).state is JobState.SUCCEEDED:
                break
            await asyncio.sleep(0.1)
        return scheduler.manager.journal.job_get(job_id=job.id)

    assert asyncio.run(_with_started(scheduler, steps)).state is JobState.SUCCEEDED


def test_a_job_cancelled_before_its_worker_starts_ends_cancelled_without_a_worker(make):
    scheduler = make()

    async def steps():
        body = Submission(kind="diagnostic", spec={"seconds": 30, "step_s": 0.05})
        job, _ = scheduler.manager.submit(body, request_id=None)
        assert scheduler.manager.cancel(job_id=job.id).state is JobState.CANCELLING
        await asyncio.sleep(0)
        assert scheduler.manager.executor.pid(job_id=job.id) is None
        return scheduler.manager.journal.job_get(job_id=job.id)

    ended = asyncio.run(_with_started(scheduler, steps))
    assert ended.state is JobState.CANCELLED
    assert scheduler.manager.admission.holding(job_id=ended.id) == []


def test_reports_from_a_stale_attempt_are_ignored(make, monkeypatch):
    import dataclasses

    from gpu_service.executors.base import EpochReported, ProgressReported

    resumable = dataclasses.replace(DIAGNOSTIC, resumable=True)
    scheduler = make(kinds={"diagnostic": resumable})
    monkeypatch.setattr(scheduler.manager.executor, "launch", lambda attempt: None)
    manager = scheduler.manager
    job, _ = manager.submit(Submission(kind="diagnostic"), request_id=None)
    crash(scheduler, job.id)  # attempt 1 dies; attempt 2 is the live one
    assert manager.journal.job_get(job_id=job.id).attempt == 2

    manager.on_event(ProgressReported(job_id=job.id, attempt=1, progress={"batch": 9}))
    manager.on_event(EpochReported(job_id=job.id, attempt=1, record={"epoch": 9}))
    manager.on_event(AttemptEnded(job_id=job.id, attempt=1, state="succeeded", result={}))
    stale = manager.journal.job_get(job_id=job.id)
    assert (stale.state, stale.progress, stale.metrics) == (JobState.RUNNING, {}, {})

    manager.on_event(ProgressReported(job_id=job.id, attempt=2, progress={"batch": 1}))
    manager.on_event(EpochReported(job_id=job.id, attempt=2, record={"epoch": 1}))
    manager.on_event(AttemptEnded(job_id=job.id, attempt=2, state="succeeded", result={"ok": 1}))
    done = manager.journal.job_get(job_id=job.id)
    assert done.state is JobState.SUCCEEDED
    assert done.progress == {"batch": 1}
    assert done.metrics == {"epochs": [{"epoch": 1, "attempt": 2}]}
    assert done.result == {"ok": 1}
    assert manager.admission.holding(job_id=job.id) == []


def test_each_epoch_record_says_which_attempt_ran_it_and_earlier_ones_are_kept(make, monkeypatch):
    import dataclasses

    from gpu_service.executors.base import EpochReported

    resumable = dataclasses.replace(DIAGNOSTIC, resumable=True)
    scheduler = make(kinds={"diagnostic": resumable})
    monkeypatch.setattr(scheduler.manager.executor, "launch", lambda attempt: None)
    manager = scheduler.manager
    job, _ = manager.submit(Submission(kind="diagnostic"), request_id=None)
    for epoch in (1, 2, 3):
        manager.on_event(EpochReported(job_id=job.id, attempt=1, record={"epoch": epoch}))
    crash(scheduler, job.id)  # interrupted after epoch 3; resumes as attempt 2
    manager.on_event(EpochReported(job_id=job.id, attempt=2, record={"epoch": 4}))
    epochs = manager.journal.job_get(job_id=job.id).metrics["epochs"]
    assert [(e["epoch"], e["attempt"]) for e in epochs] == [(1, 1), (2, 1), (3, 1), (4, 2)]


def test_progress_reaches_the_journal_while_the_job_runs(make):
    scheduler = make()

    async def steps():
        body = Submission(kind="diagnostic", spec={"seconds": 1.0, "step_s": 0.1})
        job, _ = scheduler.manager.submit(body, request_id=None)
        seen = set()
        for _ in range(600):
            now = scheduler.manager.journal.job_get(job_id=job.id)
            seen.add(now.progress.get("batch"))
            if now.state is JobState.SUCCEEDED:
                return seen
            await asyncio.sleep(0.05)
        return seen

    seen = asyncio.run(_with_started(scheduler, steps))
    assert len(seen - {None, 0}) >= 2  # intermediate batches, not only the end


def test_the_in_memory_queue_follows_every_submit_admission_and_cancel(make):
    scheduler = make()
    manager = scheduler.manager
    manager.executor.launch = lambda attempt: None  # admission only, no worker
    body = Submission(kind="diagnostic", gpus=2, spec={"seconds": 60})
    jobs = [manager.submit(body, request_id=None)[0] for _ in range(4)]
    assert manager.journal.job_get(job_id=jobs[0].id).state is JobState.RUNNING
    manager.cancel(job_id=jobs[2].id)

    queued = [job.id for job in manager.journal.jobs_queued()]
    assert queued == [jobs[1].id, jobs[3].id]
    order = {"now": time.time(), "starvation_bound_s": manager.admission.starvation_bound_s}
    assert [request.job_id for request in manager.waitlist.requests(**order)] == queued
    assert [item["id"] for item in manager.queue_view()] == queued
    # A new manager on the same journal (a restart) starts from the recorded queue.
    assert [r.job_id for r in make().manager.waitlist.requests(**order)] == queued


class _RecordingJournal:
    def __init__(self) -> None:
        self.progress: list[dict] = []

    def job_progress(self, *, job_id: str, progress: dict) -> None:
        self.progress.append(progress)


def test_an_attempts_first_progress_is_written_at_once_even_right_after_its_start_heartbeat():
    journal = _RecordingJournal()
    report = AttemptReport(journal=journal, job_id="j", attempt=1, metrics={})  # type: ignore[arg-type]

    report.handle(AttemptHeartbeat(job_id="j", attempt=1))  # the attempt has started
    report.handle(ProgressReported(job_id="j", attempt=1, progress={"stage": "holding"}))
    report.handle(
        ProgressReported(job_id="j", attempt=1, progress={"stage": "holding", "batch": 1})
    )

    # The heartbeat and the first report are written; the next one waits for the interval.
    assert journal.progress == [{}, {"stage": "holding"}]
    report.flush()
    assert journal.progress[-1] == {"stage": "holding", "batch": 1}
