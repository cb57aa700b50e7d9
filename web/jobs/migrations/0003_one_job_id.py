"""One job id (issue 11), the rows: Job.id becomes the GPU service's job id everywhere.

What happens to the rows written before, which the GPU service knew by an id of its own
(and by the web's id as their idempotency key):

- The GPU service, when it starts with the same release, renames those journal records
  to the web's id and links `jobs/<id>` to the old folder `jobs/<old gpu id>`, which it
  keeps (results written then hold paths inside it). Unfinished jobs (queued, running,
  cancelling) therefore stay known under the web's id and are left as they are here:
  upgrade the web app and the GPU service together.
- Every delivered row gets the same link if it is not there yet (whichever service
  migrates first makes it), and the absolute paths in its result (weights, manifest,
  annotated images) are rewritten to `jobs/<id>/...`, so logs, artifacts and detections
  are found under the one id. Nothing is moved or deleted.
- Jobs not yet delivered (submitted): nothing to do; they are delivered with their own id.

Reversing puts `gpu_job_id = str(id)` back on delivered rows; links and paths stay.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import migrations
from django.utils import timezone

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
        "id", "gpu_job_id", "result", "dispatched_at", "updated_at"
    )
    for job in rows.iterator():
        old, new = job.gpu_job_id, str(job.id)
        fields: dict[str, Any] = {}
        if job.dispatched_at is None:
            fields["dispatched_at"] = job.updated_at or now
        if old != new and _safe(old):
            link, target = jobs_root / new, jobs_root / old
            if target.is_dir() and not link.exists() and not link.is_symlink():
                link.symlink_to(old, target_is_directory=True)
            if job.result is not None:
                fields["result"] = _rewrite(job.result, f"{target}/", f"{link}/")
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
