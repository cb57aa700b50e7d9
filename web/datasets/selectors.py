"""Reads for datasets, always scoped to what the user may see."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from accounts.services import user_sees_everything
from carril_web.errors import NotFound
from carril_web.paths import file_under
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet

from datasets.layout import IMAGE_SUFFIXES
from datasets.models import Dataset, DatasetState

SPLITS = ("train", "val", "test")


def datasets_visible_to(*, user: AbstractBaseUser) -> QuerySet[Dataset]:
    datasets = Dataset.objects.select_related("owner")
    if user_sees_everything(user=user):
        return datasets
    return datasets.filter(owner=user)


def dataset_get(*, user: AbstractBaseUser, dataset_id: uuid.UUID | str) -> Dataset:
    """The dataset, or NotFound: another user's dataset answers exactly like a missing one."""
    try:
        return datasets_visible_to(user=user).get(id=dataset_id)
    except (Dataset.DoesNotExist, ValueError, TypeError, DjangoValidationError) as exc:
        raise NotFound() from exc


def dataset_image_path(*, dataset: Dataset, split: str, name: str) -> Path:
    """An image file of this dataset, refusing anything that resolves elsewhere."""
    if split not in SPLITS or "/" in name or name.startswith("."):
        raise NotFound()
    folder = dataset.path / "images" / split
    path = file_under(root=folder, relpath=name)
    if path is None or path.parent != folder.resolve() or path.suffix.lower() not in IMAGE_SUFFIXES:
        raise NotFound()
    return path


def dataset_samples(
    *, dataset: Dataset, split: str = "train", limit: int = 12
) -> list[dict[str, Any]]:
    """The first images of a split with their boxes, for drawing in the browser.

    Only a `ready` dataset has samples. While it validates, its files are moved into
    place a moment before its row says `ready` and lists its classes (ADR 0025): a page
    read in between would find labels whose classes the row does not name yet."""
    if split not in SPLITS:
        raise NotFound()
    if dataset.state != DatasetState.READY:
        return []
    folder = dataset.path / "images" / split
    if not folder.is_dir():
        return []
    samples = []
    for image in sorted(folder.iterdir())[: max(0, min(limit, 100))]:
        label = dataset.path / "labels" / split / f"{image.stem}.txt"
        boxes = []
        if label.is_file():
            for line in label.read_text().splitlines():
                fields = line.split()
                if len(fields) == 5:
                    class_id = int(fields[0])
                    boxes.append(
                        {
                            "class_id": class_id,
                            "class_name": dataset.classes[class_id],
                            "box_xywhn": [float(v) for v in fields[1:]],
                        }
                    )
        samples.append({"split": split, "name": image.name, "boxes": boxes})
    return samples
