"""Writes for jobs: create (row first, then dispatch on commit), cancel, dispatch, refresh.

Every state change is a conditional UPDATE guarded by the states it may come from, so
the web request, the reconciler and a second reconciler can never overwrite each
other's newer news: 0 rows updated means someone else already moved the job on.
"""

from __future__ import annotations

import logging
import re
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import gpu_client
from carril_web.errors import Conflict, GpuServiceUnavailable, NotFound, ValidationFailed
from datasets.models import Dataset
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from observability.request_id import request_id_get
from registry.models import ModelVersion
from registry.services import model_version_register_from_training
from registry.visibility import model_version_visible_to

from jobs.images import inference_image_check
from jobs.models import ACTIVE_STATES, REMOTE_STATES, Job, JobKind, JobState, ReconcilerStatus

logger = logging.getLogger(__name__)

CLAIM_SECONDS = 30
ARCHITECTURES = tuple(
    f"{family}{size}" for family in ("yolov8", "yolo11") for size in ("n", "s", "m", "l", "x")
)
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


# --- creating -------------------------------------------------------------------------
def job_create_training(
    *,
    owner: AbstractBaseUser,
    dataset: Dataset,
    model: str,
    base_version: ModelVersion | None,
    epochs: int,
    imgsz: int,
    batch: int,
    seeds: list[int],
    gpus: int,
    lr0: float | None = None,
    patience: int | None = None,
) -> Job:
    """Write the job row, then deliver it to the GPU service once the row is committed.

    `model` is an architecture name; with `base_version`, the training fine-tunes that
    version and the GPU service gets its fingerprint instead.
    """
    if dataset.state != "ready":
        raise ValidationFailed(
            details={"fields": {"dataset": [f"The dataset is {dataset.state}; it must be ready."]}}
        )
    if base_version is None and model not in ARCHITECTURES:
        raise ValidationFailed(
            details={"fields": {"model": [f"An architecture ({', '.join(ARCHITECTURES)})."]}}
        )
    if base_version is not None and not model_version_visible_to(user=owner, version=base_version):
        # Another user's candidate: answered like a missing version (registry/visibility.py).
        raise ValidationFailed(details={"fields": {"model": ["No such model version."]}})
    spec: dict[str, Any] = {
        "dataset": str(dataset.path),
        "model": base_version.fingerprint if base_version else model,
        "epochs": epochs,
        "imgsz": imgsz,
        "batch": batch,
        "seeds": list(seeds),
    }
    if lr0 is not None:
        spec["lr0"] = lr0
    if patience is not None:
        spec["patience"] = patience
    return _job_create(
        owner=owner,
        kind=JobKind.TRAIN,
        spec=spec,
        gpus=gpus,
        dataset=dataset,
        model_version=base_version,
    )


def job_create_inference(
    *,
    owner: AbstractBaseUser,
    version: ModelVersion,
    images: list[UploadedFile],
    conf: float,
    iou: float,
    imgsz: int,
) -> Job:
    """Store the images where the GPU service can read them, then create the job."""
    if not model_version_visible_to(user=owner, version=version):
        raise NotFound("No such model version.")
    if not images:
        raise ValidationFailed(details={"fields": {"images": ["At least one image."]}})
    if len(images) > settings.CARRIL_INFER_MAX_IMAGES:
        raise ValidationFailed(
            details={"fields": {"images": [f"At most {settings.CARRIL_INFER_MAX_IMAGES}."]}}
        )
    job_id = uuid.uuid4()
    folder = Path(settings.CARRIL_STORAGE) / "uploads" / "infer" / str(job_id)
    folder.mkdir(parents=True)
    try:
        paths = [_image_store(upload, folder=folder, index=i) for i, upload in enumerate(images)]
        spec = {
            "model": version.fingerprint,
            "images": [str(p) for p in paths],
            "conf": conf,
            "iou": iou,
            "imgsz": imgsz,
        }
        return _job_create(
            owner=owner,
            kind=JobKind.INFER,
            spec=spec,
            gpus=1,
            model_version=version,
            job_id=job_id,
        )
    except Exception:
        _remove_folder(folder)
        raise


def _image_store(upload: UploadedFile, *, folder: Path, index: int) -> Path:
    stem = _SAFE_NAME.sub("_", Path(upload.name or "image").stem)[:60] or "image"
    suffix = Path(upload.name or "").suffix.lower()
    if suffix not in {".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff"}:
        suffix = ".jpg"
    path = folder / f"{index:04d}_{stem}{suffix}"
    with open(path, "wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    inference_image_check(path=path, name=upload.name or path.name)
    path.chmod(0o644)
    return path


def _remove_folder(folder: Path) -> None:
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


def _job_create(
    *,
    owner: AbstractBaseUser,
    kind: str,
    spec: dict[str, Any],
    gpus: int,
    dataset: Dataset | None = None,
    model_version: ModelVersion | None = None,
    job_id: uuid.UUID | None = None,
) -> Job:
    with transaction.atomic():
        job = Job.objects.create(
            id=job_id or uuid.uuid4(),
            owner=owner,
            kind=kind,
            spec=spec,
            gpus=gpus,
            dataset=dataset,
            model_version=model_version,
            request_id=request_id_get() or "",
        )
        transaction.on_commit(lambda: job_dispatch(job_id=job.id))
    return job


# --- delivering -----------------------------------------------------------------------
def _backoff(attempts: int) -> timedelta:
    return timedelta(seconds=min(2 ** min(attempts, 16), settings.CARRIL_DISPATCH_BACKOFF_MAX_S))


def job_dispatch(*, job_id: uuid.UUID, client: gpu_client.GpuClient | None = None) -> bool:
    """Deliver one submitted job; True if the GPU service has it now.

    Safe to call from several places at once: the row is claimed with a conditional
    UPDATE, and the job's id is the idempotency key, so a delivery that the GPU service
    got but we never heard back about is answered 200 with the same job next time.
    """
    now = timezone.now()
    claimed = Job.objects.filter(
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now),
        id=job_id,
        state=JobState.SUBMITTED,
    ).update(claimed_until=now + timedelta(seconds=CLAIM_SECONDS))
    if not claimed:
        return False
    job = Job.objects.get(id=job_id)
    own_client = client is None
    client = client or gpu_client.client_build()
    try:
        accepted = client.job_submit(
            kind=job.kind,
            spec=job.spec,
            gpus=job.gpus,
            idempotency_key=str(job.id),
            request_id=job.request_id or None,
        )
    except GpuServiceUnavailable as exc:
        _dispatch_failed(job=job, reason=f"{exc.message} {exc.details}")
        return False
    except gpu_client.GpuServiceRefused as exc:
        # Refused for good (bad spec, more GPUs than exist...): the job fails with the
        # GPU service's own code, so retrying cannot turn into a loop.
        _dispatch_refused(job=job, exc=exc)
        return False
    finally:
        if own_client:
            client.close()
    state = accepted.state if accepted.state in REMOTE_STATES else JobState.QUEUED
    delivered = Job.objects.filter(id=job.id, state=JobState.SUBMITTED).update(
        state=state,
        gpu_job_id=accepted.id,
        dispatched_at=timezone.now(),
        claimed_until=None,
        last_dispatch_error="",
        next_attempt_at=None,
        updated_at=timezone.now(),
    )
    if not delivered:
        # Cancelled while we were delivering: tell the GPU service too.
        Job.objects.filter(id=job.id).update(gpu_job_id=accepted.id, cancel_pending=True)
        _cancel_remote(job_id=job.id)
    logger.info("job %s delivered as %s (%s)", job.id, accepted.id, accepted.state)
    return bool(delivered)


def _dispatch_failed(*, job: Job, reason: str) -> None:
    attempts = job.dispatch_attempts + 1
    Job.objects.filter(id=job.id, state=JobState.SUBMITTED).update(
        dispatch_attempts=attempts,
        next_attempt_at=timezone.now() + _backoff(attempts),
        claimed_until=None,
        last_dispatch_error=reason[:1000],
    )
    ReconcilerStatus.objects.get_or_create(id=1)
    ReconcilerStatus.objects.filter(id=1).update(dispatch_failures=F("dispatch_failures") + 1)
    logger.warning("job %s not delivered (attempt %s): %s", job.id, attempts, reason)


def _dispatch_refused(*, job: Job, exc: gpu_client.GpuServiceRefused) -> None:
    now = timezone.now()
    Job.objects.filter(id=job.id, state=JobState.SUBMITTED).update(
        state=JobState.FAILED,
        error_code=exc.code,
        error_message=exc.message,
        claimed_until=None,
        finished_at=now,
        updated_at=now,
    )
    ReconcilerStatus.objects.get_or_create(id=1)
    ReconcilerStatus.objects.filter(id=1).update(dispatch_failures=F("dispatch_failures") + 1)
    logger.warning("job %s refused by the GPU service: %s", job.id, exc)


def jobs_dispatch_due(*, client: gpu_client.GpuClient, limit: int = 50) -> int:
    """Deliver submitted jobs whose backoff has passed, oldest first."""
    now = timezone.now()
    due = (
        Job.objects.filter(state=JobState.SUBMITTED)
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
        .order_by("created_at")
        .values_list("id", flat=True)[:limit]
    )
    delivered = 0
    for job_id in list(due):
        if job_dispatch(job_id=job_id, client=client):
            delivered += 1
    return delivered


# --- cancelling -----------------------------------------------------------------------
def job_cancel(*, job: Job) -> Job:
    """Cancel a job. Not yet delivered: cancelled at once. Delivered: `cancelling` until
    the GPU service confirms; if it cannot be told now, the reconciler tells it later."""
    now = timezone.now()
    if Job.objects.filter(id=job.id, state=JobState.SUBMITTED).update(
        state=JobState.CANCELLED,
        finished_at=now,
        updated_at=now,
        error_code="CANCELLED",
        error_message="Cancelled before it was delivered to the GPU service.",
    ):
        job.refresh_from_db()
        return job
    moved = Job.objects.filter(
        id=job.id, state__in=[JobState.QUEUED, JobState.RUNNING, JobState.CANCELLING]
    ).update(state=JobState.CANCELLING, cancel_pending=True, updated_at=now)
    if not moved:
        job.refresh_from_db()
        raise Conflict(f"The job is {job.state}; it cannot be cancelled.")
    _cancel_remote(job_id=job.id)
    job.refresh_from_db()
    return job


def _cancel_remote(*, job_id: uuid.UUID, client: gpu_client.GpuClient | None = None) -> None:
    job = Job.objects.get(id=job_id)
    if not job.gpu_job_id:
        return
    own_client = client is None
    client = client or gpu_client.client_build()
    try:
        record = client.job_cancel(job_id=job.gpu_job_id)
    except GpuServiceUnavailable:
        return  # cancel_pending stays set; the reconciler retries
    except gpu_client.GpuServiceRefused as exc:
        # 409: it already finished; 404: it is gone. Either way nothing is left to stop.
        logger.info("cancel of job %s refused: %s", job_id, exc)
        Job.objects.filter(id=job_id).update(cancel_pending=False)
        return
    finally:
        if own_client:
            client.close()
    Job.objects.filter(id=job_id).update(cancel_pending=False)
    job_apply_remote(job_id=job_id, record=record)


# --- refreshing -----------------------------------------------------------------------
def job_apply_remote(*, job_id: uuid.UUID, record: dict[str, Any]) -> bool:
    """Mirror the GPU service's record of a job onto its row; True if the row changed.

    A cancel asked for here wins over a `queued`/`running` the service reports before
    it has acted on it, and nothing moves a job out of a terminal state.
    """
    remote_state = record.get("state")
    if remote_state not in REMOTE_STATES:
        return False
    job = Job.objects.filter(id=job_id).first()
    if job is None or job.is_terminal:
        return False
    state = remote_state
    if job.state == JobState.CANCELLING and remote_state in {"queued", "running"}:
        state = JobState.CANCELLING
    error = record.get("error") or {}
    fields: dict[str, Any] = {
        "state": state,
        "progress": record.get("progress") or {},
        "metrics": record.get("metrics") or {},
        "result": record.get("result"),
        "gpu_ids": record.get("gpu_ids") or [],
        "started_at": _when(record.get("started_at")) or job.started_at,
        "finished_at": _when(record.get("finished_at")),
        "error_code": error.get("code", "") if error else "",
        "error_message": error.get("message", "") if error else "",
        "updated_at": timezone.now(),
    }
    if state in {"succeeded", "failed", "cancelled"} and fields["finished_at"] is None:
        fields["finished_at"] = timezone.now()
    with transaction.atomic():
        changed = (
            Job.objects.filter(id=job_id, state__in=ACTIVE_STATES)
            .exclude(state=JobState.SUBMITTED, gpu_job_id="")
            .update(**fields)
        )
        if changed and state == JobState.SUCCEEDED and job.kind == JobKind.TRAIN:
            job.refresh_from_db()
            model_version_register_from_training(job=job)
    return bool(changed)


def _when(value: Any) -> datetime | None:
    if not value:
        return None
    return parse_datetime(value) if isinstance(value, str) else value


def job_mark_lost(*, job_id: uuid.UUID) -> bool:
    now = timezone.now()
    return bool(
        Job.objects.filter(id=job_id, state__in=ACTIVE_STATES)
        .exclude(gpu_job_id="")
        .update(
            state=JobState.LOST,
            error_code="LOST",
            error_message="The GPU service no longer knows this job.",
            finished_at=now,
            updated_at=now,
        )
    )


def job_refresh_many(*, client: gpu_client.GpuClient, batch_size: int = 500) -> int:
    """Refresh every delivered, unfinished job through the batched status call.

    Raises GpuServiceUnavailable if the service cannot answer: nothing is marked lost
    on a failed call, only on an answer that lists the job as missing.
    """
    rows = list(
        Job.objects.filter(state__in=ACTIVE_STATES)
        .exclude(gpu_job_id="")
        .values_list("id", "gpu_job_id", "cancel_pending")
    )
    changed = 0
    for start in range(0, len(rows), batch_size):
        chunk = rows[start : start + batch_size]
        by_remote = {remote: local for local, remote, _ in chunk}
        status = client.jobs_status(ids=list(by_remote))
        for record in status.jobs:
            local = by_remote.get(record.get("id"))
            if local is not None and job_apply_remote(job_id=local, record=record):
                changed += 1
        for remote in status.missing:
            local = by_remote.get(remote)
            if local is not None and job_mark_lost(job_id=local):
                logger.warning("job %s lost: the GPU service no longer knows %s", local, remote)
                changed += 1
        for local, _, cancel_pending in chunk:
            if cancel_pending:
                _cancel_remote(job_id=local, client=client)
    # A job cancelled while it was being delivered is `cancelled` here already, but the
    # GPU service may not have heard: keep telling it until it has.
    stranded = (
        Job.objects.filter(state=JobState.CANCELLED, cancel_pending=True)
        .exclude(gpu_job_id="")
        .values_list("id", flat=True)
    )
    for local in list(stranded):
        _cancel_remote(job_id=local, client=client)
    return changed


def gpus_snapshot_store(*, client: gpu_client.GpuClient) -> None:
    ReconcilerStatus.objects.get_or_create(id=1)
    try:
        snapshot = client.gpus()
    except (GpuServiceUnavailable, gpu_client.GpuServiceRefused) as exc:
        ReconcilerStatus.objects.filter(id=1).update(gpus_error=str(exc)[:200])
        return
    ReconcilerStatus.objects.filter(id=1).update(
        gpus=snapshot, gpus_fetched_at=timezone.now(), gpus_error=""
    )


def reconciler_pass_done() -> None:
    ReconcilerStatus.objects.get_or_create(id=1)
    ReconcilerStatus.objects.filter(id=1).update(last_pass_at=timezone.now())
