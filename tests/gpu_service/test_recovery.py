from __future__ import annotations

import pytest
from pydantic import BaseModel

from gpu_service.executors.local import LocalExecutor
from gpu_service.journal import JobState, Journal
from gpu_service.manager import JobManager
from gpu_service.metrics import ServiceMetrics
from gpu_service.recovery import journal_recover
from gpu_service.runtime.simulated import SimulatedRuntime
from gpu_service.settings import load_settings
from gpu_service.workloads.base import Kind
from gpu_service.workloads.diagnostic.spec import DIAGNOSTIC


class TrainSpec(BaseModel):
    epochs: int = 1


RESUMABLE = Kind(name="train", spec_model=TrainSpec, resumable=True)
KINDS = {"diagnostic": DIAGNOSTIC, "train": RESUMABLE}


@pytest.fixture
def journal(tmp_path):
    journal = Journal(path=tmp_path / "journal.sqlite3")
    yield journal
    journal.close()


@pytest.fixture
def recover(tmp_path, journal):
    """Run start-up recovery through a manager that knows these kinds."""

    def run(kinds=KINDS, reattached=frozenset()):
        settings = load_settings(storage=tmp_path, gpu_service_token="t" * 32, max_attempts=3)
        runtime = SimulatedRuntime.from_spec("1x8GiB")
        manager = JobManager(
            settings=settings,
            executor=LocalExecutor(settings=settings, runtime=runtime, records=journal),
            journal=journal,
            kinds=kinds,
            metrics=ServiceMetrics(),
        )
        return journal_recover(manager=manager, reattached=reattached)

    return run


def running(journal: Journal, kind: str) -> str:
    job, _ = journal.job_create(kind=kind, spec={}, gpus_requested=1, gpu_ids_requested=None)
    journal.job_start(job_id=job.id, gpu_ids=[0])
    return job.id


def test_a_running_job_that_cannot_resume_fails_as_interrupted(journal, recover):
    job_id = running(journal, "diagnostic")
    recovery = recover()
    job = journal.job_get(job_id=job_id)
    assert recovery.interrupted == [job_id]
    assert job.state is JobState.FAILED
    assert job.error["code"] == "INTERRUPTED"


def test_a_resumable_job_is_queued_again_with_the_next_attempt(journal, recover):
    job_id = running(journal, "train")
    recover()
    job = journal.job_get(job_id=job_id)
    assert job.state is JobState.QUEUED
    assert job.attempt == 2


def test_a_resumable_job_stops_resuming_after_the_attempt_bound(journal, recover):
    job_id = running(journal, "train")
    for _ in range(2):
        recover()
        journal.job_start(job_id=job_id, gpu_ids=[0])
    recover()
    job = journal.job_get(job_id=job_id)
    assert job.attempt == 3
    assert job.error["code"] == "INTERRUPTED"
    assert "3 of 3" in job.error["details"]["reason"]


def test_a_job_of_a_kind_that_disappeared_is_interrupted_not_lost(journal, recover):
    job_id = running(journal, "train")
    recover({"diagnostic": DIAGNOSTIC})
    assert journal.job_get(job_id=job_id).state is JobState.FAILED


def test_a_job_that_was_being_cancelled_ends_cancelled(journal, recover):
    job_id = running(journal, "diagnostic")
    journal.job_request_cancel(job_id=job_id)
    recover()
    assert journal.job_get(job_id=job_id).state is JobState.CANCELLED


def test_queued_and_finished_jobs_are_left_alone(journal, recover):
    queued, _ = journal.job_create(
        kind="diagnostic", spec={}, gpus_requested=1, gpu_ids_requested=None
    )
    recovery = recover()
    assert recovery.interrupted == []
    assert recovery.requeued == []
    assert journal.job_get(job_id=queued.id).state is JobState.QUEUED


def test_a_job_the_executor_still_runs_is_left_running(journal, recover):
    job_id = running(journal, "diagnostic")
    recovery = recover(reattached={job_id})
    assert recovery.interrupted == []
    assert journal.job_get(job_id=job_id).state is JobState.RUNNING
