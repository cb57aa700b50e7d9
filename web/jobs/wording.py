"""A job's state in a sentence: "The job has already succeeded", not "The job is
succeeded". Messages built from states (409s, the pages' notes) read naturally."""

from __future__ import annotations

from jobs.models import JobState

_PHRASES = {
    JobState.SUBMITTED: "is waiting to be delivered to the GPU service",
    JobState.QUEUED: "is queued",
    JobState.RUNNING: "is running",
    JobState.CANCELLING: "is already being cancelled",
    JobState.SUCCEEDED: "has already succeeded",
    JobState.FAILED: "has already failed",
    JobState.CANCELLED: "has already been cancelled",
    JobState.LOST: "was lost by the GPU service",
}


def job_state_phrase(state: str) -> str:
    """What follows "The job" for a job in `state`."""
    return _PHRASES.get(state, f"is {state}")  # type: ignore[call-overload]


def job_state_sentence(state: str, *, consequence: str) -> str:
    """ "The job has already succeeded; it cannot be cancelled." """
    return f"The job {job_state_phrase(state)}; {consequence}."
