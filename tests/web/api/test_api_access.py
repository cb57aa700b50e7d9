"""Who may call what: anonymous callers get 401 on every API route that is not public,
other users' records answer 404."""

from __future__ import annotations

import pytest

from tests.support.routes import PUBLIC_ROUTES, drf_routes
from tests.web.factories import dataset_for

# Walked from the URL configuration: a new route is covered without a row here.
ENDPOINTS = [
    (method, route)
    for route in drf_routes()
    if route.name not in PUBLIC_ROUTES
    for method in route.methods
]


@pytest.mark.parametrize(
    ("method", "route"), ENDPOINTS, ids=[f"{m.upper()} {r.name}" for m, r in ENDPOINTS]
)
def test_it_refuses_anonymous_callers_with_401_in_the_error_envelope(method, route, anon_api):
    response = getattr(anon_api, method)(route.url())
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "UNAUTHORIZED"
    assert response["WWW-Authenticate"] == "Token"


def test_the_public_routes_answer_without_sign_in(anon_api):
    assert anon_api.get("/api/schema/").status_code == 200
    assert anon_api.get("/api/docs/").status_code == 200
    incomplete = anon_api.post("/api/v1/auth/token/", {}, format="json")
    assert incomplete.status_code == 400  # asked for a username and password, not a token
    assert set(incomplete.json()["error"]["details"]["fields"]) == {"username", "password"}


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
