"""Who may call what: anonymous callers get 401, other users' records answer 404."""

from __future__ import annotations

import uuid

import pytest

from tests.web.factories import dataset_for

ANY_ID = str(uuid.uuid4())
ENDPOINTS = [
    ("get", "/api/v1/datasets/"),
    ("post", "/api/v1/datasets/"),
    ("get", f"/api/v1/datasets/{ANY_ID}/"),
    ("delete", f"/api/v1/datasets/{ANY_ID}/"),
    ("get", f"/api/v1/datasets/{ANY_ID}/samples/"),
    ("get", f"/api/v1/datasets/{ANY_ID}/images/train/a.png"),
    ("get", "/api/v1/models/"),
    ("get", f"/api/v1/models/{ANY_ID}/"),
    ("post", "/api/v1/models/import/"),
    ("post", f"/api/v1/models/{ANY_ID}/stage/"),
    ("get", "/api/v1/jobs/"),
    ("post", "/api/v1/jobs/train/"),
    ("post", "/api/v1/jobs/infer/"),
    ("get", f"/api/v1/jobs/{ANY_ID}/"),
    ("post", f"/api/v1/jobs/{ANY_ID}/cancel/"),
    ("get", f"/api/v1/jobs/{ANY_ID}/logs/"),
    ("get", f"/api/v1/jobs/{ANY_ID}/detections/"),
    ("get", f"/api/v1/jobs/{ANY_ID}/artifacts/annotated/a.jpg"),
    ("get", "/api/v1/gpus/"),
    ("get", "/api/v1/auth/tokens/"),
    ("post", "/api/v1/auth/tokens/"),
    ("delete", "/api/v1/auth/tokens/1/"),
]


@pytest.mark.parametrize(("method", "url"), ENDPOINTS)
def test_it_refuses_anonymous_callers_with_401_in_the_error_envelope(method, url, anon_api):
    response = getattr(anon_api, method)(url)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "UNAUTHORIZED"
    assert response["WWW-Authenticate"] == "Token"


def test_health_and_metrics_need_no_sign_in(anon_api):
    assert anon_api.get("/healthz").json() == {"status": "ok", "database": "ok"}
    assert anon_api.get("/metrics").status_code == 200


def test_an_unknown_api_url_answers_404_in_the_envelope(owner_api):
    response = owner_api.get("/api/v1/nothing-here/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "NOT_FOUND"


def test_a_wrong_method_answers_405_in_the_envelope(owner_api):
    response = owner_api.put("/api/v1/jobs/")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "METHOD_NOT_ALLOWED"


@pytest.mark.parametrize("suffix", ["", "samples/", "images/train/train_0.png"])
def test_another_users_dataset_answers_404(suffix, owner, other_api):
    dataset = dataset_for(owner)
    response = other_api.get(f"/api/v1/datasets/{dataset.id}/{suffix}")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "NOT_FOUND"


def test_a_browser_session_needs_the_csrf_token_to_change_anything(owner):
    from jobs.models import Job
    from rest_framework.test import APIClient

    job = Job.objects.create(owner=owner, kind="train", state="submitted")
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(owner)
    assert client.get(f"/api/v1/jobs/{job.id}/").status_code == 200
    response = client.post(f"/api/v1/jobs/{job.id}/cancel/")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "FORBIDDEN"
    assert Job.objects.get(id=job.id).state == "submitted"
