"""The compare page's view of `jobs.comparison`'s document: per-epoch charts with one
series per run and seed, their summaries in words, and the metric tables with each
difference from the first run marked better or worse in words as well as colour."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

# The per-epoch values overlaid, each its own chart.
EPOCH_CHARTS = (
    ("mAP50-95", "mAP50-95 per epoch"),
    ("mAP50", "mAP50 per epoch"),
    ("box_loss", "Box loss per epoch"),
)
LOWER_IS_BETTER = {"box_loss", "cls_loss", "dfl_loss"}


def epoch_charts(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    charts = []
    for key, title in EPOCH_CHARTS:
        series, lines = [], []
        for run in runs:
            for group in run["series"]:
                points = [
                    (row.get("epoch"), row.get(key))
                    for row in group["epochs"]
                    if isinstance(row.get(key), int | float) and isinstance(row.get("epoch"), int)
                ]
                if not points:
                    continue
                name = f"{run['title']} · seed {group['seed']}"
                series.append(
                    {"name": name, "x": [p[0] for p in points], "y": [p[1] for p in points]}
                )
                lines.append(f"{name}: {points[-1][1]:.3f} at epoch {points[-1][0]}")
        if series:
            charts.append(
                {
                    "id": key.replace("-", "_"),
                    "title": title,
                    "x_label": "epoch",
                    "x_integer": True,
                    "y_label": key,
                    "series": series,
                    "summary": "Last values: " + "; ".join(lines) + ".",
                }
            )
    return charts


def _cells(values: list[Any], differences: list[Any], *, lower_better: bool) -> list[dict]:
    cells = []
    for i, (value, diff) in enumerate(zip(values, differences, strict=True)):
        verdict = ""
        if i and isinstance(diff, float) and diff:
            better = diff < 0 if lower_better else diff > 0
            verdict = "better" if better else "worse"
        cells.append({"value": value, "difference": diff if i else None, "verdict": verdict})
    return cells


def compare_page(*, document: dict[str, Any]) -> dict[str, Any]:
    runs = document["runs"]
    for run in runs:
        run["url"] = reverse("ui:job_detail", kwargs={"job_id": run["id"]})
        run["evaluation_url"] = reverse("ui:job_evaluation", kwargs={"job_id": run["id"]})
    charts = epoch_charts(runs)
    return {
        "runs": runs,
        "charts": charts,
        "chart_data": {"charts": charts},
        "final": [
            {
                "metric": row["metric"],
                "cells": _cells(row["values"], row["differences"], lower_better=False),
            }
            for row in document["final_metrics"]
        ],
        "per_class": [
            {
                "class_name": row["class_name"],
                "metric": row["metric"],
                "cells": _cells(row["values"], row["differences"], lower_better=False),
            }
            for row in document["per_class"]
        ],
    }
