"""Writes for the registry: register trained or imported weights, change a stage."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import gpu_client
from accounts.services import user_is_administrator
from carril_web.errors import Conflict, Forbidden, ValidationFailed, WeightsRejected
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction

from registry.gate import gate_check, requirement_parse
from registry.learning import best_seed_result, training_did_not_learn
from registry.models import EventAction, ModelEvent, ModelVersion, Source, Stage

if TYPE_CHECKING:
    from jobs.models import Job

    from gpu_service.contract import TrainingResult

logger = logging.getLogger(__name__)

MAX_WEIGHTS_NAME = 200


def model_version_register_from_training(*, job: Job) -> ModelVersion | None:
    """Register a finished training's best weights as a candidate, once.

    Idempotent on the fingerprint: the reconciler may see the same success twice. The
    result is the contract's TrainingResult; its metrics carry the canonical keys.
    """
    result = cast("TrainingResult", job.result or {})
    weights = result.get("weights") or {}
    fingerprint = weights.get("fingerprint")
    if not fingerprint:
        logger.warning("training job %s succeeded without weights in its result", job.id)
        return None
    existing = ModelVersion.objects.filter(fingerprint=fingerprint).first()
    if existing is not None:
        return existing
    best = best_seed_result(cast("dict[str, Any]", result))
    architecture = result.get("architecture") or str(job.spec.get("model", ""))
    try:
        with transaction.atomic():
            version = ModelVersion.objects.create(
                name=f"{architecture or 'model'}-{str(job.id)[:8]}",
                fingerprint=fingerprint,
                source=Source.TRAINING,
                source_job=job,
                architecture=architecture,
                task=result.get("task") or "detect",
                class_names=result.get("class_names") or [],
                imgsz=result.get("imgsz"),
                did_not_learn=training_did_not_learn(cast("dict[str, Any]", result)),
                metrics={
                    "best_seed": result.get("best_seed"),
                    "fitness_metric": result.get("fitness_metric"),
                    "fitness": best.get("fitness"),
                    **(best.get("metrics") or {}),
                },
                created_by=job.owner,
            )
            ModelEvent.objects.create(
                model_version=version,
                action=EventAction.REGISTER,
                to_stage=Stage.CANDIDATE,
                actor=None,
                reason=f"best weights of training job {job.id}",
            )
    except IntegrityError:
        return ModelVersion.objects.get(fingerprint=fingerprint)
    return version


def model_version_import(
    *, actor: AbstractBaseUser, name: str, upload: UploadedFile
) -> ModelVersion:
    """Hand an uploaded .pt to the GPU service to fingerprint and keep, then register it."""
    if not user_is_administrator(user=actor):
        raise Forbidden("Only administrators import weights.")
    name = name.strip()
    if not name:
        raise ValidationFailed(details={"fields": {"name": ["This field is required."]}})
    folder = Path(settings.CARRIL_STORAGE) / "uploads" / "weights"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{uuid.uuid4()}.pt"
    try:
        with open(path, "wb") as out:
            for chunk in upload.chunks():
                out.write(chunk)
        path.chmod(0o600)
        with gpu_client.client_build() as client:
            try:
                weights = client.weights_import(path=path)
            except gpu_client.GpuServiceRefused as exc:
                raise WeightsRejected(exc.message, details=exc.details) from exc
    finally:
        # The GPU service keeps its own copy under weights/<sha256>.pt.
        path.unlink(missing_ok=True)
    fingerprint = weights["fingerprint"]
    if ModelVersion.objects.filter(fingerprint=fingerprint).exists():
        existing = ModelVersion.objects.get(fingerprint=fingerprint)
        raise Conflict(
            "These weights are already registered.",
            details={"model_version": str(existing.id), "fingerprint": fingerprint},
        )
    with transaction.atomic():
        version = ModelVersion.objects.create(
            name=name[:MAX_WEIGHTS_NAME],
            fingerprint=fingerprint,
            source=Source.IMPORT,
            architecture=weights.get("architecture") or "",
            task=weights.get("task") or "detect",
            class_names=weights.get("class_names") or [],
            imgsz=weights.get("imgsz"),
            metrics={},
            created_by=actor,
        )
        ModelEvent.objects.create(
            model_version=version,
            action=EventAction.REGISTER,
            to_stage=Stage.CANDIDATE,
            actor=actor,
            reason=f"imported by {actor.get_username()}",
        )
    return version


def model_version_set_stage(
    *,
    actor: AbstractBaseUser,
    version: ModelVersion,
    stage: str,
    reason: str,
    require: dict[str, Any] | None = None,
) -> ModelVersion:
    """Move a version to `stage` with a reason, recording who did it.

    Promotion is by a person, never automatic. Serving is exclusive: the version that
    was serving goes back to candidate (a `demote` event with the same reason).
    Serving again after having served before is recorded as a rollback. With `require`
    (a promotion gate, `registry.gate`), the candidate must beat the serving version,
    checked with both rows locked in the same transaction; GateFailed otherwise.
    """
    if not user_is_administrator(user=actor):
        raise Forbidden("Only administrators change model stages.")
    reason = (reason or "").strip()
    if not reason:
        raise ValidationFailed(details={"fields": {"reason": ["A reason is required."]}})
    if stage not in Stage.values:
        raise ValidationFailed(details={"fields": {"stage": [f"One of {Stage.values}."]}})
    requirement = requirement_parse(require) if require is not None else None
    if requirement is not None and stage != Stage.SERVING:
        raise ValidationFailed(details={"fields": {"require": ["Only for stage `serving`."]}})
    with transaction.atomic():
        version = ModelVersion.objects.select_for_update().get(id=version.id)
        if version.stage == stage:
            raise Conflict(f"The version is already {stage}.")
        from_stage = version.stage
        if stage == Stage.SERVING:
            serving = list(ModelVersion.objects.select_for_update().filter(stage=Stage.SERVING))
            if requirement is not None:
                gate_check(
                    candidate=version,
                    serving=serving[0] if serving else None,
                    requirement=requirement,
                )
            for current in serving:
                ModelVersion.objects.filter(id=current.id).update(stage=Stage.CANDIDATE)
                ModelEvent.objects.create(
                    model_version=current,
                    action=EventAction.DEMOTE,
                    from_stage=Stage.SERVING,
                    to_stage=Stage.CANDIDATE,
                    actor=actor,
                    reason=reason,
                )
            served_before = version.events.filter(to_stage=Stage.SERVING).exists()
            action = EventAction.ROLLBACK if served_before else EventAction.PROMOTE
        elif stage == Stage.RETIRED:
            action = EventAction.RETIRE
        else:
            action = EventAction.DEMOTE
        ModelVersion.objects.filter(id=version.id).update(stage=stage)
        ModelEvent.objects.create(
            model_version=version,
            action=action,
            from_stage=from_stage,
            to_stage=stage,
            actor=actor,
            reason=reason,
        )
    version.refresh_from_db()
    return version
