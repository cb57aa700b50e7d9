"""The GPU service refuses every protected operation without the right bearer token.

The operations come from the service's own OpenAPI document, so a route added later is
checked without editing this file; only health, readiness, metrics and the API docs are
public, and that list is pinned here.
"""

from __future__ import annotations

import re

import httpx
import pytest

from gpu_service.errors import CATALOGUE
from tests.support.gpu_service import GpuServiceProcess

PUBLIC = {"/healthz", "/readyz", "/metrics"}
BAD_HEADERS = {
    "none": None,
    "wrong": "Bearer not-the-token",
    "prefix_of_the_token": "Bearer test-token",
    "token_with_a_suffix": "Bearer test-token-0123456789x",
    "basic_scheme": "Basic dGVzdC10b2tlbi0wMTIzNDU2Nzg5",
    "no_scheme": "test-token-0123456789",
    "bearer_alone": "Bearer",
}


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    service = GpuServiceProcess(storage=tmp_path_factory.mktemp("storage"), gpus="1x24GiB")
    yield service.start()
    service.stop()


@pytest.fixture(scope="module")
def operations(service) -> list[tuple[str, str]]:
    document = httpx.get(f"{service.url}/openapi.json").json()
    return [
        (method.upper(), path)
        for path, item in document["paths"].items()
        for method in item
        if method in {"get", "post", "put", "patch", "delete"}
    ]


def _concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "a" * 64, path)


def test_only_health_readiness_and_metrics_are_public(operations) -> None:
    assert {path for _, path in operations if not path.startswith("/v1/")} == PUBLIC


@pytest.mark.parametrize("header", sorted(BAD_HEADERS))
def test_every_protected_operation_answers_401_with_the_envelope(
    service, operations, header
) -> None:
    value = BAD_HEADERS[header]
    headers = {"Authorization": value} if value is not None else {}
    protected = [(m, p) for m, p in operations if p.startswith("/v1/")]
    assert len(protected) >= 8  # jobs, job, cancel, logs, status, gpus, weights x2
    for method, path in protected:
        body = {"kind": "diagnostic", "spec": {}} if method == "POST" else None
        response = httpx.request(method, service.url + _concrete(path), json=body, headers=headers)
        assert response.status_code == 401, (method, path, response.text)
        assert response.json() == {
            "error": {
                "code": "UNAUTHORIZED",
                "message": CATALOGUE["UNAUTHORIZED"][1],
                "details": {},
            }
        }


def test_a_refused_submit_leaves_no_job_behind(service) -> None:
    refused = httpx.post(
        f"{service.url}/v1/jobs",
        json={"kind": "diagnostic", "spec": {"seconds": 0}},
        headers={"Authorization": "Bearer wrong"},
    )
    assert refused.status_code == 401
    assert service.client.get("/v1/jobs").json()["jobs"] == []


def test_the_token_is_never_echoed_in_an_error_or_the_log(service) -> None:
    response = service.client.get("/v1/jobs/nope")
    assert response.status_code == 404
    assert service.token not in response.text
    assert service.token not in service.log_path.read_text(errors="replace")
