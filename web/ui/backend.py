"""The one place the UI calls the backend's selectors and services.

Backend errors meant for the API edge become what a page needs: a missing or foreign
record is a 404 page, exactly as the API answers 404.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from accounts import services as account_services
from accounts.models import ApiToken
from carril_web.errors import Conflict, NotFound
from datasets import selectors as dataset_selectors
from datasets import services as dataset_services
from datasets.models import Dataset
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet
from django.http import Http404
from jobs import selectors as job_selectors
from jobs import services as job_services
from jobs.models import ACTIVE_STATES, Job, JobKind, JobState
from registry import selectors as registry_selectors
from registry import services as registry_services
from registry.models import ModelEvent, ModelVersion, Stage
from registry.visibility import model_versions_visible_to

T = TypeVar("T")


@contextmanager
def _not_found_is_404() -> Iterator[None]:
    try:
        yield
    except NotFound as exc:
        raise Http404(exc.message) from exc


def _call(fn: Callable[..., T], /, **kwargs: Any) -> T:
    with _not_found_is_404():
        return fn(**kwargs)


# ---- datasets ----


def datasets(*, user: AbstractBaseUser) -> list[Dataset]:
    return list(dataset_selectors.datasets_visible_to(user=user))


def dataset(*, user: AbstractBaseUser, dataset_id: uuid.UUID | str) -> Dataset:
    return _call(dataset_selectors.dataset_get, user=user, dataset_id=dataset_id)


def dataset_samples(*, dataset: Dataset, limit_per_split: int = 6) -> list[dict[str, Any]]:
    samples: list[dict[str, Any]] = []
    for split in ("train", "val", "test"):
        samples.extend(
            dataset_selectors.dataset_samples(dataset=dataset, split=split, limit=limit_per_split)
        )
    return samples


def dataset_image_path(*, dataset: Dataset, split: str, name: str) -> Path:
    return _call(dataset_selectors.dataset_image_path, dataset=dataset, split=split, name=name)


def dataset_delete(*, dataset: Dataset) -> str | None:
    """None once deleted; otherwise why not (a job still uses it, as the API says 409)."""
    if dataset.jobs.filter(state__in=ACTIVE_STATES).exists():
        return "A job still uses this dataset; cancel it or wait for it to finish."
    dataset_services.dataset_delete(dataset=dataset)
    return None


# ---- jobs ----

JOB_STATES = list(JobState.values)
JOB_KINDS = list(JobKind.values)


def jobs(
    *, user: AbstractBaseUser, state: str | None = None, kind: str | None = None
) -> QuerySet[Job]:
    return job_selectors.jobs_visible_to(user=user, state=state, kind=kind)


def job(*, user: AbstractBaseUser, job_id: uuid.UUID | str) -> Job:
    return _call(job_selectors.job_get, user=user, job_id=job_id)


def job_log_tail(*, job: Job, lines: int = 200) -> list[str]:
    return job_selectors.job_log_tail(job=job, lines=lines)


def job_artifact_path(*, job: Job, relpath: str) -> Path:
    return _call(job_selectors.job_artifact_path, job=job, relpath=relpath)


def gpus_overview(*, user: AbstractBaseUser) -> dict[str, Any]:
    """The GPUs as the reconciler last saw them: a page never waits on the GPU service."""
    return job_selectors.gpus_overview(user=user)


# ---- registry ----


def model_versions(*, user: AbstractBaseUser, stage: str | None = None) -> QuerySet[ModelVersion]:
    return registry_selectors.model_versions_list(user=user, stage=stage)


def model_version(*, user: AbstractBaseUser, version_id: uuid.UUID | str) -> ModelVersion:
    return _call(registry_selectors.model_version_get, user=user, version_id=version_id)


def model_version_serving() -> ModelVersion | None:
    return ModelVersion.objects.filter(stage=Stage.SERVING).first()


def model_version_of_job(*, job: Job) -> ModelVersion | None:
    """The version a training registered (its best weights), once the reconciler did."""
    return ModelVersion.objects.filter(source_job=job).first()


def model_events(*, user: AbstractBaseUser, limit: int = 50) -> QuerySet[ModelEvent]:
    return (
        ModelEvent.objects.filter(model_version__in=model_versions_visible_to(user=user))
        .select_related("model_version", "actor")
        .order_by("-created_at")[:limit]
    )


def model_version_set_stage(
    *, actor: AbstractBaseUser, version: ModelVersion, stage: str, reason: str
) -> ModelVersion:
    return registry_services.model_version_set_stage(
        actor=actor, version=version, stage=stage, reason=reason
    )


# ---- job writes ----

ARCHITECTURES = job_services.ARCHITECTURES


def training_create(
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
) -> Job:
    """Raises ValidationFailed with the backend's per-field messages in `details`."""
    return job_services.job_create_training(
        owner=owner,
        dataset=dataset,
        model=model,
        base_version=base_version,
        epochs=epochs,
        imgsz=imgsz,
        batch=batch,
        seeds=seeds,
        gpus=gpus,
    )


def job_cancel(*, job: Job) -> str | None:
    """None when the cancel was taken; otherwise why not, for the page to say."""
    try:
        job_services.job_cancel(job=job)
    except Conflict as exc:
        return exc.message
    return None


# ---- inference inputs and results ----


def job_input_images(*, job: Job) -> dict[str, Path]:
    """The images an inference job was given, by file name (as stored for it)."""
    return {Path(p).name: Path(p) for p in (job.spec or {}).get("images") or []}


def job_input_image(*, job: Job, name: str) -> Path | None:
    path = job_input_images(job=job).get(name)
    return path if path is not None and path.is_file() else None


def job_detections(*, job: Job) -> list[dict[str, Any]]:
    """Per input image, its detections from the job's result, in input order."""
    result = job.result or {}
    listed = result.get("images") or []
    by_name: dict[str, dict[str, Any]] = {}
    for item in listed:
        source = item.get("source") or item.get("image") or item.get("path") or ""
        by_name[Path(str(source)).name] = item
    images = []
    for name in job_input_images(job=job):
        item = by_name.get(name, {})
        images.append(
            {
                "name": name,
                "width": item.get("width"),
                "height": item.get("height"),
                "detections": item.get("detections") or [],
            }
        )
    return images


# ---- API tokens ----


def api_tokens(*, user: AbstractBaseUser) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user).order_by("-created_at")


def api_token_create(*, user: AbstractBaseUser, name: str) -> tuple[ApiToken, str]:
    issued = account_services.api_token_create(user=user, name=name)
    return issued.token, issued.secret


def api_token_revoke(*, user: AbstractBaseUser, token_id: int) -> ApiToken:
    return _call(account_services.api_token_revoke, user=user, token_id=token_id)
