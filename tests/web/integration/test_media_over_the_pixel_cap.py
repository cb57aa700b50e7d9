"""A video or zip whose frames or images are over CARRIL_INFER_MAX_PIXELS is refused at
submit, through the web and the real GPU service's probe (ADR 0048, 0028): 400
IMAGE_TOO_LARGE naming the file, no job and nothing kept, as for an image sent on its own.
Before, a 7000 x 6000 video was accepted and failed later, and a zipped 10-gigapixel PNG
made the GPU service answer 500, which the user saw as 503 "try again shortly"."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from jobs.models import Job

from tests.security.test_inference_decode_bombs import png_bomb
from tests.security.test_inference_media_bombs import mjpg_video, png_header
from tests.web.api.test_api_model_exports import store_weights
from tests.web.factories import model_version
from tests.web.integration.conftest import TOKEN

pytestmark = pytest.mark.slow


@pytest.fixture
def served(owner_api, gpu_url, gpu_service, storage):
    gpu_service(storage=storage, port=int(gpu_url.rsplit(":", 1)[1]), token=TOKEN)
    model_version(fingerprint=store_weights(storage), stage="serving")
    return owner_api


def _infer(api, name: str, data: bytes):
    return api.post(
        "/api/v1/jobs/infer/", {"media": SimpleUploadedFile(name, data)}, format="multipart"
    )


def _nothing_left(storage: Path) -> bool:
    uploads = storage / "uploads" / "infer"
    return not Job.objects.exists() and (not uploads.exists() or not any(uploads.iterdir()))


def _stored_zip(path: Path, members: dict[str, bytes]) -> bytes:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path.read_bytes()


def test_a_video_whose_frames_are_over_the_pixel_cap_gets_no_job_and_leaves_no_file(
    served, storage, tmp_path
):
    clip = mjpg_video(tmp_path / "big.avi", width=7000, height=6000).read_bytes()
    assert len(clip) < 2_000_000

    response = _infer(served, "drone.avi", clip)

    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "IMAGE_TOO_LARGE"
    assert error["message"].startswith("drone.avi: its frames are 7000 x 6000 pixels")
    assert "CARRIL_INFER_MAX_PIXELS" in error["message"]
    assert error["details"]["file"] == "drone.avi"
    assert (error["details"]["width"], error["details"]["height"]) == (7000, 6000)
    assert error["details"]["max_pixels"] == 40_000_000
    assert _nothing_left(storage)


def test_a_zip_holding_an_image_over_the_pixel_cap_gets_no_job_and_leaves_no_file(
    served, storage, tmp_path
):
    big = png_bomb(tmp_path / "big.png", side=8000).read_bytes()  # 64 MP
    data = _stored_zip(tmp_path / "imgs.zip", {"a.png": png_header(64, 64), "b/big.png": big})

    response = _infer(served, "survey.zip", data)

    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "IMAGE_TOO_LARGE"
    assert error["message"].startswith("survey.zip: 'b/big.png' is 8000 x 8000 pixels")
    assert error["details"]["member"] == "b/big.png"
    assert error["details"]["fields"]["media"]
    assert _nothing_left(storage)


def test_a_zipped_ten_gigapixel_png_is_the_users_400_not_a_503(served, storage, tmp_path):
    data = _stored_zip(tmp_path / "imgs.zip", {"huge.png": png_header(100_000, 100_000)})

    response = _infer(served, "huge.zip", data)

    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "IMAGE_TOO_LARGE"
    assert "100000 x 100000" in error["message"]
    assert error["details"]["member"] == "huge.png"
    assert _nothing_left(storage)
