"""A validated YOLO detection dataset stored under CARRIL_STORAGE/datasets/<id>/."""

from __future__ import annotations

import uuid
from pathlib import Path

from django.conf import settings
from django.db import models


class DatasetState(models.TextChoices):
    VALIDATING = "validating"  # received; being checked outside the request (ADR 0025)
    READY = "ready"  # valid, stored under datasets/<id>/, usable for training
    INVALID = "invalid"  # refused; `report` says why, no files are kept


class Dataset(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="datasets"
    )
    name = models.CharField(max_length=200)
    classes = models.JSONField(default=list)
    # {"train": {"images", "labels", "instances", "background_images", "per_class"}, ...}:
    # the per-split counts, given once (the report holds totals, problems and warnings).
    splits = models.JSONField(default=dict)
    report = models.JSONField(default=dict)
    size_bytes = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    state = models.CharField(
        max_length=16, choices=DatasetState.choices, default=DatasetState.READY
    )
    # While validating: {"stage": "extracting" | "checking", "done": n, "total": m}.
    progress = models.JSONField(default=dict, blank=True)
    # Which process validates it, until when (renewed as it goes); a lapsed claim means
    # that process died and another one takes the validation over.
    claimed_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"

    @property
    def path(self) -> Path:
        """The folder both services see; the GPU service reads `data.yaml` in it."""
        return Path(settings.CARRIL_STORAGE) / "datasets" / str(self.id)

    @property
    def data_yaml(self) -> Path:
        return self.path / "data.yaml"
