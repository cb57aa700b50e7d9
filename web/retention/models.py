"""Pins: a retired version an administrator keeps, whose weights retention never deletes."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class RetentionPin(models.Model):
    model_version = models.OneToOneField(
        "registry.ModelVersion", on_delete=models.CASCADE, related_name="retention_pin"
    )
    reason = models.TextField(blank=True)
    pinned_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"pin on {self.model_version}"
