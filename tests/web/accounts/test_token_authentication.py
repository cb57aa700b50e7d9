"""Token authentication remembers a token for a moment, and forgets it when revoked."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from accounts import authentication, token_cache
from accounts.models import ApiToken
from accounts.services import api_token_create, api_token_revoke
from django.utils import timezone
from rest_framework.test import APIClient


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """A monotonic clock the test moves by hand."""
    now = SimpleNamespace(value=1000.0)
    monkeypatch.setattr(token_cache, "time", SimpleNamespace(monotonic=lambda: now.value))
    return now


def token_client(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    return client


def test_polling_with_one_token_reads_the_token_once(owner, clock, django_assert_num_queries):
    client = token_client(api_token_create(user=owner).secret)
    assert client.get("/api/v1/jobs/").status_code == 200
    # The empty job list's count, and no token query.
    with django_assert_num_queries(1):
        assert client.get("/api/v1/jobs/").status_code == 200


def test_a_remembered_token_is_read_again_once_its_moment_has_passed(
    owner, clock, django_assert_num_queries
):
    client = token_client(api_token_create(user=owner).secret)
    client.get("/api/v1/jobs/")
    clock.value += authentication.TOKEN_CACHE_SECONDS + 0.1
    with django_assert_num_queries(2):
        assert client.get("/api/v1/jobs/").status_code == 200


def test_a_used_token_revoked_through_the_api_stops_working_at_once(owner, clock):
    issued = api_token_create(user=owner)
    client = token_client(issued.secret)
    assert client.get("/api/v1/jobs/").status_code == 200
    assert client.delete(f"/api/v1/auth/tokens/{issued.token.id}/").status_code == 204
    assert client.get("/api/v1/jobs/").status_code == 401


def test_a_used_token_revoked_through_the_service_in_this_process_stops_working_at_once(
    owner, clock
):
    issued = api_token_create(user=owner)
    client = token_client(issued.secret)
    assert client.get("/api/v1/jobs/").status_code == 200
    api_token_revoke(user=owner, token_id=issued.token.id)  # as the account page does
    assert client.get("/api/v1/jobs/").status_code == 401


def test_a_used_token_revoked_elsewhere_stops_working_when_its_moment_passes(owner, clock):
    issued = api_token_create(user=owner)
    client = token_client(issued.secret)
    assert client.get("/api/v1/jobs/").status_code == 200
    # Another process revoked it: this one cannot know until it reads the row again.
    ApiToken.objects.filter(id=issued.token.id).update(revoked_at=timezone.now())
    clock.value += authentication.TOKEN_CACHE_SECONDS + 0.1
    assert client.get("/api/v1/jobs/").status_code == 401


def test_a_deactivated_user_is_refused_once_forgotten(owner, clock):
    client = token_client(api_token_create(user=owner).secret)
    assert client.get("/api/v1/jobs/").status_code == 200
    owner.is_active = False
    owner.save()
    authentication.token_cache_forget()
    assert client.get("/api/v1/jobs/").status_code == 401


def test_each_request_gets_its_own_copy_of_the_user(owner, clock):
    issued = api_token_create(user=owner)
    auth = authentication.HashedTokenAuthentication()
    request = SimpleNamespace(headers={"authorization": f"Token {issued.secret}"})
    first_user, _ = auth.authenticate(request)
    first_user.marked = True
    second_user, second_token = auth.authenticate(request)
    assert second_user.pk == owner.pk
    assert not hasattr(second_user, "marked")
    assert second_token.user is second_user


def test_a_requests_copies_read_as_the_token_and_user_and_change_alone(owner, clock):
    issued = api_token_create(user=owner)
    auth = authentication.HashedTokenAuthentication()
    request = SimpleNamespace(headers={"authorization": f"Token {issued.secret}"})
    first_user, first_token = auth.authenticate(request)
    stored = type(first_token).objects.get(id=issued.token.id)
    for field in type(first_token)._meta.concrete_fields:
        assert getattr(first_token, field.attname) == getattr(stored, field.attname)
    assert (first_user.username, first_user.is_active) == (owner.username, True)
    assert first_token._state.db == "default"
    assert first_token._state.adding is False
    first_token._state.adding = True
    first_token._state.fields_cache["user"] = None
    first_user.username = "changed"
    second_user, second_token = auth.authenticate(request)
    assert second_token._state.adding is False
    assert second_token.user is second_user
    assert second_user.username == owner.username


@pytest.mark.parametrize("scheme", ["Token", "Bearer", "bearer"])
def test_a_token_is_accepted_under_the_token_and_the_bearer_scheme(owner, clock, scheme):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"{scheme} {api_token_create(user=owner).secret}")
    assert client.get("/api/v1/jobs/").status_code == 200


def test_a_bad_bearer_token_is_refused_as_a_bad_token(owner, clock):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer not-a-token")
    response = client.get("/api/v1/jobs/")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "UNAUTHORIZED"
    assert "Invalid, expired or revoked token" in response.json()["error"]["message"]


def test_a_token_under_another_scheme_does_not_authenticate(owner, clock):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Basic {api_token_create(user=owner).secret}")
    assert client.get("/api/v1/jobs/").status_code == 401
