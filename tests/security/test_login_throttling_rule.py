"""The sign-in throttling rule (ADR 0024): failures counted per username at one address,
a higher ceiling per address, and a per-username slowdown that never locks the real
owner out. The browser sign-in and the API token endpoint follow the same rule.

Time passes by moving the recorded failures back (`_time_passes`), so nothing sleeps."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.db.models import F, Sum
from django.test import Client

from tests.web.conftest import PASSWORD

ATTACKER = "192.0.2.66"
OWNER_HOME = "198.51.100.20"
ENTRANCES = {"ui": "/login/", "api": "/api/v1/auth/token/"}


@pytest.fixture(autouse=True)
def _rule(settings) -> None:
    # Each test turns on the part of the rule it is about.
    settings.AXES_FAILURE_LIMIT = 10
    settings.CARRIL_LOGIN_ADDRESS_FAILURE_LIMIT = 1000
    settings.CARRIL_LOGIN_USERNAME_DELAY_AFTER = 1000
    settings.CARRIL_LOGIN_USERNAME_DELAY_MAX_S = 60


@pytest.fixture
def attacker(db: None) -> User:
    return User.objects.create_user("mallory", password="mallorys-own-password-7")


def _attempt(entrance: str, username: str, password: str, *, address: str):
    client = Client(REMOTE_ADDR=address)
    data = {"username": username, "password": password}
    if entrance == "api":
        return client.post(ENTRANCES["api"], json.dumps(data), content_type="application/json")
    return client.post(ENTRANCES["ui"], data)


def _signed_in(entrance: str, response) -> bool:
    return response.status_code == (200 if entrance == "api" else 302)


def _refused_as_wrong(entrance: str, response) -> bool:
    # The API answers 401; the sign-in page shows its form again with an error.
    return response.status_code == (401 if entrance == "api" else 200)


def _throttled(response) -> int:
    """The Retry-After of a throttled answer; fails the test for any other answer."""
    assert response.status_code == 429, (response.status_code, response.content[:300])
    return int(response["Retry-After"])


def _failures(username: str) -> int:
    counted = AccessAttempt.objects.filter(username=username).aggregate(
        n=Sum("failures_since_start")
    )
    return counted["n"] or 0


def _time_passes(seconds: float) -> None:
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(seconds=seconds))


@pytest.mark.parametrize("entrance", sorted(ENTRANCES))
def test_signing_in_to_your_own_account_does_not_clear_the_failures_you_made_on_anothers(
    entrance: str, owner: User, attacker: User
) -> None:
    for i in range(9):
        assert _refused_as_wrong(
            entrance, _attempt(entrance, owner.username, f"g{i}", address=ATTACKER)
        )
    assert _signed_in(
        entrance, _attempt(entrance, attacker.username, "mallorys-own-password-7", address=ATTACKER)
    )
    assert _failures(owner.username) == 9
    # The tenth wrong password reaches the limit, and the right one is refused after it.
    _throttled(_attempt(entrance, owner.username, "g9", address=ATTACKER))
    _throttled(_attempt(entrance, owner.username, PASSWORD, address=ATTACKER))


@pytest.mark.parametrize("entrance", sorted(ENTRANCES))
def test_one_address_guessing_many_usernames_stops_at_the_address_ceiling(
    entrance: str, owner: User, settings
) -> None:
    settings.CARRIL_LOGIN_ADDRESS_FAILURE_LIMIT = 25
    for i in range(24):  # never ten for one username: only the ceiling can stop this
        assert _refused_as_wrong(
            entrance, _attempt(entrance, f"user-{i}", "guess", address=ATTACKER)
        )
    wait = _throttled(_attempt(entrance, "user-24", "guess", address=ATTACKER))
    assert wait == 900
    # Every username is refused from that address, the owner's right password included...
    assert 0 < _throttled(_attempt(entrance, owner.username, PASSWORD, address=ATTACKER)) <= 900
    # ...while from another address the owner signs in.
    assert _signed_in(entrance, _attempt(entrance, owner.username, PASSWORD, address=OWNER_HOME))
    # The ceiling lifts after the cool-off, counted from the address's last failure.
    _time_passes(900)
    assert _signed_in(entrance, _attempt(entrance, owner.username, PASSWORD, address=ATTACKER))


@pytest.mark.parametrize("entrance", sorted(ENTRANCES))
def test_failures_for_one_username_from_many_addresses_slow_it_down_doubling_the_wait(
    entrance: str, owner: User, settings
) -> None:
    settings.CARRIL_LOGIN_USERNAME_DELAY_AFTER = 3
    settings.CARRIL_LOGIN_USERNAME_DELAY_MAX_S = 4
    addresses = (f"203.0.113.{i}" for i in range(1, 200))
    for i in range(3):  # one failure per address: no address reaches any limit
        assert _refused_as_wrong(
            entrance, _attempt(entrance, owner.username, f"g{i}", address=next(addresses))
        )
    for expected_wait in (1, 2, 4, 4):  # doubling, up to the most
        assert (
            _throttled(_attempt(entrance, owner.username, "g", address=next(addresses)))
            == expected_wait
        )
        # Attempts refused during the wait are not counted and do not lengthen it.
        for _ in range(3):
            _throttled(_attempt(entrance, owner.username, "g", address=next(addresses)))
        _time_passes(expected_wait)
        assert _refused_as_wrong(
            entrance, _attempt(entrance, owner.username, "g", address=next(addresses))
        )
    assert _failures(owner.username) == 7
    # After the wait, the right password from a new address signs in.
    _time_passes(4)
    assert _signed_in(
        entrance, _attempt(entrance, owner.username, PASSWORD, address=next(addresses))
    )


@pytest.mark.parametrize("entrance", sorted(ENTRANCES))
def test_a_guesser_elsewhere_never_locks_the_owner_out_of_their_own_address(
    entrance: str, owner: User, settings
) -> None:
    settings.CARRIL_LOGIN_USERNAME_DELAY_AFTER = 3
    # The owner has signed in from home before.
    assert _signed_in(entrance, _attempt(entrance, owner.username, PASSWORD, address=OWNER_HOME))
    # A guesser hammers the owner's username from one address, and from many.
    for i in range(30):
        _attempt(entrance, owner.username, f"g{i}", address=ATTACKER)
    for i in range(1, 30):
        _attempt(entrance, owner.username, "g", address=f"203.0.113.{i}")
    _throttled(_attempt(entrance, owner.username, PASSWORD, address=ATTACKER))
    # From an address never used, the owner waits, but never longer than the most.
    wait = _throttled(_attempt(entrance, owner.username, PASSWORD, address="203.0.113.250"))
    assert wait <= settings.CARRIL_LOGIN_USERNAME_DELAY_MAX_S
    _time_passes(wait)
    assert _signed_in(
        entrance, _attempt(entrance, owner.username, PASSWORD, address="203.0.113.250")
    )
    # From home the owner signs in at once, again and again, the guesser still at it.
    for i in range(3):
        assert _signed_in(
            entrance, _attempt(entrance, owner.username, PASSWORD, address=OWNER_HOME)
        )
        _attempt(entrance, owner.username, f"again-{i}", address=f"203.0.113.{100 + i}")
    # A typo at home counts against home's own limit only, as it would for anyone.
    assert _refused_as_wrong(
        entrance, _attempt(entrance, owner.username, "typo", address=OWNER_HOME)
    )
    assert _signed_in(entrance, _attempt(entrance, owner.username, PASSWORD, address=OWNER_HOME))
