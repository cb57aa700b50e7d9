"""Finding a dataset's parts in an extracted upload and laying them out the one way we store.

Accepted layouts, under the folder holding `data.yaml` (the zip's root or its only folder):
`images/<split>/` + `labels/<split>/`, `<split>/images/` + `<split>/labels/`, or flat
`images/` + `labels/` (one split). One split is divided into train/val with a fixed seed,
so the same upload always gives the same split. Stored layout: `images/<split>/` and
`labels/<split>/` with splits train, val and optionally test.

A `.txt` file named like an image that has no label, found anywhere but where that
image's label is looked for, is a misplaced label (ADR 0046): the upload is refused
rather than trained as background.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff"})
SPLIT_ALIASES = {
    "train": "train",
    "val": "val",
    "valid": "val",
    "validation": "val",
    "test": "test",
}
AUTO_SPLIT_SEED = 0
AUTO_SPLIT_VAL_FRACTION = 0.2

# The layouts we accept, shown where a user needs them: a refusal for labels that were
# not found, the upload page and the README's "Dataset format" (a test keeps it the same).
EXPECTED_LAYOUT = """\
dataset.zip
├── data.yaml
├── images/
│   ├── train/   a.jpg, b.jpg, ...
│   └── val/     c.jpg, ...
└── labels/
    ├── train/   a.txt, b.txt, ...
    └── val/     c.txt, ..."""
ROBOFLOW_LAYOUT = """\
dataset.zip
├── data.yaml
├── README.roboflow.txt   (ignored)
├── train/
│   ├── images/   a.jpg, ...
│   └── labels/   a.txt, ...
├── valid/        (or val/)
│   ├── images/
│   └── labels/
└── test/         (optional)
    ├── images/
    └── labels/"""
ONE_SPLIT_LAYOUT = """\
dataset.zip
├── data.yaml
├── images/   a.jpg, b.jpg, ...
└── labels/   a.txt, b.txt, ..."""
AUTO_SPLIT_RULE = (
    f"With no val split, val is split off the uploaded images: "
    f"{AUTO_SPLIT_VAL_FRACTION:.0%} of them (rounded, at least 1; train keeps the rest), "
    f"picked by shuffling them, sorted by path, with seed {AUTO_SPLIT_SEED}: the same zip "
    "always gives the same split."
)
ACCEPTED_LAYOUTS = (
    ("Ultralytics", EXPECTED_LAYOUT),
    ("A Roboflow YOLOv8 export", ROBOFLOW_LAYOUT),
    ("One split, divided automatically", ONE_SPLIT_LAYOUT),
)


@dataclass
class Sample:
    image: Path
    label: Path | None  # None: no label file (a background image)
    rel_image: str  # paths inside the upload, for the report
    rel_label: str | None = None


@dataclass
class FoundSplits:
    splits: dict[str, list[Sample]] = field(default_factory=dict)
    orphan_labels: list[str] = field(default_factory=list)
    # `.txt` files named like an unlabelled image, outside where its label is looked for.
    misplaced_labels: list[str] = field(default_factory=list)
    auto_split: dict[str, object] | None = None


def data_yaml_find(*, root: Path) -> Path | None:
    for candidate in (root / "data.yaml", root / "data.yml"):
        if candidate.is_file():
            return candidate
    children = [p for p in root.iterdir() if not p.name.startswith((".", "__MACOSX"))]
    if len(children) == 1 and children[0].is_dir():
        return data_yaml_find(root=children[0])
    return None


def _images_under(folder: Path) -> list[Path]:
    return sorted(
        p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES
    )


def _pair(images_dir: Path, labels_dir: Path, *, root: Path) -> tuple[list[Sample], list[str]]:
    samples = []
    used: set[Path] = set()
    for image in _images_under(images_dir):
        label = labels_dir / image.relative_to(images_dir).with_suffix(".txt")
        has_label = label.is_file()
        if has_label:
            used.add(label)
        samples.append(
            Sample(
                image=image,
                label=label if has_label else None,
                rel_image=str(image.relative_to(root)),
                rel_label=str(label.relative_to(root)) if has_label else None,
            )
        )
    orphans = []
    if labels_dir.is_dir():
        orphans = [
            str(p.relative_to(root)) for p in sorted(labels_dir.rglob("*.txt")) if p not in used
        ]
    return samples, orphans


def splits_find(*, root: Path) -> FoundSplits:
    found = FoundSplits()
    images = root / "images"
    split_dirs = {}
    if images.is_dir():
        for child in sorted(images.iterdir()):
            if child.is_dir() and child.name.lower() in SPLIT_ALIASES:
                split_dirs[SPLIT_ALIASES[child.name.lower()]] = (
                    child,
                    root / "labels" / child.name,
                )
        if not split_dirs:
            split_dirs["train"] = (images, root / "labels")
    else:
        for child in sorted(root.iterdir()):
            if (
                child.is_dir()
                and child.name.lower() in SPLIT_ALIASES
                and (child / "images").is_dir()
            ):
                split_dirs[SPLIT_ALIASES[child.name.lower()]] = (
                    child / "images",
                    child / "labels",
                )
    for split, (images_dir, labels_dir) in split_dirs.items():
        samples, orphans = _pair(images_dir, labels_dir, root=root)
        found.splits.setdefault(split, []).extend(samples)
        found.orphan_labels.extend(orphans)
    _misplaced_find(found, root=root)
    if set(found.splits) - {"test"} and "val" not in found.splits:
        _auto_split(found)
    return found


def _misplaced_find(found: FoundSplits, *, root: Path) -> None:
    """Name the `.txt` files that look like labels of unlabelled images: same stem, but not
    at `labels/<split>/<stem>.txt` (beside the image, in `annotations/`, one level off).
    A stem match, not any `.txt`: a Roboflow export's README.roboflow.txt is no label."""
    used = {s.label for samples in found.splits.values() for s in samples if s.label}
    unlabelled = {
        s.image.stem for samples in found.splits.values() for s in samples if s.label is None
    }
    if not unlabelled:
        return
    misplaced = [
        str(p.relative_to(root))
        for p in sorted(root.rglob("*.txt"))
        if p.is_file() and p not in used and p.stem in unlabelled
    ]
    found.misplaced_labels = misplaced
    taken = set(misplaced)
    found.orphan_labels = [o for o in found.orphan_labels if o not in taken]


def _auto_split(found: FoundSplits) -> None:
    source = "train" if "train" in found.splits else next(iter(found.splits))
    samples = sorted(found.splits.pop(source), key=lambda s: s.rel_image)
    if len(samples) < 2:
        found.splits["train"] = samples
        return
    random.Random(AUTO_SPLIT_SEED).shuffle(samples)
    n_val = max(1, round(len(samples) * AUTO_SPLIT_VAL_FRACTION))
    found.splits["val"] = sorted(samples[:n_val], key=lambda s: s.rel_image)
    found.splits["train"] = sorted(samples[n_val:], key=lambda s: s.rel_image)
    found.auto_split = {
        "from": source,
        "seed": AUTO_SPLIT_SEED,
        "val_fraction": AUTO_SPLIT_VAL_FRACTION,
    }


def splits_store(*, found: FoundSplits, dest: Path) -> None:
    """Move every sample into `dest/images/<split>/` and `dest/labels/<split>/`.

    Names are made unique per split (nested folders are flattened), keeping image and
    label stems paired as ultralytics expects.
    """
    for split, samples in found.splits.items():
        image_dir = dest / "images" / split
        label_dir = dest / "labels" / split
        image_dir.mkdir(parents=True, exist_ok=True)
        label_dir.mkdir(parents=True, exist_ok=True)
        taken: set[str] = set()
        for sample in samples:
            stem = sample.image.stem
            name = stem
            n = 1
            while name.lower() in taken:
                n += 1
                name = f"{stem}_{n}"
            taken.add(name.lower())
            sample.image.rename(image_dir / f"{name}{sample.image.suffix.lower()}")
            if sample.label is not None:
                sample.label.rename(label_dir / f"{name}.txt")
