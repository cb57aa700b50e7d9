"""The GPU service refuses bad job requests with an error from its catalogue, creates no
job for them, and stays up. (Spec checks per kind are in tests/gpu_service/api/.)"""

from __future__ import annotations

import json

import httpx
import pytest

from gpu_service.errors import CATALOGUE
from tests.support.gpu_service import GpuServiceProcess

OK = {"kind": "diagnostic", "spec": {"seconds": 0.1, "step_s": 0.1}}


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    service = GpuServiceProcess(storage=tmp_path_factory.mktemp("storage"), gpus="2x24GiB")
    yield service.start()
    service.stop()


def _post(service: GpuServiceProcess, content: bytes) -> httpx.Response:
    return service.client.post(
        "/v1/jobs", content=content, headers={"Content-Type": "application/json"}
    )


def _no_jobs(service: GpuServiceProcess) -> bool:
    return service.client.get("/v1/jobs").json()["jobs"] == []


BAD_SUBMITS = [
    ({"kind": "bitcoin"}, "kind"),
    ({"kind": None}, "kind"),
    ({"spec": ["seconds", 1]}, "spec"),
    ({"spec": "seconds=1"}, "spec"),
    ({"gpus": "two"}, "gpus"),
    ({"gpus": 0}, "gpus"),
    ({"gpus": 65}, "gpus"),
    ({"gpu_ids": []}, "gpu_ids"),
    ({"gpu_ids": [0, 0]}, "gpu_ids"),
    ({"priority": 1000}, "priority"),
    ({"priority": 1.5}, "priority"),
    ({"job_id": ""}, "job_id"),
    ({"job_id": "k" * 101}, "job_id"),
    ({"job_id": "../escape"}, "job_id"),
    ({"job_id": "-starts-with-a-dash"}, "job_id"),
    ({"job_id": "a/b"}, "job_id"),
    ({"memory_estimate_mib": -1}, "memory_estimate_mib"),
    ({"simulate": {"crash_mode": "explode"}}, "crash_mode"),
    ({"simulate": {"start_delay_s": 601}}, "start_delay_s"),
    ({"simulate": {"run": "rm -rf /"}}, "run"),
    ({"surprise": True}, "surprise"),
    ({"spec": {"seconds": -1}}, "seconds"),
    ({"spec": {"seconds": "NaN"}}, "seconds"),
    ({"spec": {"step_s": 0}}, "step_s"),
    ({"kind": "train", "spec": {"dataset": "/etc", "epochs": 1}}, "dataset"),
    ({"kind": "train", "spec": {"dataset": "../../../etc", "epochs": 1}}, "dataset"),
    ({"kind": "train", "spec": {"dataset": "datasets/x", "epochs": "many"}}, "epochs"),
    # Odd bytes in a path: a NUL reaches os.stat as ValueError, not a path outside storage.
    ({"kind": "train", "spec": {"dataset": "datasets/x\u0000/y", "epochs": 1}}, "dataset"),
    ({"kind": "infer", "spec": {"model": "a" * 64, "images": "one.jpg"}}, "images"),
]


@pytest.mark.parametrize(("change", "field"), BAD_SUBMITS, ids=[str(c) for c, _ in BAD_SUBMITS])
def test_a_bad_job_request_is_refused_naming_the_field_and_creates_nothing(
    service, change, field
) -> None:
    response = service.client.post("/v1/jobs", json={**OK, **change})
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert field in response.text
    assert _no_jobs(service)


@pytest.mark.parametrize("text", ["{", "", "null", "[]", '{"kind": "diagnostic", "spec": NaN}'])
def test_a_body_that_is_not_a_job_object_is_refused(service, text) -> None:
    response = _post(service, text.encode())
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "VALIDATION_ERROR"
    assert _no_jobs(service)


def test_a_twenty_megabyte_spec_is_refused_and_the_service_stays_up(service) -> None:
    body = {**OK, "spec": {**OK["spec"], "padding": "x" * (20 * 1024 * 1024)}}
    response = _post(service, json.dumps(body).encode())
    assert response.status_code == 422
    assert _no_jobs(service)
    assert service.client.get("/healthz").status_code == 200


@pytest.mark.parametrize(
    ("method", "path", "content"),
    [
        ("POST", "/v1/jobs", b"[" * 100_000 + b"]" * 100_000),
        ("PUT", "/v1/jobs", None),
        ("DELETE", "/v1/gpus", None),
    ],
    ids=["deeply_nested_body", "put_on_the_jobs_route", "delete_on_a_get_route"],
)
def test_every_refusal_uses_a_code_from_the_catalogue(service, method, path, content) -> None:
    response = service.client.request(
        method, path, content=content, headers={"Content-Type": "application/json"}
    )
    assert 400 <= response.status_code < 500
    assert response.json()["error"]["code"] in CATALOGUE
