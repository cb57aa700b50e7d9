from __future__ import annotations

import pytest
from pydantic import BaseModel

from gpu_service.journal import JobState, Journal
from gpu_service.recovery import journal_recover
from gpu_service.workloads.base import Kind
from gpu_service.workloads.diagnostic import DIAGNOSTIC


class TrainSpec(BaseModel):
    epochs: int = 1


RESUMABLE = Kind(name="train", spec_model=TrainSpec, run=lambda ctx: {}, resumable=True)
KINDS = {"diagnostic": DIAGNOSTIC, "train": RESUMABLE}


@pytest.fixture
def journal(tmp_path):
    journal = Journal(path=tmp_path / "journal.sqlite3")
    yield journal
    journal.close()


def running(journal: Journal, kind: str) -> str:
    job, _ = journal.job_create(kind=kind, spec={}, gpus_requested=1, gpu_ids_requested=None)
    journal.job_start(job_id=job.id, gpu_ids=[0])
    return job.id


def test_a_running_job_that_cannot_resume_fails_as_interrupted(journal):
    job_id = running(journal, "diagnostic")
    recovery = journal_recover(journal=journal, kinds=KINDS, max_attempts=3)
    job = journal.job_get(job_id=job_id)
    assert recovery.interrupted == [job_id]
    assert job.state is JobState.FAILED
    assert job.error["code"] == "INTERRUPTED"


def test_a_resumable_job_is_queued_again_with_the_next_attempt(journal):
    job_id = running(journal, "train")
    journal_recover(journal=journal, kinds=KINDS, max_attempts=3)
    job = journal.job_get(job_id=job_id)
    assert job.state is JobState.QUEUED
    assert job.attempt == 2


def test_a_resumable_job_stops_resuming_after_the_attempt_bound(journal):
    job_id = running(journal, "train")
    for _ in range(2):
        journal_recover(journal=journal, kinds=KINDS, max_attempts=3)
        journal.job_start(job_id=job_id, gpu_ids=[0])
    journal_recover(journal=journal, kinds=KINDS, max_attempts=3)
    job = journal.job_get(job_id=job_id)
    assert job.attempt == 3
    assert job.error["code"] == "INTERRUPTED"
    assert "3 of 3" in job.error["details"]["reason"]


def test_a_job_of_a_kind_that_disappeared_is_interrupted_not_lost(journal):
    job_id = running(journal, "train")
    journal_recover(journal=journal, kinds={"diagnostic": DIAGNOSTIC}, max_attempts=3)
    assert journal.job_get(job_id=job_id).state is JobState.FAILED


def test_a_job_that_was_being_cancelled_ends_cancelled(journal):
    job_id = running(journal, "diagnostic")
    journal.job_request_cancel(job_id=job_id)
    journal_recover(journal=journal, kinds=KINDS, max_attempts=3)
    assert journal.job_get(job_id=job_id).state is JobState.CANCELLED


def test_queued_and_finished_jobs_are_left_alone(journal):
    queued, _ = journal.job_create(
        kind="diagnostic", spec={}, gpus_requested=1, gpu_ids_requested=None
    )
    recovery = journal_recover(journal=journal, kinds=KINDS, max_attempts=3)
    assert recovery.interrupted == []
    assert recovery.requeued == []
    assert journal.job_get(job_id=queued.id).state is JobState.QUEUED
