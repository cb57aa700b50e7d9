"""How the web turns the GPU service's answer to a media probe into the user's answer
(ADR 0048); the real GPU service's probe is tests/web/integration/test_media_probed_at_submit.py."""

from __future__ import annotations

import gpu_client
from django.core.files.uploadedfile import SimpleUploadedFile
from jobs.models import Job

from tests.web.api.test_api_model_exports import store_weights
from tests.web.factories import model_version


def _send_video(owner_api):
    return owner_api.post(
        "/api/v1/jobs/infer/",
        {"media": SimpleUploadedFile("clip.avi", b"RIFF....AVI ")},
        format="multipart",
    )


def _nothing_kept(storage) -> bool:
    return not Job.objects.exists() and not any((storage / "uploads" / "infer").iterdir())


def test_a_refused_probe_is_the_users_400_naming_their_file_with_the_reason(
    owner_api, fake_gpu, storage
):
    model_version(fingerprint=store_weights(storage), stage="serving")
    fake_gpu.media_refused = "undecodable"

    response = _send_video(owner_api)

    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "VALIDATION_ERROR",
        "message": "clip.avi: undecodable",
        "details": {"fields": {"media": ["undecodable"]}, "reason": "undecodable"},
    }
    assert [r.url.path for r in fake_gpu.requests] == ["/v1/media/probe"]
    assert _nothing_kept(storage)


def test_a_probe_refused_for_another_reason_than_the_media_is_a_503(
    owner_api, fake_gpu, storage, monkeypatch
):
    model_version(fingerprint=store_weights(storage), stage="serving")
    wrong_token = gpu_client.GpuClient(
        base_url="http://gpu.test", token="not-the-token", transport=fake_gpu.transport
    )
    monkeypatch.setattr(gpu_client, "client_build", lambda **_: wrong_token)

    response = _send_video(owner_api)

    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "GPU_SERVICE_UNAVAILABLE"
    assert error["details"] == {"field": "media", "reason": "probe_refused", "code": "UNAUTHORIZED"}
    assert _nothing_kept(storage)
