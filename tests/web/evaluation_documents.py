"""A realistic evaluation document (`jobs.evaluation`'s shape) written into a job's folder,
for tests of what reads it; the evaluate workload's own tests make real ones."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from jobs.evaluation import EVALUATION_RELPATH
from PIL import Image, ImageDraw

CLASSES = ["square", "disc", "triangle"]


def _curve(peak: float, *, falling: bool) -> list[float]:
    xs = [i / 100 for i in range(101)]
    if falling:
        return [round(peak * (1 - x**3), 6) for x in xs]
    return [round(peak * (1 - math.exp(-6 * x)), 6) for x in xs]


def evaluation_document(*, classes: list[str] | None = None, seed: int | None = 7) -> dict:
    classes = classes or CLASSES
    per_class = []
    for i, name in enumerate(classes):
        per_class.append(
            {
                "class_id": i,
                "class_name": name,
                "images": 10 + i,
                "instances": 14 + 3 * i,
                "precision": round(0.9 - 0.2 * i, 6),
                "recall": round(0.6 + 0.1 * i, 6),
                "mAP50": round(0.8 - 0.25 * i, 6),
                "mAP50-95": round(0.5 - 0.15 * i, 6),
            }
        )
    labels = [*classes, "background"]
    n = len(labels)
    counts = [[(9 - 2 * i if i == j else (i + j) % 3) for j in range(n)] for i in range(n)]
    counts[-1][-1] = 0  # ultralytics leaves background/background empty
    return {
        "version": 1,
        "source": "training",
        "split": "val",
        "imgsz": 96,
        "conf": 0.001,
        "iou": 0.7,
        "seed": seed,
        "metrics": {"precision": 0.71, "recall": 0.68, "mAP50": 0.55, "mAP50-95": 0.35},
        "per_class": per_class,
        "confusion_matrix": {
            "labels": labels,
            "counts": counts,
            "rows": "predicted",
            "columns": "true",
        },
        "curves": {
            "confidence": [i / 100 for i in range(101)],
            "precision": {c: _curve(0.95 - 0.1 * k, falling=False) for k, c in enumerate(classes)},
            "recall": {c: _curve(0.9 - 0.1 * k, falling=True) for k, c in enumerate(classes)},
            "f1": {c: _curve(0.8 - 0.1 * k, falling=True) for k, c in enumerate(classes)},
            "pr": {
                "recall": [i / 100 for i in range(101)],
                "precision": {
                    c: _curve(0.9 - 0.1 * k, falling=True) for k, c in enumerate(classes)
                },
            },
        },
        "samples": [
            {
                "image": f"img_00{i}.jpg",
                "artifact": f"evaluation/samples/img_00{i}.jpg",
                "ground_truth": 2 + i,
                "predictions": 1 + i,
            }
            for i in range(2)
        ],
        "plots": ["evaluation/plots/confusion_matrix.png", "evaluation/plots/PR_curve.png"],
    }


def write_evaluation(*, job_folder: Path, document: dict[str, Any] | None = None) -> dict:
    """The document and the images it names, under the job's folder."""
    document = document or evaluation_document()
    path = job_folder / EVALUATION_RELPATH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    for sample in document["samples"]:
        image = Image.new("RGB", (192, 96), (235, 235, 235))
        draw = ImageDraw.Draw(image)
        draw.rectangle((10, 10, 60, 60), outline=(0, 160, 0), width=2)
        draw.rectangle((106, 12, 154, 58), outline=(200, 0, 0), width=2)
        target = job_folder / sample["artifact"]
        target.parent.mkdir(parents=True, exist_ok=True)
        image.save(target, format="JPEG")
    for plot in document["plots"]:
        target = job_folder / plot
        target.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (64, 64), (255, 255, 255)).save(target, format="PNG")
    return document
