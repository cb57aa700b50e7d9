"""Shape a model version, its stage history and its source for the version's own page.

Presentation only, like presenters.py: the registry's selectors decide what exists.
"""

from __future__ import annotations

import re
from typing import Any

from django.urls import reverse

from ui import presenters

# The metrics a version carries, in the order a reader compares them; others follow.
METRIC_LABELS = {
    "mAP50": "mAP50",
    "mAP50-95": "mAP50-95",
    "precision": "Precision",
    "recall": "Recall",
    "fitness": "Fitness",
    "best_seed": "Best seed",
}


def _metrics(raw: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for key in [*METRIC_LABELS, *sorted(k for k in raw if k not in METRIC_LABELS)]:
        value = raw.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue  # only the figures; nested records belong to the job page
        rows.append(
            {"label": METRIC_LABELS.get(key, key), "value": value, "whole": isinstance(value, int)}
        )
    return rows


def weights_filename(*, version: Any) -> str:
    """A name the downloaded file can keep on disk: the version's name, then its
    fingerprint's start, so two downloads of different versions never collide."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", version.name).strip("._") or "weights"
    return f"{stem[:80]}-{version.fingerprint[:12]}.pt"


def version_page(
    *, version: Any, events: list[Any], source_job_visible: bool, has_weights: bool
) -> dict[str, Any]:
    row = presenters.version_row(version=version)
    if not source_job_visible:
        row["source_url"] = None  # someone else's training: named, not linked
    return {
        **row,
        "task": version.task,
        "imgsz": version.imgsz,
        "created_by": version.created_by.get_username() if version.created_by else "system",
        "metrics": _metrics(version.metrics or {}),
        "events": [presenters.event_row(event=e) for e in events],
        "has_weights": has_weights,
        "weights_url": reverse("ui:model_weights", kwargs={"version_id": version.id}),
        "weights_filename": weights_filename(version=version),
        "stage_url": reverse("ui:model_stage", kwargs={"version_id": version.id}),
        **exports_section(version=version),
    }


def exports_section(*, version: Any) -> dict[str, Any]:
    """The version's exports (newest first), with parity and a download link each."""
    download = reverse("ui:model_download", kwargs={"version_id": version.id})
    rows = []
    for export in version.exports.all():
        manifest = export.manifest or {}
        parity = manifest.get("parity") or {}
        rows.append(
            {
                "format": export.format,
                "fingerprint": export.fingerprint,
                "imgsz": manifest.get("imgsz"),
                "opset": manifest.get("opset"),
                "options": ", ".join(k for k in ("half", "dynamic", "int8") if manifest.get(k)),
                "parity_passed": export.parity_passed,
                "matched_fraction": parity.get("matched_fraction"),
                "max_conf_diff": parity.get("max_conf_diff"),
                "conf_tolerance": parity.get("conf_tolerance"),
                "created_at": export.created_at,
                "download_url": f"{download}?format={export.format}",
            }
        )
    passing = sorted({r["format"] for r in rows if r["parity_passed"]} & {"onnx", "openvino"})
    return {
        "exports": rows,
        "serving_format": version.serving_format,
        "serving_format_choices": ["pt", *passing],
        "serving_format_url": reverse("ui:model_serving_format", kwargs={"version_id": version.id}),
        "export_url": (
            reverse("ui:model_export", kwargs={"version_id": version.id})
            if version.stage != "retired"
            else None
        ),
    }
