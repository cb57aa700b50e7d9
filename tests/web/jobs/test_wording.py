"""Messages built from a job's state read as sentences."""

from __future__ import annotations

import pytest
from jobs.models import JobState
from jobs.wording import job_state_sentence


@pytest.mark.parametrize(
    ("state", "sentence"),
    [
        ("succeeded", "The job has already succeeded; it cannot be cancelled."),
        ("failed", "The job has already failed; it cannot be cancelled."),
        ("cancelled", "The job has already been cancelled; it cannot be cancelled."),
        ("cancelling", "The job is already being cancelled; it cannot be cancelled."),
        ("lost", "The job was lost by the GPU service; it cannot be cancelled."),
    ],
)
def test_a_state_reads_as_a_sentence(state, sentence):
    assert job_state_sentence(state, consequence="it cannot be cancelled") == sentence


def test_every_state_has_its_own_phrase():
    from jobs.wording import _PHRASES

    assert set(_PHRASES) == set(JobState)


def test_the_api_answers_a_cancel_of_a_finished_job_in_a_sentence(owner, owner_api):
    from jobs.models import Job

    job = Job.objects.create(owner=owner, kind="train", state="succeeded")
    error = owner_api.post(f"/api/v1/jobs/{job.id}/cancel/").json()["error"]
    assert error["code"] == "CONFLICT"
    assert error["message"] == "The job has already succeeded; it cannot be cancelled."
