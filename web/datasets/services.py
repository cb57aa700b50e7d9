"""Writes for datasets: store a validated upload, delete one.

A dataset is built in `datasets/.incoming-<id>/` and renamed into `datasets/<id>/` only
once it is valid, so nothing half-written is ever visible at a dataset path, and a refused
upload leaves no files behind.
"""

from __future__ import annotations

import logging
import shutil
import uuid
from pathlib import Path

import yaml
from carril_web.errors import Conflict, DatasetInvalid, ValidationFailed
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from jobs.models import ACTIVE_STATES

from datasets.extraction import ArchiveRefused, ExtractionLimits, archive_extract, remove_tree
from datasets.layout import data_yaml_find, splits_find, splits_store
from datasets.models import Dataset
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


def dataset_create_from_upload(
    *, owner: AbstractBaseUser, name: str, upload: UploadedFile
) -> Dataset:
    """Validate and store an uploaded zip; raise DatasetInvalid with the report if bad."""
    name = name.strip()
    if not name:
        raise ValidationFailed(details={"fields": {"name": ["This field is required."]}})
    dataset_id = uuid.uuid4()
    work = datasets_root() / f".incoming-{dataset_id}"
    final = datasets_root() / str(dataset_id)
    work.mkdir()
    try:
        archive = _archive_path(upload, work=work)
        report = _build(archive=archive, work=work, final=final)
        if not report.valid:
            raise DatasetInvalid(details={"report": report.as_dict()})
        (work / "dataset").rename(final)
        try:
            with transaction.atomic():
                dataset = Dataset.objects.create(
                    id=dataset_id,
                    owner=owner,
                    name=name[:200],
                    classes=report.classes,
                    splits=report.as_dict()["splits"],
                    report=report.as_dict(),
                    size_bytes=_tree_size(final),
                )
        except Exception:
            remove_tree(final)
            raise
    finally:
        remove_tree(work)
    logger.info("dataset %s stored (%s images)", dataset.id, report.as_dict()["totals"]["images"])
    return dataset


def _archive_path(upload: UploadedFile, *, work: Path) -> Path:
    """The upload's file on disk; copied in chunks if a handler kept it in memory."""
    temporary = getattr(upload, "temporary_file_path", None)
    if temporary is not None:
        return Path(temporary())
    target = work / "upload.zip"
    with open(target, "wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    return target


def _build(*, archive: Path, work: Path, final: Path) -> Report:
    report = Report()
    raw = work / "raw"
    try:
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
    splits_validate(found=found, classes=report.classes, report=report)
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
    path = dataset.path
    with transaction.atomic():
        dataset.delete()
    if path.is_dir():
        trash = path.with_name(f".deleting-{path.name}")
        path.rename(trash)
        shutil.rmtree(trash, ignore_errors=True)
