"""Writes for datasets: receive an upload, validate it outside the request, delete one.

The request only keeps the upload (`datasets/.incoming-<id>/upload.zip`) and writes the
row as `validating`; a background thread (datasets/background.py, ADR 0025) extracts and
checks it, writing its progress to the row, and ends it `ready` or `invalid` with its
report. A dataset is built in `.incoming-<id>/` and renamed into `datasets/<id>/` only
once it is valid, so nothing half-written is ever visible at a dataset path, and a refused
upload leaves no files behind.
"""

from __future__ import annotations

import logging
import shutil
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import yaml
from carril_web.errors import Conflict, DatasetInvalid, ValidationFailed
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.move import file_move_safe
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from jobs.models import ACTIVE_STATES
from jobs.quotas import storage_quota_check

from datasets import background
from datasets.extraction import ArchiveRefused, ExtractionLimits, archive_extract, remove_tree
from datasets.layout import data_yaml_find, splits_find, splits_store
from datasets.models import Dataset, DatasetState
from datasets.report import Report
from datasets.validation import classes_from_yaml, splits_validate

logger = logging.getLogger(__name__)


def datasets_root() -> Path:
    root = Path(settings.CARRIL_STORAGE) / "datasets"
    root.mkdir(parents=True, exist_ok=True)
    return root


def extraction_limits() -> ExtractionLimits:
    return ExtractionLimits(
        max_uncompressed_bytes=settings.CARRIL_DATASET_MAX_UNCOMPRESSED_BYTES,
        max_files=settings.CARRIL_DATASET_MAX_FILES,
        max_ratio=settings.CARRIL_DATASET_MAX_RATIO,
    )


# A validation renews its claim as it goes; one not renewed for this long lost its process.
VALIDATION_CLAIM_S = 60
_PROGRESS_EVERY_S = 0.5
# An `.incoming-*` folder with no validation behind it, this old, is a leftover.
LEFTOVER_AGE_S = 600


def dataset_receive(
    *, owner: AbstractBaseUser, name: str, upload: UploadedFile, validate_after: bool = True
) -> Dataset:
    """Keep the uploaded zip and write the row as `validating`; validated after commit on
    a background thread (unless `validate_after` is False: the caller validates)."""
    name = name.strip()
    if not name:
        raise ValidationFailed(details={"fields": {"name": ["This field is required."]}})
    storage_quota_check(owner=owner, adding_bytes=upload.size or 0)  # 429 QUOTA_EXCEEDED
    dataset_id = uuid.uuid4()
    work = datasets_root() / f".incoming-{dataset_id}"
    work.mkdir()
    try:
        _upload_keep(upload, target=work / "upload.zip")
        dataset = Dataset.objects.create(
            id=dataset_id,
            owner=owner,
            name=name[:200],
            state=DatasetState.VALIDATING,
            progress={"stage": "queued", "done": 0, "total": 0},
            claimed_until=timezone.now() + timedelta(seconds=VALIDATION_CLAIM_S),
        )
    except Exception:
        remove_tree(work)
        raise
    if validate_after:
        transaction.on_commit(lambda: background.run_soon(dataset_validate, dataset_id=dataset_id))
    logger.info("dataset %s received; validating", dataset_id)
    return dataset


def dataset_create_from_upload(
    *, owner: AbstractBaseUser, name: str, upload: UploadedFile
) -> Dataset:
    """Receive and validate in this thread: for scripts and tests, not requests.

    Returns the ready dataset, or raises DatasetInvalid with the report (the row stays,
    `invalid`, as after a background validation).
    """
    with transaction.atomic():
        dataset = dataset_receive(owner=owner, name=name, upload=upload, validate_after=False)
    validated = dataset_validate(dataset_id=dataset.id)
    if validated is None or validated.state != DatasetState.READY:
        report = validated.report if validated is not None else {}
        raise DatasetInvalid(details={"report": report})
    return validated


def _upload_keep(upload: UploadedFile, *, target: Path) -> None:
    """The upload's file moved (or, if a handler kept it in memory, written) to target."""
    temporary = getattr(upload, "temporary_file_path", None)
    if temporary is not None:
        file_move_safe(temporary(), str(target))
        return
    with open(target, "wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)


def dataset_validate(*, dataset_id: uuid.UUID) -> Dataset | None:
    """Extract and check a `validating` dataset; end it `ready` or `invalid`.

    Safe to run again after a crash: whatever an interrupted run left in the incoming
    folder or at the final path is removed first. Does nothing for a dataset that is no
    longer validating (deleted, or finished by another process).
    """
    if not Dataset.objects.filter(id=dataset_id, state=DatasetState.VALIDATING).exists():
        return None
    work = datasets_root() / f".incoming-{dataset_id}"
    final = datasets_root() / str(dataset_id)
    archive = work / "upload.zip"
    for leftover in (work / "raw", work / "dataset", final):
        remove_tree(leftover)
    try:
        if not archive.is_file():
            report = Report()
            report.problem(code="upload_lost", message="the uploaded file is gone; upload again")
        else:
            report = _build(
                archive=archive, work=work, final=final, progress=_progress_writer(dataset_id)
            )
        if report.valid:
            (work / "dataset").rename(final)
        finished = Dataset.objects.filter(id=dataset_id, state=DatasetState.VALIDATING).update(
            state=DatasetState.READY if report.valid else DatasetState.INVALID,
            # Kept for a refused dataset too: what was found is part of why it was refused.
            classes=report.classes,
            splits=report.splits_dict(),
            report=report.as_dict(),
            size_bytes=_tree_size(final) if report.valid else 0,
            progress={},
            claimed_until=None,
        )
        if not finished:  # deleted while it was being checked
            remove_tree(final)
            return None
    except Exception:
        remove_tree(final)
        raise
    finally:
        remove_tree(work)
    state = "ready" if report.valid else f"invalid ({report.problems_total} problems)"
    logger.info("dataset %s validated: %s", dataset_id, state)
    return Dataset.objects.get(id=dataset_id)


def _progress_writer(dataset_id: uuid.UUID) -> Callable[[str, int, int], None]:
    """Writes progress to the row (and renews the claim), at most every half second."""
    last = [0.0]

    def write(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] < _PROGRESS_EVERY_S and done < total:
            return
        last[0] = now
        Dataset.objects.filter(id=dataset_id, state=DatasetState.VALIDATING).update(
            progress={"stage": stage, "done": done, "total": total},
            claimed_until=timezone.now() + timedelta(seconds=VALIDATION_CLAIM_S),
        )

    return write


def dataset_validations_resume() -> int:
    """Take over validations whose process died (lapsed claim) and remove leftovers.

    Runs at a web process's start and every little while (datasets/background.py).
    Returns how many validations it took over.
    """
    now = timezone.now()
    stale = Dataset.objects.filter(state=DatasetState.VALIDATING).filter(
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    )
    resumed = 0
    for dataset_id in list(stale.values_list("id", flat=True)):
        claimed = (
            Dataset.objects.filter(id=dataset_id, state=DatasetState.VALIDATING)
            .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
            .update(claimed_until=now + timedelta(seconds=VALIDATION_CLAIM_S))
        )
        if claimed:
            logger.warning("dataset %s: its validation was interrupted; resuming", dataset_id)
            background.run_soon(dataset_validate, dataset_id=dataset_id)
            resumed += 1
    leftovers_remove(older_than_s=LEFTOVER_AGE_S)
    return resumed


def leftovers_remove(*, older_than_s: float) -> list[str]:
    """Remove `.incoming-*` folders no validation owns and `.deleting-*` ones, if old."""
    validating = {
        str(i)
        for i in Dataset.objects.filter(state=DatasetState.VALIDATING).values_list("id", flat=True)
    }
    removed = []
    cutoff = time.time() - older_than_s
    for path in datasets_root().glob(".*-*"):
        kind, _, rest = path.name[1:].partition("-")
        if kind not in {"incoming", "deleting"} or rest in validating:
            continue
        try:
            if path.stat().st_mtime > cutoff:
                continue
        except OSError:
            continue
        remove_tree(path)
        removed.append(path.name)
    if removed:
        logger.info("removed dataset leftovers: %s", ", ".join(sorted(removed)))
    return removed


def _build(
    *, archive: Path, work: Path, final: Path, progress: Callable[[str, int, int], None]
) -> Report:
    report = Report()
    raw = work / "raw"
    try:
        progress("extracting", 0, 1)
        archive_extract(archive=archive, dest=raw, limits=extraction_limits(), report=report)
    except ArchiveRefused:
        return report
    data_yaml = data_yaml_find(root=raw)
    if data_yaml is None:
        report.problem(code="no_data_yaml", message="data.yaml not found at the top of the zip")
        return report
    root = data_yaml.parent
    report.classes = classes_from_yaml(path=data_yaml, report=report)
    if not report.classes:
        return report
    found = splits_find(root=root)
    splits_validate(
        found=found,
        classes=report.classes,
        report=report,
        max_pixels=settings.CARRIL_DATASET_MAX_PIXELS,
        progress=lambda done, total: progress("checking", done, total),
    )
    if not report.valid:
        return report
    dataset_dir = work / "dataset"
    splits_store(found=found, dest=dataset_dir)
    _write_data_yaml(dest=dataset_dir, final=final, classes=report.classes, splits=found.splits)
    return report


def _write_data_yaml(*, dest: Path, final: Path, classes: list[str], splits: dict) -> None:
    # `path` is the final folder: CARRIL_STORAGE is the same absolute path in every container.
    data = {"path": str(final)}
    for split in ("train", "val", "test"):
        if split in splits:
            data[split] = f"images/{split}"
    data["nc"] = len(classes)
    data["names"] = dict(enumerate(classes))
    (dest / "data.yaml").write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def _tree_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def dataset_delete(*, dataset: Dataset) -> None:
    """Delete the row, then the files (moved aside first so no half-deleted folder shows).

    Refused (Conflict) while an unfinished job uses the dataset: its files are the job's
    input on the GPU service.
    """
    if dataset.jobs.filter(state__in=ACTIVE_STATES).exists():
        raise Conflict("A job still uses this dataset; cancel it or wait for it to finish.")
    path, incoming = dataset.path, datasets_root() / f".incoming-{dataset.id}"
    with transaction.atomic():
        dataset.delete()
    # Deleted while validating: its upload goes too (a running validation then finds the
    # row gone and removes what it built).
    remove_tree(incoming)
    if path.is_dir():
        trash = path.with_name(f".deleting-{path.name}")
        path.rename(trash)
        shutil.rmtree(trash, ignore_errors=True)
