"""Fixtures for the UI's page tests: an owner, another user, an administrator, and records
written straight into the database and shared storage (the backend's own tests cover how
those records come to be)."""

from __future__ import annotations

import io
import uuid
from pathlib import Path
from typing import Any

import pytest
from datasets.models import Dataset
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from jobs.models import Job, ReconcilerStatus
from PIL import Image
from registry.models import ModelVersion

# The storage, owner, other and admin fixtures come from tests/web/conftest.py.


@pytest.fixture
def admin_user(admin: User) -> User:
    return admin


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def owner_client(owner: User) -> Client:
    return signed_in(owner)


@pytest.fixture
def other_client(other: User) -> Client:
    return signed_in(other)


@pytest.fixture
def admin_client_(admin_user: User) -> Client:
    return signed_in(admin_user)


def png_bytes(*, size: int = 64, colour: tuple[int, int, int] = (200, 40, 40)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (size, size), colour).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def dataset(owner: User, storage: Path) -> Dataset:
    ds = Dataset.objects.create(
        owner=owner,
        name="shapes",
        classes=["square", "disc"],
        splits={
            "train": {
                "images": 1,
                "labels": 1,
                "instances": 2,
                "per_class": {"square": 1, "disc": 1},
            },
            "val": {"images": 1, "labels": 1, "instances": 1, "per_class": {"square": 1}},
        },
        report={"valid": True, "problems": [], "warnings": []},
    )
    for split, lines in (
        ("train", ["0 0.5 0.5 0.25 0.25", "1 0.2 0.2 0.1 0.1"]),
        ("val", ["0 0.5 0.5 0.5 0.5"]),
    ):
        (ds.path / "images" / split).mkdir(parents=True)
        (ds.path / "labels" / split).mkdir(parents=True)
        (ds.path / "images" / split / f"{split}_0.png").write_bytes(png_bytes())
        (ds.path / "labels" / split / f"{split}_0.txt").write_text("\n".join(lines) + "\n")
    (ds.path / "data.yaml").write_text("names: [square, disc]\n")
    return ds


EPOCHS = [
    {
        "seed": 1,
        "epoch": 1,
        "box_loss": 2.0,
        "cls_loss": 3.0,
        "dfl_loss": 1.5,
        "mAP50": 0.1,
        "mAP50-95": 0.05,
    },
    {
        "seed": 1,
        "epoch": 2,
        "box_loss": 1.8,
        "cls_loss": 2.5,
        "dfl_loss": 1.4,
        "mAP50": 0.2,
        "mAP50-95": 0.1,
    },
]


# The running training's id, which the GPU snapshot names as its lane's holder.
RUNNING_ID = uuid.UUID("00000000-0000-4000-8000-00000000a001")


def training_job(*, owner: User, dataset: Dataset, state: str = "running", **fields: Any) -> Job:
    defaults: dict[str, Any] = {
        "owner": owner,
        "kind": "train",
        "state": state,
        "dataset": dataset,
        "spec": {"model": "yolov8n", "epochs": 2, "imgsz": 64, "batch": 4, "seeds": [42, 7]},
        "dispatched_at": timezone.now(),
        "progress": {
            "seed": 1,
            "seeds": 2,
            "epoch": 2,
            "epochs": 2,
            "batch": 3,
            "batches": 4,
            "fraction": 0.4,
        },
        "metrics": {"epochs": EPOCHS},
    }
    defaults.update(fields)
    return Job.objects.create(**defaults)


@pytest.fixture
def make_training_job() -> Any:
    return training_job


@pytest.fixture
def running_training(owner: User, dataset: Dataset) -> Job:
    return training_job(owner=owner, dataset=dataset, id=RUNNING_ID)


@pytest.fixture
def finished_training(owner: User, dataset: Dataset) -> Job:
    job = training_job(
        owner=owner,
        dataset=dataset,
        state="succeeded",
        finished_at=timezone.now(),
        result={
            "weights": {"fingerprint": "f" * 64},
            "best_seed": 7,
            "fitness_metric": "mAP50-95",
            "seeds": [
                {"seed": 42, "fitness": 0.12, "metrics": {"mAP50": 0.2, "mAP50-95": 0.11}},
                {"seed": 7, "fitness": 0.31, "metrics": {"mAP50": 0.4, "mAP50-95": 0.3}},
            ],
        },
    )
    ModelVersion.objects.create(
        name="yolov8n-best",
        fingerprint="f" * 64,
        source="training",
        source_job=job,
        architecture="yolov8n",
        class_names=["square", "disc"],
        metrics={"mAP50": 0.4, "mAP50-95": 0.3},
    )
    return job


@pytest.fixture
def version(db: None) -> ModelVersion:
    return ModelVersion.objects.create(
        name="imported-1",
        fingerprint="a" * 64,
        source="import",
        architecture="yolov8n",
        class_names=["square", "disc"],
    )


@pytest.fixture
def finished_inference(owner: User, version: ModelVersion, storage: Path) -> Job:
    folder = storage / "uploads" / "infer" / "x"
    folder.mkdir(parents=True)
    first, second = folder / "0000_a.png", folder / "0001_b.png"
    first.write_bytes(png_bytes())
    second.write_bytes(png_bytes(colour=(20, 200, 20)))
    return Job.objects.create(
        owner=owner,
        kind="infer",
        state="succeeded",
        model_version=version,
        dispatched_at=timezone.now(),
        spec={"model": version.fingerprint, "images": [str(first), str(second)], "conf": 0.25},
        result={
            "images": [
                {
                    "source": str(first),
                    "width": 64,
                    "height": 64,
                    "detections": [
                        {
                            "class_id": 0,
                            "class_name": "square",
                            "confidence": 0.9,
                            "box_xyxy": [1, 2, 30, 40],
                        },
                        {
                            "class_id": 1,
                            "class_name": "disc",
                            "confidence": 0.5,
                            "box_xyxy": [5, 5, 9, 9],
                        },
                    ],
                },
                {"source": str(second), "width": 64, "height": 64, "detections": []},
            ]
        },
        finished_at=timezone.now(),
    )


@pytest.fixture
def gpus_seen(db: None) -> ReconcilerStatus:
    return ReconcilerStatus.objects.create(
        id=1,
        gpus={
            "runtime": "simulated",
            "gpus": [
                {
                    "index": 0,
                    "name": "Simulated GPU",
                    "uuid": "GPU-sim-0",
                    "memory_total_mib": 16000,
                    "memory_used_mib": 4000,
                    "memory_free_mib": 12000,
                    "utilization_pct": 55.0,
                    "temperature_c": 50.0,
                    "power_w": 120.0,
                    "lane": {"capacity": 1, "holders": [str(RUNNING_ID)]},
                },
                {
                    "index": 1,
                    "name": "Simulated GPU",
                    "uuid": "GPU-sim-1",
                    "memory_total_mib": 16000,
                    "memory_used_mib": 0,
                    "memory_free_mib": 16000,
                    "utilization_pct": 0.0,
                    "temperature_c": None,
                    "power_w": None,
                    "lane": {"capacity": 1, "holders": []},
                },
            ],
            "queue": [
                {
                    "id": "gpu-job-9",
                    "kind": "infer",
                    "gpus": 1,
                    "gpu_ids": None,
                    "priority": 0,
                    "waited_s": 3.0,
                }
            ],
        },
        gpus_fetched_at=timezone.now(),
    )
