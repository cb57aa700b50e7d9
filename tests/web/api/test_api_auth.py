"""API tokens: obtained with a password, stored hashed, shown once, revocable."""

from __future__ import annotations

import hashlib

from accounts.models import ApiToken
from rest_framework.test import APIClient

from tests.web.conftest import PASSWORD


def obtain(username: str, password: str = PASSWORD):
    return APIClient().post(
        "/api/v1/auth/token/", {"username": username, "password": password}, format="json"
    )


def test_it_issues_a_token_that_authenticates_later_calls(owner):
    token = obtain("olivia").json()["token"]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get("/api/v1/jobs/").status_code == 200


def test_it_stores_only_the_tokens_hash(owner):
    token = obtain("olivia").json()["token"]
    stored = ApiToken.objects.get(user=owner)
    assert stored.key_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token not in {stored.key_hash, stored.prefix, stored.name}


def test_it_refuses_a_wrong_password_with_401(owner):
    response = obtain("olivia", "not-the-password")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "UNAUTHORIZED"
    assert not ApiToken.objects.exists()


def test_a_revoked_token_no_longer_authenticates(owner, owner_api):
    body = obtain("olivia").json()
    assert owner_api.delete(f"/api/v1/auth/tokens/{body['id']}/").status_code == 204
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {body['token']}")
    response = client.get("/api/v1/jobs/")
    assert response.status_code == 401


def test_a_user_cannot_revoke_another_users_token(owner, other_api):
    body = obtain("olivia").json()
    assert other_api.delete(f"/api/v1/auth/tokens/{body['id']}/").status_code == 404
    assert ApiToken.objects.get(id=body["id"]).revoked_at is None


def test_the_token_list_shows_own_tokens_without_secrets(owner, other, owner_api):
    obtain("olivia")
    obtain("oscar")
    tokens = owner_api.get("/api/v1/auth/tokens/").json()
    assert len(tokens) == 1
    assert "token" not in tokens[0]
    assert tokens[0]["prefix"].startswith("crl_")


def test_a_made_up_token_is_refused(db):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token crl_made-up")
    assert client.get("/api/v1/jobs/").status_code == 401
