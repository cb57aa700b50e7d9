"""Jobs as the web app records them; the GPU service's journal is the other half."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models

from gpu_service.contract import JOB_STATES
from jobs.run_metrics import final_metrics_of


class JobState(models.TextChoices):
    SUBMITTED = "submitted"  # row written; not yet delivered to the GPU service
    QUEUED = "queued"  # the GPU service has it, waiting for its lanes
    RUNNING = "running"  # holding its GPUs
    CANCELLING = "cancelling"  # a cancel was asked for; the GPU service is stopping it
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    LOST = "lost"  # the GPU service no longer knows it (error code LOST)


# The one job-state vocabulary: the server reads these sets, and the job page's script
# gets them in the status document (`job_states_public`), so nothing lists states again.
TERMINAL_STATES = frozenset(
    {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED, JobState.LOST}
)
ACTIVE_STATES = frozenset(set(JobState) - TERMINAL_STATES)
# A person may ask to stop these; `cancelling` already is being stopped.
CANCELLABLE_STATES = frozenset({JobState.SUBMITTED, JobState.QUEUED, JobState.RUNNING})
# Ended without a result, and not because a person asked (that is `cancelled`).
FAILED_STATES = frozenset({JobState.FAILED, JobState.LOST})
# States the GPU service reports (its contract's); `submitted` and `lost` exist only here.
REMOTE_STATES = frozenset(JOB_STATES)


def job_states_public() -> dict[str, list[str]]:
    """The vocabulary as the page's JavaScript receives it."""
    return {
        "terminal": sorted(TERMINAL_STATES),
        "cancellable": sorted(CANCELLABLE_STATES),
        "failure": sorted(FAILED_STATES),
        "success": [JobState.SUCCEEDED.value],
    }


class JobKind(models.TextChoices):
    TRAIN = "train"
    INFER = "infer"
    EXPORT = "export"  # a model version to ONNX, OpenVINO, TorchScript or TensorRT
    EVALUATE = "evaluate"  # ultralytics' validator: a model version on a dataset split


# The kinds whose jobs write an evaluation document when they succeed (ADR 0042).
EVALUATED_KINDS = frozenset({JobKind.TRAIN, JobKind.EVALUATE})


class Job(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="jobs"
    )
    kind = models.CharField(max_length=16, choices=JobKind.choices)
    state = models.CharField(
        max_length=16, choices=JobState.choices, default=JobState.SUBMITTED, db_index=True
    )
    # What is sent to the GPU service: `spec` as its JobSubmit.spec, `gpus` at top level.
    spec = models.JSONField(default=dict)
    gpus = models.PositiveIntegerField(default=1)
    dataset = models.ForeignKey(
        "datasets.Dataset", null=True, blank=True, on_delete=models.SET_NULL, related_name="jobs"
    )
    model_version = models.ForeignKey(
        "registry.ModelVersion",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="jobs",
        help_text="the version an inference uses or a training fine-tunes",
    )
    # Delivery to the GPU service, which knows the job by this row's id (in str form):
    # one id for the journal, the storage folder jobs/<id> and every log line.
    dispatch_attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # A worker that is delivering this job holds it until then (conditional UPDATE claim).
    claimed_until = models.DateTimeField(null=True, blank=True)
    last_dispatch_error = models.TextField(blank=True)
    cancel_pending = models.BooleanField(
        default=False, help_text="a cancel the GPU service has not acknowledged yet"
    )
    # Mirrored from the GPU service by the reconciler.
    progress = models.JSONField(default=dict)
    metrics = models.JSONField(default=dict)
    result = models.JSONField(null=True, blank=True)
    error_code = models.CharField(max_length=64, blank=True)
    error_message = models.TextField(blank=True)
    gpu_ids = models.JSONField(default=list)
    request_id = models.CharField(max_length=128, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # Set once the GPU service has the job: what "delivered" means.
    dispatched_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    # What a person calls a training and how they find it again (issue 13; `jobs.labels`
    # holds the rules). Tags are kept as ",a,b," so "has tag a" is one LIKE on every
    # database (SQLite has no JSON containment).
    name = models.CharField(max_length=100, blank=True)
    tags = models.CharField(max_length=700, blank=True)
    note = models.TextField(blank=True)
    # The best seed's final validation metrics, copied out of `metrics` on every write
    # (`jobs.run_metrics`) so the job list can order and page by them in the database.
    final_metrics = models.JSONField(default=dict)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} {self.id} ({self.state})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.final_metrics = final_metrics_of(metrics=self.metrics, result=self.result)
        if kwargs.get("update_fields") is not None:
            kwargs["update_fields"] = {*kwargs["update_fields"], "final_metrics"}
        super().save(*args, **kwargs)

    @property
    def tag_list(self) -> list[str]:
        return [tag for tag in self.tags.split(",") if tag]

    @property
    def is_terminal(self) -> bool:
        return self.state in TERMINAL_STATES

    @property
    def is_cancellable(self) -> bool:
        return self.state in CANCELLABLE_STATES

    @property
    def delivered(self) -> bool:
        return self.dispatched_at is not None


class ReconcilerStatusRow(models.Manager["ReconcilerStatus"]):
    """The row's only writer: delivery counts its failures here, the reconciler its passes."""

    def _update(self, **fields: object) -> None:
        self.get_or_create(id=1)
        self.filter(id=1).update(**fields)

    def dispatch_failed(self) -> None:
        self._update(dispatch_failures=models.F("dispatch_failures") + 1)

    def pass_done(self, *, at: datetime) -> None:
        self._update(last_pass_at=at)

    def gpus_stored(self, *, snapshot: dict[str, object], at: datetime) -> None:
        self._update(gpus=snapshot, gpus_fetched_at=at, gpus_error="")

    def gpus_failed(self, *, error: str) -> None:
        self._update(gpus_error=error[:200])


class ReconcilerStatus(models.Model):
    """One row: when the reconciler last finished a pass, and delivery failures so far.

    Kept in the database because the reconciler is another process (or container) and
    every web worker's /metrics must report the same numbers.
    """

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    last_pass_at = models.DateTimeField(null=True, blank=True)
    dispatch_failures = models.PositiveBigIntegerField(default=0)
    # The GPU service's last /v1/gpus answer, so pages never wait on the GPU service.
    gpus = models.JSONField(null=True, blank=True)
    gpus_fetched_at = models.DateTimeField(null=True, blank=True)
    gpus_error = models.CharField(max_length=200, blank=True)

    objects = ReconcilerStatusRow()

    def __str__(self) -> str:
        return f"reconciler (last pass {self.last_pass_at})"
