"""Reads for the registry, scoped by the tenant rule (registry/visibility.py);
administrators change it."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from carril_web.errors import NoServingModel, NotFound
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet

from registry.models import ModelEvent, ModelVersion, Stage
from registry.visibility import model_versions_visible_to

if TYPE_CHECKING:
    from jobs.models import Job


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


def model_version_of_job(*, job: Job) -> ModelVersion | None:
    """The version a training registered (its best weights), once the reconciler did."""
    return ModelVersion.objects.filter(source_job=job).first()


def model_events_visible_to(*, user: AbstractBaseUser) -> QuerySet[ModelEvent]:
    """The stage changes of the versions `user` sees (the tenant rule), newest first;
    the models page and the user's webhooks both read them here."""
    return (
        ModelEvent.objects.filter(model_version__in=model_versions_visible_to(user=user))
        .select_related("model_version", "actor")
        .order_by("-created_at")
    )


def model_events_recent(*, user: AbstractBaseUser, limit: int = 50) -> QuerySet[ModelEvent]:
    """The latest stage changes of the versions `user` sees."""
    return model_events_visible_to(user=user)[:limit]


def model_version_events(*, version: ModelVersion) -> QuerySet[ModelEvent]:
    """The version's stage history, oldest first."""
    return version.events.select_related("actor").order_by("created_at", "id")


def model_version_weights_path(*, version: ModelVersion) -> Path:
    """The version's weights file in shared storage, where the GPU service keeps every
    registered checkpoint by fingerprint (ADR 0006's layout: weights/<sha256>.pt)."""
    path = Path(settings.CARRIL_STORAGE) / "weights" / f"{version.fingerprint}.pt"
    if not path.is_file():
        raise NotFound("This version's weights file is not in storage.")
    return path
