"""Inference at the model's own size (issue 13, ADR 0045): a job without `imgsz` runs at
the size its version was trained at; another size is allowed, and the job says so."""

from __future__ import annotations

from jobs.models import Job

from tests.web.api.test_api_jobs import png_file
from tests.web.factories import model_version


def infer(api, version, run_on_commit, **fields):
    with run_on_commit():
        response = api.post(
            "/api/v1/jobs/infer/",
            {"images": [png_file()], "model_version": str(version.id), **fields},
            format="multipart",
        )
    assert response.status_code == 202, response.content
    return Job.objects.get(id=response.json()["id"])


def trained_at(size: int, *, stage: str = "serving"):
    version = model_version(stage=stage)
    version.imgsz = size
    version.save()
    return version


def test_an_inference_without_a_size_runs_at_the_size_its_model_was_trained_at(
    owner_api, fake_gpu, run_on_commit
):
    job = infer(owner_api, trained_at(96), run_on_commit)
    assert job.spec["imgsz"] == 96
    assert owner_api.get(f"/api/v1/jobs/{job.id}/").json()["notes"] == []


def test_a_version_with_no_recorded_size_infers_at_640(owner_api, fake_gpu, run_on_commit):
    version = model_version(stage="serving")
    assert version.imgsz is None
    assert infer(owner_api, version, run_on_commit).spec["imgsz"] == 640


def test_another_size_than_the_training_one_is_allowed_and_noted_on_the_job(
    owner_api, fake_gpu, run_on_commit
):
    job = infer(owner_api, trained_at(96), run_on_commit, imgsz=640)
    assert job.spec["imgsz"] == 640
    document = owner_api.get(f"/api/v1/jobs/{job.id}/").json()
    assert document["notes"] == ["Runs at 640 px; the model was trained at 96 px."]


def test_the_note_names_the_size_the_worker_reported_once_the_job_ran(
    owner_api, fake_gpu, run_on_commit
):
    job = infer(owner_api, trained_at(96), run_on_commit, imgsz=640)
    # A static export runs at its own size: the worker's result says what it used.
    Job.objects.filter(id=job.id).update(
        state="succeeded", result={"imgsz": 320, "images": [], "results_path": None}
    )
    document = owner_api.get(f"/api/v1/jobs/{job.id}/").json()
    assert document["notes"] == ["Ran at 320 px; the model was trained at 96 px."]


def test_a_size_that_is_not_a_multiple_of_32_is_still_refused(owner_api, fake_gpu):
    version = trained_at(96)
    response = owner_api.post(
        "/api/v1/jobs/infer/",
        {"images": [png_file()], "model_version": str(version.id), "imgsz": 100},
        format="multipart",
    )
    assert response.status_code == 400
    assert response.json()["error"]["details"]["fields"]["imgsz"] == ["Must be a multiple of 32."]


def test_the_version_document_gives_the_size_it_was_trained_at(owner_api):
    version = trained_at(96)
    assert owner_api.get(f"/api/v1/models/{version.id}/").json()["imgsz"] == 96


def test_the_status_poll_of_an_inference_with_its_note_is_still_one_query(
    owner_api, fake_gpu, run_on_commit, django_assert_num_queries
):
    job = infer(owner_api, trained_at(96), run_on_commit, imgsz=640)
    with django_assert_num_queries(1):
        notes = owner_api.get(f"/api/v1/jobs/{job.id}/").json()["notes"]
    assert notes == ["Runs at 640 px; the model was trained at 96 px."]
