"""An inference job over a video: the annotated video in a player, a per-frame count
timeline, and the files to download (issue 14, ADR 0030)."""

from __future__ import annotations

import uuid
from typing import Any

from carril_web.errors import CarrilWebError
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest
from django.urls import reverse
from django.views.decorators.http import require_GET
from jobs.selectors import job_artifact_path, job_artifact_relpath, job_get

_TYPES = {
    ".webm": "video/webm",
    ".mp4": "video/mp4",
    ".json": "application/json",
    # An evaluation's sample images and ultralytics' plots (issue 13).
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
}
TIMELINE_HEIGHT = 40


@login_required
@require_GET
def job_file(request: HttpRequest, job_id: uuid.UUID, relpath: str) -> FileResponse:
    """A file of a job the user may see (the annotated video, its detections)."""
    try:
        job = job_get(user=request.user, job_id=job_id)
        path = job_artifact_path(job=job, relpath=relpath)
    except CarrilWebError as exc:
        raise Http404(exc.message) from exc
    content_type = _TYPES.get(path.suffix.lower(), "application/octet-stream")
    return FileResponse(path.open("rb"), content_type=content_type)


def video_view(*, job: Any) -> dict[str, Any] | None:
    """The player's sources and the timeline's bars, or None for a job without video."""
    video = (job.result or {}).get("video") if job.kind == "infer" else None
    if not video:
        return None

    def url(absolute: str | None) -> str | None:
        rel = job_artifact_relpath(job=job, absolute=absolute)
        if rel is None:
            return None
        return reverse("ui:job_file", kwargs={"job_id": job.id, "relpath": rel})

    frames = video.get("frames") or []
    most = max((f["count"] for f in frames), default=0) or 1
    width = max(len(frames), 1)
    return {
        "webm_url": url(video.get("annotated_webm")),
        "mp4_url": url(video.get("annotated_video")),
        "detections_url": url(video.get("detections_path")),
        "fps": video.get("fps_sampled"),
        "frames": len(frames),
        "most": max((f["count"] for f in frames), default=0),
        "total": sum(f["count"] for f in frames),
        "timeline_width": width,
        "timeline_height": TIMELINE_HEIGHT,
        "bars": [
            {
                "x": i,
                "height": round(TIMELINE_HEIGHT * f["count"] / most, 2),
                "y": round(TIMELINE_HEIGHT - TIMELINE_HEIGHT * f["count"] / most, 2),
                "time_s": f["time_s"],
                "count": f["count"],
            }
            for i, f in enumerate(frames)
        ],
    }
