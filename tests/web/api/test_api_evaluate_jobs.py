"""Evaluate jobs and evaluation documents through the API (issue 13, ADR 0042)."""

from __future__ import annotations

import json
from pathlib import Path

from jobs.models import Job

from tests.web.api.test_api_model_exports import store_weights
from tests.web.api.test_api_token_scopes import bearer, ci_token
from tests.web.factories import dataset_for, model_version


def _ready(owner, *, splits=("train", "val")):
    dataset = dataset_for(owner)
    dataset.splits = {split: {"images": 2} for split in splits}
    dataset.save(update_fields=["splits"])
    return dataset


def _version(storage: Path, *, imgsz: int | None = 96, stage: str = "candidate"):
    version = model_version(fingerprint=store_weights(storage), stage=stage)
    version.imgsz = imgsz
    version.save(update_fields=["imgsz"])
    return version


def test_an_evaluation_is_a_job_of_kind_evaluate_at_the_versions_training_size(
    owner, owner_api, fake_gpu, run_on_commit, storage
):
    dataset, version = _ready(owner), _version(storage, imgsz=96)

    with run_on_commit():
        response = owner_api.post(
            "/api/v1/jobs/evaluate/",
            {"model_version": str(version.id), "dataset": str(dataset.id)},
            format="json",
        )

    assert response.status_code == 202, response.json()
    assert response.json()["state"] == "submitted"
    job = Job.objects.get(id=response.json()["id"])
    assert (job.kind, job.model_version, job.dataset) == ("evaluate", version, dataset)
    sent = fake_gpu.jobs[str(job.id)]
    assert sent["kind"] == "evaluate"
    assert sent["spec"] == {
        "model": version.fingerprint,
        "dataset": str(dataset.path),
        "split": "val",
        "imgsz": 96,
        "conf": 0.001,
        "iou": 0.7,
    }


def test_an_evaluation_takes_the_split_size_and_thresholds_it_is_given(
    owner, owner_api, fake_gpu, run_on_commit, storage
):
    dataset, version = _ready(owner), _version(storage, imgsz=None)
    body = {"split": "train", "imgsz": 128, "conf": 0.25, "iou": 0.5}

    with run_on_commit():
        response = owner_api.post(
            "/api/v1/jobs/evaluate/",
            {"model_version": str(version.id), "dataset": str(dataset.id), **body},
            format="json",
        )

    assert response.status_code == 202, response.json()
    spec = fake_gpu.jobs[response.json()["id"]]["spec"]
    assert {key: spec[key] for key in body} == body


def _refused(api, body) -> dict:
    response = api.post("/api/v1/jobs/evaluate/", body, format="json")
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    return error["details"]["fields"]


def test_evaluation_requests_that_break_a_rule_are_refused_by_field_with_no_job(
    owner, other, owner_api, storage
):
    dataset, version = _ready(owner, splits=("train", "val")), _version(storage)
    ids = {"model_version": str(version.id), "dataset": str(dataset.id)}

    assert set(_refused(owner_api, {})) == {"model_version", "dataset"}
    assert "imgsz" in _refused(owner_api, {**ids, "imgsz": 100})
    assert "imgsz" in _refused(owner_api, {**ids, "imgsz": 4096})
    assert "conf" in _refused(owner_api, {**ids, "conf": 1.5})
    assert "iou" in _refused(owner_api, {**ids, "iou": -0.1})
    assert "split" in _refused(owner_api, {**ids, "split": "holdout"})
    assert _refused(owner_api, {**ids, "split": "test"}) == {
        "split": ["The dataset has no test split (it has: train, val)."]
    }
    others = dataset_for(other, name="theirs")
    assert _refused(owner_api, {**ids, "dataset": str(others.id)}) == {
        "dataset": ["No such dataset."]
    }
    retired = model_version(fingerprint="e" * 64, stage="retired")
    assert _refused(owner_api, {**ids, "model_version": str(retired.id)}) == {
        "model_version": ["That version is retired."]
    }
    assert not Job.objects.exists()


def test_a_jobs_evaluation_is_404_no_evaluation_until_the_document_is_written(
    owner, owner_api, fake_gpu, run_on_commit, storage
):
    dataset, version = _ready(owner), _version(storage)
    with run_on_commit():
        job_id = owner_api.post(
            "/api/v1/jobs/evaluate/",
            {"model_version": str(version.id), "dataset": str(dataset.id)},
            format="json",
        ).json()["id"]

    missing = owner_api.get(f"/api/v1/jobs/{job_id}/evaluation/")

    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "NO_EVALUATION"
    assert missing.json()["error"]["details"] == {
        "job": job_id,
        "kind": "evaluate",
        "state": "queued",
    }
    document = {"version": 1, "source": "evaluate", "metrics": {"mAP50": 0.5}, "per_class": []}
    folder = storage / "jobs" / job_id / "evaluation"
    folder.mkdir(parents=True)
    (folder / "evaluation.json").write_text(json.dumps(document))

    found = owner_api.get(f"/api/v1/jobs/{job_id}/evaluation/")

    assert found.status_code == 200
    assert found.json() == document


def test_an_inference_job_never_has_an_evaluation(owner, owner_api, storage):
    job = Job.objects.create(owner=owner, kind="infer", state="succeeded", spec={})
    folder = storage / "jobs" / str(job.id) / "evaluation"
    folder.mkdir(parents=True)
    (folder / "evaluation.json").write_text("{}")

    response = owner_api.get(f"/api/v1/jobs/{job.id}/evaluation/")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "NO_EVALUATION"


def test_another_users_evaluation_is_not_found(owner, other_api, storage):
    job = Job.objects.create(owner=owner, kind="train", state="succeeded", spec={})
    folder = storage / "jobs" / str(job.id) / "evaluation"
    folder.mkdir(parents=True)
    (folder / "evaluation.json").write_text('{"version": 1}')

    response = other_api.get(f"/api/v1/jobs/{job.id}/evaluation/")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "NOT_FOUND"


def test_an_evaluation_needs_the_train_scope(admin, admin_api, storage):
    dataset, version = _ready(admin), _version(storage)
    body = {"model_version": str(version.id), "dataset": str(dataset.id)}
    reader = bearer(ci_token(admin_api, scopes=["read", "infer"])["token"])

    response = reader.post("/api/v1/jobs/evaluate/", body, format="json")

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "SCOPE_REFUSED"
    assert response.json()["error"]["details"]["scope"] == "train"
    assert not Job.objects.exists()
