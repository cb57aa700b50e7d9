"""Explicit input and output serializers, one family per entity."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from jobs.labels import NAME_MAX, NOTE_MAX, TAG_MAX, TAGS_MAX
from jobs.models import Job
from jobs.services import (
    AUGMENTATIONS,
    EVALUATION_SPLITS,
    OPTIMIZERS,
    TRAINING_DEFAULTS,
    TRAINING_LIMITS,
    augmentation_problem,
    imgsz_problem,
    lr0_problem,
    optimizer_problem,
    seeds_problem,
)
from registry.exports import manifest_public
from registry.models import ExportFormat, ServingFormat, Stage
from rest_framework import serializers

from api import documents
from api.scopes import SCOPES

# --- accounts ---------------------------------------------------------------------------


class TokenObtainIn(serializers.Serializer):
    username = serializers.CharField()
    password = serializers.CharField(style={"input_type": "password"}, trim_whitespace=False)
    name = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=100,
        help_text="replaces your active token of this name (default `api`)",
    )


class TokenObtainOut(serializers.Serializer):
    token = serializers.CharField(help_text="shown once; send as `Authorization: Token <token>`")
    id = serializers.IntegerField()
    prefix = serializers.CharField()
    name = serializers.CharField()
    expires_at = serializers.DateTimeField(help_text="CARRIL_TOKEN_TTL_DAYS after creation")
    scopes = serializers.ListField(
        child=serializers.CharField(), help_text="empty: all of the user's rights"
    )


class TokenCreateIn(serializers.Serializer):
    name = serializers.CharField(required=False, allow_blank=True, max_length=100)
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=list(SCOPES)),
        required=False,
        allow_empty=False,
        help_text="administrators: a token limited to these scopes (a CI token); with a "
        "scoped token: some of its own scopes (default: all of its own)",
    )
    user = serializers.CharField(
        required=False,
        max_length=150,
        help_text="administrators: the username it is for (a scoped token: only its own)",
    )


class TokenOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    prefix = serializers.CharField()
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)
    active = serializers.BooleanField(source="is_active")
    scopes = serializers.ListField(child=serializers.CharField())


# --- datasets ---------------------------------------------------------------------------


class DatasetCreateIn(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    file = serializers.FileField(help_text="a zip of a YOLO detection dataset")


class DatasetOut(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    owner = serializers.CharField(source="owner.username")
    classes = serializers.ListField(child=serializers.CharField())
    splits = serializers.DictField(
        help_text="per split (train, val, test): {images, labels, instances, "
        "background_images, per_class: {class name: instances}}; given here only, also for an "
        "`invalid` dataset (what was found)"
    )
    report = serializers.DictField(
        help_text="{valid, totals, per_class, auto_split, problems: [{code, message, file, "
        "line, details?}], problems_total, warnings: [{code, message, file, details?}]}; "
        "codes in docs/api-errors.md"
    )
    size_bytes = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    state = serializers.ChoiceField(
        choices=["validating", "ready", "invalid"],
        help_text="`validating` after the upload; then `ready`, or `invalid` with `report`",
    )
    progress = serializers.DictField(
        help_text="while validating: {stage: queued|extracting|checking, done, total}"
    )
    url = serializers.SerializerMethodField()

    def get_url(self, dataset) -> str:
        return f"/api/v1/datasets/{dataset.id}/"


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
    imgsz = serializers.IntegerField(
        allow_null=True, help_text="the size it was trained at; inference's default"
    )
    metrics = serializers.DictField()
    did_not_learn = serializers.BooleanField(help_text="its training's best fitness was 0")
    warnings = serializers.ListField(
        child=serializers.CharField(), help_text="codes: `did_not_learn`"
    )
    stage = serializers.CharField()
    serving_format = serializers.CharField()
    created_at = serializers.DateTimeField()


class ModelVersionDetailOut(ModelVersionOut):
    events = ModelEventOut(many=True)


class ModelImportIn(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    file = serializers.FileField(help_text="an ultralytics .pt checkpoint")


class GateRequireIn(serializers.Serializer):
    metric = serializers.ChoiceField(choices=["precision", "recall", "mAP50", "mAP50-95"])
    over = serializers.ChoiceField(choices=["serving"], default="serving")
    min_improvement = serializers.FloatField(default=0.0, min_value=-1.0, max_value=1.0)
    dataset = serializers.UUIDField(
        required=False,
        allow_null=True,
        help_text="compare evaluate jobs on this dataset when both versions have one",
    )
    allow_did_not_learn = serializers.BooleanField(
        default=False,
        help_text="the override: a candidate whose training did not learn (best fitness 0)"
        " is refused without it",
    )


class ModelStageIn(serializers.Serializer):
    stage = serializers.ChoiceField(choices=Stage.values)
    reason = serializers.CharField(max_length=2000)
    require = GateRequireIn(
        required=False,
        help_text="a promotion gate, checked with the stage change: 409 GATE_FAILED if the"
        " candidate does not beat the serving version by `min_improvement` on `metric`",
    )


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
    format = serializers.ChoiceField(choices=ExportFormat.choices)
    imgsz = serializers.IntegerField(min_value=32, max_value=2048, required=False)
    half = serializers.BooleanField(default=False)
    dynamic = serializers.BooleanField(default=False)
    int8 = serializers.BooleanField(
        default=False,
        help_text="INT8 quantisation (openvino; engine on a CUDA host), calibrated on the "
        "version's training dataset or on `dataset`",
    )
    dataset = serializers.UUIDField(
        required=False,
        help_text="a ready dataset to calibrate INT8 on and check parity with, instead of "
        "the version's training dataset",
    )


class ModelServingFormatIn(serializers.Serializer):
    format = serializers.ChoiceField(choices=ServingFormat.choices)


# --- jobs -------------------------------------------------------------------------------


def _limited(name: str, **kwargs: Any) -> serializers.IntegerField:
    """An integer field bounded as `jobs.services` says."""
    low, high = TRAINING_LIMITS[name]
    return serializers.IntegerField(min_value=low, max_value=high, **kwargs)


def _rule(problem: str | None) -> None:
    if problem:
        raise serializers.ValidationError(problem)


def _checked_by(problem: Any) -> Any:
    """A field validator from one of `jobs.services`' rules (the form uses the same)."""

    def validate(value: Any) -> None:
        _rule(problem(value))

    return validate


def _augmentation(name: str) -> serializers.FloatField:
    return serializers.FloatField(
        default=TRAINING_DEFAULTS[name],
        validators=[_checked_by(lambda value: augmentation_problem(name, value))],
        help_text=f"{AUGMENTATIONS[name][0]:g} to {AUGMENTATIONS[name][1]:g}",
    )


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
    epochs = _limited("epochs", default=TRAINING_DEFAULTS["epochs"])
    imgsz = _limited("imgsz", default=TRAINING_DEFAULTS["imgsz"], help_text="a multiple of 32")
    batch = _limited("batch", default=TRAINING_DEFAULTS["batch"])
    seeds = serializers.ListField(
        child=serializers.IntegerField(),
        default=lambda: list(TRAINING_DEFAULTS["seeds"]),
        help_text="one to five, distinct",
    )
    gpus = _limited("gpus", default=TRAINING_DEFAULTS["gpus"])
    patience = _limited(
        "patience",
        default=TRAINING_DEFAULTS["patience"],
        help_text="early stopping: epochs without validation improvement; 0 = off",
    )
    optimizer = serializers.CharField(
        default=TRAINING_DEFAULTS["optimizer"],
        validators=[_checked_by(optimizer_problem)],
        help_text=f"one of {', '.join(OPTIMIZERS)}",
    )
    lr0 = serializers.FloatField(
        required=False,
        allow_null=True,
        validators=[_checked_by(lr0_problem)],
        help_text="initial learning rate; unset: the optimizer chooses; given with `auto`: SGD",
    )
    mosaic = _augmentation("mosaic")
    fliplr = _augmentation("fliplr")
    hsv_h = _augmentation("hsv_h")
    hsv_s = _augmentation("hsv_s")
    hsv_v = _augmentation("hsv_v")
    scale = _augmentation("scale")
    degrees = _augmentation("degrees")
    name = serializers.CharField(
        max_length=NAME_MAX, required=False, allow_blank=True, help_text="what you call the run"
    )
    tags = serializers.ListField(
        child=serializers.CharField(max_length=TAG_MAX),
        max_length=TAGS_MAX,
        required=False,
        help_text=f"up to {TAGS_MAX} slugs (letters, digits, '-', '_'), lower-cased",
    )
    note = serializers.CharField(max_length=NOTE_MAX, required=False, allow_blank=True)

    def validate_seeds(self, value: list[int]) -> list[int]:
        _rule(seeds_problem(value))
        return value


class InferIn(_ImgszRule, serializers.Serializer):
    images = serializers.ListField(child=serializers.FileField(), required=False, default=list)
    media = serializers.FileField(
        required=False, help_text="instead of images: a video (mp4, webm, avi) or a zip of images"
    )
    fps = serializers.FloatField(min_value=0.01, max_value=60, default=2.0)
    max_seconds = serializers.FloatField(min_value=1, max_value=7200, default=600)
    max_frames = serializers.IntegerField(min_value=1, max_value=10000, default=600)
    model_version = serializers.UUIDField(required=False, allow_null=True)
    conf = serializers.FloatField(min_value=0, max_value=1, default=0.25)
    iou = serializers.FloatField(min_value=0, max_value=1, default=0.7)
    imgsz = _limited(
        "imgsz",
        required=False,
        allow_null=True,
        help_text="a multiple of 32; default: the size the model version was trained at",
    )
    format = serializers.ChoiceField(
        choices=ServingFormat.choices,
        required=False,
        help_text="the weights or an export that passed parity; default: the serving format",
    )
    slice_size = serializers.IntegerField(
        min_value=32, max_value=4096, required=False, help_text="sliced inference: tile size"
    )
    overlap = serializers.FloatField(min_value=0, max_value=0.8, default=0.2)
    merge = serializers.ChoiceField(choices=["greedy_nmm", "nmm", "nms"], default="greedy_nmm")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # What to run on comes before which model: a request with nothing to infer on is
        # the caller's mistake, whatever is serving.
        if not attrs.get("images") and attrs.get("media") is None:
            raise serializers.ValidationError(
                {"images": ["At least one image, or a video or zip in `media`."]}
            )
        return super().validate(attrs)


class EvaluateIn(_ImgszRule, serializers.Serializer):
    """An evaluation request (ADR 0042); the service checks the version, the dataset and
    its split."""

    model_version = serializers.UUIDField()
    dataset = serializers.UUIDField()
    split = serializers.ChoiceField(choices=list(EVALUATION_SPLITS), default="val")
    imgsz = _limited(
        "imgsz", required=False, help_text="a multiple of 32; default: the version's training size"
    )
    conf = serializers.FloatField(min_value=0, max_value=1, default=0.001)
    iou = serializers.FloatField(min_value=0, max_value=1, default=0.7)


class JobLabelsIn(serializers.Serializer):
    """What `PATCH /api/v1/jobs/{id}/` may change: nothing but these three."""

    name = serializers.CharField(max_length=NAME_MAX, required=False, allow_blank=True)
    tags = serializers.ListField(
        child=serializers.CharField(max_length=TAG_MAX), max_length=TAGS_MAX, required=False
    )
    note = serializers.CharField(max_length=NOTE_MAX, required=False, allow_blank=True)


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
    name = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField(), source="tag_list")
    note = serializers.CharField()
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
    notes = serializers.SerializerMethodField(
        help_text="sentences on how it ran: an inference at another size than the model's "
        "training, a training that did not learn"
    )
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

    def get_notes(self, job: Job) -> list[str]:
        return documents.job_notes(job=job)


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


class EvaluationOut(serializers.Serializer):
    """A job's evaluation document, as the GPU service wrote it (`jobs.evaluation`; ADR
    0042): ultralytics' validator's numbers. Artifact paths are relative to the job's
    folder: `/api/v1/jobs/{id}/artifacts/<path>` serves them."""

    version = serializers.IntegerField()
    source = serializers.ChoiceField(choices=["training", "evaluate"])
    split = serializers.CharField()
    imgsz = serializers.IntegerField()
    conf = serializers.FloatField()
    iou = serializers.FloatField()
    seed = serializers.IntegerField(allow_null=True, help_text="a training's best seed")
    metrics = serializers.DictField(
        child=serializers.FloatField(), help_text="precision, recall, mAP50, mAP50-95"
    )
    per_class = serializers.ListField(
        child=serializers.DictField(),
        help_text="class_id, class_name, images, instances, precision, recall, mAP50, "
        "mAP50-95 (null for a class with no ground truth in the split)",
    )
    confusion_matrix = serializers.DictField(
        help_text="labels (background last), counts[predicted][true]"
    )
    curves = serializers.DictField(
        help_text="confidence (101 points) and per-class precision, recall, f1 against it; "
        "pr: recall (101 points) and per-class precision"
    )
    samples = serializers.ListField(
        child=serializers.DictField(), help_text="image, artifact, ground_truth, predictions"
    )
    plots = serializers.ListField(child=serializers.CharField(), help_text="ultralytics' images")


class GpusOut(serializers.Serializer):
    available = serializers.BooleanField()
    runtime = serializers.CharField(allow_null=True)
    gpus = serializers.ListField(child=serializers.DictField())
    queue = serializers.ListField(child=serializers.DictField())
    fetched_at = serializers.CharField(allow_null=True)
    error = serializers.CharField(allow_null=True)


# --- webhooks ---------------------------------------------------------------------------


class WebhookIn(serializers.Serializer):
    url = serializers.URLField(max_length=500, help_text="http(s); no private addresses")
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=["job.finished", "model.stage_changed"]),
        min_length=1,
    )
    all_users = serializers.BooleanField(default=False, help_text="administrators only")
    allow_private = serializers.BooleanField(
        default=False, help_text="administrators only: allow loopback and private addresses"
    )


class WebhookOut(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.CharField()
    events = serializers.ListField(child=serializers.CharField())
    all_users = serializers.BooleanField()
    allow_private = serializers.BooleanField()
    active = serializers.BooleanField()
    created_at = serializers.DateTimeField()


class WebhookCreatedOut(WebhookOut):
    secret = serializers.CharField(
        help_text="shown once: verify X-Carril-Signature (sha256=HMAC-SHA256 of the body)"
    )


class WebhookDeliveryOut(serializers.Serializer):
    id = serializers.IntegerField()
    event = serializers.CharField()
    event_key = serializers.CharField()
    state = serializers.CharField()
    attempts = serializers.IntegerField()
    last_status_code = serializers.IntegerField(allow_null=True)
    last_error = serializers.CharField()
    next_attempt_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    delivered_at = serializers.DateTimeField(allow_null=True)
    payload = serializers.DictField()
