"""GPU usage as the web app keeps it (issue 16): one row per attempt of a job that held
lanes, copied from the GPU service's journal (the job status record's `usage`).

The GPU service's journal is the source; these rows outlive its pruning of old records
so monthly sums stay whole. Written only by `usage.services.usage_record`.
"""

from __future__ import annotations

from django.db import models


class AttemptUsage(models.Model):
    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, related_name="usage")
    attempt = models.PositiveIntegerField()
    gpus = models.PositiveIntegerField()
    held_from = models.DateTimeField()
    # Sums by day and month count an attempt where its lanes were released.
    held_until = models.DateTimeField(db_index=True)
    gpu_seconds = models.FloatField()
    energy_wh = models.FloatField()
    energy_source = models.CharField(max_length=16)  # "measured" or "modelled"
    gpu_model = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "attempt"], name="usage_one_row_per_attempt")
        ]

    def __str__(self) -> str:
        return f"{self.job_id} attempt {self.attempt}: {self.gpu_seconds:.0f} GPU-s"


class UserQuota(models.Model):
    """An administrator's overrides for one user. A blank limit takes the default from
    settings (see jobs/quotas.py); 0 is no limit. Written through the API or Django admin."""

    user = models.OneToOneField(
        "auth.User", on_delete=models.CASCADE, related_name="quota", primary_key=True
    )
    max_gpus = models.PositiveIntegerField(
        null=True, blank=True, help_text="GPUs its queued and running jobs may hold at once"
    )
    gpu_hours_per_month = models.FloatField(null=True, blank=True)
    storage_bytes = models.BigIntegerField(
        null=True, blank=True, help_text="datasets, job folders and weights"
    )
    priority = models.IntegerField(
        default=0, help_text="sent with each job; higher runs first (-100..100)"
    )

    def __str__(self) -> str:
        return f"quota of {self.user}"
