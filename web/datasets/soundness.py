"""Warnings about a valid dataset that may still not be what its owner meant (ADR 0046).

A warning never refuses a dataset: it is in the report's `warnings` and on the dataset's
page. Two kinds: a split that is mostly background images (no labelled object), and the
same image (same bytes) in two splits, which makes validation overstate the model.
"""

from __future__ import annotations

from datasets.report import Report

# Above this share of background images in a split, it is worth a look: a few background
# images help against false positives, a majority usually means labels went missing. A
# constant, not a setting: it only decides whether to warn, never what is stored or trained.
BACKGROUND_WARN_FRACTION = 0.5
# How many pairs of identical images a warning names; its count covers them all.
MAX_NAMED_DUPLICATES = 5

SPLIT_ORDER = ("train", "val", "test")


def background_warn(*, report: Report) -> None:
    for split in SPLIT_ORDER:
        counts = report.splits.get(split)
        if counts is None or counts.images == 0:
            continue
        fraction = counts.background_images / counts.images
        if fraction <= BACKGROUND_WARN_FRACTION:
            continue
        report.warn(
            code="mostly_background",
            message=(
                f"{counts.background_images} of {counts.images} {split} images "
                f"({fraction:.0%}) have no labelled object and train as background images; "
                f"above {BACKGROUND_WARN_FRACTION:.0%}, check that their labels were not "
                "left out"
            ),
            details={
                "split": split,
                "background_images": counts.background_images,
                "images": counts.images,
                "threshold": BACKGROUND_WARN_FRACTION,
            },
        )


def duplicates_warn(*, digests: dict[str, list[tuple[str, str]]], report: Report) -> None:
    """`digests`: per split, (SHA-256 of the image's bytes, its path in the upload)."""
    for i, first in enumerate(SPLIT_ORDER):
        seen: dict[str, str] = {}
        for digest, rel in digests.get(first, []):
            seen.setdefault(digest, rel)
        for second in SPLIT_ORDER[i + 1 :]:
            # Lists, in the order of `splits`: a JSON object's key order is not kept by
            # PostgreSQL's jsonb.
            pairs = [
                [seen[digest], rel] for digest, rel in digests.get(second, []) if digest in seen
            ]
            if pairs:
                _duplicates_warning(first, second, pairs, report=report)


def _duplicates_warning(first: str, second: str, pairs: list[list[str]], *, report: Report) -> None:
    first_path, second_path = pairs[0]
    report.warn(
        code="duplicate_across_splits",
        message=(
            f"{len(pairs)} {second} image{'s' if len(pairs) != 1 else ''} "
            f"{'are' if len(pairs) != 1 else 'is'} identical to {first} images "
            f"(e.g. {second_path} and {first_path}): a model evaluated on images it "
            "trained on looks better than it is"
        ),
        details={
            "splits": [first, second],
            "count": len(pairs),
            "examples": pairs[:MAX_NAMED_DUPLICATES],
        },
    )
