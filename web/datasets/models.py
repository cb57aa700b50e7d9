"""A validated YOLO detection dataset stored under CARRIL_STORAGE/datasets/<id>/."""

from __future__ import annotations

import uuid
from pathlib import Path

from django.conf import settings
from django.db import models


class Dataset(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="datasets"
    )
    name = models.CharField(max_length=200)
    classes = models.JSONField(default=list)
    # {"train": {"images", "labels", "instances", "per_class"}, "val": {...}}
    splits = models.JSONField(default=dict)
    report = models.JSONField(default=dict)
    size_bytes = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

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
