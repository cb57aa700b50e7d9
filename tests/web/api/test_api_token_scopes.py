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


def scoped(admin_api, scopes: list[str]) -> APIClient:
    made = admin_api.post("/api/v1/auth/tokens/", {"name": "ci", "scopes": scopes}, format="json")
    assert made.status_code == 201, made.content
    return bearer(made.json()["token"])


def test_a_scoped_token_asking_for_no_scopes_makes_a_token_with_its_own_scopes_never_all(
    admin_api,
):
    ci = scoped(admin_api, ["read", "tokens"])
    made = ci.post("/api/v1/auth/tokens/", {"name": "child"}, format="json")
    assert made.status_code == 201, made.content
    assert made.json()["scopes"] == ["read", "tokens"]
    child = bearer(made.json()["token"])
    refused = child.post(f"/api/v1/models/{model_version().id}/stage/", {}, format="json")
    assert refused.json()["error"]["code"] == "SCOPE_REFUSED"


def test_a_scoped_token_cannot_make_a_token_with_a_scope_it_does_not_hold(admin_api, admin):
    from accounts.models import ApiToken

    ci = scoped(admin_api, ["read", "tokens"])
    before = ApiToken.objects.filter(user=admin).count()
    refused = ci.post(
        "/api/v1/auth/tokens/", {"name": "wider", "scopes": ["read", "models"]}, format="json"
    )
    assert refused.status_code == 403
    error = refused.json()["error"]
    assert error["code"] == "SCOPE_REFUSED"
    assert error["details"] == {
        "scope": "models",
        "token_scopes": ["read", "tokens"],
        "field": "scopes",
    }
    assert "`models`" in error["message"]
    assert ApiToken.objects.filter(user=admin).count() == before


def test_a_scoped_token_cannot_make_a_token_for_another_user(admin_api, owner):
    from accounts.models import ApiToken

    ci = scoped(admin_api, ["read", "tokens"])
    for body in ({"user": owner.username}, {"user": owner.username, "scopes": ["read"]}):
        refused = ci.post("/api/v1/auth/tokens/", {"name": "theirs", **body}, format="json")
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "SCOPE_REFUSED"
        assert refused.json()["error"]["details"]["field"] == "user"
    assert not ApiToken.objects.filter(user=owner).exists()


def test_a_scoped_token_may_make_a_narrower_token_for_its_own_user(admin_api, admin):
    ci = scoped(admin_api, ["models", "read", "tokens"])
    made = ci.post(
        "/api/v1/auth/tokens/",
        {"name": "gate", "scopes": ["promote-gated", "read"], "user": admin.username},
        format="json",
    )
    assert made.status_code == 201, made.content
    assert made.json()["scopes"] == ["promote-gated", "read"]
