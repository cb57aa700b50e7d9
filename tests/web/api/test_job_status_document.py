"""The job status document: URLs built by string logic, same as reverse() gives."""

from __future__ import annotations

import pytest
from api.serializers import artifact_url
from django.urls import reverse
from jobs.models import Job
from jobs.selectors import job_artifact_relpath


@pytest.fixture
def job(owner) -> Job:
    return Job.objects.create(owner=owner, kind="infer", state="succeeded", gpu_job_id="gpu-9")


@pytest.mark.parametrize(
    "name", ["annotated/0000_street.jpg", "annotated/a b#c?.jpg", "annotated/ñandú (2).jpg"]
)
def test_artifact_urls_read_as_reverse_would_build_them(job, storage, name):
    absolute = str(storage / "jobs" / "gpu-9" / name)
    expected = reverse("api:job-artifact", kwargs={"job_id": job.id, "relpath": name})
    assert artifact_url(job=job, absolute=absolute) == expected


def test_a_path_outside_the_job_folder_gets_no_url(job, storage):
    for absolute in (
        str(storage / "jobs" / "gpu-9" / ".." / "gpu-10" / "x.jpg"),
        str(storage / "jobs" / "gpu-90" / "x.jpg"),
        str(storage / "jobs" / "gpu-9"),
        "relative/x.jpg",
        "",
        None,
    ):
        assert job_artifact_relpath(job=job, absolute=absolute) is None, absolute


def test_a_url_is_built_without_the_file_existing(job, storage):
    absolute = str(storage / "jobs" / "gpu-9" / "annotated" / "later.jpg")
    assert job_artifact_relpath(job=job, absolute=absolute) == "annotated/later.jpg"
    assert not (storage / "jobs" / "gpu-9").exists()


def test_the_status_poll_makes_one_query_for_a_finished_inference(
    owner, owner_api, storage, django_assert_num_queries
):
    from tests.web.api.test_api_jobs import inference_job

    job = inference_job(owner, storage)
    with django_assert_num_queries(1):
        body = owner_api.get(f"/api/v1/jobs/{job.id}/").json()
    assert body["result"]["images"][0]["annotated_url"].endswith("annotated/0000_street.jpg")
