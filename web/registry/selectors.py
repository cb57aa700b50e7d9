"""Reads for the registry. Every signed-in user may read it; administrators change it."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from carril_web.errors import NoServingModel, NotFound
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet

from registry.models import ModelEvent, ModelVersion, Stage

if TYPE_CHECKING:
    from jobs.models import Job


def model_versions_list(*, stage: str | None = None) -> QuerySet[ModelVersion]:
    versions = ModelVersion.objects.select_related("source_job", "created_by")
    if stage:
        versions = versions.filter(stage=stage)
    return versions


def model_version_get(*, version_id: uuid.UUID | str) -> ModelVersion:
    try:
        return ModelVersion.objects.get(id=version_id)
    except (ModelVersion.DoesNotExist, ValueError, TypeError, DjangoValidationError) as exc:
        raise NotFound("No such model version.") from exc


def model_version_serving() -> ModelVersion:
    version = ModelVersion.objects.filter(stage=Stage.SERVING).first()
    if version is None:
        raise NoServingModel()
    return version


def model_version_for_inference(*, version_id: uuid.UUID | str | None) -> ModelVersion:
    """The chosen version, or the serving one; retired versions are not offered."""
    if version_id in (None, ""):
        return model_version_serving()
    version = model_version_get(version_id=version_id)
    if version.stage == Stage.RETIRED:
        raise NotFound("That model version is retired.")
    return version


def model_version_of_job(*, job: Job) -> ModelVersion | None:
    """The version a training registered (its best weights), once the reconciler did."""
    return ModelVersion.objects.filter(source_job=job).first()


def model_events_recent(*, limit: int = 50) -> QuerySet[ModelEvent]:
    return ModelEvent.objects.select_related("model_version", "actor").order_by("-created_at")[
        :limit
    ]
