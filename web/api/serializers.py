"""Explicit input and output serializers, one family per entity."""

from __future__ import annotations

from typing import Any

from jobs.models import Job
from jobs.services import TRAINING_LIMITS, imgsz_problem, seeds_problem
from registry.models import Stage
from rest_framework import serializers

from api import documents

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
    created_at = serializers.DateTimeField()


class ModelVersionDetailOut(ModelVersionOut):
    events = ModelEventOut(many=True)


class ModelImportIn(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    file = serializers.FileField(help_text="an ultralytics .pt checkpoint")


class ModelStageIn(serializers.Serializer):
    stage = serializers.ChoiceField(choices=Stage.values)
    reason = serializers.CharField(max_length=2000)


# --- jobs -------------------------------------------------------------------------------


def _limited(name: str, **kwargs: Any) -> serializers.IntegerField:
    """An integer field bounded as `jobs.services` says."""
    low, high = TRAINING_LIMITS[name]
    return serializers.IntegerField(min_value=low, max_value=high, **kwargs)


def _rule(problem: str | None) -> None:
    if problem:
        raise serializers.ValidationError(problem)


class _ImgszRule:
    def validate_imgsz(self, value: int) -> int:
        _rule(imgsz_problem(value))
        return value


class TrainIn(_ImgszRule, serializers.Serializer):
    """A training request. Its rules are `jobs.services`', which the UI's form shares;
    the service checks the dataset and the model."""

    dataset = serializers.UUIDField()
    model = serializers.CharField(
        max_length=100, help_text="an architecture name (yolov8n...) or a model version id"
    )
    epochs = _limited("epochs", default=10)
    imgsz = _limited("imgsz", default=640, help_text="a multiple of 32")
    batch = _limited("batch", default=16)
    seeds = serializers.ListField(
        child=serializers.IntegerField(), default=lambda: [42], help_text="one to five, distinct"
    )
    gpus = _limited("gpus", default=1)
    lr0 = serializers.FloatField(min_value=0, max_value=1, required=False)
    patience = _limited("patience", required=False)

    def validate_seeds(self, value: list[int]) -> list[int]:
        _rule(seeds_problem(value))
        return value


class InferIn(_ImgszRule, serializers.Serializer):
    images = serializers.ListField(child=serializers.FileField(), min_length=1)
    model_version = serializers.UUIDField(required=False, allow_null=True)
    conf = serializers.FloatField(min_value=0, max_value=1, default=0.25)
    iou = serializers.FloatField(min_value=0, max_value=1, default=0.7)
    imgsz = _limited("imgsz", default=640, help_text="a multiple of 32")


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

    # The fields are the status document's (`api.documents`), which builds them.
    def get_url(self, job: Job) -> str:
        return documents.job_url(job=job)

    def get_params(self, job: Job) -> dict[str, Any]:
        return documents.job_params(job=job)

    def get_registered_model_version(self, job: Job) -> str | None:
        return documents.job_registered_model_version(job=job)

    def get_progress(self, job: Job) -> dict[str, Any]:
        return documents.job_progress(job=job)

    def get_result(self, job: Job) -> dict[str, Any] | None:
        return documents.job_result_public(job=job)

    def get_error(self, job: Job) -> dict[str, str] | None:
        return documents.job_error(job=job)

    def get_delivery(self, job: Job) -> dict[str, Any]:
        return documents.job_delivery(job=job)


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
