"""Where a job's evaluation document lives and how the web app reads it (issue 13).

The GPU service writes it (the evaluate workload, and a training for its best seed's
validation) to `jobs/<id>/evaluation/evaluation.json` under shared storage, with the
rest of the evaluation's files beside it. The web app only reads it: the API serves it at
`GET /api/v1/jobs/{id}/evaluation/`, the job's evaluation page draws it.

The document (every number is ultralytics' own validator's, never recomputed here):

    {
      "version": 1,
      "source": "training" | "evaluate",
      "split": "val",                 # the dataset split that was validated
      "imgsz": 96, "conf": 0.001, "iou": 0.7,
      "seed": 2 | null,               # a training's best seed
      "metrics": {"precision": f, "recall": f, "mAP50": f, "mAP50-95": f},
      "per_class": [{"class_id": 0, "class_name": "cat", "images": n, "instances": n,
                     "precision": f, "recall": f, "mAP50": f, "mAP50-95": f}, ...],
                    # one row per class of the model; the four numbers are null for a
                    # class with no ground truth in the split (ultralytics gives none)
      "confusion_matrix": {"labels": ["cat", ..., "background"],   # background last
                           "counts": [[...], ...],                 # counts[predicted][true]
                           "rows": "predicted", "columns": "true"},
      "curves": {"confidence": [101 floats, 0..1],   # classes with ground truth only
                 "precision": {"cat": [101 floats], ...},     # against confidence
                 "recall": {"cat": [...], ...},               # against confidence
                 "f1": {"cat": [...], ...},                   # against confidence
                 "pr": {"recall": [101 floats], "precision": {"cat": [...], ...}}},
      "samples": [{"image": "img_003.jpg",
                   "artifact": "evaluation/samples/img_003.jpg",   # ground truth | predictions
                   "ground_truth": n, "predictions": n}, ...],
      "plots": ["evaluation/plots/confusion_matrix.png", ...]      # ultralytics' own images
    }

Paths in `samples[].artifact` and `plots` are relative to the job's folder, so they are
served by the job-artifact route.
"""

from __future__ import annotations

import json
from typing import Any

from jobs.models import Job
from jobs.selectors import job_dir

EVALUATION_RELPATH = "evaluation/evaluation.json"


def load_evaluation(*, job: Job) -> dict[str, Any] | None:
    """The job's evaluation document, or None while there is none (or it is unreadable)."""
    folder = job_dir(job=job)
    if folder is None:
        return None
    try:
        with open(folder / EVALUATION_RELPATH, encoding="utf-8") as handle:
            document = json.load(handle)
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None
