"""Creating and cancelling jobs, and the rules a new job must meet.

The rules live here once: the REST serializers and the UI's training form take their
limits from `TRAINING_LIMITS`, and every request goes through `job_create_training` /
`job_create_inference`, which refuse what breaks a rule with a ValidationFailed whose
per-field messages both edges show as they are.

A job's row is written first and delivered once the transaction commits (`delivery`);
every state change is a conditional UPDATE guarded by the states it may come from, so
the web request and the reconciler never overwrite each other's newer news.
"""

from __future__ import annotations

import logging
import re
import shutil
import uuid
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

from carril_web.errors import Conflict, NotFound, ValidationFailed
from datasets.models import Dataset, DatasetState
from datasets.selectors import dataset_get
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone
from observability.request_id import request_id_get
from registry.models import ExportFormat, ModelVersion, Stage
from registry.selectors import model_version_get
from registry.visibility import model_version_visible_to

from gpu_service.contract import (
    ARCHITECTURES,
    AUGMENTATIONS,
    IMGSZ_MAX,
    IMGSZ_MIN,
    IMGSZ_MULTIPLE,
    LR0_MAX,
    OPTIMIZERS,
    PATIENCE_DEFAULT,
)
from jobs import delivery, reconciler
from jobs.gpu_fit import gpus_check
from jobs.images import inference_image_check
from jobs.labels import labels_clean, tags_stored
from jobs.media_probe import media_probe
from jobs.models import Job, JobKind, JobState
from jobs.quotas import quota_check
from jobs.wording import job_state_sentence

logger = logging.getLogger(__name__)

# Inclusive bounds of a training's numbers, read by the API serializer and the UI form;
# the image size's are the GPU service's (its contract), which refuses any other.
TRAINING_LIMITS: dict[str, tuple[int, int]] = {
    "epochs": (1, 1000),
    "imgsz": (IMGSZ_MIN, IMGSZ_MAX),
    "batch": (1, 1024),
    "gpus": (1, 64),
    "patience": (0, 1000),
    "seed": (0, 2**31 - 1),
}
# What a version with no recorded training size (old imports) infers and exports at.
DEFAULT_IMGSZ = 640
# A training's defaults, the same for the API and the form (ADR 0045). 50 epochs: enough
# for a first model on a small dataset to learn something; ultralytics' own is 100.
TRAINING_DEFAULTS: dict[str, Any] = {
    "epochs": 50,
    "imgsz": DEFAULT_IMGSZ,
    "batch": 16,
    "gpus": 1,
    "seeds": [42],
    "patience": PATIENCE_DEFAULT,
    "optimizer": "auto",
    **{name: default for name, (_low, _high, default) in AUGMENTATIONS.items()},
}
SEEDS_MAX = 5
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


# --- rules ------------------------------------------------------------------------------
def imgsz_problem(imgsz: int) -> str | None:
    """Why an image size cannot be used (the GPU service refuses it too), or None."""
    return f"Must be a multiple of {IMGSZ_MULTIPLE}." if imgsz % IMGSZ_MULTIPLE else None


def augmentation_problem(name: str, value: float) -> str | None:
    """Why an augmentation's value cannot be used (contract.AUGMENTATIONS), or None."""
    low, high, _default = AUGMENTATIONS[name]
    return None if low <= value <= high else f"Between {low:g} and {high:g}."


def lr0_problem(value: float) -> str | None:
    return None if 0 < value <= LR0_MAX else f"Above 0 and at most {LR0_MAX:g}."


def optimizer_problem(value: str) -> str | None:
    return None if value in OPTIMIZERS else f"One of {', '.join(OPTIMIZERS)}."


def inference_imgsz(*, version: ModelVersion) -> int:
    """The size a version infers at unless a job asks for another: its training's."""
    return version.imgsz or DEFAULT_IMGSZ


def seeds_problem(seeds: list[int]) -> str | None:
    """Why a list of seeds cannot be used, or None."""
    if not 1 <= len(seeds) <= SEEDS_MAX:
        return "Between one and five seeds."
    if len(set(seeds)) != len(seeds):
        return "Seeds must not repeat."
    low, high = TRAINING_LIMITS["seed"]
    if any(not low <= seed <= high for seed in seeds):
        return f"Each seed between {low} and {high}."
    return None


def training_base_resolve(*, user: AbstractBaseUser, model: str) -> ModelVersion | None:
    """None for an architecture name; else the model version to fine-tune (by id), one
    `user` may see: another user's candidate is answered like a missing version
    (registry/visibility.py)."""
    if model in ARCHITECTURES:
        return None
    try:
        version = model_version_get(user=user, version_id=model)
    except NotFound as exc:
        choices = ", ".join(ARCHITECTURES)
        message = f"An architecture ({choices}) or a model version id."
        raise ValidationFailed(details={"fields": {"model": [message]}}) from exc
    if version.stage == Stage.RETIRED:
        raise ValidationFailed(details={"fields": {"model": ["That version is retired."]}})
    return version


def _refuse_if(problems: dict[str, str | None]) -> None:
    fields = {field: [problem] for field, problem in problems.items() if problem}
    if fields:
        raise ValidationFailed(details={"fields": fields})


# --- creating -------------------------------------------------------------------------
def job_create_training(
    *,
    owner: AbstractBaseUser,
    dataset_id: uuid.UUID | str,
    model: str,
    epochs: int,
    imgsz: int,
    batch: int,
    seeds: list[int],
    gpus: int,
    lr0: float | None = None,
    patience: int | None = None,
    optimizer: str | None = None,
    augmentations: dict[str, float] | None = None,
    labels: dict[str, Any] | None = None,
) -> Job:
    """Check the request, write the job row, deliver it once the row is committed.

    `model` is an architecture name or the id of a model version to fine-tune (the GPU
    service then gets that version's fingerprint). The dataset must be one `owner` sees.
    Unset hyperparameters take TRAINING_DEFAULTS; `lr0` unset is the optimizer's choice.
    `labels`: the training's name, tags and note (`jobs.labels`' rules).
    """
    optimizer = optimizer or TRAINING_DEFAULTS["optimizer"]
    patience = TRAINING_DEFAULTS["patience"] if patience is None else patience
    augment = {
        name: float((augmentations or {}).get(name, TRAINING_DEFAULTS[name]))
        for name in AUGMENTATIONS
    }
    _refuse_if(
        {
            "imgsz": imgsz_problem(imgsz),
            "seeds": seeds_problem(seeds),
            "optimizer": optimizer_problem(optimizer),
            "lr0": lr0_problem(lr0) if lr0 is not None else None,
            **{name: augmentation_problem(name, value) for name, value in augment.items()},
        }
    )
    clean = labels_clean(values=labels or {})
    dataset = _ready_dataset(owner=owner, dataset_id=dataset_id)
    base_version = training_base_resolve(user=owner, model=model)
    spec: dict[str, Any] = {
        "dataset": str(dataset.path),
        "model": base_version.fingerprint if base_version else model,
        "epochs": epochs,
        "imgsz": imgsz,
        "batch": batch,
        "seeds": list(seeds),
        "patience": patience,
        "optimizer": optimizer,
        **augment,
    }
    if lr0 is not None:
        spec["lr0"] = lr0
    gpus_check(gpus=gpus)  # 409 RESOURCE_UNAVAILABLE when no host has that many
    return _job_create(
        owner=owner,
        kind=JobKind.TRAIN,
        spec=spec,
        gpus=gpus,
        dataset=dataset,
        model_version=base_version,
        name=clean.get("name", ""),
        tags=tags_stored(clean.get("tags", [])),
        note=clean.get("note", ""),
    )


def job_create_export(
    *,
    owner: AbstractBaseUser,
    version: ModelVersion,
    fmt: str,
    imgsz: int | None = None,
    half: bool = False,
    dynamic: bool = False,
    int8: bool = False,
    dataset_id: uuid.UUID | str | None = None,
) -> Job:
    """Export a version (ADR 0029). Parity runs on the validation images of `dataset_id`
    or else of the version's training dataset when it is still there (else on the GPU
    service's sample images); INT8 calibrates on that same dataset and needs one."""
    imgsz = imgsz or inference_imgsz(version=version)
    _refuse_if(
        {
            "imgsz": imgsz_problem(imgsz),
            "format": None if fmt in ExportFormat.values else f"One of {ExportFormat.values}.",
            "int8": _int8_problem(fmt) if int8 else None,
        }
    )
    source = version.source_job
    if dataset_id is not None:
        dataset: Dataset | None = _ready_dataset(owner=owner, dataset_id=dataset_id)
    else:
        dataset = source.dataset if source is not None else None
    if int8 and dataset is None:
        message = (
            "INT8 calibrates on the version's training dataset, and none is known for this "
            "version (imported weights?): name a ready `dataset` to calibrate on."
        )
        raise ValidationFailed(details={"fields": {"dataset": [message]}})
    spec: dict[str, Any] = {
        "model": version.fingerprint,
        "format": fmt,
        "imgsz": imgsz,
        "half": half,
        "dynamic": dynamic,
        "int8": int8,
    }
    if dataset is not None:
        spec["dataset"] = str(dataset.path)
    return _job_create(owner=owner, kind=JobKind.EXPORT, spec=spec, gpus=1, model_version=version)


# Ultralytics quantises to INT8 only for OpenVINO (with NNCF) and TensorRT; it would
# ignore the flag for the others, so asking is refused rather than silently FP32.
INT8_FORMATS = ("openvino", "engine")


def _int8_problem(fmt: str) -> str | None:
    if fmt in INT8_FORMATS:
        return None
    return (
        f"INT8 is available for OpenVINO and TensorRT exports only; ultralytics does not "
        f"quantise {fmt}. Export without int8, or choose openvino."
    )


EVALUATION_SPLITS = ("train", "val", "test")


def job_create_evaluation(
    *,
    owner: AbstractBaseUser,
    version_id: uuid.UUID | str,
    dataset_id: uuid.UUID | str,
    split: str = "val",
    imgsz: int | None = None,
    conf: float = 0.001,
    iou: float = 0.7,
) -> Job:
    """Evaluate a model version on a split of a dataset with ultralytics' validator
    (ADR 0042). Unset, the image size is the one the version was trained at."""
    try:
        version = model_version_get(user=owner, version_id=version_id)
    except NotFound as exc:
        message = "No such model version."
        raise ValidationFailed(details={"fields": {"model_version": [message]}}) from exc
    if version.stage == Stage.RETIRED:
        message = "That version is retired."
        raise ValidationFailed(details={"fields": {"model_version": [message]}})
    imgsz = imgsz or version.imgsz or 640
    _refuse_if({"imgsz": imgsz_problem(imgsz)})
    dataset = _ready_dataset(owner=owner, dataset_id=dataset_id)
    if split not in (dataset.splits or {}):
        present = ", ".join(s for s in EVALUATION_SPLITS if s in (dataset.splits or {}))
        message = f"The dataset has no {split} split (it has: {present or 'none'})."
        raise ValidationFailed(details={"fields": {"split": [message]}})
    spec: dict[str, Any] = {
        "model": version.fingerprint,
        "dataset": str(dataset.path),
        "split": split,
        "imgsz": imgsz,
        "conf": conf,
        "iou": iou,
    }
    return _job_create(
        owner=owner,
        kind=JobKind.EVALUATE,
        spec=spec,
        gpus=1,
        dataset=dataset,
        model_version=version,
    )


def _ready_dataset(*, owner: AbstractBaseUser, dataset_id: uuid.UUID | str) -> Dataset:
    """A dataset `owner` sees, ready to use, or a ValidationFailed on `dataset`."""
    try:
        dataset = dataset_get(user=owner, dataset_id=dataset_id)
    except NotFound as exc:
        raise ValidationFailed(details={"fields": {"dataset": ["No such dataset."]}}) from exc
    if dataset.state != DatasetState.READY:
        raise ValidationFailed(
            details={"fields": {"dataset": [f"The dataset is {dataset.state}; it must be ready."]}}
        )
    return dataset


def job_create_inference(
    *,
    owner: AbstractBaseUser,
    version: ModelVersion,
    images: list[UploadedFile],
    conf: float,
    iou: float,
    imgsz: int | None = None,
    fmt: str | None = None,
    slicing: dict[str, Any] | None = None,
    media: UploadedFile | None = None,
    video_options: dict[str, Any] | None = None,
) -> Job:
    """Store the images where the GPU service can read them, then create the job.

    `fmt` runs the version's weights (`pt`) or its export in that format; unset, the
    version's serving format. `slicing` asks for sliced inference (SAHI). `media` is a
    video (mp4, webm, avi; sampled as `video_options` say) or a zip of images, instead of
    `images` (ADR 0030). Without `imgsz`, the size the version was trained at (ADR 0045).
    """
    if not model_version_visible_to(user=owner, version=version):
        # Another user's candidate (registry/visibility.py): like a missing version.
        raise NotFound("No such model version.")
    if media is not None:
        if images:
            raise ValidationFailed(
                details={"fields": {"media": ["Send images or one video or zip, not both."]}}
            )
        images = []
    elif not images:
        raise ValidationFailed(details={"fields": {"images": ["At least one image."]}})
    if len(images) > settings.CARRIL_INFER_MAX_IMAGES:
        raise ValidationFailed(
            details={"fields": {"images": [f"At most {settings.CARRIL_INFER_MAX_IMAGES}."]}}
        )
    imgsz = imgsz or inference_imgsz(version=version)
    _refuse_if({"imgsz": imgsz_problem(imgsz)})
    job_id = uuid.uuid4()
    folder = Path(settings.CARRIL_STORAGE) / "uploads" / "infer" / str(job_id)
    folder.mkdir(parents=True)
    try:
        paths = [_image_store(upload, folder=folder, index=i) for i, upload in enumerate(images)]
        spec: dict[str, Any] = {
            "model": version.fingerprint,
            "images": [str(p) for p in paths],
            "conf": conf,
            "iou": iou,
            "imgsz": imgsz,
        }
        if media is not None:
            stored = media_store(media, folder=folder)
            # Refused here, not at delivery: an undecodable or too long video gets a 400
            # and no job (ADR 0048).
            media_probe(
                path=stored,
                name=media.name or stored.name,
                max_seconds=(video_options or {}).get("max_seconds", 600),
            )
            spec.update(media_spec(stored, video_options or {}))
        fmt = fmt or version.serving_format
        if fmt != "pt":
            if not version.exports.filter(format=fmt, parity_passed=True).exists():
                raise ValidationFailed(
                    f"This version has no {fmt} export that passed its parity check.",
                    details={"fields": {"format": ["Export it first."]}},
                )
            spec["format"] = fmt
        if slicing:
            spec["slice"] = slicing
        return _job_create(
            owner=owner,
            kind=JobKind.INFER,
            spec=spec,
            gpus=1,
            model_version=version,
            job_id=job_id,
        )
    except Exception:
        shutil.rmtree(folder, ignore_errors=True)
        raise


VIDEO_SUFFIXES = {".mp4", ".webm", ".avi"}
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".webp"}


def media_store(upload: UploadedFile, *, folder: Path) -> Path:
    """A video or a zip of images, stored under a name of our own; a zip is refused here
    when a member name would leave its folder or is not an image (the GPU service then
    checks both again, and decodes the video: `media_probe`)."""
    suffix = Path(upload.name or "").suffix.lower()
    if suffix not in VIDEO_SUFFIXES | {".zip"}:
        raise ValidationFailed(
            "Send an mp4, webm or avi video, or a zip of images.",
            details={"fields": {"media": [upload.name or "?"]}},
        )
    path = folder / f"media{suffix}"
    with open(path, "wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    if suffix == ".zip":
        _zip_refuse_if_unsafe(path, name=upload.name or "zip")
    path.chmod(0o600)
    return path


def _zip_refuse_if_unsafe(path: Path, *, name: str) -> None:
    def refuse(problem: str) -> ValidationFailed:
        return ValidationFailed(f"{name}: {problem}", details={"fields": {"media": [problem]}})

    if not zipfile.is_zipfile(path):
        raise refuse("not a zip file")
    with zipfile.ZipFile(path) as zf:
        members = [m for m in zf.infolist() if not m.is_dir()]
        for member in members:
            pure = PurePosixPath(member.filename)
            if "\\" in member.filename or pure.is_absolute() or ".." in pure.parts:
                raise refuse(f"unsafe name in the zip: {member.filename!r}")
            if pure.suffix.lower() not in IMAGE_SUFFIXES:
                raise refuse(f"not an image: {member.filename!r}")
        if not members:
            raise refuse("the zip holds no images")


def media_spec(path: Path, video_options: dict[str, Any]) -> dict[str, Any]:
    if path.suffix == ".zip":
        return {"images": [], "archive": str(path)}
    return {"images": [], "video": {"path": str(path), **video_options}}


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
    path.chmod(0o600)
    return path


def _job_create(
    *,
    owner: AbstractBaseUser,
    kind: str,
    spec: dict[str, Any],
    gpus: int,
    dataset: Dataset | None = None,
    model_version: ModelVersion | None = None,
    job_id: uuid.UUID | None = None,
    **labels: str,
) -> Job:
    with transaction.atomic():
        quota_check(owner=owner, gpus=gpus)  # 429 QUOTA_EXCEEDED, nothing created
        job = Job.objects.create(
            id=job_id or uuid.uuid4(),
            owner=owner,
            kind=kind,
            spec=spec,
            gpus=gpus,
            dataset=dataset,
            model_version=model_version,
            request_id=request_id_get() or "",
            **labels,
        )
        transaction.on_commit(lambda: delivery.job_dispatch(job_id=job.id))
    return job


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
        raise Conflict(job_state_sentence(job.state, consequence="it cannot be cancelled"))
    record = delivery.cancel_deliver(job_id=job.id)
    if record is not None:
        reconciler.job_apply_remote(job_id=job.id, record=record)
    job.refresh_from_db()
    return job
