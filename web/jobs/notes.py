"""What a job's reader should know about how it ran: its notes (ADR 0045).

Shown on the job page and in the API's job document (`notes`), as sentences. Derived
from the job's row each time, so a note never disagrees with the job it is about.
"""

from __future__ import annotations

from registry.learning import DID_NOT_LEARN_MESSAGE, training_did_not_learn

from jobs.models import Job, JobKind, JobState


def job_notes(*, job: Job) -> list[str]:
    notes: list[str] = []
    if job.kind == JobKind.INFER and job.model_version_id is not None:
        note = _size_note(job=job)
        if note:
            notes.append(note)
    finished_training = job.kind == JobKind.TRAIN and job.state == JobState.SUCCEEDED
    if finished_training and training_did_not_learn(job.result or {}):
        notes.append(DID_NOT_LEARN_MESSAGE)
    return notes


def _size_note(*, job: Job) -> str | None:
    """An inference at another size than its model's training: allowed, and said."""
    trained = job.model_version.imgsz if job.model_version else None
    # What the worker ran at once it has run (a static export runs at its own size),
    # what was asked before.
    size = (job.result or {}).get("imgsz") or job.spec.get("imgsz")
    if not trained or not size or int(size) == int(trained):
        return None
    verb = "Ran" if job.state == JobState.SUCCEEDED else "Runs"
    return f"{verb} at {size} px; the model was trained at {trained} px."
