"""Many writers at once against the web's database, through real HTTP to the web app under
gunicorn as `make run` starts it (two workers, four threads each) with the reconciler
beside it: SQLite by default, PostgreSQL when DATABASE_URL is set. Concurrent writers
wait for each other; none is answered 5xx ("database is locked" on SQLite, ADR 0055)."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.e2e.synthetic_dataset import dataset_zip
from tests.support.stack import Stack

AT_ONCE = 10
TRAIN = {"model": "yolov8n", "epochs": 1, "imgsz": 32, "batch": 2, "seeds": [1]}


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    stack = Stack(
        storage=tmp_path_factory.mktemp("writers") / "storage", web_workers=2, web_threads=4
    )
    try:
        yield stack.start(users={"alice": "user", "bob": "user"})
    finally:
        stack.stop()


@pytest.fixture(scope="module")
def alice(stack: Stack):
    with stack.api("alice") as api:
        yield api


@pytest.fixture(scope="module")
def dataset(stack: Stack, alice: httpx.Client, tmp_path_factory) -> str:
    path = dataset_zip(path=tmp_path_factory.mktemp("data") / "shapes.zip", images_per_split=2)
    with path.open("rb") as body:
        created = alice.post(
            "/api/v1/datasets/",
            data={"name": "shapes"},
            files={"file": (path.name, body, "application/zip")},
        )
    assert created.status_code in (201, 202), created.text
    dataset_id = created.json()["id"]
    stack.wait_until(
        lambda: alice.get(f"/api/v1/datasets/{dataset_id}/").json()["state"] == "ready",
        timeout_s=120,
        what="the dataset validated",
    )
    return dataset_id


def at_once(call: Callable[[int], httpx.Response]) -> list[httpx.Response]:
    """`call(0..AT_ONCE-1)`, each in a thread of its own and on a connection of its own
    (gunicorn's workers and threads share them out), released together."""
    start = time.monotonic() + 0.5

    def released(index: int) -> httpx.Response:
        time.sleep(max(0.0, start - time.monotonic()))
        return call(index)

    with ThreadPoolExecutor(max_workers=AT_ONCE) as pool:
        return list(pool.map(released, range(AT_ONCE)))


def server_errors(responses: list[httpx.Response]) -> list[tuple[int, str]]:
    return [(r.status_code, r.text[:300]) for r in responses if r.status_code >= 500]


def test_ten_concurrent_train_submits_are_all_accepted_without_a_server_error(
    stack: Stack, alice: httpx.Client, dataset: str
) -> None:
    headers = dict(alice.headers)

    def submit(index: int) -> httpx.Response:
        body = {**TRAIN, "dataset": dataset, "name": f"at once {index}"}
        return httpx.post(
            f"{stack.web_url}/api/v1/jobs/train/", json=body, headers=headers, timeout=60
        )

    responses = at_once(submit)
    assert server_errors(responses) == [], stack.logs()
    assert [r.status_code for r in responses] == [202] * AT_ONCE, [r.text for r in responses]
    ids = {r.json()["id"] for r in responses}
    assert len(ids) == AT_ONCE
    assert ids <= set(stack.web_jobs())

    # Cancelled together too (and no ten trainings left to take the CPU).
    def cancel(index: int) -> httpx.Response:
        job = sorted(ids)[index]
        return httpx.post(f"{stack.web_url}/api/v1/jobs/{job}/cancel/", headers=headers, timeout=60)

    cancelled = at_once(cancel)
    assert server_errors(cancelled) == [], stack.logs()
    assert {r.status_code for r in cancelled} <= {200, 202}, [r.text for r in cancelled]


@pytest.mark.parametrize("route", ["/api/v1/auth/token/", "/login/"])
def test_concurrent_wrong_passwords_are_refused_or_throttled_never_a_server_error(
    stack: Stack, route: str
) -> None:
    def guess(index: int) -> httpx.Response:
        credentials = {"username": "bob", "password": f"wrong-{index}"}
        if route == "/login/":
            return _ui_sign_in(stack.web_url, credentials)
        body = {**credentials, "name": f"guess-{index}"}
        return httpx.post(f"{stack.web_url}{route}", json=body, timeout=60)

    # Twice the failure limit: the second half arrives while the first are being counted
    # and the lockout begins.
    responses = at_once(guess) + at_once(guess)
    assert server_errors(responses) == [], stack.logs()
    assert {r.status_code for r in responses} <= {200, 400, 401, 403, 429}, [
        (r.status_code, r.text[:200]) for r in responses
    ]
    assert any(r.status_code == 429 for r in responses), "the guesses were throttled"


def _ui_sign_in(url: str, credentials: dict[str, str]) -> httpx.Response:
    """The sign-in form as a browser posts it: its CSRF cookie and token first."""
    with httpx.Client(base_url=url, timeout=60) as browser:
        form = browser.get("/login/")
        token = browser.cookies["csrftoken"]
        assert form.status_code == 200
        return browser.post(
            "/login/", data={**credentials, "csrfmiddlewaretoken": token}, headers={"Referer": url}
        )


def test_the_web_processes_keep_the_sqlite_database_in_wal_mode(stack: Stack) -> None:
    if stack.database.postgres:
        pytest.skip("PostgreSQL has no journal mode; this run's DATABASE_URL is PostgreSQL")
    [mode] = stack.database.rows("PRAGMA journal_mode")
    assert mode["journal_mode"] == "wal"
    # The write-ahead log and its index hold the same rows: as private as the database.
    for suffix in ("", "-wal", "-shm"):
        path = stack.database.path.with_name(stack.database.path.name + suffix)
        assert oct(path.stat().st_mode & 0o777) == "0o600", path
