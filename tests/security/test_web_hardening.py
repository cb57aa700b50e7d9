"""CSRF on every form, path traversal on file-serving routes, and production cookie flags."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse
from jobs.models import Job
from rest_framework.test import APIClient

from tests.security.conftest import World

ROOT = Path(__file__).resolve().parents[2]

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
    "sub/../../gpu-infer-1/results.json",
    "escape",  # a symlink in the job folder that points outside it
]


@pytest.fixture
def secrets_outside(world: World, storage: Path) -> Path:
    """Files an attacker wants: a secret in storage, another job's folder, and a symlink
    planted in the job folder that points at the secret."""
    secret = storage / "secrets" / "gpu_service_token"
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text("the-token")
    (storage / "jobs" / "gpu-infer-1").mkdir(parents=True, exist_ok=True)
    (storage / "jobs" / "gpu-infer-1" / "results.json").write_text("{}")
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


def test_a_job_whose_gpu_id_climbs_out_of_jobs_has_no_log_and_no_artifacts(
    world: World, secrets_outside: Path
) -> None:
    # The id comes from the GPU service; a hostile or broken one must not steer reads.
    Job.objects.filter(id=world.training.id).update(gpu_job_id="../secrets")
    client = APIClient()
    client.force_authenticate(world.owner)
    logs = client.get(reverse("api:job-logs", args=[world.training.id]))
    assert logs.status_code == 200
    assert logs.json()["lines"] == []
    artifact = client.get(
        reverse(
            "api:job-artifact",
            kwargs={"job_id": world.training.id, "relpath": "gpu_service_token"},
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


# --- production settings ------------------------------------------------------------------

PROBE = """
import json
from django.conf import settings
print(json.dumps({
    "SESSION_COOKIE_SECURE": settings.SESSION_COOKIE_SECURE,
    "SESSION_COOKIE_HTTPONLY": settings.SESSION_COOKIE_HTTPONLY,
    "CSRF_COOKIE_SECURE": settings.CSRF_COOKIE_SECURE,
    "DEBUG": settings.DEBUG,
    "ALLOWED_HOSTS": settings.ALLOWED_HOSTS,
}))
"""


def _settings_in_a_fresh_process(*, tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CARRIL_", "DATABASE_URL"))}
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup();" + PROBE],
        cwd=ROOT / "web",
        env={
            **clean,
            "DJANGO_SETTINGS_MODULE": "carril_web.settings",
            "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'web'}",
            "CARRIL_STORAGE": str(tmp_path / "storage"),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_cookies_are_secure_and_the_session_cookie_is_http_only(tmp_path) -> None:
    done = _settings_in_a_fresh_process(
        tmp_path=tmp_path,
        CARRIL_ENV="production",
        CARRIL_SECRET_KEY="a-real-secret-from-the-environment-0123456789",
        CARRIL_GPU_SERVICE_TOKEN="a-real-token-from-the-environment-0123456789",
        CARRIL_ALLOWED_HOSTS="carril.example.org",
        CARRIL_DEBUG="1",  # ignored in production
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["SESSION_COOKIE_SECURE"] is True
    assert seen["SESSION_COOKIE_HTTPONLY"] is True
    assert seen["CSRF_COOKIE_SECURE"] is True
    assert seen["DEBUG"] is False
    assert seen["ALLOWED_HOSTS"] == ["carril.example.org"]


@pytest.mark.parametrize("missing", ["CARRIL_SECRET_KEY", "CARRIL_GPU_SERVICE_TOKEN"])
def test_production_refuses_to_start_without_its_secrets(missing: str, tmp_path) -> None:
    env = {
        "CARRIL_ENV": "production",
        "CARRIL_SECRET_KEY": "a-real-secret-from-the-environment-0123456789",
        "CARRIL_GPU_SERVICE_TOKEN": "a-real-token-from-the-environment-0123456789",
    }
    del env[missing]
    done = _settings_in_a_fresh_process(tmp_path=tmp_path, **env)
    assert done.returncode != 0
    assert missing in done.stderr
    assert not (tmp_path / "storage" / "secrets").exists()
