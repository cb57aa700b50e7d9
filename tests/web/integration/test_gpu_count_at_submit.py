"""A training asking for more GPUs than any host of the real GPU service has is refused at
submit with the GPU service's own 409 RESOURCE_UNAVAILABLE and reason, and no job is
created; before, it was accepted with 202 and failed at delivery. The count the GPU
service admits still goes through, and while it cannot be asked the job is created as
before (jobs/gpu_fit.py)."""

from __future__ import annotations

from jobs.models import Job

from tests.web.integration.conftest import TOKEN


def _train(api, dataset, gpus: int):
    return api.post(
        "/api/v1/jobs/train/",
        {"dataset": str(dataset.id), "model": "yolov8n", "epochs": 1, "gpus": gpus},
        format="json",
    )


def test_more_gpus_than_any_host_has_is_refused_at_submit_with_the_gpu_services_reason(
    owner_api, gpu_url, gpu_service, storage, dataset, run_on_commit
):
    service = gpu_service(
        storage=storage, port=int(gpu_url.rsplit(":", 1)[1]), token=TOKEN, gpus="2x24GiB"
    )
    refused_there = service.client.post(
        "/v1/jobs", json={"kind": "diagnostic", "spec": {"seconds": 0.1}, "gpus": 3}
    ).json()["error"]

    response = _train(owner_api, dataset, gpus=3)

    assert response.status_code == 409, response.content
    error = response.json()["error"]
    assert error["code"] == "RESOURCE_UNAVAILABLE" == refused_there["code"]
    assert error["message"] == refused_there["message"] == "asked for 3 GPUs; this service has 2"
    assert error["details"]["fields"] == {"gpus": [error["message"]]}
    assert error["details"]["requested"] == 3
    assert error["details"]["available"] == 2
    assert not Job.objects.exists()

    with run_on_commit():
        accepted = _train(owner_api, dataset, gpus=2)
    assert accepted.status_code == 202, accepted.content
    assert Job.objects.get().state in {"queued", "running"}


def test_a_gpu_count_checked_while_the_gpu_service_is_down_is_left_to_delivery(
    owner_api, gpu_url, dataset
):
    response = _train(owner_api, dataset, gpus=3)  # nothing listens at gpu_url

    assert response.status_code == 202, response.content
    assert Job.objects.get().state == "submitted"


def test_the_training_form_shows_the_gpu_services_reason_beside_the_gpu_field(
    client, owner, gpu_url, gpu_service, storage, dataset
):
    # Two GPUs listed, one of them closed: the form offers two, admission has one lane.
    gpu_service(
        storage=storage,
        port=int(gpu_url.rsplit(":", 1)[1]),
        token=TOKEN,
        gpus="2x24GiB",
        env={"CARRIL_LANE_CAPACITY": "0:0,1:1"},
    )
    client.force_login(owner)

    page = client.post(
        "/train/",
        {"dataset": str(dataset.id), "model": "yolov8n", "epochs": 1, "imgsz": 64,
         "batch": 2, "seeds": "42", "gpus": 2},
    )  # fmt: skip

    assert page.status_code == 400
    assert "asked for 2 GPUs; this service has 1" in page.content.decode()
    assert not Job.objects.exists()
