"""The GPU service's HTTP client: the only module in the web app that knows its URLs.

Typed methods over httpx with timeouts; every call sends the service token and the
current X-Request-ID. Job records are read here, once, into the contract's shape
(`gpu_service.contract.JobStatus`, every key present), so everything downstream reads
that one shape and guesses no spellings. Failures become two typed errors:
`GpuServiceUnavailable` (could not reach it, it timed out, or it answered 5xx: worth
retrying later) and `GpuServiceRefused` (it answered 4xx with its error envelope:
retrying will not help).
Tests pass an `httpx.MockTransport` as `transport`.
"""

from __future__ import annotations

import functools
import os
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import certifi
import httpx
from carril_web.errors import GpuServiceUnavailable
from django.conf import settings
from observability.request_id import request_id_get

from gpu_service.contract import JOB_STATES, PROGRESS_KEYS, JobStatus, Progress

# Below gunicorn's worker timeout (120 s), which would otherwise kill the request first.
WEIGHTS_IMPORT_TIMEOUT_S = 100.0
# Asked while a training's submit waits: a hung GPU service must not hold it long, and
# an unanswered check lets the job be created and delivered later (jobs/gpu_fit.py).
ADMISSION_CHECK_TIMEOUT_S = 2.0
# A video's probe decodes one frame (milliseconds); a zip's reads every member (seconds
# for a big one). Also below gunicorn's timeout.
MEDIA_PROBE_TIMEOUT_S = 60.0


class GpuServiceRefused(Exception):
    """The GPU service refused the request (4xx)."""

    def __init__(self, *, status: int, code: str, message: str, details: dict[str, Any]):
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        super().__init__(f"{status} {code}: {message}")


@dataclass(frozen=True)
class JobAccepted:
    id: str
    state: str
    created: bool  # False when the job id was already known (200, not 202)


@dataclass(frozen=True)
class JobsStatus:
    jobs: list[JobStatus]
    missing: list[str]


def job_status_read(data: Any) -> JobStatus:
    """A job record as the GPU service sent it, in the contract's shape.

    Keys it left out read as their empty value; a record without an id or with a state
    the contract does not know is not a job record (GpuServiceUnavailable: the service
    answered something this web app cannot read, which waiting on may fix).
    """
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        raise GpuServiceUnavailable(details={"reason": "malformed", "record": str(data)[:200]})
    if data.get("state") not in JOB_STATES:
        raise GpuServiceUnavailable(details={"reason": "unknown_state", "state": data.get("state")})
    raw_progress = data.get("progress") or {}
    progress: Progress = {key: raw_progress.get(key) for key in PROGRESS_KEYS}  # type: ignore[assignment]
    progress["fraction"] = raw_progress.get("fraction") or 0.0
    return JobStatus(
        id=data["id"],
        kind=data.get("kind") or "",
        spec=data.get("spec") or {},
        priority=data.get("priority") or 0,
        state=data["state"],
        gpus_requested=data.get("gpus_requested") or 0,
        gpu_ids_requested=data.get("gpu_ids_requested"),
        gpu_ids=data.get("gpu_ids") or [],
        attempt=data.get("attempt") or 0,
        progress=progress,
        metrics=data.get("metrics") or {},
        result=data.get("result"),
        error=data.get("error") or None,
        submitted_at=data.get("submitted_at") or "",
        started_at=data.get("started_at"),
        finished_at=data.get("finished_at"),
        heartbeat_at=data.get("heartbeat_at"),
        request_id=data.get("request_id"),
        usage=data.get("usage") or [],
    )


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One verifying TLS context per process: building one costs ~36 ms, and every
    dispatch builds a client (an https:// GPU service URL still verifies certificates)."""
    return ssl.create_default_context(cafile=certifi.where())


class GpuClient:
    def __init__(
        self,
        *,
        base_url: str,
        token: str | None,
        timeout_s: float = 5.0,
        transport: httpx.BaseTransport | None = None,
    ):
        self._token = token
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 2.0)),
            transport=transport,
            verify=tls_context(),
        )

    def __repr__(self) -> str:
        return f"GpuClient(base_url={str(self._http.base_url)!r}, token='***')"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> GpuClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- jobs -----------------------------------------------------------------------
    def job_submit(
        self,
        *,
        job_id: str,
        kind: str,
        spec: dict[str, Any],
        gpus: int | None = None,
        priority: int = 0,
        request_id: str | None = None,
        fair_share_rank: float = 0.0,
    ) -> JobAccepted:
        """Submit a job under the web's own id, which the GPU service takes as its id."""
        body: dict[str, Any] = {
            "job_id": job_id,
            "kind": kind,
            "spec": spec,
            "priority": priority,
            "fair_share_rank": fair_share_rank,
        }
        if gpus is not None:
            body["gpus"] = gpus
        # The job's own request id, so a delivery retried later still carries it.
        response = self._request("POST", "/v1/jobs", json=body, request_id=request_id)
        data = response.json()
        return JobAccepted(id=data["id"], state=data["state"], created=response.status_code == 202)

    def job_get(self, *, job_id: str) -> JobStatus:
        return job_status_read(self._request("GET", f"/v1/jobs/{job_id}").json())

    def jobs_status(self, *, ids: list[str]) -> JobsStatus:
        data = self._request("POST", "/v1/jobs/status", json={"ids": ids}).json()
        return JobsStatus(
            jobs=[job_status_read(record) for record in data["jobs"]],
            missing=[str(job_id) for job_id in data["missing"]],
        )

    def job_cancel(self, *, job_id: str) -> JobStatus:
        return job_status_read(self._request("POST", f"/v1/jobs/{job_id}/cancel").json())

    def job_logs(self, *, job_id: str, tail: int = 200) -> list[str]:
        data = self._request("GET", f"/v1/jobs/{job_id}/logs", params={"tail": tail}).json()
        return data["lines"]

    # --- GPUs, weights, health --------------------------------------------------------
    def gpus(self) -> dict[str, Any]:
        return self._request("GET", "/v1/gpus").json()

    def admission_check(self, *, gpus: int) -> dict[str, Any]:
        """Whether a job asking for `gpus` GPUs could ever be admitted; GpuServiceRefused
        409 RESOURCE_UNAVAILABLE, with admission's reason, when it could not."""
        return self._request(
            "POST", "/v1/admission/check", json={"gpus": gpus}, timeout=ADMISSION_CHECK_TIMEOUT_S
        ).json()

    def weights_import(self, *, path: Path) -> dict[str, Any]:
        # The GPU service checks the file in a fresh process that imports torch and
        # hashes the whole file: seconds, not the milliseconds of the other calls.
        return self._request(
            "POST", "/v1/weights", json={"path": str(path)}, timeout=WEIGHTS_IMPORT_TIMEOUT_S
        ).json()

    def weights_get(self, *, fingerprint: str) -> dict[str, Any]:
        return self._request("GET", f"/v1/weights/{fingerprint}").json()

    def media_probe(self, *, path: Path, max_seconds: float) -> dict[str, Any]:
        """A video or zip in shared storage checked as an infer job's submit checks it."""
        return self._request(
            "POST",
            "/v1/media/probe",
            json={"path": str(path), "max_seconds": max_seconds},
            timeout=MEDIA_PROBE_TIMEOUT_S,
        ).json()

    def health(self) -> dict[str, Any]:
        return self._request("GET", "/healthz").json()

    # --- plumbing ----------------------------------------------------------------------
    def _request(
        self, method: str, url: str, *, request_id: str | None = None, **kwargs: Any
    ) -> httpx.Response:
        if not self._token:
            raise GpuServiceUnavailable(
                "No GPU service token: set CARRIL_GPU_SERVICE_TOKEN or start the GPU service.",
                details={"reason": "no_token"},
            )
        headers = {"Authorization": f"Bearer {self._token}"}
        request_id = request_id or request_id_get()
        if request_id:
            headers["X-Request-ID"] = request_id
        try:
            response = self._http.request(method, url, headers=headers, **kwargs)
        except httpx.HTTPError as exc:
            raise GpuServiceUnavailable(details={"reason": type(exc).__name__}) from exc
        if response.status_code >= 500:
            raise GpuServiceUnavailable(
                details={"reason": "status", "status": response.status_code, **_error(response)}
            )
        if response.status_code >= 400:
            err = _error(response)
            raise GpuServiceRefused(
                status=response.status_code,
                code=err.get("code", "UNKNOWN"),
                message=err.get("message", response.text[:200]),
                details=err.get("details", {}),
            )
        return response


def _error(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


def service_token() -> str | None:
    """CARRIL_GPU_SERVICE_TOKEN, else the token the GPU service generated in dev."""
    token = os.environ.get("CARRIL_GPU_SERVICE_TOKEN", "").strip()
    if token:
        return token
    path = Path(settings.CARRIL_STORAGE) / "secrets" / "gpu_service_token"
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def client_build(*, timeout_s: float | None = None) -> GpuClient:
    """A client from settings. Tests replace this function to inject a transport."""
    return GpuClient(
        base_url=settings.CARRIL_GPU_SERVICE_URL,
        token=service_token(),
        timeout_s=timeout_s or settings.CARRIL_GPU_SERVICE_TIMEOUT_S,
    )
