"""The job status document: its URLs and times read as reverse() and DRF give them, one
query, a finished document kept 5 s and an unfinished one 0.1 s (ADR 0050)."""

from __future__ import annotations

import uuid

import pytest
from api.documents import artifact_url
from django.urls import reverse
from jobs.models import Job
from jobs.selectors import job_artifact_relpath

from tests.web.factories import DELIVERED


@pytest.fixture
def job(owner) -> Job:
    return Job.objects.create(owner=owner, kind="infer", state="succeeded", dispatched_at=DELIVERED)


@pytest.mark.parametrize(
    "name", ["annotated/0000_street.jpg", "annotated/a b#c?.jpg", "annotated/ñandú (2).jpg"]
)
def test_artifact_urls_read_as_reverse_would_build_them(job, storage, name):
    absolute = str(storage / "jobs" / str(job.id) / name)
    expected = reverse("api:job-artifact", kwargs={"job_id": job.id, "relpath": name})
    assert artifact_url(job=job, absolute=absolute) == expected


def test_a_path_outside_the_job_folder_gets_no_url(job, storage):
    for absolute in (
        str(storage / "jobs" / str(job.id) / ".." / "other" / "x.jpg"),
        str(storage / "jobs" / f"{job.id}0" / "x.jpg"),
        str(storage / "jobs" / str(job.id)),
        "relative/x.jpg",
        "",
        None,
    ):
        assert job_artifact_relpath(job=job, absolute=absolute) is None, absolute


def test_a_url_is_built_without_the_file_existing(job, storage):
    absolute = str(storage / "jobs" / str(job.id) / "annotated" / "later.jpg")
    assert job_artifact_relpath(job=job, absolute=absolute) == "annotated/later.jpg"
    assert not (storage / "jobs" / str(job.id)).exists()


def test_the_status_poll_makes_one_query_for_a_finished_inference(
    owner, owner_api, storage, django_assert_num_queries
):
    from tests.web.api.test_api_jobs import inference_job

    job = inference_job(owner, storage)
    with django_assert_num_queries(1):
        body = owner_api.get(f"/api/v1/jobs/{job.id}/").json()
    assert body["result"]["images"][0]["annotated_url"].endswith("annotated/0000_street.jpg")


def test_the_lean_status_document_reads_exactly_as_the_serializer(owner, storage):
    from datetime import timedelta

    from api.documents import job_public
    from api.serializers import JobOut
    from django.utils import timezone
    from rest_framework.renderers import JSONRenderer

    from tests.web.api.test_api_jobs import inference_job
    from tests.web.factories import TRAIN_RESULT, dataset_for, model_version

    version = model_version(fingerprint="b" * 64)
    later = timezone.now() + timedelta(seconds=30)
    jobs = [
        inference_job(owner, storage),
        Job.objects.create(
            owner=owner,
            kind="train",
            state="succeeded",
            dispatched_at=DELIVERED,
            dataset=dataset_for(owner),
            model_version=version,
            spec={"dataset": "x", "epochs": 2, "seeds": [1, 2]},
            result=TRAIN_RESULT,
            gpu_ids=[0, 1],
            metrics={"epochs": [{"epoch": 1, "mAP50": 0.5}], "best": None},
            progress={"epoch": 2, "epochs": 2, "fraction": 1.0},
            started_at=timezone.now(),
            finished_at=later,
        ),
        Job.objects.create(
            owner=owner,
            kind="infer",
            state="submitted",
            spec={"images": ["a", "b"], "conf": 0.5},
            dispatch_attempts=3,
            next_attempt_at=later,
            last_dispatch_error="GPU service unavailable",
        ),
        Job.objects.create(
            owner=owner, kind="train", state="failed", error_code="OOM", error_message="boom"
        ),
    ]
    render = JSONRenderer().render
    for job in jobs:
        job = Job.objects.select_related("owner").get(id=job.id)
        assert render(job_public(job=job)) == render(JobOut(job).data), job.kind


def test_a_finished_jobs_document_is_read_again_from_memory(
    owner, owner_api, storage, django_assert_num_queries
):
    from tests.web.api.test_api_jobs import inference_job

    job = inference_job(owner, storage)
    first = owner_api.get(f"/api/v1/jobs/{job.id}/")
    with django_assert_num_queries(0):
        again = owner_api.get(f"/api/v1/jobs/{job.id}/")
    assert again.status_code == 200
    assert again["Content-Type"] == "application/json"
    assert again.content == first.content


def test_a_remembered_document_is_still_hidden_from_other_users(
    owner, owner_api, other_api, staff, storage
):
    from tests.web.api.test_api_jobs import inference_job
    from tests.web.conftest import api_as

    job = inference_job(owner, storage)
    assert owner_api.get(f"/api/v1/jobs/{job.id}/").status_code == 200
    assert other_api.get(f"/api/v1/jobs/{job.id}/").status_code == 404
    assert api_as(staff).get(f"/api/v1/jobs/{job.id}/").status_code == 200


@pytest.fixture
def clock(monkeypatch):
    """The kept documents' clock, moved by hand."""
    from types import SimpleNamespace

    from api import job_documents

    now = [1000.0]
    monkeypatch.setattr(job_documents, "time", SimpleNamespace(monotonic=lambda: now[0]))
    return now


def test_an_unfinished_jobs_document_is_kept_no_longer_than_its_bound(
    owner, owner_api, clock, django_assert_num_queries
):
    from api.job_documents import UNFINISHED_DOCUMENT_SECONDS

    job = Job.objects.create(owner=owner, kind="train", state="running", dispatched_at=DELIVERED)
    url = f"/api/v1/jobs/{job.id}/"
    started = clock[0]
    first = owner_api.get(url)
    assert first.json()["progress"]["fraction"] == 0.0
    Job.objects.filter(id=job.id).update(progress={"epoch": 1, "fraction": 0.5})
    clock[0] += UNFINISHED_DOCUMENT_SECONDS / 2
    with django_assert_num_queries(0):
        kept = owner_api.get(url)
    assert kept.content == first.content
    assert kept["Content-Type"] == "application/json"
    clock[0] = started + UNFINISHED_DOCUMENT_SECONDS
    assert owner_api.get(url).json()["progress"]["fraction"] == 0.5


def test_an_unfinished_jobs_bound_is_no_longer_than_one_reconciler_pass():
    from api.job_documents import FINISHED_DOCUMENT_SECONDS, UNFINISHED_DOCUMENT_SECONDS
    from jobs.reconciler import ACTIVE_INTERVAL_S

    assert 0 < UNFINISHED_DOCUMENT_SECONDS <= ACTIVE_INTERVAL_S
    assert UNFINISHED_DOCUMENT_SECONDS < FINISHED_DOCUMENT_SECONDS


def test_a_kept_unfinished_document_is_never_served_to_another_user(
    owner, owner_api, other, staff, clock
):
    from tests.web.conftest import api_as

    job = Job.objects.create(owner=owner, kind="train", state="running", dispatched_at=DELIVERED)
    url = f"/api/v1/jobs/{job.id}/"
    assert owner_api.get(url).status_code == 200  # kept now
    refused = api_as(other).get(url)
    assert refused.status_code == 404
    assert str(job.id) not in refused.content.decode()
    assert api_as(None).get(url).status_code == 401
    assert api_as(staff).get(url).json()["id"] == str(job.id)


def test_a_scoped_token_without_read_is_refused_a_kept_document(owner, owner_api, clock):
    from accounts.services import api_token_create
    from rest_framework.test import APIClient

    job = Job.objects.create(owner=owner, kind="train", state="running", dispatched_at=DELIVERED)
    url = f"/api/v1/jobs/{job.id}/"
    assert owner_api.get(url).status_code == 200  # kept now
    client = APIClient()
    secret = api_token_create(user=owner, scopes=["infer"]).secret
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    assert client.get(url).status_code == 403


def test_a_cancel_through_the_api_is_seen_by_the_next_poll_at_once(
    owner, owner_api, clock, fake_gpu
):
    job = Job.objects.create(owner=owner, kind="train", state="running", dispatched_at=DELIVERED)
    url = f"/api/v1/jobs/{job.id}/"
    assert owner_api.get(url).json()["state"] == "running"  # kept now
    assert owner_api.post(f"{url}cancel/").status_code == 202
    assert owner_api.get(url).json()["state"] in {"cancelling", "cancelled"}


def test_a_label_change_through_the_api_is_seen_by_the_next_poll_at_once(owner, owner_api, clock):
    job = Job.objects.create(owner=owner, kind="train", state="running", dispatched_at=DELIVERED)
    url = f"/api/v1/jobs/{job.id}/"
    assert owner_api.get(url).json()["name"] == ""  # kept now
    assert owner_api.patch(url, {"name": "night run"}, format="json").status_code == 200
    assert owner_api.get(url).json()["name"] == "night run"


def test_an_indented_document_of_an_unfinished_job_is_rendered_afresh(owner, owner_api, clock):
    job = Job.objects.create(owner=owner, kind="train", state="running", dispatched_at=DELIVERED)
    url = f"/api/v1/jobs/{job.id}/"
    compact = owner_api.get(url).content  # kept now
    indented = owner_api.get(url, HTTP_ACCEPT="application/json; indent=2").content
    assert indented.startswith(b"{\n  ")
    assert owner_api.get(url).content == compact


@pytest.mark.parametrize("script_prefix", ["/", "/carril/"])
def test_job_routes_read_as_reverse_builds_them_under_any_script_prefix(job, script_prefix):
    from api.documents import job_route, job_url
    from django.urls import get_script_prefix, set_script_prefix

    saved = get_script_prefix()
    set_script_prefix(script_prefix)
    try:
        for other_id in (job.id, str(job.id), uuid.uuid4()):
            assert job_route("api:job-detail", job_id=other_id) == reverse(
                "api:job-detail", kwargs={"job_id": other_id}
            )
            assert job_route("api:job-evaluation", job_id=other_id) == reverse(
                "api:job-evaluation", kwargs={"job_id": other_id}
            )
            assert job_route("api:job-artifact", job_id=other_id, relpath="a/b.jpg") == reverse(
                "api:job-artifact", kwargs={"job_id": other_id, "relpath": "a/b.jpg"}
            )
        assert job_url(job=job).startswith(script_prefix + "api/v1/jobs/")
    finally:
        set_script_prefix(saved)


@pytest.mark.parametrize("time_zone", ["UTC", "Asia/Kolkata", "America/Sao_Paulo"])
def test_the_lean_documents_times_read_as_the_serializers_in_any_time_zone(
    owner, settings, time_zone
):
    from datetime import UTC, datetime

    from api.documents import job_public
    from api.serializers import JobOut

    settings.TIME_ZONE = time_zone
    job = Job.objects.create(
        owner=owner,
        kind="train",
        state="running",
        dispatched_at=DELIVERED,
        started_at=datetime(2026, 3, 29, 1, 30, 0, 120, tzinfo=UTC),
    )
    job = Job.objects.select_related("owner").get(id=job.id)
    lean, drf = job_public(job=job), JobOut(job).data
    for key in ("created_at", "started_at", "finished_at", "updated_at"):
        assert lean[key] == drf[key], key
    assert lean["finished_at"] is None
    assert lean["started_at"].endswith("Z") == (time_zone == "UTC")


def test_a_running_jobs_document_is_rendered_as_drfs_response_would(owner, owner_api):
    from api.documents import job_public
    from rest_framework.renderers import JSONRenderer

    job = Job.objects.create(owner=owner, kind="train", state="running", dispatched_at=DELIVERED)
    for accept, indent in (("application/json", None), ("application/json; indent=2", 2)):
        response = owner_api.get(f"/api/v1/jobs/{job.id}/", HTTP_ACCEPT=accept)
        assert response.status_code == 200
        assert response["Content-Type"] == "application/json"
        assert "GET" in response["Allow"]
        expected = JSONRenderer().render(job_public(job=job), renderer_context={"indent": indent})
        assert response.content == expected
    assert owner_api.get(f"/api/v1/jobs/{job.id}/", HTTP_ACCEPT="text/csv").status_code == 406
