"""Decompression bombs: images are judged by the pixels their header declares, before
anything decodes them; Pillow's own limit is never raised for the whole process.

The dataset corpus holds the same bombs (tests/web/datasets/test_dataset_upload.py:
`decompression_bomb_image`, `forged_header_past_pillows_bound`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from jobs.models import Job

from tests.web import dataset_zips as z
from tests.web.factories import model_version

ROOT = Path(__file__).resolve().parents[2]

BOMBS = {
    # A valid 13,000 x 13,000 PNG of 20 KB: under Pillow's own bound, so only our cap stops it.
    "real_png_169_megapixels": lambda: z.png_bomb(),
    # A header alone, declaring 100,000²: only a header read can judge it.
    "forged_header_10_gigapixels": lambda: z.png_header_only(width=100_000, height=100_000),
    "forged_header_just_over_the_cap": lambda: z.png_header_only(width=8000, height=5001),
}


@pytest.mark.parametrize("case", sorted(BOMBS))
def test_an_inference_image_over_the_pixel_cap_is_refused_from_its_header_and_creates_no_job(
    case: str, owner_api, storage: Path
) -> None:
    model_version(stage="serving")
    images = [
        SimpleUploadedFile("fine.png", z.png()),
        SimpleUploadedFile("holiday.png", BOMBS[case]()),
    ]
    response = owner_api.post("/api/v1/jobs/infer/", {"images": images}, format="multipart")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "IMAGE_TOO_LARGE"
    assert "holiday.png" in error["message"]
    assert error["details"]["file"] == "holiday.png"
    assert error["details"]["max_pixels"] == 40_000_000
    if case != "forged_header_10_gigapixels":
        assert " x " in error["message"]  # the size it declared
    assert not Job.objects.exists()
    assert list((storage / "uploads" / "infer").iterdir()) == []


def test_an_image_at_the_cap_is_accepted(owner_api, settings, fake_gpu) -> None:
    settings.CARRIL_INFER_MAX_PIXELS = 32 * 32
    model_version(stage="serving")
    image = SimpleUploadedFile("edge.png", z.png(size=32))
    response = owner_api.post("/api/v1/jobs/infer/", {"images": [image]}, format="multipart")
    assert response.status_code == 202, response.content


def test_the_inference_cap_follows_its_setting(owner_api, settings, storage: Path) -> None:
    settings.CARRIL_INFER_MAX_PIXELS = 32 * 32 - 1
    model_version(stage="serving")
    image = SimpleUploadedFile("edge.png", z.png(size=32))
    response = owner_api.post("/api/v1/jobs/infer/", {"images": [image]}, format="multipart")
    assert response.json()["error"]["code"] == "IMAGE_TOO_LARGE"
    assert "32 x 32" in response.json()["error"]["message"]


def test_pillows_process_wide_limit_is_left_at_its_default(tmp_path: Path) -> None:
    # In a fresh interpreter: every module that handles images, then Pillow's limit.
    code = (
        "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', "
        "'carril_web.settings'); django.setup()\n"
        "from PIL import Image; default = Image.MAX_IMAGE_PIXELS\n"
        "import datasets.validation, datasets.services, jobs.images, jobs.services\n"
        "import carril_web.images\n"
        "print(default == Image.MAX_IMAGE_PIXELS == int(1024 * 1024 * 1024 // 4 // 3))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT / "web",
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "CARRIL_STORAGE": str(tmp_path)},
    )
    assert out.stdout.strip() == "True", out.stderr
