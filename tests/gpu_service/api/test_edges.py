"""Integration: authentication, validation and the error envelope, over real HTTP."""

from __future__ import annotations

import httpx
import pytest

from gpu_service.errors import CATALOGUE
from tests.support.gpu_service import GpuServiceProcess


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    service = GpuServiceProcess(storage=tmp_path_factory.mktemp("storage"), gpus="2x24GiB")
    yield service.start()
    service.stop()


def error_of(response: httpx.Response) -> dict:
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] in CATALOGUE
    return body["error"]


@pytest.mark.parametrize("header", [None, "Bearer wrong", "Basic dGVzdA==", "Bearer"])
def test_it_refuses_requests_without_the_right_token(service, header):
    headers = {"Authorization": header} if header else {}
    response = httpx.get(f"{service.url}/v1/gpus", headers=headers)
    assert response.status_code == 401
    assert error_of(response)["code"] == "UNAUTHORIZED"


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics"])
def test_health_and_metrics_need_no_token(service, path):
    assert httpx.get(f"{service.url}{path}").status_code == 200


def test_healthz_says_which_runtime_is_active(service):
    assert httpx.get(f"{service.url}/healthz").json() == {
        "status": "ok",
        "runtime": "simulated",
        "simulated": True,
        "gpus": 2,
    }


def test_it_refuses_a_job_that_needs_more_gpus_than_exist(service):
    response = service.client.post("/v1/jobs", json={"kind": "diagnostic", "gpus": 3})
    assert response.status_code == 409
    assert error_of(response)["code"] == "RESOURCE_UNAVAILABLE"


def test_it_refuses_a_job_that_needs_more_memory_than_a_gpu_has(service):
    response = service.client.post(
        "/v1/jobs", json={"kind": "diagnostic", "memory_estimate_mib": 30 * 1024}
    )
    assert response.status_code == 409
    assert error_of(response)["code"] == "RESOURCE_UNAVAILABLE"


def test_it_refuses_an_unknown_gpu_id(service):
    response = service.client.post("/v1/jobs", json={"kind": "diagnostic", "gpu_ids": [5]})
    assert response.status_code == 409


def test_a_malformed_body_is_a_validation_error_naming_the_field(service):
    response = service.client.post("/v1/jobs", json={"kind": "diagnostic", "priority": 1000})
    assert response.status_code == 422
    error = error_of(response)
    assert error["code"] == "VALIDATION_ERROR"
    assert "priority" in error["message"]
    assert error["details"]["errors"][0]["field"] == "priority"


def test_a_bad_spec_is_a_validation_error_naming_the_spec_field(service):
    response = service.client.post("/v1/jobs", json={"kind": "diagnostic", "spec": {"seconds": -1}})
    assert response.status_code == 422
    error = error_of(response)
    assert "seconds" in error["message"]
    assert error["details"]["errors"][0]["field"] == "seconds"


def test_an_unknown_job_is_not_found(service):
    for response in (
        service.client.get("/v1/jobs/does-not-exist"),
        service.client.post("/v1/jobs/does-not-exist/cancel"),
        service.client.get("/v1/jobs/does-not-exist/logs"),
        service.client.get("/v1/no-such-route"),
    ):
        assert response.status_code == 404
        assert error_of(response)["code"] == "NOT_FOUND"


def test_cancelling_a_finished_job_is_a_conflict(service):
    job = service.submit(kind="diagnostic", spec={"seconds": 0})
    service.wait_for(job["id"])
    response = service.client.post(f"/v1/jobs/{job['id']}/cancel")
    assert response.status_code == 409
    assert error_of(response)["code"] == "CONFLICT"


def test_weights_paths_outside_storage_are_refused(service):
    response = service.client.post("/v1/weights", json={"path": "/etc/passwd"})
    assert response.status_code == 422
    assert error_of(response)["code"] == "VALIDATION_ERROR"


def test_the_openapi_document_describes_the_job_routes(service):
    spec = httpx.get(f"{service.url}/openapi.json").json()
    assert {"/v1/jobs", "/v1/jobs/{job_id}", "/v1/jobs/status", "/v1/gpus"} <= set(spec["paths"])
    assert httpx.get(f"{service.url}/docs").status_code == 200


def test_unknown_weights_are_not_found(service):
    response = service.client.get(f"/v1/weights/{'0' * 64}")
    assert response.status_code == 404
    assert error_of(response)["code"] == "NOT_FOUND"


def test_a_file_that_is_not_a_checkpoint_is_rejected_in_a_helper_process(service):
    bad = service.storage / "uploads" / "weights" / "not-a-model.pt"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_bytes(b"this is not a pickle")
    response = service.client.post("/v1/weights", json={"path": str(bad)})
    assert response.status_code == 422
    assert error_of(response)["code"] == "WEIGHTS_REJECTED"
    assert httpx.get(f"{service.url}/healthz").status_code == 200
