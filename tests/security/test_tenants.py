"""Tenants: a user sees the model versions their own trainings registered, the ones an
administrator imported, and the serving one; another user's candidates and retired
versions do not exist for them. Nobody sees another user's job ids on the GPU list.

The access matrix (test_web_access.py) holds the per-route answers; these tests look at
what lists, pages and refusals contain."""

from __future__ import annotations

import json

import pytest
from carril_web.errors import ValidationFailed
from datasets.models import Dataset
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from jobs.models import Job, ReconcilerStatus
from jobs.services import job_create_training
from registry.models import ModelEvent, ModelVersion
from rest_framework.test import APIClient

from tests.security.conftest import World
from tests.web import dataset_zips as z
from tests.web.factories import dataset_for


def _api(user: User) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _listed(user: User) -> set[str]:
    return {row["id"] for row in _api(user).get(reverse("api:models")).json()["results"]}


@pytest.mark.parametrize(
    ("role", "sees_owners"), [("owner", True), ("other", False), ("admin", True), ("staff", True)]
)
def test_a_user_lists_their_own_versions_the_imported_ones_and_the_serving_one(
    role: str, sees_owners: bool, world: World, users
) -> None:
    listed = _listed(users[role])
    assert str(world.version.id) in listed  # imported by an administrator: everyone's
    assert (str(world.trained.id) in listed) is sees_owners
    assert (str(world.retired.id) in listed) is sees_owners


def test_a_candidate_becomes_everyones_once_it_serves(world: World, other: User) -> None:
    ModelVersion.objects.filter(id=world.trained.id).update(stage="serving")
    assert str(world.trained.id) in _listed(other)
    response = _api(other).get(reverse("api:model-detail", args=[world.trained.id]))
    assert response.status_code == 200


def test_fine_tuning_or_inference_from_another_users_candidate_is_refused(
    world: World, other: User, fake_gpu
) -> None:
    mine: Dataset = dataset_for(other)
    api = _api(other)
    for version in (world.trained, world.retired):
        train = api.post(
            reverse("api:job-train"),
            {"dataset": str(mine.id), "model": str(version.id), "imgsz": 64},
            format="json",
        )
        assert train.status_code == 400
        assert "model" in train.json()["error"]["details"]["fields"]
        infer = api.post(
            reverse("api:job-infer"),
            {"images": [_image()], "model_version": str(version.id)},
            format="multipart",
        )
        assert infer.status_code == 404
        assert infer.json()["error"]["code"] == "NOT_FOUND"
    assert not Job.objects.filter(owner=other).exists()


def test_the_job_service_itself_refuses_a_version_the_owner_cannot_see(
    world: World, other: User
) -> None:
    with pytest.raises(ValidationFailed):
        job_create_training(
            owner=other,
            dataset_id=dataset_for(other).id,
            model=str(world.trained.id),
            epochs=1,
            imgsz=64,
            batch=2,
            seeds=[1],
            gpus=1,
        )
    assert not Job.objects.filter(owner=other).exists()


@pytest.mark.parametrize("page", ["ui:models", "ui:infer_new", "ui:train_new"])
def test_the_ui_offers_another_users_candidates_to_nobody_else(
    page: str, world: World, other: User
) -> None:
    ModelEvent.objects.create(
        model_version=world.trained, action="register", to_stage="candidate", reason="trained"
    )
    client = Client()
    client.force_login(other)
    body = client.get(reverse(page)).content.decode()
    assert world.trained.name not in body
    assert str(world.trained.id) not in body
    assert world.retired.name not in body
    client.force_login(world.owner)
    assert world.trained.name in client.get(reverse(page)).content.decode()


def _image():
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("a.png", z.png())


# --- the GPU list ---------------------------------------------------------------------


@pytest.fixture
def busy_gpus(world: World) -> None:
    """The reconciler's last picture: the owner's training holds GPU 0, the owner's
    inference waits in the queue (the GPU service knows them by the web job ids)."""
    Job.objects.filter(id=world.inference.id).update(state="queued")
    snapshot = {
        "runtime": "simulated",
        "gpus": [
            {
                "index": 0,
                "name": "Simulated GPU",
                "uuid": "GPU-sim-0",
                "memory_total_mib": 24576,
                "memory_used_mib": 1024,
                "memory_free_mib": 23552,
                "utilization_pct": 50.0,
                "temperature_c": None,
                "power_w": None,
                "lane": {"capacity": 1, "holders": [str(world.training.id)]},
            }
        ],
        "queue": [
            {
                "id": str(world.inference.id),
                "kind": "infer",
                "gpus": 1,
                "gpu_ids": None,
                "priority": 0,
                "waited_s": 3.0,
            }
        ],
    }
    ReconcilerStatus.objects.update_or_create(
        id=1, defaults={"gpus": snapshot, "gpus_fetched_at": timezone.now()}
    )


def test_the_gpu_list_shows_another_users_work_as_busy_without_ids(
    world: World, other: User, busy_gpus
) -> None:
    body = _api(other).get(reverse("api:gpus")).json()
    text = json.dumps(body)
    for secret in (str(world.training.id), str(world.inference.id)):
        assert secret not in text
    gpu = body["gpus"][0]
    assert gpu["lane"] == {"capacity": 1, "busy": 1}
    assert gpu["jobs"] == [{"id": None, "kind": None, "state": None, "visible": False}]
    assert body["queue"][0]["job"]["visible"] is False


def test_the_owner_sees_their_own_jobs_on_the_gpu_list(world: World, busy_gpus) -> None:
    body = _api(world.owner).get(reverse("api:gpus")).json()
    assert body["gpus"][0]["jobs"][0]["id"] == str(world.training.id)
    assert body["queue"][0]["job"]["id"] == str(world.inference.id)


@pytest.mark.parametrize("page", ["ui:dashboard", "ui:dashboard_status"])
def test_the_dashboard_shows_another_users_work_as_busy_without_ids(
    page: str, world: World, other: User, busy_gpus
) -> None:
    client = Client()
    client.force_login(other)
    text = client.get(reverse(page)).content.decode()
    for secret in (str(world.training.id)[:8], str(world.inference.id)[:8]):
        assert secret not in text
    assert "busy" in text
