"""Training, evaluation and inference through the real GPU service: HTTP, journal, spawned workers.

The runtime is simulated (no GPU), so workers see no CUDA device and train on the CPU.
"""

from __future__ import annotations

import shutil
import signal
from pathlib import Path

import pytest

from tests.support.gpu_service import GpuServiceProcess

pytestmark = pytest.mark.slow


@pytest.fixture
def service(storage: Path):
    svc = GpuServiceProcess(storage=storage, gpus="1x24GiB").start()
    yield svc
    svc.stop()


def _train_spec(**overrides) -> dict:
    spec = {
        "dataset": "datasets/shapes",
        "model": "yolov8n",
        "epochs": 2,
        "imgsz": 64,
        "batch": 4,
        "seeds": [1, 2],
        "workers": 0,
    }
    spec.update(overrides)
    return spec


def test_a_two_seed_training_succeeds_and_its_best_weights_serve_an_inference(
    service: GpuServiceProcess, shapes_dataset: Path, storage: Path
) -> None:
    job = service.submit(kind="train", spec=_train_spec())
    done = service.wait_for(job["id"], timeout_s=400)

    assert done["state"] == "succeeded", done["error"]
    epochs = done["metrics"]["epochs"]
    assert [(e["seed"], e["epoch"]) for e in epochs] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert all("mAP50-95" in e and "box_loss" in e for e in epochs)
    result = done["result"]
    assert result["best_seed"] in (1, 2)
    assert done["progress"]["fraction"] == 1.0
    fingerprint = result["weights"]["fingerprint"]
    registered = service.client.get(f"/v1/weights/{fingerprint}")
    assert registered.status_code == 200, registered.text
    assert registered.json()["class_names"] == ["rectangle", "circle"]
    assert (storage / "jobs" / job["id"] / "manifest.json").is_file()
    logs = service.client.get(f"/v1/jobs/{job['id']}/logs").json()["lines"]
    assert logs

    image = storage / "uploads" / "infer" / "one" / "000.jpg"
    image.parent.mkdir(parents=True)
    shutil.copy(shapes_dataset / "images" / "val" / "000.jpg", image)
    infer = service.submit(
        kind="infer",
        spec={"model": fingerprint, "images": ["uploads/infer/one/000.jpg"], "imgsz": 64},
    )
    inferred = service.wait_for(infer["id"], timeout_s=120)
    assert inferred["state"] == "succeeded", inferred["error"]
    assert inferred["result"]["images"][0]["width"] == 64
    assert Path(inferred["result"]["images"][0]["annotated_path"]).is_file()

    # The training's own evaluation, then an evaluate job of its weights (ADR 0042).
    assert (storage / "jobs" / job["id"] / "evaluation" / "evaluation.json").is_file()
    refused = service.client.post(
        "/v1/jobs",
        json={"kind": "evaluate", "spec": {"model": fingerprint, "dataset": "datasets/shapes",
                                           "split": "test"}},
    )  # fmt: skip
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["details"]["field"] == "split"
    evaluate = service.submit(
        kind="evaluate", spec={"model": fingerprint, "dataset": "datasets/shapes"}
    )
    evaluated = service.wait_for(evaluate["id"], timeout_s=120)
    assert evaluated["state"] == "succeeded", evaluated["error"]
    assert evaluated["result"]["imgsz"] == 64  # the size it was trained at
    assert evaluated["result"]["evaluation_path"] == "evaluation/evaluation.json"
    assert (storage / "jobs" / evaluate["id"] / "evaluation" / "evaluation.json").is_file()


def test_an_invalid_training_is_refused_at_submit_naming_the_field(
    service: GpuServiceProcess, shapes_dataset: Path
) -> None:
    response = service.client.post(
        "/v1/jobs", json={"kind": "train", "spec": _train_spec(epochs=0)}
    )
    missing = service.client.post(
        "/v1/jobs", json={"kind": "train", "spec": _train_spec(dataset="datasets/nope")}
    )

    assert response.status_code == 422
    assert response.json()["error"]["code"] == "VALIDATION_ERROR"
    assert "epochs" in response.text
    assert missing.status_code == 422
    assert "dataset" in missing.text


def test_a_cancelled_training_stops_and_registers_nothing(
    service: GpuServiceProcess, shapes_dataset: Path, storage: Path
) -> None:
    job = service.submit(kind="train", spec=_train_spec(epochs=200, seeds=[1]))
    service.wait_until(
        lambda: (service.job(job["id"])["progress"].get("batch") or 0) >= 1,
        timeout_s=120,
        what="the first batch",
    )

    service.client.post(f"/v1/jobs/{job['id']}/cancel")
    done = service.wait_for(job["id"], timeout_s=60)

    assert done["state"] == "cancelled"
    assert len(done["metrics"].get("epochs", [])) < 200
    assert not list((storage / "weights").glob("*.pt"))


def test_a_training_interrupted_by_a_restart_resumes_from_its_checkpoint(
    service: GpuServiceProcess, shapes_dataset: Path
) -> None:
    job = service.submit(kind="train", spec=_train_spec(epochs=3, seeds=[1]))
    service.wait_until(
        lambda: len(service.job(job["id"])["metrics"].get("epochs", [])) >= 1,
        timeout_s=180,
        what="the first epoch",
    )

    service.kill(signal.SIGKILL)  # the service and, with it, its worker
    service.start()
    done = service.wait_for(job["id"], timeout_s=300)

    assert done["state"] == "succeeded", done["error"]
    assert done["attempt"] == 2
    # Resumed, not restarted: every epoch was recorded exactly once.
    assert [e["epoch"] for e in done["metrics"]["epochs"]] == [1, 2, 3]
    assert done["result"]["seeds"][0]["epochs_run"] == 3


def _training_worker_pid(storage: Path, job_id: str) -> int:
    import sqlite3

    with sqlite3.connect(storage / "journal.sqlite3") as db:
        row = db.execute("SELECT pid FROM workers WHERE job_id = ?", (job_id,)).fetchone()
    assert row is not None, "the journal records no worker for the running job"
    return int(row[0])


def test_a_training_whose_worker_is_killed_resumes_from_its_checkpoint(
    service: GpuServiceProcess, shapes_dataset: Path, storage: Path
) -> None:
    import os

    job = service.submit(kind="train", spec=_train_spec(epochs=3, seeds=[1]))
    service.wait_until(
        lambda: len(service.job(job["id"])["metrics"].get("epochs", [])) >= 1,
        timeout_s=180,
        what="the first epoch",
    )

    os.kill(_training_worker_pid(storage, job["id"]), signal.SIGKILL)  # the service lives on
    done = service.wait_for(job["id"], timeout_s=300)

    assert done["state"] == "succeeded", done["error"]
    assert done["attempt"] == 2
    assert [e["epoch"] for e in done["metrics"]["epochs"]] == [1, 2, 3]
    assert service.client.get("/healthz").status_code == 200
