"""Password guessing: failed sign-ins are throttled per username at one client address,
per address, and slowed per username, on the UI sign-in, the admin sign-in and the API
token endpoint; a rotating `X-Forwarded-For` changes nothing; the counts are shared by
every web process. The rule's finer points are in test_login_throttling_rule.py.

In-process tests use Django's test client; the last tests run two real gunicorn
processes on one database and alternate between them."""

from __future__ import annotations

import itertools
import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.web.conftest import PASSWORD

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 3
ADDRESS_LIMIT = 5
ENTRANCES = {
    "ui": "/login/",
    "admin": "/admin/login/",
    "api": "/api/v1/auth/token/",
}
_spoofs = itertools.count(1)


@pytest.fixture(autouse=True)
def _limits(settings) -> None:
    settings.AXES_FAILURE_LIMIT = LIMIT
    settings.CARRIL_LOGIN_ADDRESS_FAILURE_LIMIT = ADDRESS_LIMIT
    settings.CARRIL_LOGIN_USERNAME_DELAY_AFTER = 100


def _attempt(
    entrance: str,
    username: str,
    password: str,
    *,
    address: str = "192.0.2.10",
    forwarded: str | None = None,
):
    """One sign-in; a fresh spoofed X-Forwarded-For each time unless one is given."""
    spoof = forwarded or f"10.{next(_spoofs) % 250}.0.1, 172.16.{next(_spoofs) % 250}.9"
    client = Client(REMOTE_ADDR=address, HTTP_X_FORWARDED_FOR=spoof)
    data = {"username": username, "password": password}
    if entrance == "api":
        return client.post(ENTRANCES[entrance], json.dumps(data), content_type="application/json")
    return client.post(ENTRANCES[entrance], data)


def _signed_in(entrance: str, response) -> bool:
    if entrance == "api":
        return response.status_code == 200
    return response.status_code == 302  # both sign-in pages redirect on success


def _assert_throttled(entrance: str, response, wait: int = 900) -> None:
    assert response.status_code == 429, response.content[:300]
    assert int(response["Retry-After"]) == wait
    if entrance == "api":
        error = response.json()["error"]
        assert error["code"] == "THROTTLED"
        assert error["details"]["retry_after_s"] == wait
    else:
        assert b"Too many failed sign-ins" in response.content


@pytest.fixture
def staff_user(staff: User) -> User:
    # The admin only lets staff in, so the admin entrance signs in as staff.
    return staff


def _who(entrance: str, owner: User, staff_user: User) -> str:
    return staff_user.username if entrance == "admin" else owner.username


@pytest.mark.parametrize("entrance", sorted(ENTRANCES))
def test_guessing_one_accounts_password_at_one_address_is_throttled(
    entrance: str, owner: User, staff_user: User
) -> None:
    username = _who(entrance, owner, staff_user)
    for i in range(LIMIT - 1):
        response = _attempt(entrance, username, f"guess-{i}")
        assert response.status_code != 429
        assert not _signed_in(entrance, response)
    # The failure that reaches the limit is answered as throttled already...
    _assert_throttled(entrance, _attempt(entrance, username, "guess"))
    # ...and even the right password, from that address, is refused until the cool-off.
    _assert_throttled(entrance, _attempt(entrance, username, PASSWORD))


@pytest.mark.parametrize("entrance", sorted(ENTRANCES))
def test_guessing_one_accounts_password_from_many_addresses_is_slowed(
    entrance: str, owner: User, staff_user: User, settings
) -> None:
    settings.CARRIL_LOGIN_USERNAME_DELAY_AFTER = LIMIT
    username = _who(entrance, owner, staff_user)
    for i in range(LIMIT):
        response = _attempt(entrance, username, f"guess-{i}", address=f"198.51.100.{i + 1}")
        assert response.status_code != 429
        assert not _signed_in(entrance, response)
    # Now each attempt waits after the last failure, even the right password from an
    # address never seen; never as long as a lock, and never locked for good.
    _assert_throttled(entrance, _attempt(entrance, username, PASSWORD, address="203.0.113.77"), 1)


@pytest.mark.parametrize("entrance", sorted(ENTRANCES))
def test_guessing_many_accounts_from_one_address_is_throttled_whatever_it_forwards(
    entrance: str, owner: User, staff_user: User
) -> None:
    for i in range(ADDRESS_LIMIT - 1):
        assert _attempt(entrance, f"nobody-{i}", "guess").status_code != 429
    _assert_throttled(entrance, _attempt(entrance, "nobody-else", "guess"))
    username = _who(entrance, owner, staff_user)
    _assert_throttled(entrance, _attempt(entrance, username, PASSWORD))
    # Another address is not affected.
    assert _signed_in(entrance, _attempt(entrance, username, PASSWORD, address="192.0.2.99"))


def test_a_successful_sign_in_starts_the_count_afresh(owner: User) -> None:
    for _ in range(2):
        for i in range(LIMIT - 1):
            assert _attempt("api", owner.username, f"guess-{i}").status_code == 401
        assert _signed_in("api", _attempt("api", owner.username, PASSWORD))


def test_behind_a_trusted_proxy_the_client_is_the_address_the_proxy_appended(
    owner: User, settings
) -> None:
    settings.CARRIL_TRUSTED_PROXIES = 1
    proxy = "172.18.0.5"  # every request comes from the proxy
    for i in range(ADDRESS_LIMIT):
        # The client rotates what it writes; the proxy appends the address it saw.
        forwarded = f"10.9.{i}.1, 203.0.113.5"
        _attempt("api", f"nobody-{i}", "x", address=proxy, forwarded=forwarded)
    _assert_throttled(
        "api",
        _attempt("api", owner.username, PASSWORD, address=proxy, forwarded="1.2.3.4, 203.0.113.5"),
    )
    # Another client behind the same proxy signs in.
    other_client = _attempt(
        "api", owner.username, PASSWORD, address=proxy, forwarded="203.0.113.5, 198.51.100.7"
    )
    assert _signed_in("api", other_client)


def test_a_throttled_attempt_is_logged_without_the_password(
    owner: User, caplog: pytest.LogCaptureFixture
) -> None:
    for i in range(LIMIT):
        _attempt("api", owner.username, f"guess-{i}")
    with caplog.at_level(logging.WARNING, logger="accounts.throttling"):
        _attempt("api", owner.username, PASSWORD)
    line = next(r.getMessage() for r in caplog.records if r.name == "accounts.throttling")
    assert "sign-in throttled" in line
    assert "olivia" in line
    assert "192.0.2.10" in line
    assert PASSWORD not in caplog.text


# --- two real web processes -----------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def two_web_processes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """Two gunicorn processes (one worker each) on one SQLite database, with two users:
    olivia (whose password is guessed) and ruth (whose token is revoked)."""
    tmp_path = tmp_path_factory.mktemp("two-web")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CARRIL_")}
    clean.pop("DATABASE_URL", None)
    env = {
        **clean,
        "CARRIL_STORAGE": str(tmp_path),
        "CARRIL_ENV": "dev",
        "CARRIL_LOGIN_FAILURE_LIMIT": str(LIMIT),
        "CARRIL_GPU_SERVICE_URL": "http://127.0.0.1:9",  # never called here
        "DJANGO_SETTINGS_MODULE": "carril_web.settings",
    }
    web = ROOT / "web"
    run = {"cwd": web, "env": env, "check": True, "capture_output": True, "timeout": 300}
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], **run)
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from django.contrib.auth.models import User; "
            f"User.objects.create_user('olivia', password={PASSWORD!r}); "
            f"User.objects.create_user('ruth', password={PASSWORD!r})",
        ],
        **run,
    )
    ports = [_free_port(), _free_port()]
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "carril_web.wsgi:application",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                "1",
                "--threads",
                "2",
            ],
            cwd=web,
            env=env,
            stdout=(tmp_path / f"web-{port}.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
        for port in ports
    ]
    urls = [f"http://127.0.0.1:{port}" for port in ports]
    try:
        for url in urls:
            deadline = time.monotonic() + 90
            while True:
                try:
                    if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, "gunicorn did not start"
                time.sleep(0.2)
        yield urls
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def _obtain(
    url: str, password: str, spoof: str, name: str = "api", username: str = "olivia"
) -> httpx.Response:
    return httpx.post(
        f"{url}/api/v1/auth/token/",
        json={"username": username, "password": password, "name": name},
        headers={"X-Forwarded-For": spoof},
        timeout=30,
    )


def _jobs(url: str, token: str) -> int:
    return httpx.get(
        f"{url}/api/v1/jobs/", headers={"Authorization": f"Token {token}"}, timeout=30
    ).status_code


def test_a_token_revoked_in_one_process_stops_working_in_the_other_within_the_bound(
    two_web_processes: list[str],
) -> None:
    from accounts.token_cache import TOKEN_CACHE_SECONDS

    first, second = two_web_processes
    obtained = _obtain(first, PASSWORD, "10.0.0.2", username="ruth").json()
    token = obtained["token"]
    assert _jobs(second, token) == 200  # now remembered by the second process
    revoked = httpx.delete(
        f"{first}/api/v1/auth/tokens/{obtained['id']}/",
        headers={"Authorization": f"Token {token}"},
        timeout=30,
    )
    assert revoked.status_code == 204
    started = time.monotonic()
    assert _jobs(first, token) == 401  # the revoking process: at once
    while _jobs(second, token) == 200:
        assert time.monotonic() - started < TOKEN_CACHE_SECONDS + 1.0
        time.sleep(0.05)
    assert time.monotonic() - started < TOKEN_CACHE_SECONDS + 1.0


# After the revocation test: this one throttles 127.0.0.1, where both tests come from.
def test_two_web_processes_share_the_count_and_a_rotating_forwarded_for_does_not_help(
    two_web_processes: list[str],
) -> None:
    first, second = two_web_processes
    # A token obtained before the guessing, to show revocation across processes after.
    token = _obtain(first, PASSWORD, "10.0.0.1").json()["token"]
    for i in range(LIMIT - 1):
        url = two_web_processes[i % 2]
        answer = _obtain(url, f"guess-{i}", f"10.{i}.{i}.{i}", name="guess")
        assert answer.status_code == 401, answer.text
    # The failure that reaches the limit, in the other process than the one before it.
    assert _obtain(two_web_processes[(LIMIT - 1) % 2], "guess", "10.99.0.1").status_code == 429
    for url in (first, second):
        refused = _obtain(url, PASSWORD, "10.200.0.1", name="after")
        assert refused.status_code == 429, refused.text
        assert refused.json()["error"]["code"] == "THROTTLED"
        assert int(refused.headers["Retry-After"]) > 0
    assert token  # the earlier token is unaffected by the throttle
    assert _jobs(second, token) == 200
