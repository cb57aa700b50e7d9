"""Webhooks: URLs told about job ends and model-stage changes, and the log of each call."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class WebhookEvent(models.TextChoices):
    JOB_FINISHED = "job.finished", "a job ended (succeeded, failed, cancelled, lost)"
    MODEL_STAGE = "model.stage_changed", "a model version changed stage"


class Webhook(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhooks"
    )
    url = models.URLField(max_length=500)
    events = models.JSONField(default=list)
    # Kept to sign each call (HMAC-SHA256); shown to its owner once, at creation.
    secret = models.CharField(max_length=100)
    # An administrator's webhook may follow every user's jobs; others follow their own.
    all_users = models.BooleanField(default=False)
    # Loopback and private addresses are refused (SSRF) unless an administrator allows it.
    allow_private = models.BooleanField(default=False)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.url


class DeliveryState(models.TextChoices):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"  # gave up after the last attempt; redeliver starts again


class WebhookDelivery(models.Model):
    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=40, choices=WebhookEvent.choices)
    # What happened, once: a webhook is told about each event at most once (redeliveries
    # send the same row again).
    event_key = models.CharField(max_length=120)
    payload = models.JSONField()
    state = models.CharField(
        max_length=20, choices=DeliveryState.choices, default=DeliveryState.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["webhook", "event_key"], name="one_delivery_per_event")
        ]
        indexes = [models.Index(fields=["state", "next_attempt_at"])]

    def __str__(self) -> str:
        return f"{self.event_key} -> {self.webhook_id} ({self.state})"
