"""Issue 13's evaluation, whole: the real GPU service writes a training's evaluation and an
evaluate job's, the API serves both documents complete, and the evaluation page draws a
document the workload wrote (not one a test wrote by hand), with its sample images served."""

from __future__ import annotations

import pytest
from django.test import Client
from jobs.models import JobState

from tests.web.integration.conftest import TOKEN
from tests.web.integration.test_web_with_gpu_service import job_in, reconcile_until

pytestmark = pytest.mark.slow
ENDED = {"succeeded", "failed", "lost"}
DOCUMENT_KEYS = {"metrics", "per_class", "confusion_matrix", "curves", "samples", "plots"}


def _complete(document: dict, *, source: str) -> None:
    assert set(document) >= DOCUMENT_KEYS, sorted(document)
    assert document["source"] == source
    assert set(document["metrics"]) == {"precision", "recall", "mAP50", "mAP50-95"}
    assert document["per_class"], "no class in the document"
    row = document["per_class"][0]
    assert {"class_id", "class_name", "images", "instances", "mAP50", "mAP50-95"} <= set(row)
    labels = document["confusion_matrix"]["labels"]
    assert labels[-1] == "background"
    assert len(document["confusion_matrix"]["counts"]) == len(labels)
    assert len(document["curves"]["confidence"]) == 101
    assert document["samples"]
    assert document["plots"]


def test_a_training_and_an_evaluate_job_write_documents_the_api_serves_and_the_page_draws(
    owner, owner_api, dataset, gpu_url, gpu_service, storage, run_on_commit
):
    gpu_service(storage=storage, port=int(gpu_url.rsplit(":", 1)[1]), token=TOKEN)
    body = {"dataset": str(dataset.id), "model": "yolov8n", "epochs": 1, "imgsz": 64}
    body |= {"batch": 2, "seeds": [1]}
    with run_on_commit():
        response = owner_api.post("/api/v1/jobs/train/", body, format="json")
    assert response.status_code == 202, response.content
    trained = reconcile_until(lambda: job_in(response.json()["id"], ENDED))
    assert trained.state == JobState.SUCCEEDED, (trained.error_code, trained.error_message)
    training_document = owner_api.get(f"/api/v1/jobs/{trained.id}/evaluation/")
    assert training_document.status_code == 200, training_document.content
    _complete(training_document.json(), source="training")

    version_id = owner_api.get(f"/api/v1/jobs/{trained.id}/").json()["registered_model_version"]
    with run_on_commit():
        response = owner_api.post(
            "/api/v1/jobs/evaluate/",
            {"model_version": version_id, "dataset": str(dataset.id)},
            format="json",
        )
    assert response.status_code == 202, response.content
    evaluated = reconcile_until(lambda: job_in(response.json()["id"], ENDED))
    assert evaluated.state == JobState.SUCCEEDED, (evaluated.error_code, evaluated.error_message)
    document = owner_api.get(f"/api/v1/jobs/{evaluated.id}/evaluation/").json()
    _complete(document, source="evaluate")
    assert document["imgsz"] == 64  # the version's own training size, not 640

    browser = Client()
    browser.force_login(owner)
    page = browser.get(f"/jobs/{evaluated.id}/evaluation/")
    assert page.status_code == 200
    html = page.content.decode()
    for row in document["per_class"]:
        assert row["class_name"] in html
    sample = document["samples"][0]["artifact"]
    assert sample in html
    image = browser.get(f"/jobs/{evaluated.id}/files/{sample}")
    assert image.status_code == 200
    assert image["Content-Type"] == "image/jpeg"
