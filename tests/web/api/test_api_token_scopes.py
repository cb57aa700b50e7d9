"""Tokens with scopes: an administrator makes one (a CI token); it may call only what its
scopes name, and anything else answers 403 SCOPE_REFUSED naming the scope."""

from __future__ import annotations

from rest_framework.test import APIClient

from tests.web.factories import dataset_for, model_version

CI_SCOPES = ["read", "train", "promote-gated"]


def bearer(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def ci_token(admin_api, **extra) -> dict:
    response = admin_api.post(
        "/api/v1/auth/tokens/", {"name": "ci", "scopes": CI_SCOPES, **extra}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()


def test_an_administrator_makes_a_scoped_token_and_an_ordinary_user_may_not(admin_api, owner_api):
    made = ci_token(admin_api)
    assert made["scopes"] == sorted(CI_SCOPES)
    refused = owner_api.post(
        "/api/v1/auth/tokens/", {"name": "ci", "scopes": ["read"]}, format="json"
    )
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "FORBIDDEN"


def test_a_scoped_token_reads_and_trains_but_is_refused_outside_its_scopes_by_name(
    admin_api, admin, fake_gpu
):
    ci = bearer(ci_token(admin_api)["token"])
    assert ci.get("/api/v1/models/").status_code == 200
    dataset = dataset_for(admin)
    body = {"dataset": str(dataset.id), "model": "yolov8n", "epochs": 1, "imgsz": 32}
    assert ci.post("/api/v1/jobs/train/", body, format="json").status_code == 202

    version = model_version()
    ungated = ci.post(
        f"/api/v1/models/{version.id}/stage/", {"stage": "serving", "reason": "x"}, format="json"
    )
    assert ungated.status_code == 403
    assert ungated.json()["error"]["code"] == "SCOPE_REFUSED"
    assert ungated.json()["error"]["details"]["scope"] == "models"

    delete = ci.delete(f"/api/v1/datasets/{dataset.id}/")
    assert delete.status_code == 403
    assert delete.json()["error"]["details"]["scope"] == "datasets"
    tokens = ci.get("/api/v1/auth/tokens/")
    assert tokens.status_code == 403
    assert "`tokens`" in tokens.json()["error"]["message"]

    version.metrics = {"mAP50-95": 0.3}
    version.save()
    gated = ci.post(
        f"/api/v1/models/{version.id}/stage/",
        {"stage": "serving", "reason": "ci", "require": {"metric": "mAP50-95"}},
        format="json",
    )
    assert gated.status_code == 200, gated.content
