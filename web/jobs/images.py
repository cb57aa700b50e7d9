"""Checking an inference image once it is on disk: an image, and not too many pixels.

The header decides (no decoding), so a decompression bomb is refused at submit and no
job is created; the GPU service's worker never sees it.
"""

from __future__ import annotations

from pathlib import Path

from carril_web.errors import ImageTooLarge, ValidationFailed
from carril_web.images import TooManyPixels, image_header_read
from django.conf import settings
from PIL import Image


def inference_image_check(*, path: Path, name: str) -> None:
    """Raise ImageTooLarge or ValidationFailed naming the file; return if it is fine."""
    limit = settings.CARRIL_INFER_MAX_PIXELS
    try:
        image_header_read(path=path, max_pixels=limit)
        with Image.open(path) as img:
            img.verify()  # the structure, still without decoding the pixels
    except TooManyPixels as exc:
        raise ImageTooLarge(
            f"{name} is {exc}; at most {limit} pixels are accepted.",
            details={"file": name, "width": exc.width, "height": exc.height, "max_pixels": limit},
        ) from exc
    except Exception as exc:  # NotAnImage, or a structure verify() refuses
        raise ValidationFailed(
            f"{name} is not an image.", details={"fields": {"images": [name]}}
        ) from exc
