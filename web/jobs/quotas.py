"""Per-user quotas and fair share (issue 16).

Limits come from settings (`CARRIL_QUOTA_MAX_GPUS`, `CARRIL_QUOTA_GPU_HOURS_PER_MONTH`,
`CARRIL_QUOTA_STORAGE_BYTES`; 0 = no limit) unless an administrator set
the user's own (`usage.models.UserQuota`). A new job is checked before its row exists:
over a limit it is refused with QUOTA_EXCEEDED naming the quota, the limit and the
current usage, and nothing is created. The check locks the owner's user row, so two
submits of one user at once are counted one after the other.

Fair share: each delivered job carries its owner's priority (administrators may raise
it) and, as `fair_share_rank`, the owner's GPU-hours this week; the GPU service's
admission puts the lower rank first among equal priorities (ADR 0035).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from carril_web.errors import QuotaExceeded
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Sum
from retention.policy import tree_bytes
from usage.models import UserQuota
from usage.selectors import Month, usage_rows

from jobs.models import ACTIVE_STATES, Job


@dataclass(frozen=True)
class Limits:
    max_gpus: int  # 0: no limit
    gpu_hours_per_month: float
    storage_bytes: int
    priority: int


def limits_of(user) -> Limits:
    own = UserQuota.objects.filter(user_id=user.pk).first()

    def pick(value, default):
        return default if own is None or value is None else value

    return Limits(
        max_gpus=pick(own and own.max_gpus, settings.CARRIL_QUOTA_MAX_GPUS),
        gpu_hours_per_month=pick(
            own and own.gpu_hours_per_month, settings.CARRIL_QUOTA_GPU_HOURS_PER_MONTH
        ),
        storage_bytes=pick(own and own.storage_bytes, settings.CARRIL_QUOTA_STORAGE_BYTES),
        priority=own.priority if own is not None else 0,
    )


def gpus_held(user) -> int:
    """GPUs of the user's unfinished jobs (submitted, queued, running, cancelling)."""
    held = Job.objects.filter(owner=user, state__in=ACTIVE_STATES).aggregate(n=Sum("gpus"))
    return held["n"] or 0


def gpu_hours_this_month(user, *, now: datetime | None = None) -> float:
    month = Month.parse(None, today=(now or datetime.now(UTC)).date())
    rows = usage_rows(start=month.start, end=month.end, user=user)
    return (rows.aggregate(s=Sum("gpu_seconds"))["s"] or 0.0) / 3600.0


def gpu_hours_this_week(user, *, now: datetime | None = None) -> float:
    now = now or datetime.now(UTC)
    monday = (now - timedelta(days=now.weekday())).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    rows = usage_rows(start=monday, end=now + timedelta(seconds=1), user=user)
    return (rows.aggregate(s=Sum("gpu_seconds"))["s"] or 0.0) / 3600.0


def storage_bytes_of(user) -> int:
    """Datasets (their recorded size), the folders of the user's jobs and uploads, and
    the weights of versions trained by the user's jobs."""
    from datasets.models import Dataset
    from registry.models import ModelVersion

    root = Path(settings.CARRIL_STORAGE)
    total = Dataset.objects.filter(owner=user).aggregate(s=Sum("size_bytes"))["s"] or 0
    for job_id in Job.objects.filter(owner=user).values_list("id", flat=True):
        total += tree_bytes(root / "jobs" / str(job_id))
        total += tree_bytes(root / "uploads" / "infer" / str(job_id))
    for fingerprint in ModelVersion.objects.filter(source_job__owner=user).values_list(
        "fingerprint", flat=True
    ):
        total += tree_bytes(root / "weights" / f"{fingerprint}.pt")
    return total


def quota_check(*, owner, gpus: int) -> None:
    """Refuse a new job of `gpus` GPUs that would pass one of the owner's quotas. Call
    inside the transaction that creates the job."""
    get_user_model().objects.select_for_update().filter(pk=owner.pk).first()
    limits = limits_of(owner)
    if limits.max_gpus:
        held = gpus_held(owner)
        if held + gpus > limits.max_gpus:
            _refuse("max_gpus", limit=limits.max_gpus, usage=held, requested=gpus, unit="GPUs")
    if limits.gpu_hours_per_month:
        used = gpu_hours_this_month(owner)
        if used >= limits.gpu_hours_per_month:
            _refuse(
                "gpu_hours_per_month",
                limit=limits.gpu_hours_per_month,
                usage=round(used, 4),
                unit="GPU-hours",
            )
    storage_quota_check(owner=owner, adding_bytes=0, limits=limits)


def storage_quota_check(*, owner, adding_bytes: int, limits: Limits | None = None) -> None:
    """Refuse what would take the owner's storage past its limit (a new job once it is
    reached; a dataset upload whose bytes would pass it)."""
    limits = limits or limits_of(owner)
    if not limits.storage_bytes:
        return
    stored = storage_bytes_of(owner)
    if stored + adding_bytes > limits.storage_bytes or stored >= limits.storage_bytes:
        requested = adding_bytes or None
        _refuse(
            "storage_bytes",
            limit=limits.storage_bytes,
            usage=stored,
            unit="bytes",
            requested=requested,
        )


def _refuse(quota: str, *, limit: Any, usage: Any, unit: str, requested: Any = None) -> None:
    details = {"quota": quota, "limit": limit, "usage": usage}
    if requested is not None:
        details["requested"] = requested
    asking = f" + {requested} asked" if requested is not None else ""
    raise QuotaExceeded(
        f"Quota {quota} exceeded: {usage}{asking} {unit} against a limit of {limit}.",
        details=details,
    )


def delivery_order(*, owner) -> dict[str, Any]:
    """What a job's delivery tells the GPU service's admission about its owner."""
    return {"priority": limits_of(owner).priority, "fair_share_rank": gpu_hours_this_week(owner)}


def quota_public(*, user) -> dict[str, Any]:
    """A user's limits (0: none) and current usage, for the API."""
    limits = limits_of(user)
    return {
        "user": user.get_username(),
        "limits": {k: v for k, v in asdict(limits).items() if k != "priority"},
        "priority": limits.priority,
        "usage": {
            "max_gpus": gpus_held(user),
            "gpu_hours_per_month": round(gpu_hours_this_month(user), 6),
            "storage_bytes": storage_bytes_of(user),
            "gpu_hours_this_week": round(gpu_hours_this_week(user), 6),
        },
    }
