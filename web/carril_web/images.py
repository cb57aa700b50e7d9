"""An image's size from its header alone, before anything is decoded.

A PNG of a few hundred kilobytes can decode to 13,000 x 13,000 pixels (half a gigabyte
of RGB). Pillow's `Image.open` reads only the header, so the size is known before a
single pixel is allocated; every image the web app accepts passes through here first.
Pillow's own process-wide limit stays at its default: the caps here are per use
(`CARRIL_INFER_MAX_PIXELS`, `CARRIL_DATASET_MAX_PIXELS`) and stricter.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PIL import Image, UnidentifiedImageError


@dataclass(frozen=True)
class ImageHeader:
    width: int
    height: int

    @property
    def pixels(self) -> int:
        return self.width * self.height


class NotAnImage(Exception):
    """The file's header is not one Pillow can read."""


class TooManyPixels(Exception):
    """The header declares more pixels than allowed; `pixels` is None past Pillow's bound."""

    def __init__(self, *, pixels: int | None, width: int | None, height: int | None) -> None:
        self.pixels = pixels
        self.width = width
        self.height = height
        size = f"{width} x {height} pixels" if width and height else "more pixels than Pillow reads"
        super().__init__(size)


def image_header_read(*, path: Path, max_pixels: int) -> ImageHeader:
    """The image's size, refused (TooManyPixels) past `max_pixels`, without decoding it."""
    try:
        with Image.open(path) as img:
            width, height = img.size
    except Image.DecompressionBombError as exc:  # past twice Pillow's own limit
        raise TooManyPixels(pixels=None, width=None, height=None) from exc
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise NotAnImage(str(exc)) from exc
    header = ImageHeader(width=width, height=height)
    if header.pixels > max_pixels:
        raise TooManyPixels(pixels=header.pixels, width=width, height=height)
    return header
