"""A video sent for inference is checked by the real GPU service before its job exists
(ADR 0048): the web has no OpenCV, the GPU service decodes the first frame."""

from __future__ import annotations

from pathlib import Path

from django.core.files.uploadedfile import SimpleUploadedFile
from jobs.models import Job

from tests.gpu_service.workloads.infer.test_media import make_video, make_zip, png_bytes
from tests.web.api.test_api_model_exports import store_weights
from tests.web.factories import model_version
from tests.web.integration.conftest import TOKEN


def _infer(api, name: str, data: bytes, **fields):
    return api.post(
        "/api/v1/jobs/infer/",
        {"media": SimpleUploadedFile(name, data), **fields},
        format="multipart",
    )


def _nothing_left(storage: Path) -> bool:
    uploads = storage / "uploads" / "infer"
    return not Job.objects.exists() and (not uploads.exists() or not any(uploads.iterdir()))


def test_an_undecodable_or_too_long_video_is_refused_at_submit_with_no_job_and_no_file(
    owner_api, gpu_url, gpu_service, storage, tmp_path, run_on_commit
):
    gpu_service(storage=storage, port=int(gpu_url.rsplit(":", 1)[1]), token=TOKEN)
    model_version(fingerprint=store_weights(storage), stage="serving")

    garbage = _infer(owner_api, "holiday.mp4", b"\x00\x00\x00\x18ftypmp42 not a video at all")
    assert garbage.status_code == 400, garbage.content
    error = garbage.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert error["details"]["reason"] == "undecodable"
    assert error["message"] == "holiday.mp4: the video cannot be decoded"
    assert error["details"]["fields"] == {"media": ["the video cannot be decoded"]}
    assert _nothing_left(storage)

    clip = make_video(tmp_path / "clip.mp4", frames=20, fps=10.0).read_bytes()  # 2 s
    too_long = _infer(owner_api, "clip.mp4", clip, max_seconds=1)
    assert too_long.status_code == 400, too_long.content
    assert too_long.json()["error"]["details"]["reason"] == "too_long"
    assert _nothing_left(storage)

    # A zip's names pass the web's own check; its bytes are read by the GPU service.
    fake = make_zip(tmp_path / "imgs.zip", {"a.png": png_bytes(), "b.png": b"<html>"})
    not_image = _infer(owner_api, "imgs.zip", fake.read_bytes())
    assert not_image.status_code == 400, not_image.content
    assert not_image.json()["error"]["details"]["reason"] == "not_image"
    assert _nothing_left(storage)

    with run_on_commit():
        accepted = _infer(owner_api, "clip.mp4", clip, fps=5)
    assert accepted.status_code == 202, accepted.content
    job = Job.objects.get(id=accepted.json()["id"])
    assert Path(job.spec["video"]["path"]).read_bytes() == clip
    assert job.state in {"queued", "running"}, (job.error_code, job.error_message)  # delivered


def test_a_video_sent_while_the_gpu_service_is_down_is_refused_with_503_and_no_job(
    owner_api, gpu_url, storage, tmp_path
):
    model_version(fingerprint=store_weights(storage), stage="serving")
    clip = make_video(tmp_path / "clip.mp4", frames=4).read_bytes()

    response = _infer(owner_api, "clip.mp4", clip)

    assert response.status_code == 503, response.content
    error = response.json()["error"]
    assert error["code"] == "GPU_SERVICE_UNAVAILABLE"
    assert "cannot check the video" in error["message"]
    assert _nothing_left(storage)
