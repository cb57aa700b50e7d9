"""Explicit input and output serializers, one family per entity."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from django.urls import reverse
from jobs.models import Job, JobKind
from jobs.selectors import job_artifact_relpath
from registry.exports import manifest_public
from registry.models import ModelVersion, Stage
from rest_framework import serializers

# --- accounts ---------------------------------------------------------------------------


class TokenObtainIn(serializers.Serializer):
    username = serializers.CharField()
    password = serializers.CharField(style={"input_type": "password"}, trim_whitespace=False)
    name = serializers.CharField(required=False, allow_blank=True, max_length=100)


class TokenObtainOut(serializers.Serializer):
    token = serializers.CharField(help_text="shown once; send as `Authorization: Token <token>`")
    id = serializers.IntegerField()
    prefix = serializers.CharField()


class TokenCreateIn(serializers.Serializer):
    name = serializers.CharField(required=False, allow_blank=True, max_length=100)


class TokenOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    prefix = serializers.CharField()
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)


# --- datasets ---------------------------------------------------------------------------


class DatasetCreateIn(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    file = serializers.FileField(help_text="a zip of a YOLO detection dataset")


class DatasetOut(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    owner = serializers.CharField(source="owner.username")
    classes = serializers.ListField(child=serializers.CharField())
    splits = serializers.DictField()
    report = serializers.DictField()
    size_bytes = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class DatasetSampleOut(serializers.Serializer):
    split = serializers.CharField()
    name = serializers.CharField()
    url = serializers.CharField()
    boxes = serializers.ListField(child=serializers.DictField())


# --- registry ---------------------------------------------------------------------------


class ModelEventOut(serializers.Serializer):
    action = serializers.CharField()
    from_stage = serializers.CharField()
    to_stage = serializers.CharField()
    actor = serializers.CharField(source="actor.username", allow_null=True, default=None)
    reason = serializers.CharField()
    created_at = serializers.DateTimeField()


class ModelVersionOut(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    fingerprint = serializers.CharField()
    source = serializers.CharField()
    source_job = serializers.UUIDField(source="source_job_id", allow_null=True)
    architecture = serializers.CharField()
    task = serializers.CharField()
    class_names = serializers.ListField(child=serializers.CharField())
    imgsz = serializers.IntegerField(allow_null=True)
    metrics = serializers.DictField()
    stage = serializers.CharField()
    serving_format = serializers.CharField()
    created_at = serializers.DateTimeField()


class ModelVersionDetailOut(ModelVersionOut):
    events = ModelEventOut(many=True)


class ModelImportIn(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    file = serializers.FileField(help_text="an ultralytics .pt checkpoint")


class ModelStageIn(serializers.Serializer):
    stage = serializers.ChoiceField(choices=Stage.values)
    reason = serializers.CharField(max_length=2000)


class ModelExportOut(serializers.Serializer):
    id = serializers.UUIDField()
    fingerprint = serializers.CharField()
    format = serializers.CharField()
    parity_passed = serializers.BooleanField()
    job = serializers.UUIDField(source="job_id", allow_null=True)
    created_at = serializers.DateTimeField()
    manifest = serializers.SerializerMethodField(
        help_text="format, opset, imgsz, half/dynamic/int8, source fingerprint, tool "
        "versions, parity; paths relative to storage"
    )
    download_url = serializers.SerializerMethodField()

    def get_manifest(self, export) -> dict:
        return manifest_public(export=export)

    def get_download_url(self, export) -> str:
        url = reverse("api:model-download", kwargs={"version_id": export.model_version_id})
        return f"{url}?format={export.format}"


class ModelExportIn(serializers.Serializer):
    format = serializers.ChoiceField(choices=["onnx", "openvino", "torchscript", "engine"])
    imgsz = serializers.IntegerField(min_value=32, max_value=2048, required=False)
    half = serializers.BooleanField(default=False)
    dynamic = serializers.BooleanField(default=False)
    int8 = serializers.BooleanField(default=False)


class ModelServingFormatIn(serializers.Serializer):
    format = serializers.ChoiceField(choices=["pt", "onnx", "openvino"])


# --- jobs -------------------------------------------------------------------------------


class TrainIn(serializers.Serializer):
    dataset = serializers.UUIDField()
    model = serializers.CharField(
        max_length=100, help_text="an architecture name (yolov8n...) or a model version id"
    )
    epochs = serializers.IntegerField(min_value=1, max_value=1000, default=10)
    imgsz = serializers.IntegerField(min_value=32, max_value=2048, default=640)
    batch = serializers.IntegerField(min_value=1, max_value=1024, default=16)
    seeds = serializers.ListField(
        child=serializers.IntegerField(min_value=0, max_value=2**31 - 1),
        min_length=1,
        max_length=5,
        default=lambda: [42],
    )
    gpus = serializers.IntegerField(min_value=1, max_value=64, default=1)
    lr0 = serializers.FloatField(min_value=0, max_value=1, required=False)
    patience = serializers.IntegerField(min_value=0, max_value=1000, required=False)

    def validate_imgsz(self, value: int) -> int:
        if value % 32:
            raise serializers.ValidationError("Must be a multiple of 32.")
        return value

    def validate_seeds(self, value: list[int]) -> list[int]:
        if len(set(value)) != len(value):
            raise serializers.ValidationError("Seeds must not repeat.")
        return value


class InferIn(serializers.Serializer):
    images = serializers.ListField(child=serializers.FileField(), min_length=1)
    model_version = serializers.UUIDField(required=False, allow_null=True)
    conf = serializers.FloatField(min_value=0, max_value=1, default=0.25)
    iou = serializers.FloatField(min_value=0, max_value=1, default=0.7)
    imgsz = serializers.IntegerField(min_value=32, max_value=2048, default=640)

    def validate_imgsz(self, value: int) -> int:
        if value % 32:
            raise serializers.ValidationError("Must be a multiple of 32.")
        return value


class JobAcceptedOut(serializers.Serializer):
    id = serializers.UUIDField()
    state = serializers.CharField()
    url = serializers.CharField()


class JobOut(serializers.Serializer):
    """The job as the web app knows it. Reading it never waits on the GPU service."""

    id = serializers.UUIDField()
    kind = serializers.CharField()
    state = serializers.CharField()
    owner = serializers.CharField(source="owner.username")
    url = serializers.SerializerMethodField()
    params = serializers.SerializerMethodField()
    gpus = serializers.IntegerField()
    gpu_ids = serializers.ListField(child=serializers.IntegerField())
    dataset = serializers.UUIDField(source="dataset_id", allow_null=True)
    model_version = serializers.UUIDField(source="model_version_id", allow_null=True)
    registered_model_version = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()
    metrics = serializers.DictField()
    result = serializers.SerializerMethodField()
    error = serializers.SerializerMethodField()
    delivery = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    updated_at = serializers.DateTimeField()

    def get_url(self, job: Job) -> str:
        return reverse("api:job-detail", kwargs={"job_id": job.id})

    def get_params(self, job: Job) -> dict[str, Any]:
        params = {k: v for k, v in job.spec.items() if k not in {"dataset", "images"}}
        if job.kind == JobKind.INFER:
            params["images"] = len(job.spec.get("images", []))
        return params

    def get_registered_model_version(self, job: Job) -> str | None:
        if job.kind != JobKind.TRAIN or job.state != "succeeded":
            return None
        fingerprint = ((job.result or {}).get("weights") or {}).get("fingerprint")
        version = ModelVersion.objects.filter(fingerprint=fingerprint).only("id").first()
        return str(version.id) if version else None

    def get_progress(self, job: Job) -> dict[str, Any]:
        progress = job.progress or {}
        keys = ("stage", "seed", "seeds", "epoch", "epochs", "batch", "batches")
        out = {key: progress.get(key) for key in keys}
        out["fraction"] = 1.0 if job.state == "succeeded" else progress.get("fraction", 0.0)
        return out

    def get_result(self, job: Job) -> dict[str, Any] | None:
        return job_result_public(job=job)

    def get_error(self, job: Job) -> dict[str, str] | None:
        if not job.error_code and not job.error_message:
            return None
        return {"code": job.error_code, "message": job.error_message}

    def get_delivery(self, job: Job) -> dict[str, Any]:
        return {
            "attempts": job.dispatch_attempts,
            "next_attempt_at": job.next_attempt_at,
            "last_error": job.last_dispatch_error or None,
            "delivered": bool(job.gpu_job_id),
        }


# The status document without a serializer instance: `GET /api/v1/jobs/{id}/` is what
# every poller calls several times a second. It must read exactly as JobOut (a test
# compares them); JobOut stays the schema and serves lists.
_DATETIME = serializers.DateTimeField()


def _when(value: Any) -> str | None:
    return _DATETIME.to_representation(value) if value is not None else None


def job_public(*, job: Job) -> dict[str, Any]:
    """What JobOut(job).data gives, built directly."""
    out = JobOut()
    return {
        "id": str(job.id),
        "kind": str(job.kind),
        "state": str(job.state),
        "owner": str(job.owner.username),
        "url": out.get_url(job),
        "params": out.get_params(job),
        "gpus": int(job.gpus),
        "gpu_ids": [int(gpu) for gpu in job.gpu_ids] if job.gpu_ids is not None else None,
        "dataset": str(job.dataset_id) if job.dataset_id is not None else None,
        "model_version": str(job.model_version_id) if job.model_version_id is not None else None,
        "registered_model_version": out.get_registered_model_version(job),
        "progress": out.get_progress(job),
        "metrics": (
            {str(key): value for key, value in job.metrics.items()}
            if job.metrics is not None
            else None
        ),
        "result": job_result_public(job=job),
        "error": out.get_error(job),
        "delivery": out.get_delivery(job),
        "created_at": _when(job.created_at),
        "started_at": _when(job.started_at),
        "finished_at": _when(job.finished_at),
        "updated_at": _when(job.updated_at),
    }


# What Django's reverse() leaves unquoted in a path argument; artifact URLs are built
# from a per-job prefix instead of one reverse() per image, and must read the same.
_PATH_SAFE = "!$&'()*+,;=/~:@"


def _artifact_prefix(*, job: Job) -> str:
    return reverse("api:job-artifact", kwargs={"job_id": job.id, "relpath": "-"})[:-1]


def artifact_url(*, job: Job, absolute: str | None, prefix: str | None = None) -> str | None:
    rel = job_artifact_relpath(job=job, absolute=absolute)
    if rel is None:
        return None
    return (prefix or _artifact_prefix(job=job)) + quote(rel, safe=_PATH_SAFE)


def job_result_public(*, job: Job) -> dict[str, Any] | None:
    """The GPU service's result with server paths replaced by URLs this API serves."""
    if job.result is None:
        return None
    result = dict(job.result)
    prefix = _artifact_prefix(job=job)
    if job.kind == JobKind.INFER:
        result["results_url"] = artifact_url(
            job=job, absolute=result.pop("results_path", None), prefix=prefix
        )
        result["images"] = [
            _detections_public(job=job, image=img, prefix=prefix)
            for img in result.get("images", [])
        ]
    else:
        weights = dict(result.get("weights") or {})
        weights.pop("path", None)
        result["weights"] = weights
        result["manifest_url"] = artifact_url(
            job=job, absolute=result.pop("manifest_path", None), prefix=prefix
        )
    return result


def _detections_public(*, job: Job, image: dict[str, Any], prefix: str) -> dict[str, Any]:
    out = dict(image)
    source = out.pop("source", "") or ""
    # Uploaded as 0003_name.jpg; show the name the user gave it.
    name = source.rsplit("/", 1)[-1]
    out["name"] = name.split("_", 1)[1] if "_" in name[:5] else name
    out["annotated_url"] = artifact_url(
        job=job, absolute=out.pop("annotated_path", None), prefix=prefix
    )
    return out


class JobLogsOut(serializers.Serializer):
    job_id = serializers.UUIDField()
    lines = serializers.ListField(child=serializers.CharField())


class DetectionsOut(serializers.Serializer):
    job_id = serializers.UUIDField()
    state = serializers.CharField()
    model = serializers.CharField(allow_null=True)
    images = serializers.ListField(child=serializers.DictField())
    images_per_second = serializers.FloatField(allow_null=True)
    results_url = serializers.CharField(allow_null=True)


class GpusOut(serializers.Serializer):
    available = serializers.BooleanField()
    runtime = serializers.CharField(allow_null=True)
    gpus = serializers.ListField(child=serializers.DictField())
    queue = serializers.ListField(child=serializers.DictField())
    fetched_at = serializers.CharField(allow_null=True)
    error = serializers.CharField(allow_null=True)
