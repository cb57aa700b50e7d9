"""Fixtures for the security tests: the web suite's users and fake GPU service, plus one
owner's world (a dataset, a delivered training with a job folder, a finished inference,
an API token, a model version) that everyone else tries to reach."""

from __future__ import annotations

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
owner_api, admin_api = web.owner_api, web.admin_api


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
    version: ModelVersion
    token_id: int
    job_dir: Path


# Fixed, so traversal paths written ahead can aim at this job's folder.
INFERENCE_ID = uuid.UUID("00000000-0000-4000-8000-00000000beef")


@pytest.fixture
def world(owner: User, storage: Path) -> World:
    dataset = dataset_for(owner)
    (dataset.path / "images" / "train").mkdir(parents=True)
    (dataset.path / "images" / "train" / "a.png").write_bytes(z.png())
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
    token = api_token_create(user=owner, name="laptop")
    return World(
        owner=owner,
        dataset=dataset,
        training=training,
        inference=inference,
        version=version,
        token_id=token.token.id,
        job_dir=job_dir,
    )
