"""Inference images measured from their headers, and batches bounded by pixels.

A PNG of a few hundred kilobytes can declare 13,000 x 13,000 pixels; decoding it takes
half a gigabyte. So the size of every image is read from its header (Pillow's `open`
reads no pixel data), an image over the cap is refused before anything is decoded, and
a batch is bounded by the pixels it decodes, not by how many images it holds: the
worker's memory then depends on CARRIL_INFER_MAX_PIXELS, not on what a request sends.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_service import errors
from gpu_service.settings import Settings
from gpu_service.workloads.worker_env import int_setting


@dataclass(frozen=True)
class SizedImage:
    path: Path
    width: int
    height: int

    @property
    def pixels(self) -> int:
        return self.width * self.height


def max_pixels() -> int:
    """CARRIL_INFER_MAX_PIXELS: the environment the settings were read from (in the API
    process), or that the workers' parent passed on (workers/env.py); same default."""
    default = Settings.model_fields["infer_max_pixels"].default
    return int_setting("CARRIL_INFER_MAX_PIXELS", default=default)


def sized_images(
    *, paths: list[Path], limit: int, names: list[str] | None = None
) -> list[SizedImage]:
    """Each image's size from its header; refuses the first over `limit` pixels or unreadable."""
    from PIL import Image

    sized = []
    for index, path in enumerate(paths):
        name = names[index] if names else str(path)
        try:
            with Image.open(path) as opened:  # header only: no pixel is decoded here
                width, height = opened.size
        except Image.DecompressionBombError:
            width, height = _declared_size(path)
        except Exception as exc:  # any failure to read a header is a refusal
            # (ultralytics patches Image.open in the worker: there an unknown format raises
            # ModuleNotFoundError for pi_heif, not UnidentifiedImageError.)
            raise errors.ValidationFailed(
                f"images[{index}]: {name} is not an image Pillow can read",
                details={"field": f"images[{index}]", "path": name, "reason": type(exc).__name__},
            ) from None
        if width * height > limit:
            raise errors.ImageTooLarge(
                f"images[{index}]: {name} is {width} x {height} pixels "
                f"({width * height:,}); the limit is {limit:,} (CARRIL_INFER_MAX_PIXELS)",
                details={
                    "field": f"images[{index}]",
                    "path": name,
                    "width": width,
                    "height": height,
                    "pixels": width * height,
                    "max_pixels": limit,
                },
            )
        sized.append(SizedImage(path=path, width=width, height=height))
    return sized


def _declared_size(path: Path) -> tuple[int, int]:
    """The size of an image Pillow refuses to open as a bomb, read with its guard lifted
    for this one header read (still no pixel decoded)."""
    from PIL import Image

    guard = Image.MAX_IMAGE_PIXELS
    Image.MAX_IMAGE_PIXELS = None
    try:
        with Image.open(path) as opened:
            return opened.size
    finally:
        Image.MAX_IMAGE_PIXELS = guard


def pixel_batches(
    images: list[SizedImage], *, max_images: int, max_pixels: int
) -> list[list[SizedImage]]:
    """Consecutive batches of at most `max_images` images and `max_pixels` pixels in all;
    an image that alone fills the budget is a batch of its own."""
    batches: list[list[SizedImage]] = []
    current: list[SizedImage] = []
    pixels = 0
    for image in images:
        if current and (len(current) >= max_images or pixels + image.pixels > max_pixels):
            batches.append(current)
            current, pixels = [], 0
        current.append(image)
        pixels += image.pixels
    if current:
        batches.append(current)
    return batches


def decode(image: SizedImage) -> Any:
    """The image's pixels decoded once, upright (EXIF orientation) as 8-bit BGR: the one
    array the model reads and the boxes are drawn on. OpenCV, not Pillow: it decodes
    straight into that array, where Pillow takes copies to get there (measured on a 16 MP
    image through ultralytics' predict: 144 MB of peak with OpenCV, 273 MB with Pillow)."""
    import cv2

    pixels = cv2.imread(str(image.path), cv2.IMREAD_COLOR)
    if pixels is None:
        raise errors.ValidationFailed(
            f"{image.path.name} could not be decoded", details={"path": str(image.path)}
        )
    height, width = pixels.shape[:2]
    if width * height != image.pixels:  # the file changed since its header was checked
        raise errors.ImageTooLarge(
            f"{image.path.name} changed while it was being read",
            details={"path": str(image.path), "width": width, "height": height},
        )
    return pixels
