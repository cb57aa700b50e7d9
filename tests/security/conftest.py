"""Fixtures for the security tests: the web suite's users and fake GPU service, plus one
owner's world (a dataset, a delivered training with a job folder, a finished inference,
an API token, a model version) that everyone else tries to reach."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from accounts.services import api_token_create
from datasets.models import Dataset
from django.contrib.auth.models import User
from django.utils import timezone
from jobs.models import Job
from registry.models import ModelVersion

from tests.web import conftest as web
from tests.web import dataset_zips as z
from tests.web.factories import dataset_for, model_version

# The web suite's fixtures, shared: users, shared storage and the fake GPU service.
storage = web.storage
owner, other, admin, staff = web.owner, web.other, web.admin, web.staff
fake_gpu = web.fake_gpu
owner_api, admin_api, other_api = web.owner_api, web.admin_api, web.other_api


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings) -> None:
    # Four users per test, hundreds of tests: PBKDF2 would dominate the run time.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@dataclass
class World:
    owner: User
    dataset: Dataset
    training: Job  # delivered, running, with a job folder holding a log and an artifact
    inference: Job  # succeeded, with its input images in uploads/
    version: ModelVersion  # imported by an administrator: everyone's
    trained: ModelVersion  # a candidate the owner's training registered: the owner's
    retired: ModelVersion  # the owner's, retired
    token_id: int
    job_dir: Path
    webhook_id: int = 0  # the owner's, with one delivery
    delivery_id: int = 0


# Fixed, so traversal paths written ahead can aim at this job's folder.
INFERENCE_ID = uuid.UUID("00000000-0000-4000-8000-00000000beef")


# An evaluation document, as the GPU service writes one for a training (jobs.evaluation).
EVALUATION = {
    "version": 1,
    "source": "training",
    "split": "val",
    "imgsz": 64,
    "conf": 0.001,
    "iou": 0.7,
    "seed": 1,
    "metrics": {"precision": 0.5, "recall": 0.5, "mAP50": 0.5, "mAP50-95": 0.25},
    "per_class": [],
    "confusion_matrix": {"labels": ["background"], "counts": [[0]]},
    "curves": {},
    "samples": [],
    "plots": [],
}


@pytest.fixture
def world(owner: User, storage: Path) -> World:
    dataset = dataset_for(owner)
    (dataset.path / "images" / "train").mkdir(parents=True)
    (dataset.path / "images" / "train" / "a.png").write_bytes(z.png())
    dataset.splits = {"train": {"images": 1}, "val": {"images": 1}}  # an evaluation needs val
    dataset.save(update_fields=["splits"])
    version = model_version()
    training = Job.objects.create(
        owner=owner,
        kind="train",
        state="running",
        dataset=dataset,
        spec={"model": "yolov8n", "epochs": 2},
        dispatched_at=timezone.now(),
    )
    job_dir = storage / "jobs" / str(training.id)
    job_dir.mkdir(parents=True)
    (job_dir / "job.log").write_text("epoch 1\nepoch 2\n")
    (job_dir / "results.json").write_text("{}")
    (job_dir / "evaluation").mkdir()
    (job_dir / "evaluation" / "evaluation.json").write_text(json.dumps(EVALUATION))
    images = storage / "uploads" / "infer" / "one"
    images.mkdir(parents=True)
    (images / "0000_a.png").write_bytes(z.png())
    inference = Job.objects.create(
        id=INFERENCE_ID,
        owner=owner,
        kind="infer",
        state="succeeded",
        model_version=version,
        dispatched_at=timezone.now(),
        spec={"model": version.fingerprint, "images": [str(images / "0000_a.png")]},
        result={"images": [{"source": str(images / "0000_a.png"), "detections": []}]},
        finished_at=timezone.now(),
    )
    trained = model_version(fingerprint="c" * 64)
    retired = model_version(fingerprint="d" * 64, stage="retired")
    ModelVersion.objects.filter(id__in=[trained.id, retired.id]).update(
        source="training", source_job=training
    )
    weights = storage / "weights"  # the registry's store, by fingerprint (ADR 0006)
    weights.mkdir(parents=True, exist_ok=True)
    for fingerprint in (version.fingerprint, trained.fingerprint, retired.fingerprint):
        (weights / f"{fingerprint}.pt").write_bytes(b"weights")
    token = api_token_create(user=owner, name="laptop")
    from webhooks.models import Webhook, WebhookDelivery

    hook = Webhook.objects.create(
        owner=owner, url="https://example.org/hook", events=["job.finished"], secret="s"
    )
    delivery = WebhookDelivery.objects.create(
        webhook=hook, event="job.finished", event_key="job:x", payload={}
    )
    return World(
        owner=owner,
        dataset=dataset,
        training=training,
        inference=inference,
        version=version,
        trained=ModelVersion.objects.get(id=trained.id),
        retired=ModelVersion.objects.get(id=retired.id),
        token_id=token.token.id,
        job_dir=job_dir,
        webhook_id=hook.id,
        delivery_id=delivery.id,
    )


@pytest.fixture
def users(owner: User, other: User, admin: User, staff: User) -> dict[str, User]:
    return {"owner": owner, "other": other, "admin": admin, "staff": staff}
