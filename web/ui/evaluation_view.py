"""The evaluation page's view of a job's evaluation document (`jobs.evaluation`).

Everything the page shows without its script: the overall metrics, the per-class table,
the confusion matrix in counts and normalised by true class (with a shade per cell for
the eye, the number always written), a text summary and a table of every curve (the
script draws the curves themselves from the same numbers), the sample images and
ultralytics' own plots as links served by the job-file route.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from django.urls import reverse

from ui.presenters import job_title

METRICS = (
    ("precision", "Precision"),
    ("recall", "Recall"),
    ("mAP50", "mAP50"),
    ("mAP50-95", "mAP50-95"),
)
# The shade's strongest: dark text on it still reads at 4.5:1 or more (WCAG AA).
MAX_SHADE = 0.55
# Confidence points the curve table lists (of the document's 101).
TABLE_STEPS = 11


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def file_url(*, job: Any, relpath: str) -> str:
    prefix = reverse("ui:job_file", kwargs={"job_id": job.id, "relpath": "-"})[:-1]
    return prefix + quote(relpath, safe="/")


def per_class_rows(document: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for row in document.get("per_class") or []:
        if not isinstance(row, dict):
            continue
        rows.append(
            {
                "class_id": row.get("class_id"),
                "class_name": str(row.get("class_name", row.get("class_id", "?"))),
                "images": row.get("images"),
                "instances": row.get("instances"),
                "values": [_number(row.get(key)) for key, _ in METRICS],
            }
        )
    return rows


def confusion_view(document: dict[str, Any]) -> dict[str, Any] | None:
    """The matrix as rows of cells: counts, and each true class's share (columns sum to 1)."""
    matrix = document.get("confusion_matrix") or {}
    labels = [str(label) for label in matrix.get("labels") or []]
    counts = matrix.get("counts") or []
    if not labels or len(counts) != len(labels):
        return None
    column_totals = [
        sum(float(row[j]) for row in counts if j < len(row)) for j in range(len(labels))
    ]
    rows = []
    for i, row in enumerate(counts):
        cells = []
        for j, count in enumerate(row[: len(labels)]):
            share = float(count) / column_totals[j] if column_totals[j] else 0.0
            cells.append(
                {
                    "count": round(float(count)) if float(count).is_integer() else count,
                    "share": share,
                    "shade": round(MAX_SHADE * share, 3),
                    "diagonal": i == j,
                    "true": labels[j],
                }
            )
        rows.append({"predicted": labels[i], "cells": cells})
    return {"labels": labels, "rows": rows}


def _series(values: Any) -> list[float] | None:
    if not isinstance(values, list) or not values:
        return None
    if not all(isinstance(v, int | float) for v in values):
        return None
    return [float(v) for v in values]


def curves_data(document: dict[str, Any]) -> dict[str, Any] | None:
    """The curves as the script draws them: x, and one y list per class, for each chart."""
    curves = document.get("curves") or {}
    confidence = _series(curves.get("confidence"))
    charts = []
    pr = curves.get("pr") or {}
    recall = _series(pr.get("recall"))
    if recall:
        charts.append(
            {
                "id": "pr",
                "title": "Precision against recall",
                "x_label": "recall",
                "y_label": "precision",
                "x": recall,
                "series": _per_class(pr.get("precision"), len(recall)),
            }
        )
    if confidence:
        for key, title in (("f1", "F1"), ("precision", "Precision"), ("recall", "Recall")):
            series = _per_class(curves.get(key), len(confidence))
            if series:
                charts.append(
                    {
                        "id": key,
                        "title": f"{title} against confidence",
                        "x_label": "confidence",
                        "y_label": title.lower() if key != "f1" else "F1",
                        "x": confidence,
                        "series": series,
                    }
                )
    charts = [chart for chart in charts if chart["series"]]
    return {"charts": charts} if charts else None


def _per_class(values: Any, length: int) -> list[dict[str, Any]]:
    if not isinstance(values, dict):
        return []
    out = []
    for name, ys in values.items():
        series = _series(ys)
        if series and len(series) == length:
            out.append({"name": str(name), "y": series})
    return out


def curve_summaries(curves: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Each chart in words and as a short table: the text alternative to its drawing."""
    out = []
    for chart in (curves or {}).get("charts", []):
        xs = chart["x"]
        picks = sorted({round(i * (len(xs) - 1) / (TABLE_STEPS - 1)) for i in range(TABLE_STEPS)})
        lines = []
        for series in chart["series"]:
            ys = series["y"]
            best = max(range(len(ys)), key=lambda i: ys[i])
            lines.append(
                f"{series['name']}: highest {chart['y_label']} {ys[best]:.3f} "
                f"at {chart['x_label']} {xs[best]:.2f}"
            )
        out.append(
            {
                "id": chart["id"],
                "title": chart["title"],
                "x_label": chart["x_label"],
                "summary": "; ".join(lines) + ".",
                "names": [s["name"] for s in chart["series"]],
                "rows": [
                    {"x": xs[i], "values": [s["y"][i] for s in chart["series"]]} for i in picks
                ],
            }
        )
    return out


def evaluation_page(*, job: Any, document: dict[str, Any] | None) -> dict[str, Any]:
    page: dict[str, Any] = {
        "job_id": job.id,
        "job_url": reverse("ui:job_detail", kwargs={"job_id": job.id}),
        "title": job_title(job=job),
        "state": job.state,
        "document": document is not None,
    }
    if document is None:
        return page
    metrics = document.get("metrics") or {}
    curves = curves_data(document)
    page.update(
        {
            "source": document.get("source"),
            "split": document.get("split"),
            "settings": [
                (label, document.get(key))
                for key, label in (
                    ("imgsz", "Image size"),
                    ("conf", "Confidence threshold"),
                    ("iou", "IoU threshold"),
                    ("seed", "Seed"),
                )
                if document.get(key) is not None
            ],
            "metrics": [(label, _number(metrics.get(key))) for key, label in METRICS],
            "metric_labels": [label for _, label in METRICS],
            "per_class": per_class_rows(document),
            "confusion": confusion_view(document),
            "curves": curves,
            "curve_summaries": curve_summaries(curves),
            "samples": [
                {
                    "image": str(sample.get("image", "")),
                    "url": file_url(job=job, relpath=str(sample["artifact"])),
                    "ground_truth": sample.get("ground_truth"),
                    "predictions": sample.get("predictions"),
                }
                for sample in document.get("samples") or []
                if isinstance(sample, dict) and sample.get("artifact")
            ],
            "plots": [
                {
                    "name": str(plot).rsplit("/", 1)[-1],
                    "url": file_url(job=job, relpath=str(plot)),
                }
                for plot in document.get("plots") or []
                if isinstance(plot, str)
            ],
        }
    )
    return page
