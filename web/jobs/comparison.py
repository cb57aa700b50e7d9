"""Two or more trainings side by side (issue 13): their per-epoch curves (one series per
run and seed), their final metrics, and their per-class metrics from their evaluation
documents, each with its difference from the first run named.

The API answers this document at `GET /api/v1/jobs/compare/`; the compare page draws it.
"""

from __future__ import annotations

import uuid
from typing import Any

from carril_web.errors import ValidationFailed
from django.contrib.auth.models import AbstractBaseUser

from jobs.evaluation import load_evaluation
from jobs.models import Job, JobKind
from jobs.run_metrics import METRIC_KEYS, epochs_by_seed
from jobs.selectors import jobs_by_ids

COMPARE_MIN = 2
COMPARE_MAX = 10


def compare_ids_parse(raw: str | list[str] | None) -> list[uuid.UUID]:
    """`ids` as given (comma-separated, or repeated), each once, in the order given."""
    parts = raw if isinstance(raw, list) else [raw or ""]
    names = [p.strip() for part in parts for p in part.split(",") if p.strip()]
    try:
        ids = list(dict.fromkeys(uuid.UUID(name) for name in names))
    except ValueError as exc:
        raise ValidationFailed(
            "`ids` must be job ids separated by commas.",
            details={"fields": {"ids": ["Job ids (UUIDs) separated by commas."]}},
        ) from exc
    if not COMPARE_MIN <= len(ids) <= COMPARE_MAX:
        raise ValidationFailed(
            f"Compare {COMPARE_MIN} to {COMPARE_MAX} trainings; {len(ids)} given.",
            details={"fields": {"ids": [f"{COMPARE_MIN} to {COMPARE_MAX} distinct job ids."]}},
        )
    return ids


def _difference(value: Any, base: Any) -> float | None:
    if isinstance(value, int | float) and isinstance(base, int | float):
        return round(float(value) - float(base), 6)
    return None


def _run(job: Job) -> dict[str, Any]:
    evaluation = load_evaluation(job=job) or {}
    return {
        "id": str(job.id),
        "name": job.name,
        "title": job.name or f"{job.spec.get('model', 'training')} {str(job.id)[:8]}",
        "tags": job.tag_list,
        "state": str(job.state),
        "dataset": str(job.dataset_id) if job.dataset_id else None,
        "created_at": job.created_at,
        "final_metrics": dict(job.final_metrics or {}),
        "series": epochs_by_seed(metrics=job.metrics),
        "per_class": {
            row["class_name"]: row
            for row in evaluation.get("per_class") or []
            if isinstance(row, dict) and "class_name" in row
        },
    }


def comparison(*, user: AbstractBaseUser, ids: list[uuid.UUID]) -> dict[str, Any]:
    jobs = jobs_by_ids(user=user, ids=ids)
    not_trainings = [str(j.id) for j in jobs if j.kind != JobKind.TRAIN]
    if not_trainings:
        raise ValidationFailed(
            f"Only trainings can be compared; not {', '.join(not_trainings)}.",
            details={"fields": {"ids": ["Training job ids only."]}},
        )
    runs = [_run(job) for job in jobs]
    base = runs[0]
    final = [
        {
            "metric": key,
            "values": [run["final_metrics"].get(key) for run in runs],
            "differences": [
                _difference(run["final_metrics"].get(key), base["final_metrics"].get(key))
                for run in runs
            ],
        }
        for key in METRIC_KEYS
    ]
    classes = list(dict.fromkeys(name for run in runs for name in run["per_class"]))
    per_class = []
    for name in classes:
        for key in METRIC_KEYS:
            values = [(run["per_class"].get(name) or {}).get(key) for run in runs]
            per_class.append(
                {
                    "class_name": name,
                    "metric": key,
                    "values": values,
                    "differences": [_difference(v, values[0]) for v in values],
                }
            )
    return {
        "base": base["id"],
        "runs": [{k: v for k, v in run.items() if k != "per_class"} for run in runs],
        "final_metrics": final,
        "per_class": per_class,
    }
