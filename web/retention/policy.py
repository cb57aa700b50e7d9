"""The retention policy (issue 16, docs/operations.md "Retention"): what may go, and what
never may. Reads only; `retention.prune` deletes what this plans.

Deleted after their time (settings in days; 0 turns a rule off):
- `inference`: a finished inference's uploads (`uploads/infer/<job>/`) and annotated
  copies (`jobs/<job>/annotated/`), `CARRIL_RETAIN_INFERENCE_DAYS` after it finished;
- `last-checkpoint`: a succeeded training's `jobs/<job>/seed-*/weights/last.pt` once its
  best weights are registered (a model version from that job, its file in `weights/`),
  unless `CARRIL_PRUNE_LAST_CHECKPOINTS` is 0;
- `retired-weights`: a retired version's `weights/<sha256>.pt`,
  `CARRIL_RETAIN_RETIRED_DAYS` after it was retired, unless it is pinned;
- `failed-job`: a failed or lost job's folder `jobs/<job>/`, `CARRIL_RETAIN_FAILED_DAYS`
  after it ended;
- `incoming`: a dataset upload's leftover `datasets/.incoming-*` folder, older than
  `CARRIL_RETAIN_INCOMING_S` (an upload in progress is younger).

Never: a serving or candidate version's weights; anything under `exports/` or a
version's exports; any file of an unfinished job (submitted, queued, running,
cancelling), nor what one needs (its dataset, its model version's weights, its inputs).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.utils import timezone
from jobs.models import ACTIVE_STATES, FAILED_STATES, Job, JobKind, JobState
from registry.models import ModelEvent, ModelVersion, Stage


@dataclass(frozen=True)
class Item:
    """One thing the policy would delete."""

    path: Path
    bytes: int
    rule: str
    owner: str  # username, or "" when no user owns it (imported weights, leftovers)
    why: str

    @classmethod
    def of(cls, path: Path, rule: str, owner: str, why: str) -> Item:
        return cls(path=path, bytes=tree_bytes(path), rule=rule, owner=owner, why=why)


def storage_root() -> Path:
    return Path(settings.CARRIL_STORAGE)


def tree_bytes(path: Path) -> int:
    if path.is_symlink() or not path.exists():
        return 0
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def protected_paths() -> set[Path]:
    """What must never be deleted, whatever a rule says (checked again just before each
    deletion): weights of serving and candidate versions, exports, and everything an
    unfinished job has or needs."""
    root = storage_root()
    keep = {root / "exports"}
    for fingerprint in ModelVersion.objects.filter(
        stage__in=[Stage.SERVING, Stage.CANDIDATE]
    ).values_list("fingerprint", flat=True):
        keep.add(root / "weights" / f"{fingerprint}.pt")
    for job in Job.objects.filter(state__in=ACTIVE_STATES).select_related("model_version"):
        keep.add(root / "jobs" / str(job.id))
        keep.add(root / "uploads" / "infer" / str(job.id))
        if job.dataset_id:
            keep.add(root / "datasets" / str(job.dataset_id))
        if job.model_version is not None:
            keep.add(root / "weights" / f"{job.model_version.fingerprint}.pt")
    return keep


def is_protected(path: Path, keep: set[Path]) -> bool:
    """The path is kept, inside something kept, or holds something kept."""
    return any(path == k or k in path.parents or path in k.parents for k in keep)


def _days(name: str) -> float:
    return float(getattr(settings, name))


def prune_plan(*, now: datetime | None = None) -> list[Item]:
    """Everything the policy would delete now, protected paths left out."""
    now = now or timezone.now()
    root = storage_root()
    items: list[Item] = []
    items += _inference(root, now)
    items += _last_checkpoints(root)
    items += _retired_weights(root, now)
    items += _failed_jobs(root, now)
    items += _incoming(root)
    keep = protected_paths()
    return [
        item
        for item in items
        if (item.path.exists() or item.path.is_symlink()) and not is_protected(item.path, keep)
    ]


def _inference(root: Path, now: datetime) -> list[Item]:
    days = _days("CARRIL_RETAIN_INFERENCE_DAYS")
    if days <= 0:
        return []
    jobs = Job.objects.filter(
        kind=JobKind.INFER,
        state__in=[JobState.SUCCEEDED, *FAILED_STATES, JobState.CANCELLED],
        finished_at__lt=now - timedelta(days=days),
    ).select_related("owner")
    items = []
    for job in jobs:
        for path in (
            root / "uploads" / "infer" / str(job.id),
            root / "jobs" / str(job.id) / "annotated",
        ):
            items.append(
                Item.of(
                    path,
                    "inference",
                    job.owner.get_username(),
                    f"inference {job.id} finished more than {days:g} days ago",
                )
            )
    return items


def _last_checkpoints(root: Path) -> list[Item]:
    if not settings.CARRIL_PRUNE_LAST_CHECKPOINTS:
        return []
    items = []
    registered = ModelVersion.objects.filter(
        source_job__state=JobState.SUCCEEDED, source_job__kind=JobKind.TRAIN
    ).select_related("source_job__owner")
    for version in registered:
        if not (root / "weights" / f"{version.fingerprint}.pt").is_file():
            continue  # best weights not in the store: keep the checkpoint
        job = version.source_job
        for path in sorted((root / "jobs" / str(job.id)).glob("seed-*/weights/last.pt")):
            items.append(
                Item.of(
                    path,
                    "last-checkpoint",
                    job.owner.get_username(),
                    f"training {job.id} succeeded; best weights registered as {version.name}",
                )
            )
    return items


def _retired_weights(root: Path, now: datetime) -> list[Item]:
    days = _days("CARRIL_RETAIN_RETIRED_DAYS")
    if days <= 0:
        return []
    items = []
    versions = ModelVersion.objects.filter(stage=Stage.RETIRED, retention_pin__isnull=True)
    for version in versions.select_related("source_job__owner"):
        retired = (
            ModelEvent.objects.filter(model_version=version, to_stage=Stage.RETIRED)
            .order_by("-created_at")
            .values_list("created_at", flat=True)
            .first()
        ) or version.created_at
        if retired >= now - timedelta(days=days):
            continue
        path = root / "weights" / f"{version.fingerprint}.pt"
        owner = version.source_job.owner.get_username() if version.source_job else ""
        items.append(
            Item.of(
                path,
                "retired-weights",
                owner,
                f"version {version.name} retired more than {days:g} days ago, not pinned",
            )
        )
    return items


def _failed_jobs(root: Path, now: datetime) -> list[Item]:
    days = _days("CARRIL_RETAIN_FAILED_DAYS")
    if days <= 0:
        return []
    cutoff = now - timedelta(days=days)
    jobs = Job.objects.filter(state__in=FAILED_STATES).select_related("owner")
    items = []
    for job in jobs:
        ended = job.finished_at or job.updated_at
        if ended is None or ended >= cutoff:
            continue
        path = root / "jobs" / str(job.id)
        items.append(
            Item.of(
                path,
                "failed-job",
                job.owner.get_username(),
                f"{job.kind} {job.id} {job.state} more than {days:g} days ago",
            )
        )
    return items


def _incoming(root: Path) -> list[Item]:
    age = float(settings.CARRIL_RETAIN_INCOMING_S)
    folder = root / "datasets"
    if not folder.is_dir():
        return []
    now = time.time()
    return [
        Item.of(path, "incoming", "", "an upload's leftover working folder")
        for path in sorted(folder.glob(".incoming-*"))
        if now - path.lstat().st_mtime > age
    ]
