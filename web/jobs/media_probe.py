"""A video or zip of images checked by the GPU service before its inference job exists.

The web has no OpenCV (its image stays small), so it cannot tell whether a video
decodes; the GPU service can, and would refuse the job at delivery, after the user was
told it was accepted. So the web asks first (`POST /v1/media/probe`, ADR 0048): a
refusal becomes the user's 400 VALIDATION_ERROR with the GPU service's `reason` (400
IMAGE_TOO_LARGE for video frames or zipped images over CARRIL_INFER_MAX_PIXELS), and
no job is created. When the GPU service cannot answer, the submit is refused with 503
GPU_SERVICE_UNAVAILABLE rather than creating a job nobody has checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gpu_client
from carril_web.errors import GpuServiceUnavailable, ImageTooLarge, ValidationFailed


def media_probe(*, path: Path, name: str, max_seconds: float) -> dict[str, Any]:
    """The media's properties as the GPU service read them; ValidationFailed or
    ImageTooLarge when it would refuse them, GpuServiceUnavailable when it cannot be asked."""
    try:
        with gpu_client.client_build() as gpu:
            return gpu.media_probe(path=path, max_seconds=max_seconds)
    except GpuServiceUnavailable as exc:
        raise GpuServiceUnavailable(
            "The GPU service cannot check the video or zip right now; try again shortly.",
            details={"field": "media", **exc.details},
        ) from exc
    except gpu_client.GpuServiceRefused as exc:
        if exc.code == "IMAGE_TOO_LARGE":
            raise _too_large(exc, name=name) from exc
        if exc.code != "VALIDATION_ERROR":
            # Not the media's fault (a token or a storage mount that does not match):
            # the user can only wait for an operator.
            raise GpuServiceUnavailable(
                "The GPU service could not check the video or zip.",
                details={"field": "media", "reason": "probe_refused", "code": exc.code},
            ) from exc
        problem = _without_field(exc.message, field=exc.details.get("field"))
        raise ValidationFailed(
            f"{name}: {problem}",
            details={"fields": {"media": [problem]}, "reason": exc.details.get("reason", "")},
        ) from exc


def _too_large(exc: gpu_client.GpuServiceRefused, *, name: str) -> ImageTooLarge:
    """The same details as an image sent on its own (`jobs/images.py`), and the zip's
    member when it was one of a zip's images."""
    problem = _without_field(exc.message, field=exc.details.get("field"))
    details = {
        key: exc.details[key]
        for key in ("width", "height", "max_pixels", "member")
        if key in exc.details
    }
    return ImageTooLarge(
        f"{name}: {problem}", details={"file": name, **details, "fields": {"media": [problem]}}
    )


def _without_field(message: str, *, field: Any) -> str:
    """The GPU service names its own spec field ("video.path: ..."); the user sent `media`."""
    prefix = f"{field}: "
    return (
        message[len(prefix) :] if isinstance(field, str) and message.startswith(prefix) else message
    )
