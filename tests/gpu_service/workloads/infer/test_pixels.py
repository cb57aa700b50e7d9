"""Image sizes from headers and batches bounded by pixels."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_service import errors
from gpu_service.workloads.infer.pixels import SizedImage, pixel_batches, sized_images


def _sized(*sides: int) -> list[SizedImage]:
    return [SizedImage(path=Path(f"{i}.jpg"), width=s, height=s) for i, s in enumerate(sides)]


def test_a_batch_is_bounded_by_its_pixels_and_by_its_image_count() -> None:
    images = _sized(100, 100, 100, 200, 10, 10, 10)  # 10k, 10k, 10k, 40k, 100 x 3

    batches = pixel_batches(images, max_images=3, max_pixels=40_000)

    assert [[i.width for i in batch] for batch in batches] == [
        [100, 100, 100],  # 30k: the count bound
        [200],  # 40k alone fills the budget
        [10, 10, 10],
    ]


def test_an_image_that_alone_is_over_the_budget_is_still_a_batch_of_its_own() -> None:
    batches = pixel_batches(_sized(10, 300, 10), max_images=16, max_pixels=1_000)

    assert [[i.width for i in batch] for batch in batches] == [[10], [300], [10]]


def test_sizes_come_from_the_header_and_an_image_over_the_cap_is_refused(tmp_path: Path) -> None:
    from PIL import Image

    Image.new("RGB", (300, 200)).save(tmp_path / "ok.png")
    Image.new("RGB", (400, 300)).save(tmp_path / "big.png")
    (tmp_path / "not-an-image.png").write_bytes(b"hello")

    sized = sized_images(paths=[tmp_path / "ok.png"], limit=60_000)
    assert [(i.width, i.height, i.pixels) for i in sized] == [(300, 200, 60_000)]
    with pytest.raises(errors.ImageTooLarge) as refused:
        sized_images(paths=[tmp_path / "ok.png", tmp_path / "big.png"], limit=60_000)
    assert refused.value.details["field"] == "images[1]"
    assert refused.value.details["pixels"] == 120_000
    with pytest.raises(errors.ValidationFailed):
        sized_images(paths=[tmp_path / "not-an-image.png"], limit=60_000)


def test_a_webp_is_measured_from_its_first_bytes_without_pillow_allocating_its_canvas(
    tmp_path: Path,
) -> None:
    import io

    from PIL import Image

    from gpu_service.workloads.infer.pixels import declared_size

    Image.new("RGB", (300, 200)).save(tmp_path / "ok.webp")
    data = (tmp_path / "ok.webp").read_bytes()

    class Counted(io.BytesIO):
        most = 0

        def read(self, size: int | None = -1) -> bytes:
            chunk = super().read(size)
            Counted.most = max(Counted.most, self.tell())
            return chunk

    assert declared_size(Counted(data)) == (300, 200)
    assert Counted.most == 30  # Pillow's own open reads the whole file and decodes a canvas
    assert sized_images(paths=[tmp_path / "ok.webp"], limit=60_000)[0].pixels == 60_000


def test_a_header_that_runs_past_its_budget_is_not_an_image(tmp_path: Path) -> None:
    import struct
    import zlib

    from gpu_service.workloads.infer import pixels

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    ihdr = struct.pack(">IIBBBBB", 64, 64, 8, 2, 0, 0, 0)
    # An ancillary chunk Pillow does not know, longer than the budget, before the pixels.
    padded = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"zzZz", bytes(2 * 1024**2))
    (tmp_path / "padded.png").write_bytes(padded)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pixels, "HEADER_MAX_BYTES", 1024**2)
        with pytest.raises(errors.ValidationFailed) as refused:
            sized_images(paths=[tmp_path / "padded.png"], limit=60_000)
    assert refused.value.details["reason"] == "HeaderTooLong"
