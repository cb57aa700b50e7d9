"""The one writer of usage rows: what the reconciler read in a job's status record."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from django.utils.dateparse import parse_datetime

from usage.models import AttemptUsage


def usage_record(*, job_id: uuid.UUID | str, usage: Iterable[dict[str, Any]]) -> int:
    """Store the attempts not stored yet (an attempt's record never changes once the
    GPU service wrote it); how many were new."""
    known = set(AttemptUsage.objects.filter(job_id=job_id).values_list("attempt", flat=True))
    rows = [
        AttemptUsage(
            job_id=job_id,
            attempt=int(item["attempt"]),
            gpus=int(item["gpus"]),
            held_from=_when(item["held_from"]),
            held_until=_when(item["held_until"]),
            gpu_seconds=float(item["gpu_seconds"]),
            energy_wh=float(item["energy_wh"]),
            energy_source=str(item["energy_source"]),
            gpu_model=str(item.get("gpu_model") or "")[:200],
        )
        for item in usage
        if int(item["attempt"]) not in known
    ]
    # Two reconcilers may read the same record: the unique (job, attempt) settles it.
    AttemptUsage.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)


def _when(value: Any):
    return parse_datetime(value) if isinstance(value, str) else value
