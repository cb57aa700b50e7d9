"""The job page's story: what the job is waiting for, and what happened to its attempts.

The rows already know it (ADR 0047): delivery's `dispatch_attempts`, `next_attempt_at`
and `last_dispatch_error` while the GPU service cannot be reached; one usage row per
attempt that held GPUs (copied from the GPU service's journal when the attempt ends);
and each epoch record's `attempt`, written by the GPU service's manager. Here they
become sentences. Nothing here decides anything about the job.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone
from jobs.models import FAILED_STATES, JobKind, JobState


def _at(value: datetime | None) -> str:
    return timezone.localtime(value).strftime("%Y-%m-%d %H:%M:%S") if value else "\u2013"


def waiting_text(*, job: Any) -> str | None:
    """While delivery keeps failing: since when, which attempt, and when the next is."""
    if job.state != JobState.SUBMITTED or not job.dispatch_attempts:
        return None
    text = (
        f"Waiting for the GPU service since {_at(job.created_at)}, "
        f"attempt {job.dispatch_attempts}: it could not be reached."
    )
    if job.next_attempt_at:
        text += f" The next attempt is at {_at(job.next_attempt_at)}."
    return text


def _last_epoch(*, epochs: list[dict[str, Any]], attempt: int) -> dict[str, Any] | None:
    ran = [e for e in epochs if e.get("attempt") == attempt and e.get("epoch") is not None]
    return ran[-1] if ran else None


def _where(record: dict[str, Any] | None, *, seeds: int) -> str:
    if record is None:
        return ""
    where = f", after epoch {record['epoch']}"
    if seeds > 1 and record.get("seed") is not None:
        where += f" of seed {record['seed']}"
    return where


def attempts_story(*, job: Any, usage: list[Any]) -> list[str]:
    """One sentence per attempt, only once there is more than one: a job that ran once
    has no story to tell beyond its progress."""
    finished = sorted(usage, key=lambda row: row.attempt)
    current = finished[-1].attempt if finished else 1
    active = job.state not in {*FAILED_STATES, JobState.SUCCEEDED, JobState.CANCELLED}
    if active and finished:
        current += 1  # the usage of the attempt still running is written when it ends
    if current <= 1:
        return []
    epochs = (job.metrics or {}).get("epochs") or []
    seeds = len((job.spec or {}).get("seeds") or [])
    # Training resumes from its last checkpoint; other kinds start over (ADR 0018).
    resumes = job.kind == JobKind.TRAIN
    again = "resumed from its checkpoint" if resumes else "started over"
    waits = "to resume from its checkpoint" if resumes else "to start over"
    lines = []
    for row in finished:
        if row.attempt == current:
            break  # the last attempt ended the job: its end is the job's
        where = _where(_last_epoch(epochs=epochs, attempt=row.attempt), seeds=seeds)
        lines.append(
            f"Attempt {row.attempt} started {_at(row.held_from)} and was interrupted "
            f"at {_at(row.held_until)}{where}."
        )
    last = next((row for row in finished if row.attempt == current), None)
    if last is not None:
        lines.append(f"Attempt {current} {again} at {_at(last.held_from)}.")
    elif job.state == JobState.RUNNING and job.started_at:
        lines.append(f"Attempt {current} {again} at {_at(job.started_at)}.")
    else:
        lines.append(f"Attempt {current} waits for its GPUs {waits}.")
    return lines


def job_story(*, job: Any, usage: list[Any]) -> dict[str, Any]:
    """The page's story block; the same shape goes in the status JSON, so the page's
    script can keep it current in its live region."""
    ordered = sorted(usage, key=lambda row: row.attempt)
    first_started = ordered[0].held_from if ordered else job.started_at
    attempts = attempts_story(job=job, usage=usage)
    latest = job.started_at if attempts and job.started_at != first_started else None
    waiting = waiting_text(job=job)
    return {
        "waiting": waiting,
        "waiting_error": (job.last_dispatch_error or "") if waiting else "",
        "attempts": attempts,
        "first_started_at": _at(first_started) if first_started else None,
        "latest_started_at": _at(latest) if latest else None,
    }
