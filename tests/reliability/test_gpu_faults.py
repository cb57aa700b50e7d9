"""Faults on the GPU service side, with real processes on the simulated runtime: the
service killed in the middle of an inference, and workers that abort or segfault."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import psutil
import pytest

from tests.support.gpu_service import GpuServiceProcess


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An untrained yolov8n checkpoint, built from its yaml (nothing is downloaded)."""
    config = tmp_path_factory.mktemp("ultralytics-config")
    os.environ.setdefault("YOLO_CONFIG_DIR", str(config))
    os.environ.setdefault("YOLO_OFFLINE", "1")
    from ultralytics import YOLO

    path = tmp_path_factory.mktemp("ckpt") / "tiny.pt"
    model = YOLO("yolov8n.yaml")
    model.model.names = {0: "square", 1: "disc"}
    model.save(str(path))
    return path


def test_an_inference_killed_with_the_service_fails_as_interrupted_and_never_stays_running(
    gpu_service, checkpoint: Path
) -> None:
    from PIL import Image

    service: GpuServiceProcess = gpu_service(gpus="1x24GiB")
    uploads = service.storage / "uploads"
    (uploads / "infer" / "one").mkdir(parents=True)
    (uploads / "weights").mkdir(parents=True)
    Image.new("RGB", (64, 64), (200, 40, 40)).save(uploads / "infer" / "one" / "a.png")
    (uploads / "weights" / "tiny.pt").write_bytes(checkpoint.read_bytes())
    imported = service.client.post("/v1/weights", json={"path": "uploads/weights/tiny.pt"})
    assert imported.status_code == 201, imported.text

    # The slow start keeps the worker inside the job long enough to kill the service.
    job = service.submit(
        kind="infer",
        spec={
            "model": imported.json()["fingerprint"],
            "images": ["uploads/infer/one/a.png"],
            "imgsz": 64,
        },
        simulate={"start_delay_s": 120},
    )
    service.wait_for(job["id"], states={"running"}, timeout_s=60)
    workers = [p for p in psutil.Process(service.pid).children(recursive=True)]
    assert workers

    service.kill(signal.SIGKILL)
    service.start()
    done = service.wait_for(job["id"], timeout_s=60)

    assert done["state"] == "failed"
    assert done["error"]["code"] == "INTERRUPTED"
    assert done["attempt"] == 1  # not run a second time
    for worker in workers:  # and the first run is not still going somewhere
        assert not worker.is_running() or worker.status() == psutil.STATUS_ZOMBIE
    holders = [g["lane"]["holders"] for g in service.client.get("/v1/gpus").json()["gpus"]]
    assert holders == [[]]


@pytest.mark.parametrize("mode", ["abort", "segfault"])
def test_a_worker_that_crashes_fails_its_job_and_the_service_stays_up(gpu_service, mode) -> None:
    service: GpuServiceProcess = gpu_service(gpus="1x24GiB")
    pid = service.pid
    job = service.submit(
        kind="diagnostic",
        spec={"seconds": 1.0, "step_s": 0.1},
        simulate={"crash_at_step": 2, "crash_mode": mode},
    )

    failed = service.wait_for(job["id"])

    assert failed["state"] == "failed"
    assert failed["error"]["code"] == "WORKER_CRASHED"
    assert service.process is not None
    assert service.process.poll() is None
    assert service.pid == pid
    assert service.client.get("/healthz").status_code == 200
    # The one lane is free again: the next job on it runs to the end.
    nxt = service.submit(kind="diagnostic", spec={"seconds": 0.2, "step_s": 0.1})
    assert service.wait_for(nxt["id"])["state"] == "succeeded"
