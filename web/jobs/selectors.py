"""Reads for jobs. None of them calls the GPU service: the reconciler keeps rows fresh."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from accounts.services import user_sees_everything
from carril_web.errors import NotFound
from carril_web.paths import file_under
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Count, QuerySet
from django.utils import timezone

from jobs.compiled_get import job_row_get
from jobs.log_text import log_line_plain
from jobs.models import ACTIVE_STATES, Job, JobState, ReconcilerStatus

MAX_LOG_BYTES = 256 * 1024


def jobs_visible_to(
    *,
    user: AbstractBaseUser,
    state: str | None = None,
    kind: str | None = None,
    tag: str | None = None,
    dataset_id: uuid.UUID | str | None = None,
) -> QuerySet[Job]:
    jobs = Job.objects.select_related("owner", "dataset", "model_version")
    if not user_sees_everything(user=user):
        jobs = jobs.filter(owner=user)
    if state:
        jobs = jobs.filter(state=state)
    if kind:
        jobs = jobs.filter(kind=kind)
    if tag:
        # Tags are stored as ",a,b," (Job.tags), so the commas make this an exact match.
        jobs = jobs.filter(tags__contains=f",{tag.lower()},")
    if dataset_id:
        jobs = jobs.filter(dataset_id=dataset_id)
    return jobs


def jobs_by_ids(*, user: AbstractBaseUser, ids: list[uuid.UUID]) -> list[Job]:
    """The jobs named, in the order named; NotFound if any is missing or not the user's."""
    found = {job.id: job for job in jobs_visible_to(user=user).filter(id__in=ids)}
    missing = [str(i) for i in ids if i not in found]
    if missing:
        raise NotFound(f"No such job: {', '.join(missing)}.")
    return [found[i] for i in ids]


def job_get(*, user: AbstractBaseUser, job_id: uuid.UUID | str) -> Job:
    """The job, or NotFound: another user's job answers exactly like a missing one."""
    # The owner and the model version are joined (the version's training size makes an
    # inference's note, jobs/notes.py); the dataset is read by id. The status poll is the
    # hottest read there is: one query, compiled once (jobs/compiled_get.py).
    owner_id = None if user_sees_everything(user=user) else user.pk
    try:
        job = job_row_get(job_id=job_id, owner_id=owner_id)
    except (ValueError, TypeError, DjangoValidationError) as exc:
        raise NotFound() from exc
    if job is None:
        raise NotFound()
    return job


def job_counts_by_state() -> dict[str, int]:
    counts = {state.value: 0 for state in JobState}
    for row in Job.objects.values("state").annotate(n=Count("id")):
        counts[row["state"]] = row["n"]
    return counts


def jobs_unfinished_exist() -> bool:
    """Whether any job is not finished yet: what sets the reconciler's pace."""
    return Job.objects.filter(state__in=ACTIVE_STATES).exists()


def jobs_queue(*, user: AbstractBaseUser, limit: int = 50) -> QuerySet[Job]:
    """Jobs waiting or running, oldest first (the dashboard's queue)."""
    return jobs_visible_to(user=user).filter(state__in=ACTIVE_STATES).order_by("created_at")[:limit]


def job_dir(*, job: Job) -> Path | None:
    """The GPU service's folder for this job under shared storage, once it was delivered.

    The GPU service knows the job by the same id, so the folder is `jobs/<id>`.
    """
    if not job.delivered:
        return None
    return Path(settings.CARRIL_STORAGE) / "jobs" / str(job.id)


def job_input_images(*, job: Job) -> dict[str, Path]:
    """The images an inference job was given, by stored file name, in input order."""
    return {Path(p).name: Path(p) for p in (job.spec or {}).get("images") or []}


def job_input_image(*, job: Job, name: str) -> Path:
    """One input image of an inference job, or NotFound."""
    path = job_input_images(job=job).get(name)
    if path is None or not path.is_file():
        raise NotFound("No such image in this job.")
    return path


def job_log_tail(*, job: Job, lines: int = 200) -> list[str]:
    """The last lines of the job's log, read from shared storage, never from the service."""
    folder = job_dir(job=job)
    if folder is None:
        return []
    path = folder / "job.log"
    try:
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - MAX_LOG_BYTES))
            data = handle.read()
    except OSError:
        return []
    # Split on newlines only: a carriage return redraws a line (log_line_plain), not a new one.
    text = data.decode("utf-8", errors="replace").split("\n")
    if text and text[-1] == "":
        text.pop()
    if size > MAX_LOG_BYTES and text:
        text = text[1:]  # the first line is probably cut
    return [log_line_plain(line) for line in text[-max(1, min(lines, 5000)) :]]


def job_artifact_path(*, job: Job, relpath: str) -> Path:
    """A file inside the job's folder, refusing anything that resolves outside it."""
    folder = job_dir(job=job)
    path = None if folder is None else file_under(root=folder, relpath=relpath)
    if path is None:
        raise NotFound()
    return path


def job_artifact_relpath(*, job: Job, absolute: str | None) -> str | None:
    """An absolute path from a job result, made relative to the job's folder (or None).

    String logic only: the GPU service writes these paths under the same absolute
    CARRIL_STORAGE (ADR 0006), and a status read must not touch the disk once per image.
    Serving a file still resolves it on disk (`job_artifact_path`).
    """
    folder = job_dir(job=job)
    if folder is None or not absolute or not os.path.isabs(absolute):
        return None
    prefix = os.path.normpath(folder) + os.sep
    path = os.path.normpath(absolute)
    if not path.startswith(prefix) or len(path) == len(prefix):
        return None
    return path[len(prefix) :]


@dataclass(frozen=True)
class ReconcilerView:
    last_pass_at: datetime | None
    dispatch_failures: int
    gpus: dict[str, Any] | None
    gpus_fetched_at: datetime | None
    gpus_error: str

    @property
    def lag_seconds(self) -> float | None:
        if self.last_pass_at is None:
            return None
        return (timezone.now() - self.last_pass_at).total_seconds()


def reconciler_status() -> ReconcilerView:
    row = ReconcilerStatus.objects.filter(id=1).first()
    if row is None:
        return ReconcilerView(None, 0, None, None, "")
    return ReconcilerView(
        last_pass_at=row.last_pass_at,
        dispatch_failures=row.dispatch_failures,
        gpus=row.gpus,
        gpus_fetched_at=row.gpus_fetched_at,
        gpus_error=row.gpus_error,
    )


def gpus_overview(*, user: AbstractBaseUser) -> dict[str, Any]:
    """The GPUs as the reconciler last saw them, each with the web job holding its lane.

    Never waits on the GPU service: `available` is False and `gpus` empty until the
    reconciler has fetched them; `fetched_at` says how old the picture is.
    """
    status = reconciler_status()
    snapshot = status.gpus or {}
    holder_ids = {
        holder
        for gpu in snapshot.get("gpus", [])
        for holder in (gpu.get("lane") or {}).get("holders", [])
    } | {queued.get("id") for queued in snapshot.get("queue", [])}
    visible = {
        str(job.id): job for job in jobs_visible_to(user=user).filter(id__in=_job_ids(holder_ids))
    }
    # Nobody sees another user's GPU job ids: a lane says how busy it is, and each job on
    # it is described only if the user may see that job (their own, or staff).
    gpus = []
    for gpu in snapshot.get("gpus", []):
        lane = gpu.get("lane") or {}
        holders = lane.get("holders", [])
        gpus.append(
            {
                **{k: v for k, v in gpu.items() if k != "lane"},
                "lane": {"capacity": lane.get("capacity"), "busy": len(holders)},
                "jobs": [_job_brief(visible.get(h)) for h in holders],
            }
        )
    queue = [
        {
            **{k: v for k, v in queued.items() if k != "id"},
            "job": _job_brief(visible.get(queued.get("id"))),
        }
        for queued in snapshot.get("queue", [])
    ]
    return {
        "available": bool(status.gpus) and not status.gpus_error,
        "runtime": snapshot.get("runtime"),
        "gpus": gpus,
        "queue": queue,
        "fetched_at": status.gpus_fetched_at.isoformat() if status.gpus_fetched_at else None,
        "error": status.gpus_error or None,
    }


def _job_ids(ids: set[Any]) -> list[uuid.UUID]:
    """The ids that can be web jobs: the GPU service also runs jobs submitted to it
    directly, under ids of its own."""
    found = []
    for value in ids:
        try:
            found.append(uuid.UUID(str(value)))
        except ValueError:
            continue
    return found


def _job_brief(job: Job | None) -> dict[str, Any]:
    if job is None:
        # Someone else's job (or not a web job): say the lane is busy, not whose it is.
        return {"id": None, "kind": None, "state": None, "visible": False}
    return {"id": str(job.id), "kind": job.kind, "state": job.state, "visible": True}
