"""Reads for the registry. Every signed-in user may read it; administrators change it."""

from __future__ import annotations

import uuid

from carril_web.errors import NoServingModel, NotFound
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet

from registry.models import ModelVersion, Stage


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
