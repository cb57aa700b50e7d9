"""The model registry: fingerprinted model versions and the history of their stages."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class Stage(models.TextChoices):
    CANDIDATE = "candidate"  # registered, not used unless chosen explicitly
    SERVING = "serving"  # the default for inference; at most one at a time
    RETIRED = "retired"  # kept for the record; not offered for new jobs


class Source(models.TextChoices):
    TRAINING = "training"  # best weights of a finished training job
    IMPORT = "import"  # a .pt file an administrator imported


class ModelVersion(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    fingerprint = models.CharField(max_length=64, unique=True)  # sha256 of the weights file
    source = models.CharField(max_length=16, choices=Source.choices)
    source_job = models.ForeignKey(
        "jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    architecture = models.CharField(max_length=100, blank=True)
    task = models.CharField(max_length=32, default="detect")
    class_names = models.JSONField(default=list)
    # The size it was trained at (its training's, or an import's checkpoint's train_args):
    # what inference runs at unless a job asks for another (ADR 0045).
    imgsz = models.PositiveIntegerField(null=True, blank=True)
    # Its training's best fitness was 0 (registry/learning.py): shown everywhere the
    # version is, and refused by the promotion gate (ADR 0045).
    did_not_learn = models.BooleanField(default=False)
    metrics = models.JSONField(default=dict)
    stage = models.CharField(max_length=16, choices=Stage.choices, default=Stage.CANDIDATE)
    # What inference runs on unless a job says otherwise: `pt` or a format with a passing
    # export (ADR 0029); administrators set it.
    serving_format = models.CharField(max_length=16, default="pt")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # One serving version at a time: inference without a choice must be unambiguous.
            models.UniqueConstraint(
                fields=["stage"],
                condition=models.Q(stage="serving"),
                name="registry_one_serving_version",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.fingerprint[:12]}, {self.stage})"

    @property
    def warnings(self) -> list[str]:
        """Codes of what is wrong with the version; `did_not_learn` only, for now."""
        return ["did_not_learn"] if self.did_not_learn else []


class EventAction(models.TextChoices):
    REGISTER = "register"
    PROMOTE = "promote"  # to serving, first time
    ROLLBACK = "rollback"  # back to serving after having served before
    DEMOTE = "demote"  # from serving to candidate (another version was promoted)
    RETIRE = "retire"


class ModelEvent(models.Model):
    """Who changed a version's stage, when, and why (the reason is required)."""

    model_version = models.ForeignKey(ModelVersion, on_delete=models.CASCADE, related_name="events")
    action = models.CharField(max_length=16, choices=EventAction.choices)
    from_stage = models.CharField(max_length=16, blank=True)
    to_stage = models.CharField(max_length=16)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reason = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.action} {self.model_version_id} ({self.reason[:40]})"


class ExportFormat(models.TextChoices):
    ONNX = "onnx"
    OPENVINO = "openvino"
    TORCHSCRIPT = "torchscript"
    ENGINE = "engine"  # TensorRT, built on a CUDA GPU only


class ServingFormat(models.TextChoices):
    """What a version may serve inference from: its weights, or an export that passed
    parity in a format the resident workers load."""

    PT = "pt"
    ONNX = "onnx"
    OPENVINO = "openvino"


SERVING_FORMATS = tuple(ServingFormat.values)
DOWNLOAD_FORMATS = ("pt", *ExportFormat.values)


class ModelExport(models.Model):
    """An export of a model version, as its export job's result described it (ADR 0029).

    The artifact lives on shared storage at `artifact` (relative to storage); `manifest`
    is the GPU service's `contract.ExportManifest`, with storage-relative paths only.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    model_version = models.ForeignKey(
        ModelVersion, on_delete=models.CASCADE, related_name="exports"
    )
    fingerprint = models.CharField(max_length=64, unique=True)  # sha256 of the artifact
    format = models.CharField(max_length=16, choices=ExportFormat.choices)
    artifact = models.CharField(max_length=500)
    manifest = models.JSONField(default=dict)
    parity_passed = models.BooleanField(default=False)
    job = models.ForeignKey(
        "jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.format} export of {self.model_version_id} ({self.fingerprint[:12]})"
