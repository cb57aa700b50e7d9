"""Inference images measured from their headers, and batches bounded by pixels.

A PNG of a few hundred kilobytes can declare 13,000 x 13,000 pixels; decoding it takes
half a gigabyte. So the size of every image is read from its header (Pillow's `open`
reads no pixel data), an image over the cap is refused before anything is decoded, and
a batch is bounded by the pixels it decodes, not by how many images it holds: the
worker's memory then depends on CARRIL_INFER_MAX_PIXELS, not on what a request sends.
"""

from __future__ import annotations

import io
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

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
    sized = []
    for index, path in enumerate(paths):
        name = names[index] if names else str(path)
        try:
            with open(path, "rb") as file:
                width, height = declared_size(file)
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


# Pillow finds an image's size in its first few kilobytes; a header that needs more than
# this is not an image we infer on (a PNG can put a chunk of any length before its pixels,
# and Pillow holds a chunk whole while it reads it).
HEADER_MAX_BYTES = 16 * 1024**2
# Lifting Pillow's process-wide bomb guard for one read must not race another thread's.
_GUARD = threading.Lock()


class HeaderTooLong(OSError):
    """The image's header runs past HEADER_MAX_BYTES."""


def declared_size(file: IO[bytes]) -> tuple[int, int]:
    """Width and height as the header of `file` (a seekable binary file: on disk, or a zip
    member) declares them; no pixel is decoded and at most HEADER_MAX_BYTES are read.
    Past Pillow's own bomb guard too: the caller compares the size with its own cap."""
    from PIL import Image, WebPImagePlugin

    start = file.tell()
    head = file.read(30)
    file.seek(start)
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        # Pillow's WebP `open` reads the whole file and allocates its canvas (4 bytes a
        # pixel) before it answers; its own header reader answers from these 30 bytes.
        size = WebPImagePlugin._get_size(head)
        if size is None:
            raise SyntaxError("not a WebP header Pillow can read")
        return size
    bounded = _Bounded(file, limit=HEADER_MAX_BYTES)
    try:
        with Image.open(bounded) as opened:
            return opened.size
    except Image.DecompressionBombError:
        pass
    with _GUARD:
        guard, Image.MAX_IMAGE_PIXELS = Image.MAX_IMAGE_PIXELS, None
        try:
            bounded.seek(0)
            with Image.open(bounded) as opened:
                return opened.size
        finally:
            Image.MAX_IMAGE_PIXELS = guard


class _Bounded(io.RawIOBase):
    """A read-only view of `file` from where it stands that refuses to read past `limit`."""

    def __init__(self, file: IO[bytes], *, limit: int) -> None:
        self._file = file
        self._start = file.tell()
        self._limit = limit

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._file.tell() - self._start

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            offset += self._start
        return self._file.seek(offset, whence) - self._start

    def readinto(self, buffer: Any) -> int:
        room = self._limit - self.tell()
        if room <= 0:
            raise HeaderTooLong(f"the header runs past its first {self._limit:,} bytes")
        data = self._file.read(min(len(buffer), room))
        buffer[: len(data)] = data
        return len(data)


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
