"""Reads for the registry, scoped by the tenant rule (registry/visibility.py);
administrators change it."""

from __future__ import annotations

import uuid

from carril_web.errors import NoServingModel, NotFound
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet

from registry.models import ModelVersion, Stage
from registry.visibility import model_versions_visible_to


def model_versions_list(
    *, user: AbstractBaseUser, stage: str | None = None
) -> QuerySet[ModelVersion]:
    versions = model_versions_visible_to(user=user).select_related("source_job", "created_by")
    if stage:
        versions = versions.filter(stage=stage)
    return versions


def model_version_get(*, user: AbstractBaseUser, version_id: uuid.UUID | str) -> ModelVersion:
    """The version, or NotFound: another user's candidate answers like a missing one."""
    try:
        return model_versions_visible_to(user=user).get(id=version_id)
    except (ModelVersion.DoesNotExist, ValueError, TypeError, DjangoValidationError) as exc:
        raise NotFound("No such model version.") from exc


def model_version_serving() -> ModelVersion:
    version = ModelVersion.objects.filter(stage=Stage.SERVING).first()
    if version is None:
        raise NoServingModel()
    return version


def model_version_for_inference(
    *, user: AbstractBaseUser, version_id: uuid.UUID | str | None
) -> ModelVersion:
    """The chosen version, or the serving one; retired versions are not offered."""
    if version_id in (None, ""):
        return model_version_serving()
    version = model_version_get(user=user, version_id=version_id)
    if version.stage == Stage.RETIRED:
        raise NotFound("That model version is retired.")
    return version
