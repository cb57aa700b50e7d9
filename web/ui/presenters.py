"""Shape records into what templates show: numbers picked out, defaults filled in.

No decisions live here, only presentation; the services make the decisions. Job
results are read in the one shape the GPU service's contract gives them.
"""

from __future__ import annotations

import json
from typing import Any

from api.documents import job_public
from django.urls import reverse
from django.utils.dateparse import parse_datetime
from jobs.models import FAILED_STATES, TERMINAL_STATES, job_states_public
from jobs.notes import job_notes
from jobs.wording import job_state_sentence

from gpu_service.contract import FITNESS_METRIC
from ui.class_balance import class_balance
from ui.forms import AUGMENTATION_LABELS
from ui.job_log import log_folded
from ui.job_story import job_story


def dataset_row(*, dataset: Any) -> dict[str, Any]:
    totals = (dataset.report or {}).get("totals") or {}
    splits = dataset.splits or {}
    return {
        "id": dataset.id,
        "name": dataset.name,
        "classes": list(dataset.classes or []),
        "images": totals.get("images", sum(s.get("images", 0) for s in splits.values())),
        "instances": totals.get("instances", sum(s.get("instances", 0) for s in splits.values())),
        "created_at": dataset.created_at,
        "owner": getattr(dataset, "owner", ""),
        "state": getattr(dataset, "state", "ready"),
    }


def _split_order(name: str) -> tuple[int, str]:
    return ({"train": 0, "val": 1, "test": 2}.get(name, 3), name)


def dataset_summary(*, dataset: Any) -> dict[str, Any]:
    report = dataset.report or {}
    # Rows validated before migration 0003 may still hold their counts in the report.
    classes = list(dataset.classes or report.get("classes") or [])
    splits_data = dataset.splits or report.get("splits") or {}
    splits = []
    for name in sorted(splits_data, key=_split_order):
        counts = splits_data[name] or {}
        per_class = counts.get("per_class") or {}
        splits.append(
            {
                "name": name,
                "images": counts.get("images", 0),
                "labels": counts.get("labels", 0),
                "background_images": counts.get("background_images", 0),
                "instances": counts.get("instances", 0),
                "per_class": [per_class.get(c, 0) for c in classes],
            }
        )
    problems = list(report.get("problems") or [])
    warnings = list(report.get("warnings") or [])
    # A refusal that comes with the expected layout is shown with it, not again as a note.
    layout_help = [p for p in problems if (p.get("details") or {}).get("expected_layout")]
    instances = sum(s["instances"] for s in splits)
    return {
        "classes": classes,
        "splits": splits,
        "images": sum(s["images"] for s in splits),
        "labels": sum(s["labels"] for s in splits),
        "background_images": sum(s["background_images"] for s in splits),
        "instances": instances,
        # Files without an image are listed as notes; the other warnings stand out above.
        "problems": [p for p in problems if p not in layout_help]
        + [w for w in warnings if w.get("code") == "label_without_image"],
        "problems_total": report.get("problems_total", len(problems)),
        "warnings": [w for w in warnings if w.get("code") != "label_without_image"],
        "layout_help": layout_help,
        "auto_split": _auto_split(report.get("auto_split"), splits),
        # Nothing to balance without a labelled object (a refusal for missing labels).
        "class_balance": class_balance(classes=classes, splits=splits) if instances else None,
    }


def _auto_split(auto: dict[str, Any] | None, splits: list[dict[str, Any]]) -> dict | None:
    if not auto:
        return None
    sizes = {s["name"]: s["images"] for s in splits}
    return {
        "source": auto.get("from", "train"),
        "percent": round(100 * float(auto.get("val_fraction", 0))),
        "seed": auto.get("seed"),
        "val_images": sizes.get("val", 0),
        "images": sizes.get("val", 0) + sizes.get("train", 0),
    }


def dataset_sample(*, dataset: Any, sample: dict[str, Any]) -> dict[str, Any]:
    """A dataset sample as the gallery draws it (boxes.js's format)."""
    boxes = [
        {"cls": b.get("class_id"), "label": b.get("class_name"), "xywhn": b.get("box_xywhn")}
        for b in sample.get("boxes", [])
    ]
    return {
        "split": sample["split"],
        "name": sample["name"],
        "url": reverse(
            "ui:dataset_image",
            kwargs={"dataset_id": dataset.id, "split": sample["split"], "name": sample["name"]},
        ),
        "count": len(boxes),
        "boxes_json": json.dumps({"boxes": boxes}),
    }


# ---- jobs ----


def job_title(*, job: Any) -> str:
    spec = job.spec or {}
    if job.kind == "train" and getattr(job, "name", ""):
        return job.name
    if job.kind == "train":
        model = spec.get("model") or "model"
        dataset = getattr(job.dataset, "name", None) or "a dataset"
        return f"Train {model} on {dataset}"
    if job.kind == "infer":
        version = getattr(job.model_version, "name", None)
        count = len(spec.get("images") or [])
        what = f"{count} image{'s' if count != 1 else ''}" if count else "images"
        return f"Detect in {what}" + (f" with {version}" if version else "")
    if job.kind == "evaluate":
        version = getattr(job.model_version, "name", None) or "a model"
        dataset = getattr(job.dataset, "name", None) or "a dataset"
        return f"Evaluate {version} on {dataset} ({spec.get('split', 'val')})"
    return f"{job.kind} job"


def job_percent(*, job: Any) -> float:
    if job.state == "succeeded":
        return 100.0
    fraction = (job.progress or {}).get("fraction") or 0.0
    try:
        return max(0.0, min(100.0, float(fraction) * 100.0))
    except (TypeError, ValueError):
        return 0.0


def job_row(*, job: Any) -> dict[str, Any]:
    return {
        "id": job.id,
        "url": reverse("ui:job_detail", kwargs={"job_id": job.id}),
        "title": job_title(job=job),
        "kind": job.kind,
        "state": job.state,
        "percent": job_percent(job=job),
        "created_at": job.created_at,
        "finished_at": job.finished_at,
        "owner": getattr(job, "owner", ""),
        "tags": job.tag_list,
        "map50_95": (job.final_metrics or {}).get("mAP50-95"),
        "map50": (job.final_metrics or {}).get("mAP50"),
    }


# ---- GPUs ----


def _brief(*, brief: dict[str, Any] | None) -> dict[str, Any]:
    if not brief or not brief.get("visible"):
        # Someone else's job, or one the web app did not submit: only that it is busy.
        return {"label": "busy (another user's job)", "url": None}
    return {
        "label": f"{brief['kind']} job {brief['id'][:8]} ({brief['state']})",
        "url": reverse("ui:job_detail", kwargs={"job_id": brief["id"]}),
    }


def gpus_view(*, overview: dict[str, Any]) -> dict[str, Any]:
    """The GPU overview with memory as a percentage and holders as links."""
    gpus = []
    for gpu in overview.get("gpus") or []:
        total = gpu.get("memory_total_mib") or 0
        used = gpu.get("memory_used_mib") or 0
        gpus.append(
            {
                **gpu,
                "memory_pct": round(100.0 * used / total) if total else 0,
                "holders": [_brief(brief=b) for b in gpu.get("jobs") or []],
            }
        )
    queue = [{**item, **_brief(brief=item.get("job"))} for item in overview.get("queue") or []]
    fetched_at = overview.get("fetched_at")
    return {
        "runtime": overview.get("runtime"),
        "gpus": gpus,
        "queue": queue,
        "error": overview.get("error") or (None if fetched_at else "no answer yet"),
        "fetched_at": parse_datetime(fetched_at) if isinstance(fetched_at, str) else fetched_at,
        "has_data": bool(fetched_at) and bool(overview.get("runtime")),
    }


# ---- the job page ----

LOG_TAIL = 200


def _pair(a: Any, b: Any) -> str:
    if a is None:
        return "\u2013"  # en dash: "not known yet"
    return f"{a} / {b}" if b else str(a)


def _num(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number else None  # NaN reads as missing


def _seed_row(record: dict[str, Any]) -> dict[str, Any]:
    """A seed of the training result (SeedResult), or a seed's last epoch record
    (EpochRecord, metrics inline): the contract's canonical metric keys only. Without a
    fitness of its own, a record's fitness is the metric that picks the best seed."""
    metrics = record.get("metrics") if isinstance(record.get("metrics"), dict) else record
    given = _num(record.get("fitness"))
    return {
        "seed": record.get("seed"),
        "map50": _num(metrics.get("mAP50")),
        "map50_95": _num(metrics.get("mAP50-95")),
        "precision": _num(metrics.get("precision")),
        "recall": _num(metrics.get("recall")),
        "fitness": given if given is not None else _num(metrics.get(FITNESS_METRIC)),
        "best": False,
    }


def seeds_table(*, job: Any) -> list[dict[str, Any]]:
    """One row per seed with the best marked: the training result's seeds and best seed,
    or without them each seed's last epoch record, the best by fitness."""
    result = job.result or {}
    if result.get("seeds"):
        rows = [_seed_row(record) for record in result["seeds"]]
        best_seed = result.get("best_seed")
    else:
        last: dict[Any, dict[str, Any]] = {}
        for record in (job.metrics or {}).get("epochs") or []:
            last[record.get("seed")] = record
        rows = [_seed_row(record) for record in last.values()]
        scored = [row for row in rows if row["fitness"] is not None]
        best_seed = max(scored, key=lambda row: row["fitness"])["seed"] if scored else None
    for row in rows:
        row["best"] = best_seed is not None and row["seed"] == best_seed
    return rows


SPEC_LABELS = {
    "model": "Model",
    "epochs": "Epochs",
    "imgsz": "Image size",
    "batch": "Batch",
    "seeds": "Seeds",
    "optimizer": "Optimizer",
    "lr0": "Initial learning rate",
    "patience": "Early stopping patience",
    **AUGMENTATION_LABELS,
}
INFER_LABELS = {"conf": "Confidence", "iou": "IoU (NMS)", "imgsz": "Image size"}


def _facts(*, job: Any) -> list[tuple[str, Any]]:
    spec = job.spec or {}
    facts: list[tuple[str, Any]] = [("Kind", job.kind), ("Job id", job.id)]
    if job.kind == "train":
        if job.dataset is not None:
            facts.append(("Dataset", job.dataset.name))
        for key, label in SPEC_LABELS.items():
            if key in spec:
                value = spec[key]
                shown = ", ".join(map(str, value)) if isinstance(value, list) else value
                facts.append((label, shown))
        facts.append(("GPUs", job.gpus))
    else:
        if job.model_version is not None:
            facts.append(("Model version", job.model_version.name))
        if job.kind == "evaluate" and job.dataset is not None:
            facts.append(("Dataset", f"{job.dataset.name} ({spec.get('split', 'val')} split)"))
        for key, label in INFER_LABELS.items():
            if spec.get(key) is not None:
                facts.append((label, spec[key]))
    if job.gpu_ids:
        facts.append(("Ran on GPU", ", ".join(map(str, job.gpu_ids))))
    if job.owner_id and hasattr(job, "owner"):
        facts.append(("Owner", job.owner))
    return facts


def log_lines(lines: list[str]) -> list[str]:
    """The tail the page shows; the lines come plain from `job_log_tail` (no escape codes)."""
    return lines[-LOG_TAIL:]


def job_status(*, job: Any, log: list[str], usage: list[Any]) -> dict[str, Any]:
    """The JSON the job page polls: the API's status document, the job-state vocabulary
    (so the page's script lists no states of its own), the log's tail and the story
    (waiting, attempts) for the page's live region."""
    return {
        "job": job_public(job=job),
        "states": job_states_public(),
        "log": log_lines(log),
        "story": job_story(job=job, usage=usage),
    }


def not_cancellable_message(*, job: Any) -> str:
    """Why a job cannot be cancelled, in words: "The job has already succeeded; ..."."""
    return job_state_sentence(job.state, consequence="it cannot be cancelled")


def _ended_note(*, job: Any) -> str | None:
    """A cancelled job's neutral line (it is no error): when, and how if it says more."""
    if job.state != "cancelled":
        return None
    when = f" at {job.finished_at:%Y-%m-%d %H:%M:%S}" if job.finished_at else ""
    note = f"Cancelled{when}."
    if job.error_message and job.error_message.rstrip(".") != "The job was cancelled":
        note += f" {job.error_message}"
    return note


def job_page(
    *,
    job: Any,
    log: list[str],
    model_version: Any | None,
    detections: dict[str, Any] | None,
    usage: list[Any],
) -> dict[str, Any]:
    progress = job.progress or {}
    percent = job_percent(job=job)
    epochs = (job.metrics or {}).get("epochs") or []
    ended = job.state in TERMINAL_STATES
    shown_log, folded = log_folded(lines=log_lines(log), state=job.state)
    page: dict[str, Any] = {
        "id": job.id,
        "kind": job.kind,
        "state": job.state,
        "title": job_title(job=job),
        "subtitle": f"{job.kind} job · submitted {job.created_at:%Y-%m-%d %H:%M}",
        "cancellable": job.is_cancellable,
        "ended": ended,
        # Only a failure is an error; a cancel is what someone asked for (a neutral note).
        "error": (
            {"code": job.error_code, "message": job.error_message}
            if job.state in FAILED_STATES and (job.error_code or job.error_message)
            else None
        ),
        "ended_note": _ended_note(job=job),
        "story": job_story(job=job, usage=usage),
        "again": _again(job=job) if ended else None,
        "chart_empty": (
            "No epoch finished, so there is no chart."
            if ended
            else "The chart appears after the first epoch."
        ),
        "log_empty": "(the job wrote no output)" if ended else "(no output yet)",
        "log_folded": folded,
        "progress": progress,
        "progress_pairs": {
            "seed": _pair(progress.get("seed"), progress.get("seeds")),
            "epoch": _pair(progress.get("epoch"), progress.get("epochs")),
            "batch": _pair(progress.get("batch"), progress.get("batches")),
        },
        "percent": round(percent, 1),
        "percent_text": f"{percent:.0f}%" if percent >= 100 else f"{percent:.1f}%",
        "created_at": job.created_at,
        "started_at": job.started_at,
        "finished_at": job.finished_at,
        "epochs": epochs,
        "seeds": seeds_table(job=job) if job.state == "succeeded" else [],
        "model_version": None,
        "notes": job_notes(job=job),
        "facts": _facts(job=job),
        "log": shown_log,
        "log_limit": LOG_TAIL,
        "config": {
            "status_url": reverse("ui:job_status", kwargs={"job_id": job.id}),
            "state": job.state,
            "states": job_states_public(),
            "epochs": epochs,
        },
    }
    if model_version is not None:
        page["model_version"] = {
            "label": model_version.name,
            "stage": model_version.stage,
            "did_not_learn": model_version.did_not_learn,
            "url": reverse("ui:model_version", kwargs={"version_id": model_version.id}),
        }
    if detections is not None:
        page.update(detections)
    return page


def _again(*, job: Any) -> dict[str, Any]:
    """ "Run again" (a POST) and "Clone with changes" (the job's form, pre-filled)."""
    clone_url = None
    if job.kind == "train":
        clone_url = reverse("ui:train_new") + f"?from={job.id}"
    elif job.kind == "infer":
        clone_url = reverse("ui:infer_new") + f"?from={job.id}"
    return {
        "run_url": reverse("ui:job_run_again", kwargs={"job_id": job.id}),
        "clone_url": clone_url,
    }


# ---- inference results ----


def detection_box(raw: dict[str, Any]) -> dict[str, Any]:
    """One detection of the detections document in boxes.js's format."""
    cls = raw.get("class_id")
    return {
        "cls": cls,
        "label": raw.get("class_name") or (str(cls) if cls is not None else ""),
        "conf": _num(raw.get("confidence")),
        "xyxy": [float(v) for v in raw.get("box_xyxy") or [0, 0, 0, 0]],
    }


def display_name(stored: str) -> str:
    """The name the user uploaded: images are stored as 0003_<name>."""
    head, _, rest = stored.partition("_")
    return rest if head.isdigit() and rest else stored


def detections_view(
    *, job: Any, document: dict[str, Any], stored_names: list[str]
) -> dict[str, Any]:
    """Gallery, table and count for an inference job, from its detections document;
    `stored_names` are its input images' file names, in the document's (input) order."""
    gallery = []
    rows = []
    for index, name in enumerate(stored_names):
        images = document.get("images") or []
        image = images[index] if index < len(images) else {}
        boxes = [detection_box(d) for d in image.get("detections") or []]
        gallery.append(
            {
                "name": display_name(name),
                "url": reverse("ui:job_image", kwargs={"job_id": job.id, "name": name}),
                "count": len(boxes),
                "boxes_json": json.dumps({"boxes": boxes}),
            }
        )
        rows.extend({"image": display_name(name), **box} for box in boxes)
    return {
        "images": gallery,
        "detections": rows,
        "detection_count": len(rows),
        "json_url": reverse("ui:job_detections", kwargs={"job_id": job.id}),
    }


# ---- registry ----


def version_row(*, version: Any) -> dict[str, Any]:
    metrics = version.metrics or {}
    source_job = getattr(version, "source_job", None)
    return {
        "id": version.id,
        "label": version.name,
        "fingerprint": version.fingerprint,
        "stage": version.stage,
        "source": f"training {str(source_job.id)[:8]}" if source_job else version.source,
        "source_url": (
            reverse("ui:job_detail", kwargs={"job_id": source_job.id}) if source_job else None
        ),
        "architecture": version.architecture,
        "imgsz": version.imgsz,
        "did_not_learn": version.did_not_learn,
        "class_names": list(version.class_names or []),
        "map50": _num(metrics.get("mAP50")),
        "map50_95": _num(metrics.get("mAP50-95")),
        "created_at": version.created_at,
    }


def event_row(*, event: Any) -> dict[str, Any]:
    return {
        "at": event.created_at,
        "version": event.model_version.name,
        "action": event.action,
        "from_stage": event.from_stage,
        "to_stage": event.to_stage,
        "who": event.actor.get_username() if event.actor else "system",
        "reason": event.reason,
    }
