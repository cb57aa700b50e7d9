"""Exports and what they serve, through the real GPU service: HTTP, journal, workers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.gpu_service import GpuServiceProcess

pytestmark = pytest.mark.slow


@pytest.fixture
def service(storage: Path):
    svc = GpuServiceProcess(storage=storage, gpus="1x24GiB").start()
    yield svc
    svc.stop()


@pytest.fixture
def fingerprint(service: GpuServiceProcess, storage: Path) -> str:
    from ultralytics import YOLO

    path = storage / "uploads" / "m.pt"
    path.parent.mkdir(parents=True)
    YOLO("yolov8n.yaml").save(str(path))
    response = service.client.post("/v1/weights", json={"path": str(path)})
    assert response.status_code in (200, 201), response.text
    return response.json()["fingerprint"]


def test_an_onnx_export_job_passes_parity_and_then_serves_an_inference_job(
    service: GpuServiceProcess, storage: Path, fingerprint: str
) -> None:
    from ultralytics.utils import ASSETS

    accepted = service.submit(
        kind="export", spec={"model": fingerprint, "format": "onnx", "imgsz": 64}
    )
    job = service.wait_for(accepted["id"], timeout_s=300)

    assert job["state"] == "succeeded", job["error"]
    manifest = job["result"]["export"]
    assert manifest["parity"]["passed"] is True
    assert (storage / manifest["artifact"]).is_file()
    assert job["metrics"]["parity_passed"] is True
    assert (storage / "jobs" / job["id"] / "job.log").read_text().count("parity of") == 1

    (storage / "uploads" / "bus.jpg").write_bytes((Path(ASSETS) / "bus.jpg").read_bytes())
    spec = {"model": fingerprint, "images": ["uploads/bus.jpg"], "format": "onnx", "imgsz": 64}
    inferred = service.wait_for(service.submit(kind="infer", spec=spec)["id"], timeout_s=120)

    assert inferred["state"] == "succeeded", inferred["error"]
    assert inferred["result"]["export"] == manifest["fingerprint"]


def test_a_tensorrt_engine_is_refused_at_submit_without_a_cuda_gpu(
    service: GpuServiceProcess, fingerprint: str
) -> None:
    body = {"kind": "export", "spec": {"model": fingerprint, "format": "engine"}}

    response = service.client.post("/v1/jobs", json=body)

    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert "TensorRT engine" in error["message"]
    assert "no CUDA GPU" in error["message"]
    assert service.client.get("/v1/jobs", params={"kind": "export"}).json()["jobs"] == []


def test_an_undecodable_video_is_refused_with_no_job(
    service: GpuServiceProcess, storage: Path, fingerprint: str
) -> None:
    (storage / "uploads" / "broken.webm").write_bytes(b"\x1a\x45\xdf\xa3 not really" * 50)
    body = {
        "kind": "infer",
        "spec": {"model": fingerprint, "video": {"path": "uploads/broken.webm"}},
    }

    response = service.client.post("/v1/jobs", json=body)

    assert response.status_code == 422
    assert response.json()["error"]["details"]["reason"] == "undecodable"
    assert service.client.get("/v1/jobs", params={"kind": "infer"}).json()["jobs"] == []
