"""Zips and videos sent for inference cost the GPU service's API process almost nothing,
however hostile: a zip's members are judged from its listing (declared size, compression
ratio) and read as a stream only as far as an image header; a video is opened and its
first frame decoded in a child process, after its declared frame size passed the pixel
cap (ADR 0030). Measured as the real service's peak resident memory (VmHWM) across the
probes the web asks at submit (ADR 0048), which a 255 KB zip once raised by 500 MB."""

from __future__ import annotations

import struct
import zipfile
import zlib
from pathlib import Path

import pytest

from gpu_service.errors import CATALOGUE
from tests.security.test_inference_decode_bombs import _reset_peak, _status_kib, png_bomb
from tests.support.gpu_service import GpuServiceProcess

pytestmark = pytest.mark.slow

# What a probe of a hostile file may add to the API process's peak memory.
PEAK_BOUND = 64 * 1024**2


def png_header(width: int, height: int) -> bytes:
    """A PNG that declares width x height pixels and holds almost none of them: enough
    for a header read; decoding it would allocate the whole declared image."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00" * 1024)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def zeros_zip(path: Path, *, megabytes: int) -> Path:
    """A zip of about a quarter of a kilobyte per megabyte it unpacks to: one "image" of
    a PNG signature and then zeros, written a megabyte at a time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    zf = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9)
    with zf, zf.open("holiday.png", "w", force_zip64=True) as member:
        member.write(b"\x89PNG\r\n\x1a\n")
        for _ in range(megabytes):
            member.write(bytes(1024**2))
    return path


def mjpg_video(path: Path, *, width: int, height: int, frames: int = 2) -> Path:
    import cv2
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 10, (width, height))
    assert writer.isOpened()
    frame = np.zeros((height, width, 3), np.uint8)
    for _ in range(frames):
        writer.write(frame)
    writer.release()
    return path


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory):
    storage = tmp_path_factory.mktemp("media-bombs") / "storage"
    service = GpuServiceProcess(storage=storage, gpus="1x24GiB").start()
    yield service
    service.stop()


def _probe(service: GpuServiceProcess, path: str) -> dict:
    response = service.client.post(
        "/v1/media/probe", json={"path": path, "max_seconds": 600}, timeout=60
    )
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] in CATALOGUE, error  # a documented code, never a 500
    assert CATALOGUE[error["code"]][0] == 422
    return error


def _idle_peak(service: GpuServiceProcess) -> int:
    """Warm the probe's lazy imports with an ordinary zip, then reset the peak to now."""
    from PIL import Image

    small = service.storage / "uploads" / "infer" / "warm" / "ok.zip"
    small.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(small, "w") as zf:
        image = small.with_suffix(".png")
        Image.new("RGB", (64, 64)).save(image)
        zf.write(image, "ok.png")
    warm = service.client.post(
        "/v1/media/probe", json={"path": "uploads/infer/warm/ok.zip", "max_seconds": 600}
    )
    assert warm.status_code == 200, warm.text
    return _reset_peak(service.pid)


def test_a_zip_bomb_and_a_huge_declared_png_are_refused_without_growing_the_service(
    service: GpuServiceProcess,
) -> None:
    bomb = zeros_zip(service.storage / "uploads" / "infer" / "b1" / "media.zip", megabytes=500)
    assert bomb.stat().st_size < 1_000_000  # ~0.5 MB that unpacks to 500 MB
    huge = service.storage / "uploads" / "infer" / "b2" / "media.zip"
    huge.parent.mkdir(parents=True)
    with zipfile.ZipFile(huge, "w") as zf:
        zf.writestr("ok.png", png_header(64, 64))
        zf.writestr("gigapixels.png", png_header(100_000, 100_000))  # 10 gigapixels
    idle = _idle_peak(service)

    ratio = _probe(service, "uploads/infer/b1/media.zip")
    too_large = _probe(service, "uploads/infer/b2/media.zip")

    grown = _status_kib(service.pid, "VmHWM") * 1024 - idle
    assert grown < PEAK_BOUND, f"the API process's peak grew by {grown / 1024**2:.0f} MiB"
    assert ratio["code"] == "VALIDATION_ERROR"
    assert ratio["details"]["reason"] == "compression_ratio"
    assert ratio["details"]["member"] == "holiday.png"
    assert too_large["code"] == "IMAGE_TOO_LARGE"
    assert too_large["details"]["member"] == "gigapixels.png"
    assert too_large["details"]["pixels"] == 10_000_000_000
    assert "100000 x 100000" in too_large["message"]


def test_a_member_that_declares_more_bytes_than_any_image_within_the_cap_is_refused(
    service: GpuServiceProcess,
) -> None:
    # 346 MB of noise compresses not at all, so only its declared size gives it away;
    # a zip entry is stored, and the size is what its listing says.
    path = service.storage / "uploads" / "infer" / "b3" / "media.zip"
    path.parent.mkdir(parents=True)
    zf = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED)
    with zf, zf.open("noise.png", "w", force_zip64=True) as member:
        member.write(b"\x89PNG\r\n\x1a\n")
        block = bytes(range(256)) * 4096
        for _ in range(330):
            member.write(block)
    idle = _idle_peak(service)

    error = _probe(service, "uploads/infer/b3/media.zip")

    assert _status_kib(service.pid, "VmHWM") * 1024 - idle < PEAK_BOUND
    assert error["code"] == "VALIDATION_ERROR"
    assert error["details"]["reason"] == "member_too_big"


def test_a_zipped_png_over_the_pixel_cap_is_refused_from_its_header(
    service: GpuServiceProcess, tmp_path: Path
) -> None:
    png = png_bomb(tmp_path / "big.png", side=8000)  # 64 MP, 190 KB
    path = service.storage / "uploads" / "infer" / "b4" / "media.zip"
    path.parent.mkdir(parents=True)
    # Stored: deflated again, a PNG of nothing but black would meet the ratio cap first
    # (371-fold).
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.write(png, "aerial/big.png")
    idle = _idle_peak(service)

    error = _probe(service, "uploads/infer/b4/media.zip")

    assert _status_kib(service.pid, "VmHWM") * 1024 - idle < PEAK_BOUND
    assert error["code"] == "IMAGE_TOO_LARGE"
    assert error["details"]["member"] == "aerial/big.png"
    assert (error["details"]["width"], error["details"]["height"]) == (8000, 8000)
    assert error["details"]["max_pixels"] == 40_000_000


def test_a_video_over_the_pixel_cap_is_refused_before_a_frame_is_decoded_in_the_service(
    service: GpuServiceProcess,
) -> None:
    mjpg_video(service.storage / "uploads" / "infer" / "v1" / "media.avi", width=7000, height=6000)
    idle = _idle_peak(service)

    error = _probe(service, "uploads/infer/v1/media.avi")

    # Decoding one 7000 x 6000 frame in the API process took 300 MB.
    assert _status_kib(service.pid, "VmHWM") * 1024 - idle < PEAK_BOUND
    assert error["code"] == "IMAGE_TOO_LARGE"
    assert error["details"]["field"] == "video.path"
    assert (error["details"]["width"], error["details"]["height"]) == (7000, 6000)
    assert "7000 x 6000" in error["message"]
