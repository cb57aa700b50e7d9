"""Out of memory as a real GPU raises it, through the real GPU service.

The simulated runtime raises `torch.OutOfMemoryError` ("CUDA out of memory") from the
model's forward pass (gpu_service/workloads/simulated_oom.py), so what handles it is the
code that handles a real one: ultralytics' first-epoch retry with half the batch, then
the service's mapping to `CUDA_OOM`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpu_service.workloads.synthetic import make_shapes_dataset
from tests.gpu_service.workloads.test_through_the_service import _train_spec as train_spec
from tests.support.gpu_service import GpuServiceProcess

pytestmark = pytest.mark.slow


def _train_spec(**overrides) -> dict:
    # 8 training images: at batch 8 one step an epoch, at batch 4 two.
    return train_spec(**{"batch": 8, "seeds": [1], **overrides})


def _weights(service: GpuServiceProcess) -> list[Path]:
    return list((service.storage / "weights").glob("*.pt"))


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory):
    storage = tmp_path_factory.mktemp("oom") / "storage"
    make_shapes_dataset(storage / "datasets" / "shapes")
    service = GpuServiceProcess(storage=storage, gpus="1x24GiB").start()
    yield service
    service.stop()


@pytest.fixture(scope="module")
def retried(service: GpuServiceProcess) -> dict:
    """A training whose pretend GPU holds 2 images a pass, asked to run at batch 8."""
    job = service.submit(kind="train", spec=_train_spec(), simulate={"oom_above_batch": 2})
    return service.wait_for(job["id"], timeout_s=400)


def test_a_first_epoch_out_of_memory_halves_the_batch_and_the_training_goes_on(
    service: GpuServiceProcess, retried: dict
) -> None:
    assert retried["state"] == "succeeded", retried["error"]
    # 8 -> 4 -> 2: ultralytics' own retry, twice, within its bound of three.
    assert retried["result"]["batch"] == 8
    assert retried["result"]["batch_effective"] == 2
    assert retried["metrics"]["batch_effective"] == 2
    assert [e["batch"] for e in retried["metrics"]["epochs"]] == [2, 2]
    log = "\n".join(service.client.get(f"/v1/jobs/{retried['id']}/logs?tail=2000").json()["lines"])
    assert "CUDA out of memory" in log or "out of memory with batch=8" in log
    assert "batch size lowered by ultralytics from 8 to 2" in log


def test_an_out_of_memory_after_the_first_epoch_fails_with_cuda_oom_naming_the_batch(
    service: GpuServiceProcess,
) -> None:
    # Batch 4: two steps an epoch, so step 3 is the first of epoch 2, where ultralytics
    # no longer retries.
    registered_before = sorted(_weights(service))
    job = service.submit(kind="train", spec=_train_spec(batch=4), simulate={"oom_at_step": 3})
    failed = service.wait_for(job["id"], timeout_s=400)

    assert failed["state"] == "failed"
    assert failed["error"]["code"] == "CUDA_OOM"
    assert failed["error"]["details"]["batch"] == 4
    assert failed["error"]["details"]["batch_requested"] == 4
    assert failed["error"]["details"]["seed"] == 1
    assert [e["epoch"] for e in failed["metrics"]["epochs"]] == [1]
    assert sorted(_weights(service)) == registered_before  # nothing half-registered


def test_an_inference_out_of_memory_fails_with_cuda_oom_naming_the_batch(
    service: GpuServiceProcess, retried: dict
) -> None:
    fingerprint = retried["result"]["weights"]["fingerprint"]
    folder = service.storage / "uploads" / "infer" / "oom"
    folder.mkdir(parents=True)
    images = []
    for index in range(3):
        shutil.copy(
            service.storage / "datasets" / "shapes" / "images" / "val" / "000.jpg",
            folder / f"{index}.jpg",
        )
        images.append(f"uploads/infer/oom/{index}.jpg")
    spec = {"model": fingerprint, "images": images, "imgsz": 64, "batch": 3}

    job = service.submit(kind="infer", spec=spec, simulate={"oom_above_batch": 2})
    failed = service.wait_for(job["id"], timeout_s=120)

    assert failed["state"] == "failed"
    assert failed["error"]["code"] == "CUDA_OOM"
    assert failed["error"]["details"]["batch"] == 3
    assert failed["error"]["details"]["imgsz"] == 64
    # The resident worker survives its job's out-of-memory and serves the next one.
    ok = service.submit(kind="infer", spec={**spec, "batch": 2}, simulate={"oom_above_batch": 2})
    done = service.wait_for(ok["id"], timeout_s=120)
    assert done["state"] == "succeeded", done["error"]
    assert len(done["result"]["images"]) == 3
