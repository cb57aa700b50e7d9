"""Fixtures for the web backend's tests: users (owner, other, administrator, staff),
API clients, shared storage under tmp_path, and a fake GPU service behind
`httpx.MockTransport` that speaks the GPU service's HTTP contract."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gpu_client
import httpx
import pytest
from accounts.models import ADMINISTRATORS_GROUP
from django.contrib.auth.models import Group, User
from rest_framework.test import APIClient

PASSWORD = "a-long-test-password-81"


@pytest.fixture(autouse=True)
def storage(settings: Any, tmp_path: Path) -> Path:
    root = tmp_path / "storage"
    (root / "uploads" / "tmp").mkdir(parents=True)
    settings.CARRIL_STORAGE = root
    settings.FILE_UPLOAD_TEMP_DIR = str(root / "uploads" / "tmp")
    # Real hashing costs a second per user on this machine; what it hashes is not tested.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    return root


@pytest.fixture
def owner(db: None) -> User:
    return User.objects.create_user("olivia", password=PASSWORD)


@pytest.fixture
def other(db: None) -> User:
    return User.objects.create_user("oscar", password=PASSWORD)


@pytest.fixture
def admin(db: None) -> User:
    user = User.objects.create_user("ada", password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name=ADMINISTRATORS_GROUP)[0])
    return user


@pytest.fixture
def staff(db: None) -> User:
    return User.objects.create_user("stan", password=PASSWORD, is_staff=True)


def api_as(user: User | None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


@pytest.fixture
def anon_api(db: None) -> APIClient:
    return APIClient()


@pytest.fixture
def owner_api(owner: User) -> APIClient:
    return api_as(owner)


@pytest.fixture
def other_api(other: User) -> APIClient:
    return api_as(other)


@pytest.fixture
def admin_api(admin: User) -> APIClient:
    return api_as(admin)


@pytest.fixture
def staff_api(staff: User) -> APIClient:
    return api_as(staff)


class FakeGpuService:
    """The GPU service's HTTP contract, in memory. `up = False` refuses connections."""

    def __init__(self) -> None:
        self.up = True
        self.jobs: dict[str, dict[str, Any]] = {}
        self.requests: list[httpx.Request] = []
        self.refuse_submit: tuple[int, str] | None = None  # (status, code)
        self.weights: dict[str, Any] | None = None  # what POST /v1/weights answers
        self.weights_rejected = False
        self.weights_seen: list[bytes] = []
        self.media_refused: str | None = None  # the `reason` POST /v1/media/probe refuses with
        self.gpus_answer: dict[str, Any] = {
            "runtime": "simulated",
            "gpus": [
                {
                    "index": 0,
                    "name": "Simulated H100",
                    "uuid": "GPU-sim-0",
                    "memory_total_mib": 24576,
                    "memory_used_mib": 0,
                    "memory_free_mib": 24576,
                    "utilization_pct": 0.0,
                    "temperature_c": 40.0,
                    "power_w": 60.0,
                    "lane": {"capacity": 1, "holders": []},
                }
            ],
            "queue": [],
        }
        self._ids = itertools.count(1)
        self.transport = httpx.MockTransport(self._handle)

    # --- what tests change ----------------------------------------------------------
    def set_state(self, job_id: Any, state: str, **fields: Any) -> None:
        self.jobs[str(job_id)].update(state=state, **fields)

    def forget(self, job_id: Any) -> None:
        self.jobs.pop(str(job_id))

    def client(self) -> gpu_client.GpuClient:
        return gpu_client.GpuClient(
            base_url="http://gpu.test", token="test-token", transport=self.transport
        )

    # --- the contract -----------------------------------------------------------------
    def _handle(self, request: httpx.Request) -> httpx.Response:
        if not self.up:
            raise httpx.ConnectError("connection refused", request=request)
        self.requests.append(request)
        if request.headers.get("Authorization") != "Bearer test-token":
            return _error(401, "UNAUTHORIZED")
        path, method = request.url.path, request.method
        body = json.loads(request.content) if request.content else {}
        if method == "POST" and path == "/v1/jobs":
            return self._submit(body)
        if method == "POST" and path == "/v1/jobs/status":
            known = [self.jobs[i] for i in body["ids"] if i in self.jobs]
            missing = [i for i in body["ids"] if i not in self.jobs]
            return httpx.Response(200, json={"jobs": known, "missing": missing})
        if method == "POST" and path.endswith("/cancel"):
            job = self.jobs.get(path.split("/")[3])
            if job is None:
                return _error(404, "NOT_FOUND")
            if job["state"] in {"succeeded", "failed", "cancelled"}:
                return _error(409, "CONFLICT")
            job["state"] = "cancelling"
            return httpx.Response(200, json=job)
        if method == "GET" and path.startswith("/v1/jobs/"):
            job = self.jobs.get(path.split("/")[3])
            return httpx.Response(200, json=job) if job else _error(404, "NOT_FOUND")
        if method == "GET" and path == "/v1/gpus":
            return httpx.Response(200, json=self.gpus_answer)
        if method == "POST" and path == "/v1/weights":
            self.weights_seen.append(Path(body["path"]).read_bytes())
            if self.weights_rejected:
                return _error(422, "WEIGHTS_REJECTED")
            return httpx.Response(201, json=self.weights)
        if method == "POST" and path == "/v1/media/probe":
            if self.media_refused:
                return httpx.Response(
                    422,
                    json={
                        "error": {
                            "code": "VALIDATION_ERROR",
                            "message": f"video.path: {self.media_refused}",
                            "details": {"field": "video.path", "reason": self.media_refused},
                        }
                    },
                )
            return httpx.Response(200, json={"kind": "video", "seconds": 1.0})
        return _error(404, "NOT_FOUND")

    def _submit(self, body: dict[str, Any]) -> httpx.Response:
        if self.refuse_submit:
            return _error(*self.refuse_submit)
        # The job id is the idempotency key: a known one answers 200 with that job.
        job_id = body.get("job_id")
        if job_id in self.jobs:
            return httpx.Response(200, json=self._accepted(self.jobs[job_id]))
        job_id = job_id or f"gpu-{next(self._ids)}"
        self.jobs[job_id] = {
            "id": job_id,
            "kind": body["kind"],
            "spec": body["spec"],
            "priority": body.get("priority", 0),
            "fair_share_rank": body.get("fair_share_rank", 0.0),
            "state": "queued",
            "gpus_requested": body.get("gpus") or 1,
            "gpu_ids_requested": None,
            "gpu_ids": [],
            "attempt": 1,
            "progress": {"fraction": 0.0},
            "metrics": {},
            "result": None,
            "error": None,
            "submitted_at": "2026-01-01T00:00:00Z",
            "started_at": None,
            "finished_at": None,
            "heartbeat_at": None,
            "request_id": None,
        }
        return httpx.Response(202, json=self._accepted(self.jobs[job_id]))

    @staticmethod
    def _accepted(job: dict[str, Any]) -> dict[str, Any]:
        return {"id": job["id"], "state": job["state"], "status_url": f"/v1/jobs/{job['id']}"}


def _error(status: int, code: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": code, "details": {}}})


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> FakeGpuService:
    """The fake GPU service, wired in wherever the web app builds its client."""
    fake = FakeGpuService()
    monkeypatch.setattr(gpu_client, "client_build", lambda **_: fake.client())
    return fake


@pytest.fixture
def run_on_commit(
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> Callable[..., Any]:
    """`with run_on_commit(): ...` runs transaction.on_commit callbacks, as in production."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


@pytest.fixture(autouse=True)
def _tokens_forgotten() -> None:
    """Each test starts with no token remembered from another test's database."""
    from accounts.authentication import token_cache_forget

    token_cache_forget()


@pytest.fixture(autouse=True)
def _job_documents_forgotten() -> None:
    """Each test starts with no job's document kept from another test."""
    from api.job_documents import job_documents

    job_documents.clear()
