"""API tokens: they expire, a password change revokes them, `auth/token/` replaces the
same-named token instead of piling up new ones, and every token is listed by name.

The revocation bound across processes (TOKEN_CACHE_SECONDS, ADR 0012) is proven with
two real web processes in test_login_throttling.py."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from accounts.models import ApiToken
from accounts.services import api_token_create
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from tests.web.conftest import PASSWORD


class OnePassPbkdf2Hasher(PBKDF2PasswordHasher):
    """A preferred hasher, cheap enough for a test, so the MD5 hash gets upgraded."""

    iterations = 1


def _with(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    return client


def _works(secret: str) -> bool:
    return _with(secret).get(reverse("api:jobs")).status_code == 200


def test_a_token_expires_after_the_configured_number_of_days(owner: User, settings) -> None:
    settings.CARRIL_TOKEN_TTL_DAYS = 7
    issued = api_token_create(user=owner, name="ci")
    expected = timezone.now() + timedelta(days=7)
    assert abs((issued.token.expires_at - expected).total_seconds()) < 60
    assert _works(issued.secret)
    ApiToken.objects.filter(id=issued.token.id).update(expires_at=timezone.now())
    time.sleep(0.01)
    # Read from the database (nothing remembered it yet in a fresh test): refused.
    from accounts.token_cache import token_cache_forget

    token_cache_forget()
    response = _with(issued.secret).get(reverse("api:jobs"))
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "UNAUTHORIZED"


def test_a_remembered_token_stops_working_the_moment_it_expires(owner: User) -> None:
    issued = api_token_create(user=owner)
    ApiToken.objects.filter(id=issued.token.id).update(
        expires_at=timezone.now() + timedelta(seconds=0.5)
    )
    assert _works(issued.secret)  # now remembered by this process, with its expiry
    time.sleep(0.6)
    assert not _works(issued.secret)


def test_the_token_endpoint_replaces_the_same_named_token_instead_of_piling_up(
    owner: User,
) -> None:
    client = APIClient()
    secrets = [
        client.post(
            reverse("api:token-obtain"), {"username": "olivia", "password": PASSWORD}
        ).json()["token"]
        for _ in range(5)
    ]
    assert ApiToken.objects.filter(user=owner, revoked_at__isnull=True).count() == 1
    assert [_works(s) for s in secrets] == [False, False, False, False, True]
    named = client.post(
        reverse("api:token-obtain"),
        {"username": "olivia", "password": PASSWORD, "name": "laptop"},
    ).json()
    assert named["name"] == "laptop"
    assert named["expires_at"]
    assert _works(named["token"])  # another name: another token
    assert _works(secrets[-1])


def test_tokens_are_listed_by_name_with_their_expiry(owner: User, owner_api) -> None:
    api_token_create(user=owner, name="ci")
    api_token_create(user=owner, name="laptop")
    rows = owner_api.get(reverse("api:tokens")).json()
    assert {row["name"] for row in rows} == {"ci", "laptop"}
    assert all(row["expires_at"] and row["active"] for row in rows)


def test_a_password_change_revokes_every_token_of_the_user_at_once(
    owner: User, other: User
) -> None:
    mine = [api_token_create(user=owner, name=n).secret for n in ("ci", "laptop")]
    theirs = api_token_create(user=other).secret
    assert all(_works(s) for s in [*mine, theirs])  # remembered by this process now
    owner.set_password("a-new-long-password-93")
    owner.save()
    assert not any(_works(s) for s in mine)
    assert _works(theirs)


def test_a_rehash_at_sign_in_is_not_a_password_change(owner: User, settings) -> None:
    # Django re-hashes a password stored with an older hasher when it is checked; that
    # saves the user, but the password is the same and the tokens stay.
    issued = api_token_create(user=owner)
    settings.PASSWORD_HASHERS = [
        "tests.security.test_tokens.OnePassPbkdf2Hasher",
        "django.contrib.auth.hashers.MD5PasswordHasher",
    ]
    assert owner.password.startswith("md5$")
    assert Client().login(username="olivia", password=PASSWORD)
    owner.refresh_from_db()
    assert owner.password.startswith("pbkdf2_sha256$")
    assert _works(issued.secret)


def test_the_account_page_shows_when_a_new_token_expires(owner: User, settings) -> None:
    settings.CARRIL_TOKEN_TTL_DAYS = 30
    client = Client()
    client.force_login(owner)
    page = client.post(reverse("ui:token_create"), {"name": "laptop"}).content.decode()
    expires = (timezone.now() + timedelta(days=30)).strftime("%Y-%m-%d")
    assert 'data-testid="new-token-expires"' in page
    assert expires in page
    assert "expire 30 days after creation" in page


@pytest.mark.parametrize("days", ["0", "-1", "soon"])
def test_a_token_lifetime_below_one_day_is_refused_at_start(days: str, tmp_path) -> None:
    from tests.web.carril_web.test_web_settings import start

    result = start(tmp_path, CARRIL_TOKEN_TTL_DAYS=days)
    assert result.returncode != 0
    assert "CARRIL_TOKEN_TTL_DAYS" in result.stderr
