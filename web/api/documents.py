"""The job's two public documents, one shape each for the REST API and the pages.

The status document (`job_public`, what `GET /api/v1/jobs/{id}/` answers and the job
page polls) and the detections document (`job_detections_public`). `JobOut` is the
status document's schema and reads its fields from here.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils import timezone
from jobs.models import Job, JobKind
from jobs.notes import job_notes
from jobs.selectors import job_artifact_relpath
from registry.models import ModelVersion
from rest_framework import ISO_8601, serializers
from rest_framework.settings import api_settings

# reverse() walks the URL resolver on every call (about 0.07 ms, a few per cent of a
# status poll). A job's routes differ from one job to the next only by its id, so each is
# reversed once per URL configuration and script prefix with a stand-in id, which is then
# replaced by the job's. They must read as reverse() would (a test compares them).
_ID_STAND_IN = "5e771e15-0000-0000-0000-00000000cafe"
_MAX_ROUTES = 64
_routes: dict[tuple[str, str, str, tuple[tuple[str, str], ...]], str] = {}


def job_route(name: str, *, job_id: Any, **fixed: str) -> str:
    """reverse(name, kwargs={"job_id": job_id, **fixed}), without walking the resolver
    again for every job."""
    key = (
        name,
        str(get_urlconf() or settings.ROOT_URLCONF),
        get_script_prefix(),
        tuple(sorted(fixed.items())),
    )
    route = _routes.get(key)
    if route is None:
        if len(_routes) >= _MAX_ROUTES:
            _routes.clear()  # many script prefixes or URL configurations: stay small
        route = _routes[key] = reverse(name, kwargs={"job_id": _ID_STAND_IN, **fixed})
    return route.replace(_ID_STAND_IN, str(job_id))


def job_url(*, job: Job) -> str:
    return job_route("api:job-detail", job_id=job.id)


def job_params(*, job: Job) -> dict[str, Any]:
    params = {k: v for k, v in job.spec.items() if k not in {"dataset", "images"}}
    if job.kind == JobKind.INFER:
        params["images"] = len(job.spec.get("images", []))
    return params


def job_registered_model_version(*, job: Job) -> str | None:
    if job.kind != JobKind.TRAIN or job.state != "succeeded":
        return None
    fingerprint = ((job.result or {}).get("weights") or {}).get("fingerprint")
    version = ModelVersion.objects.filter(fingerprint=fingerprint).only("id").first()
    return str(version.id) if version else None


def job_progress(*, job: Job) -> dict[str, Any]:
    progress = job.progress or {}
    keys = ("stage", "seed", "seeds", "epoch", "epochs", "batch", "batches")
    out = {key: progress.get(key) for key in keys}
    out["fraction"] = 1.0 if job.state == "succeeded" else progress.get("fraction", 0.0)
    return out


def job_error(*, job: Job) -> dict[str, str] | None:
    if not job.error_code and not job.error_message:
        return None
    return {"code": job.error_code, "message": job.error_message}


def job_delivery(*, job: Job) -> dict[str, Any]:
    return {
        "attempts": job.dispatch_attempts,
        "next_attempt_at": job.next_attempt_at,
        "last_error": job.last_dispatch_error or None,
        "delivered": job.delivered,
    }


# The status document without a serializer instance: `GET /api/v1/jobs/{id}/` is what
# every poller calls several times a second. It must read exactly as JobOut (a test
# compares them); JobOut stays the schema and serves lists.
_DATETIME = serializers.DateTimeField()


def _when(value: Any, *, tz: tzinfo | None) -> str | None:
    """What JobOut's DateTimeField gives: ISO 8601 in the current time zone, UTC as `Z`.

    Written out for the usual case (an aware datetime, DRF's ISO 8601 output) because a
    poll formats four of them and DRF looks the time zone up for each; anything else
    goes to the DRF field itself."""
    if value is None:
        return None
    if tz is None or not timezone.is_aware(value) or api_settings.DATETIME_FORMAT != ISO_8601:
        return _DATETIME.to_representation(value)
    try:
        text = value.astimezone(tz).isoformat()
    except OverflowError:
        return _DATETIME.to_representation(value)  # DRF's own error for it
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def job_public(*, job: Job) -> dict[str, Any]:
    """What JobOut(job).data gives, built directly."""
    tz = _DATETIME.default_timezone()
    return {
        "id": str(job.id),
        "kind": str(job.kind),
        "state": str(job.state),
        "owner": str(job.owner.username),
        "name": job.name,
        "tags": job.tag_list,
        "note": job.note,
        "url": job_url(job=job),
        "params": job_params(job=job),
        "gpus": int(job.gpus),
        "gpu_ids": [int(gpu) for gpu in job.gpu_ids] if job.gpu_ids is not None else None,
        "dataset": str(job.dataset_id) if job.dataset_id is not None else None,
        "model_version": str(job.model_version_id) if job.model_version_id is not None else None,
        "registered_model_version": job_registered_model_version(job=job),
        "progress": job_progress(job=job),
        "metrics": (
            {str(key): value for key, value in job.metrics.items()}
            if job.metrics is not None
            else None
        ),
        "result": job_result_public(job=job),
        "error": job_error(job=job),
        "delivery": job_delivery(job=job),
        "notes": job_notes(job=job),
        "created_at": _when(job.created_at, tz=tz),
        "started_at": _when(job.started_at, tz=tz),
        "finished_at": _when(job.finished_at, tz=tz),
        "updated_at": _when(job.updated_at, tz=tz),
    }


# What Django's reverse() leaves unquoted in a path argument; artifact URLs are built
# from a per-job prefix instead of one reverse() per image, and must read the same.
_PATH_SAFE = "!$&'()*+,;=/~:@"


def _artifact_prefix(*, job: Job) -> str:
    return job_route("api:job-artifact", job_id=job.id, relpath="-")[:-1]


def artifact_url(*, job: Job, absolute: str | None, prefix: str | None = None) -> str | None:
    rel = job_artifact_relpath(job=job, absolute=absolute)
    if rel is None:
        return None
    return (prefix or _artifact_prefix(job=job)) + quote(rel, safe=_PATH_SAFE)


def job_result_public(*, job: Job) -> dict[str, Any] | None:
    """The GPU service's result with server paths replaced by URLs this API serves."""
    if job.result is None:
        return None
    result = dict(job.result)
    prefix = _artifact_prefix(job=job)
    if job.kind == JobKind.INFER:
        result["results_url"] = artifact_url(
            job=job, absolute=result.pop("results_path", None), prefix=prefix
        )
        result["images"] = [
            _detections_public(job=job, image=img, prefix=prefix)
            for img in result.get("images", [])
        ]
        if result.get("video"):
            video = dict(result["video"])
            for key in ("annotated_video", "annotated_webm", "detections_path"):
                url_key = key.removesuffix("_path") + "_url"
                video[url_key] = artifact_url(job=job, absolute=video.pop(key, None), prefix=prefix)
            result["video"] = video
    elif job.kind == JobKind.EXPORT:
        pass  # the export's manifest and manifest_path are relative to storage already
    elif job.kind == JobKind.EVALUATE:
        # The document itself is served at its own route; its path is job-relative.
        result["evaluation_url"] = job_route("api:job-evaluation", job_id=job.id)
    else:
        weights = dict(result.get("weights") or {})
        weights.pop("path", None)
        result["weights"] = weights
        result["manifest_url"] = artifact_url(
            job=job, absolute=result.pop("manifest_path", None), prefix=prefix
        )
    return result


def _detections_public(*, job: Job, image: dict[str, Any], prefix: str) -> dict[str, Any]:
    out = dict(image)
    source = out.pop("source", "") or ""
    # Uploaded as 0003_name.jpg; show the name the user gave it.
    name = source.rsplit("/", 1)[-1]
    out["name"] = name.split("_", 1)[1] if "_" in name[:5] else name
    out["annotated_url"] = artifact_url(
        job=job, absolute=out.pop("annotated_path", None), prefix=prefix
    )
    return out


def job_detections_public(*, job: Job) -> dict[str, Any]:
    """A succeeded inference's detections: per input image, in input order."""
    result = job_result_public(job=job) or {}
    return {
        "job_id": str(job.id),
        "state": str(job.state),
        "model": result.get("model"),
        "images": result.get("images", []),
        "images_per_second": result.get("images_per_second"),
        "results_url": result.get("results_url"),
    }
