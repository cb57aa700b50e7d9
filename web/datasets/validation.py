"""Checking a dataset: `data.yaml` with a safe loader, every image within the pixel cap
(read from its header) and decoding, every label line is `class cx cy w h` with a class
in range and four finite coordinates in [0, 1]; labels where they are looked for, and
labelled objects in train and val (ADR 0046). A valid dataset may still get warnings
(datasets/soundness.py)."""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from carril_web.images import NotAnImage, TooManyPixels, image_header_read
from PIL import Image

from datasets.layout import EXPECTED_LAYOUT, FoundSplits
from datasets.report import Report, SplitCounts
from datasets.soundness import background_warn, duplicates_warn

MAX_YAML_BYTES = 256 * 1024
MAX_LABEL_BYTES = 4 * 1024 * 1024
# How many misplaced label files a refusal names; its count covers them all.
MAX_NAMED_FILES = 20


def classes_from_yaml(*, path: Path, report: Report) -> list[str]:
    rel = path.name
    if path.stat().st_size > MAX_YAML_BYTES:
        report.problem(
            code="yaml_too_large", message=f"larger than {MAX_YAML_BYTES} bytes", file=rel
        )
        return []
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        report.problem(code="yaml_invalid", message=f"not safe, valid YAML: {exc}", file=rel)
        return []
    if not isinstance(data, dict):
        report.problem(code="yaml_invalid", message="data.yaml must be a mapping", file=rel)
        return []
    names = _names(data.get("names"))
    if names is None:
        report.problem(
            code="yaml_names",
            message="`names` must be a list of class names or a {0: name, 1: name...} mapping",
            file=rel,
        )
        return []
    nc = data.get("nc")
    if nc is not None and nc != len(names):
        report.problem(code="yaml_nc", message=f"nc is {nc} but {len(names)} names", file=rel)
    return names


def _names(raw: Any) -> list[str] | None:
    if isinstance(raw, list) and raw:
        values = raw
    elif isinstance(raw, dict) and raw:
        keys = sorted(raw)
        if not all(isinstance(k, int) for k in keys) or keys != list(range(len(keys))):
            return None
        values = [raw[k] for k in keys]
    else:
        return None
    if not all(isinstance(v, (str, int)) and str(v).strip() for v in values):
        return None
    return [str(v).strip() for v in values]


def splits_validate(
    *,
    found: FoundSplits,
    classes: list[str],
    report: Report,
    max_pixels: int,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Check every sample; `progress(done, total)` is called after each image."""
    report.auto_split = found.auto_split
    total = sum(len(found.splits.get(split, [])) for split in ("train", "val", "test"))
    done = 0
    digests: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for orphan in found.orphan_labels:
        report.warn(code="label_without_image", message="label file with no image", file=orphan)
    for split in ("train", "val", "test"):
        if split not in found.splits:
            continue
        counts = SplitCounts(per_class={name: 0 for name in classes})
        report.splits[split] = counts
        for sample in found.splits[split]:
            counts.images += 1
            _image_check(sample.image, rel=sample.rel_image, report=report, max_pixels=max_pixels)
            digests[split].append((_digest(sample.image), sample.rel_image))
            done += 1
            if progress is not None:
                progress(done, total)
            if sample.label is None:
                counts.background_images += 1
                continue
            counts.labels += 1
            instances = _label_check(
                sample.label,
                rel=sample.rel_label or sample.label.name,
                classes=classes,
                report=report,
                counts=counts,
            )
            if instances == 0:
                counts.background_images += 1
    if not found.splits or not any(s.images for s in report.splits.values()):
        report.problem(
            code="no_images",
            message="no images found where they are looked for; lay the zip out as shown",
            details={"expected_layout": EXPECTED_LAYOUT},
        )
        return
    for split in ("train", "val"):
        if not report.splits.get(split) or report.splits[split].images == 0:
            report.problem(code="split_empty", message=f"the {split} split has no images")
    _labels_check(found=found, report=report)
    if report.valid:
        background_warn(report=report)
        duplicates_warn(digests=digests, report=report)


def _labels_check(*, found: FoundSplits, report: Report) -> None:
    """Refuse labels that were not found: misplaced ones, or none in train or val at all.

    Trained as they are, such a dataset is all background images: a model that learns
    nothing, after a training that looked fine."""
    misplaced = found.misplaced_labels
    if misplaced:
        report.problem(
            code="labels_misplaced",
            message=(
                f"{len(misplaced)} label file{'s' if len(misplaced) != 1 else ''} named like "
                "an image but not where its label is looked for (labels/<split>/ for "
                "images/<split>/, or <split>/labels/ for <split>/images/); move them as shown"
            ),
            details={
                "files": misplaced[:MAX_NAMED_FILES],
                "files_total": len(misplaced),
                "expected_layout": EXPECTED_LAYOUT,
            },
        )
        return
    unlabelled = [
        split
        for split in ("train", "val")
        if report.splits.get(split) and report.splits[split].images
        if report.splits[split].instances == 0
    ]
    for split in unlabelled:
        counts = report.splits[split]
        report.problem(
            code="no_labels",
            message=(
                f"no {split} image has a labelled object ({counts.images} images, "
                f"{counts.labels} label files): each image needs a .txt of its name, one line "
                "per object, in the labels folder beside its images folder"
            ),
            details={"split": split, "expected_layout": EXPECTED_LAYOUT},
        )


def _digest(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _image_check(path: Path, *, rel: str, report: Report, max_pixels: int) -> None:
    # The header first: a decompression bomb is refused before a pixel is allocated.
    try:
        image_header_read(path=path, max_pixels=max_pixels)
    except TooManyPixels as exc:
        report.problem(
            code="image_too_large",
            message=f"{exc}; at most {max_pixels} pixels per image (CARRIL_DATASET_MAX_PIXELS)",
            file=rel,
        )
        return
    except NotAnImage as exc:
        report.problem(code="image_undecodable", message=f"image does not decode: {exc}", file=rel)
        return
    try:
        with Image.open(path) as img:
            img.verify()
        with Image.open(path) as img:
            img.load()
    except Exception as exc:
        report.problem(code="image_undecodable", message=f"image does not decode: {exc}", file=rel)


def _label_check(
    path: Path, *, rel: str, classes: list[str], report: Report, counts: SplitCounts
) -> int:
    if path.stat().st_size > MAX_LABEL_BYTES:
        report.problem(code="label_too_large", message="label file too large", file=rel)
        return 0
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        report.problem(code="label_encoding", message="label file is not UTF-8 text", file=rel)
        return 0
    instances = 0
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        problem = _line_problem(fields, n_classes=len(classes))
        if problem:
            report.problem(code=problem[0], message=problem[1], file=rel, line=number)
            continue
        instances += 1
        counts.instances += 1
        name = classes[int(fields[0])]
        counts.per_class[name] = counts.per_class.get(name, 0) + 1
    return instances


def _line_problem(fields: list[str], *, n_classes: int) -> tuple[str, str] | None:
    if len(fields) != 5:
        return "label_fields", f"expected 5 fields (class cx cy w h), got {len(fields)}"
    try:
        class_id = int(fields[0])
    except ValueError:
        return "label_class", f"class id {fields[0]!r} is not an integer"
    if not 0 <= class_id < n_classes:
        return "class_out_of_range", f"class id {class_id} not in [0, {n_classes - 1}]"
    try:
        coords = [float(v) for v in fields[1:]]
    except ValueError:
        return "label_coordinates", "coordinates must be numbers"
    if not all(math.isfinite(v) for v in coords):
        return "label_coordinates", "coordinates must be finite"
    if not all(0.0 <= v <= 1.0 for v in coords):
        return "label_coordinates", "coordinates must be normalised to [0, 1]"
    return None
