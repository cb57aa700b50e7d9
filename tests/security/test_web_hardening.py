"""CSRF on every form and path traversal on every file-serving route.

Production cookie flags are proven in tests/web/carril_web/test_web_settings.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse
from jobs.models import Job
from rest_framework.test import APIClient

from tests.security.conftest import INFERENCE_ID, World

# --- CSRF ---------------------------------------------------------------------------------

FORMS = {
    "ui:login": lambda w: {},
    "ui:logout": lambda w: {},
    "ui:train_new": lambda w: {},
    "ui:dataset_delete": lambda w: {"dataset_id": w.dataset.id},
    "ui:job_cancel": lambda w: {"job_id": w.training.id},
    "ui:model_stage": lambda w: {"version_id": w.version.id},
}


def _csrf_client(user) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


@pytest.mark.parametrize("name", sorted(FORMS))
def test_a_form_posted_without_its_csrf_token_is_refused_and_changes_nothing(
    name: str, world: World, admin
) -> None:
    client = _csrf_client(world.owner if name != "ui:model_stage" else admin)
    response = client.post(
        reverse(name, kwargs=FORMS[name](world)),
        {"stage": "serving", "reason": "r", "username": "olivia", "password": "x"},
    )
    assert response.status_code == 403
    world.dataset.refresh_from_db()  # still there
    world.training.refresh_from_db()
    world.version.refresh_from_db()
    assert world.training.state == "running"
    assert world.version.stage == "candidate"


def test_the_same_form_with_its_csrf_token_goes_through(world: World, fake_gpu) -> None:
    client = _csrf_client(world.owner)
    client.get(reverse("ui:job_detail", args=[world.training.id]))  # sets the csrf cookie
    token = client.cookies["csrftoken"].value
    response = client.post(
        reverse("ui:job_cancel", args=[world.training.id]), {"csrfmiddlewaretoken": token}
    )
    assert response.status_code == 302
    world.training.refresh_from_db()
    assert world.training.state == "cancelling"


def test_the_api_with_a_session_cookie_needs_the_csrf_token(world: World) -> None:
    client = _csrf_client(world.owner)
    response = client.post(
        reverse("api:job-cancel", args=[world.training.id]), content_type="application/json"
    )
    assert response.status_code == 403
    world.training.refresh_from_db()
    assert world.training.state == "running"


def test_the_api_with_a_token_needs_no_csrf_token(world: World, fake_gpu) -> None:
    from accounts.services import api_token_create

    client = APIClient(enforce_csrf_checks=True)
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(user=world.owner).secret}")
    response = client.post(reverse("api:job-cancel", args=[world.training.id]))
    assert response.status_code == 202


# --- path traversal -----------------------------------------------------------------------

TRAVERSALS = [
    "../../secrets/gpu_service_token",
    "..%2F..%2Fsecrets%2Fgpu_service_token",
    "%2e%2e/%2e%2e/secrets/gpu_service_token",
    "/etc/passwd",
    "//etc/passwd",
    "..\\..\\secrets\\gpu_service_token",
    f"sub/../../{INFERENCE_ID}/results.json",
    "escape",  # a symlink in the job folder that points outside it
]


@pytest.fixture
def secrets_outside(world: World, storage: Path) -> Path:
    """Files an attacker wants: a secret in storage, another job's folder, and a symlink
    planted in the job folder that points at the secret."""
    secret = storage / "secrets" / "gpu_service_token"
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text("the-token")
    other_job = storage / "jobs" / str(world.inference.id)
    other_job.mkdir(parents=True, exist_ok=True)
    (other_job / "results.json").write_text("{}")
    (world.job_dir / "sub").mkdir()
    (world.job_dir / "escape").symlink_to(secret)
    return secret


@pytest.mark.parametrize("relpath", TRAVERSALS)
def test_the_artifact_route_serves_nothing_outside_the_jobs_folder(
    relpath: str, world: World, secrets_outside: Path
) -> None:
    client = APIClient()
    client.force_authenticate(world.owner)
    url = reverse("api:job-artifact", kwargs={"job_id": world.training.id, "relpath": "x"})
    response = client.get(url[: -len("x")] + relpath)
    assert response.status_code == 404
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert b"the-token" not in body


def test_a_job_not_delivered_has_no_log_and_no_artifacts(
    world: World, secrets_outside: Path
) -> None:
    # The folder is named by the job's own id (one id, issue 11), and read only once
    # the GPU service has the job: before that, nothing there is the job's.
    Job.objects.filter(id=world.training.id).update(dispatched_at=None)
    client = APIClient()
    client.force_authenticate(world.owner)
    logs = client.get(reverse("api:job-logs", args=[world.training.id]))
    assert logs.status_code == 200
    assert logs.json()["lines"] == []
    artifact = client.get(
        reverse(
            "api:job-artifact",
            kwargs={"job_id": world.training.id, "relpath": "job.log"},
        )
    )
    assert artifact.status_code == 404


@pytest.mark.parametrize("name", ["..", "%2e%2e", "data.yaml", "..%2Fdata.yaml"])
@pytest.mark.parametrize("split", ["train", "..", "labels"])
def test_the_dataset_image_routes_serve_only_images_of_a_split(
    name: str, split: str, world: World
) -> None:
    client = APIClient()
    client.force_authenticate(world.owner)
    base = reverse(
        "api:dataset-image", kwargs={"dataset_id": world.dataset.id, "split": "s", "name": "n"}
    )
    url = base[: -len("s/n")] + f"{split}/{name}"
    assert client.get(url).status_code == 404


@pytest.mark.parametrize("name", ["..", "0000_a.png/..", "%2e%2e%2fsecrets", "results.json"])
def test_the_inference_image_route_serves_only_the_jobs_own_inputs(
    name: str, world: World, secrets_outside: Path
) -> None:
    client = Client()
    client.force_login(world.owner)
    base = reverse("ui:job_image", kwargs={"job_id": world.inference.id, "name": "n"})
    assert client.get(base[:-1] + name).status_code == 404
