"""One job id (issue 11), the rows: Job.id becomes the GPU service's job id everywhere.

What happens to the rows written before, which the GPU service knows by an id of its own:

- Finished jobs (succeeded, failed, cancelled, lost): their storage folder
  `jobs/<old gpu id>` is renamed `jobs/<id>`, and the absolute paths in their result
  (weights, manifest, annotated images) are rewritten to match, so logs, artifacts and
  detections still show. A folder that is missing, or whose new name is taken, is left
  as it is (the job then shows no log or artifacts; nothing is deleted).
- Unfinished delivered jobs (queued, running, cancelling): the web can no longer ask
  about them (the GPU service knows them by the old id), so they are marked `lost` with
  a message saying to resubmit. Upgrade with no job running to avoid this: stop
  submitting, wait for the queue to drain, then migrate. The GPU service may still
  finish such a job; its folder keeps the old id.
- Jobs not yet delivered (submitted): nothing to do; they are delivered with their own id.

Reversing puts `gpu_job_id = str(id)` back on delivered rows; folders keep the new name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import migrations
from django.utils import timezone

TERMINAL = {"succeeded", "failed", "cancelled", "lost"}
UNFINISHED_DELIVERED = {"queued", "running", "cancelling"}
LOST_MESSAGE = (
    "Delivered before the upgrade to one job id; the GPU service knows it by another id. "
    "Resubmit it."
)


def _safe(name: str) -> bool:
    return bool(name) and "/" not in name and "\\" not in name and not name.startswith(".")


def _rewrite(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [_rewrite(item, old, new) for item in value]
    if isinstance(value, dict):
        return {key: _rewrite(item, old, new) for key, item in value.items()}
    return value


def forwards(apps, schema_editor) -> None:
    Job = apps.get_model("jobs", "Job")
    jobs_root = Path(settings.CARRIL_STORAGE) / "jobs"
    now = timezone.now()
    rows = Job.objects.exclude(gpu_job_id="").only(
        "id", "state", "gpu_job_id", "result", "dispatched_at", "updated_at"
    )
    for job in rows.iterator():
        old, new = job.gpu_job_id, str(job.id)
        fields: dict[str, Any] = {}
        if job.dispatched_at is None:
            fields["dispatched_at"] = job.updated_at or now
        if old != new and job.state in TERMINAL and _safe(old):
            source, target = jobs_root / old, jobs_root / new
            if source.is_dir() and not target.exists():
                source.rename(target)
                if job.result is not None:
                    fields["result"] = _rewrite(job.result, f"{source}/", f"{target}/")
        elif old != new and job.state in UNFINISHED_DELIVERED:
            fields.update(
                state="lost",
                error_code="LOST",
                error_message=LOST_MESSAGE,
                finished_at=now,
                cancel_pending=False,
            )
        if fields:
            Job.objects.filter(id=job.id).update(**fields)


def backwards(apps, schema_editor) -> None:
    Job = apps.get_model("jobs", "Job")
    for job in Job.objects.filter(dispatched_at__isnull=False).only("id").iterator():
        Job.objects.filter(id=job.id).update(gpu_job_id=str(job.id))


class Migration(migrations.Migration):
    dependencies = [("jobs", "0002_initial")]

    # The column goes in 0004: on PostgreSQL a table cannot be altered in the transaction
    # that updated its rows while their deferred foreign-key checks are pending.
    operations = [migrations.RunPython(forwards, backwards)]
