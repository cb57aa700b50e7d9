"""The web app against the real GPU service on the simulated runtime (real HTTP, real
processes, real ultralytics on a tiny dataset; only the GPU itself is simulated)."""

from __future__ import annotations

import io
import signal
import time
from collections.abc import Callable
from typing import Any

import gpu_client
import pytest
from datasets.services import dataset_create_from_upload
from django.core.files.uploadedfile import SimpleUploadedFile
from jobs.models import Job, JobState
from jobs.reconciler import reconcile_once
from PIL import Image
from registry.models import ModelVersion

from tests.e2e.synthetic_dataset import dataset_zip
from tests.support.gpu_service import free_port

pytestmark = pytest.mark.slow
TOKEN = "test-token-0123456789"


@pytest.fixture
def gpu_url(settings: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """Where the web app looks for the GPU service; nothing listens there until started."""
    url = f"http://127.0.0.1:{free_port()}"
    settings.CARRIL_GPU_SERVICE_URL = url
    settings.CARRIL_GPU_SERVICE_TIMEOUT_S = 10.0
    monkeypatch.setenv("CARRIL_GPU_SERVICE_TOKEN", TOKEN)
    return url


def reconcile_until(predicate: Callable[[], Any], *, timeout_s: float = 240.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        with gpu_client.client_build() as client:
            reconcile_once(client=client)
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out; jobs: {list(Job.objects.values())}"
        time.sleep(0.3)


def job_in(job_id: Any, states: set[str]) -> Job | None:
    job = Job.objects.get(id=job_id)
    return job if job.state in states else None


def train(owner_api: Any, dataset_id: Any, *, epochs: int, run_on_commit: Any) -> str:
    body = {
        "dataset": str(dataset_id),
        "model": "yolov8n",
        "epochs": epochs,
        "imgsz": 32,
        "batch": 2,
        "seeds": [1],
        "gpus": 1,
    }
    with run_on_commit():
        response = owner_api.post("/api/v1/jobs/train/", body, format="json")
    assert response.status_code == 202, response.content
    return response.json()["id"]


@pytest.fixture
def dataset(owner: Any, tmp_path: Any) -> Any:
    data = dataset_zip(path=tmp_path / "shapes.zip", images_per_split=2, size=64).read_bytes()
    return dataset_create_from_upload(
        owner=owner, name="shapes", upload=SimpleUploadedFile("shapes.zip", data)
    )


def test_a_job_submitted_while_the_gpu_service_is_down_is_delivered_later_and_runs_to_the_end(
    owner_api, admin_api, dataset, gpu_url, gpu_service, storage, run_on_commit
):
    job_id = train(owner_api, dataset.id, epochs=1, run_on_commit=run_on_commit)
    job = Job.objects.get(id=job_id)
    assert job.state == JobState.SUBMITTED
    assert job.dispatch_attempts == 1
    assert job.last_dispatch_error

    gpu_service(storage=storage, port=int(gpu_url.rsplit(":", 1)[1]), token=TOKEN)
    Job.objects.filter(id=job_id).update(next_attempt_at=None)  # skip the backoff wait
    job = reconcile_until(lambda: job_in(job_id, {"succeeded", "failed", "lost"}))
    assert job.state == JobState.SUCCEEDED, (job.error_code, job.error_message)
    assert job.progress["fraction"] == pytest.approx(1.0)
    assert job.metrics["epochs"], "per-epoch metrics reach the job row"
    version = ModelVersion.objects.get(source_job=job)
    assert version.stage == "candidate"
    assert owner_api.get(f"/api/v1/jobs/{job_id}/logs/").json()["lines"]

    # Serve it and run an inference through the same path.
    admin_api.post(
        f"/api/v1/models/{version.id}/stage/", {"stage": "serving", "reason": "test"}, format="json"
    )
    buffer = io.BytesIO()
    Image.new("RGB", (64, 64), (200, 40, 40)).save(buffer, format="PNG")
    with run_on_commit():
        response = owner_api.post(
            "/api/v1/jobs/infer/",
            {"images": [SimpleUploadedFile("red.png", buffer.getvalue())], "imgsz": 32},
            format="multipart",
        )
    infer_id = response.json()["id"]
    infer = reconcile_until(lambda: job_in(infer_id, {"succeeded", "failed", "lost"}))
    assert infer.state == JobState.SUCCEEDED, (infer.error_code, infer.error_message)
    detections = owner_api.get(f"/api/v1/jobs/{infer_id}/detections/").json()
    assert detections["images"][0]["name"] == "red.png"
    assert detections["images"][0]["width"] == 64
    if detections["images"][0]["annotated_url"]:
        assert owner_api.get(detections["images"][0]["annotated_url"]).status_code == 200


def test_a_gpu_service_restart_loses_no_job(
    owner_api, dataset, gpu_url, gpu_service, storage, run_on_commit
):
    service = gpu_service(storage=storage, port=int(gpu_url.rsplit(":", 1)[1]), token=TOKEN)
    job_id = train(owner_api, dataset.id, epochs=2, run_on_commit=run_on_commit)
    assert Job.objects.get(id=job_id).state in {JobState.QUEUED, JobState.RUNNING}
    reconcile_until(lambda: job_in(job_id, {"running", "succeeded", "failed"}))
    service.kill(signal.SIGKILL)
    with gpu_client.client_build() as client:
        outcome = reconcile_once(client=client)
    assert outcome.reachable is False
    assert Job.objects.get(id=job_id).state in {JobState.RUNNING, JobState.QUEUED}
    service.start()
    with gpu_client.client_build() as client:
        assert reconcile_once(client=client).reachable
        assert client.jobs_status(ids=[str(job_id)]).missing == []
    job = Job.objects.get(id=job_id)
    assert job.state != JobState.LOST
    # Resumed (running again, or already done) or failed with the distinct INTERRUPTED code.
    assert job.state in {"queued", "running", "succeeded"} or job.error_code == "INTERRUPTED"
