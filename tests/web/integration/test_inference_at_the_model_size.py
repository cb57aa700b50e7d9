"""Issue 13's first done-when, through the REST API against the real GPU service: a model
trained at 96 (real ultralytics, tiny synthetic data) and then used for inference without
`imgsz` runs at 96, as the worker itself reports; a checkpoint's own training arguments
give the same size to an import (ADR 0045)."""

from __future__ import annotations

import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from jobs.models import Job, JobState
from PIL import Image

from gpu_service.workloads import weights
from tests.web.integration.conftest import TOKEN
from tests.web.integration.test_web_with_gpu_service import job_in, reconcile_until

pytestmark = pytest.mark.slow
ENDED = {"succeeded", "failed", "lost"}


def test_a_model_trained_at_96_infers_at_96_without_being_told(
    owner_api, dataset, gpu_url, gpu_service, storage, run_on_commit
):
    gpu_service(storage=storage, port=int(gpu_url.rsplit(":", 1)[1]), token=TOKEN)
    body = {
        "dataset": str(dataset.id),
        "model": "yolov8n",
        "epochs": 1,
        "imgsz": 96,
        "batch": 2,
        "seeds": [1],
    }
    with run_on_commit():
        response = owner_api.post("/api/v1/jobs/train/", body, format="json")
    assert response.status_code == 202, response.content
    trained = reconcile_until(lambda: job_in(response.json()["id"], ENDED))
    assert trained.state == JobState.SUCCEEDED, (trained.error_code, trained.error_message)
    version_id = owner_api.get(f"/api/v1/jobs/{trained.id}/").json()["registered_model_version"]
    version = owner_api.get(f"/api/v1/models/{version_id}/").json()
    assert version["imgsz"] == 96
    # An import of these weights reads the same size from the checkpoint's train_args.
    stored = weights.stored_path(fingerprint=version["fingerprint"], storage=storage)
    assert weights.describe_checkpoint(path=stored)["imgsz"] == 96

    buffer = io.BytesIO()
    Image.new("RGB", (200, 120), (200, 40, 40)).save(buffer, format="PNG")
    with run_on_commit():
        response = owner_api.post(
            "/api/v1/jobs/infer/",
            {
                "images": [SimpleUploadedFile("red.png", buffer.getvalue())],
                "model_version": version_id,
            },
            format="multipart",
        )
    assert response.status_code == 202, response.content
    job = reconcile_until(lambda: job_in(response.json()["id"], ENDED))
    assert job.state == JobState.SUCCEEDED, (job.error_code, job.error_message)
    document = owner_api.get(f"/api/v1/jobs/{job.id}/").json()
    # What the worker's predictor ran at, not only what the spec asked for.
    assert document["result"]["imgsz"] == 96
    assert document["params"]["imgsz"] == 96
    assert document["notes"] == []
    log = owner_api.get(f"/api/v1/jobs/{job.id}/logs/").json()["lines"]
    assert any("inference at 96 px" in line for line in log), log
    assert Job.objects.get(id=job.id).model_version_id is not None
