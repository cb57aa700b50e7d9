"""Per-user quotas and fair share on the web side (issue 16): defaults from settings (no
limit), administrators' overrides, 429 QUOTA_EXCEEDED with nothing created, and the
owner's priority and week's GPU-hours sent with each job."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path

from datasets.models import Dataset
from jobs.models import Job
from usage.models import AttemptUsage, UserQuota

from tests.web import dataset_zips as z
from tests.web.api.test_api_jobs import train_body
from tests.web.factories import dataset_for
from tests.web.jobs.test_reconciler import delivered_job


def submit(api, dataset, **overrides):
    return api.post("/api/v1/jobs/train/", train_body(dataset, **overrides), format="json")


def used(job, *, seconds: float) -> None:
    now = datetime.now(UTC)
    AttemptUsage.objects.create(
        job=job,
        attempt=1,
        gpus=1,
        held_from=now,
        held_until=now,
        gpu_seconds=seconds,
        energy_wh=0.0,
        energy_source="modelled",
    )


def test_without_quotas_a_user_may_queue_as_many_gpus_as_they_like(
    owner, owner_api, fake_gpu, run_on_commit
):
    dataset = dataset_for(owner)
    with run_on_commit():
        for _ in range(6):
            assert submit(owner_api, dataset, gpus=2).status_code == 202
    assert Job.objects.count() == 6


def test_a_user_over_the_gpu_quota_gets_429_naming_it_and_no_job(
    settings, owner, owner_api, fake_gpu, run_on_commit
):
    settings.CARRIL_QUOTA_MAX_GPUS = 3
    dataset = dataset_for(owner)
    with run_on_commit():
        assert submit(owner_api, dataset, gpus=2).status_code == 202
        refused = submit(owner_api, dataset, gpus=2)
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert error["code"] == "QUOTA_EXCEEDED"
    assert error["details"] == {"quota": "max_gpus", "limit": 3, "usage": 2, "requested": 2}
    assert "max_gpus" in error["message"]
    assert Job.objects.count() == 1
    assert len(fake_gpu.jobs) == 1


def test_an_administrators_override_beats_the_default(
    settings, owner, admin_api, owner_api, fake_gpu, run_on_commit
):
    settings.CARRIL_QUOTA_MAX_GPUS = 1
    put = admin_api.put("/api/v1/quotas/olivia/", {"max_gpus": 4, "priority": 5}, format="json")
    assert put.status_code == 200
    assert put.json()["limits"]["max_gpus"] == 4
    with run_on_commit():
        assert submit(owner_api, dataset_for(owner), gpus=2).status_code == 202
    [sent] = fake_gpu.jobs.values()
    assert sent["priority"] == 5
    # A blank limit falls back to the default again.
    admin_api.put("/api/v1/quotas/olivia/", {"max_gpus": None}, format="json")
    assert owner_api.get("/api/v1/quotas/").json()["limits"]["max_gpus"] == 1


def test_only_administrators_set_quotas(owner_api, owner):
    response = owner_api.put("/api/v1/quotas/olivia/", {"max_gpus": 99}, format="json")
    assert response.status_code == 403
    assert not UserQuota.objects.exists()


def test_a_user_past_their_monthly_gpu_hours_is_refused(
    settings, owner, owner_api, fake_gpu, run_on_commit
):
    settings.CARRIL_QUOTA_GPU_HOURS_PER_MONTH = 2.0
    used(delivered_job(owner, fake_gpu, run_on_commit), seconds=2 * 3600)
    refused = submit(owner_api, dataset_for(owner))
    assert refused.status_code == 429
    details = refused.json()["error"]["details"]
    assert (details["quota"], details["limit"], details["usage"]) == (
        "gpu_hours_per_month",
        2.0,
        2.0,
    )


def test_a_user_over_their_storage_is_refused(settings, owner, owner_api):
    settings.CARRIL_QUOTA_STORAGE_BYTES = 1000
    dataset = dataset_for(owner)
    dataset.size_bytes = 1500
    dataset.save()
    refused = submit(owner_api, dataset)
    assert refused.status_code == 429
    assert refused.json()["error"]["details"] == {
        "quota": "storage_bytes",
        "limit": 1000,
        "usage": 1500,
    }
    assert not Job.objects.exists()


def test_each_job_carries_its_owners_gpu_hours_this_week_as_fair_share_rank(
    owner, other, owner_api, fake_gpu, run_on_commit
):
    used(delivered_job(owner, fake_gpu, run_on_commit), seconds=5400)
    with run_on_commit():
        body = submit(owner_api, dataset_for(owner, name="second")).json()
    assert fake_gpu.jobs[body["id"]]["fair_share_rank"] == 1.5


def test_the_own_quota_document_shows_limits_and_usage(owner, owner_api):
    body = owner_api.get("/api/v1/quotas/").json()
    assert body["limits"] == {"max_gpus": 0, "gpu_hours_per_month": 0.0, "storage_bytes": 0}
    assert body["usage"]["max_gpus"] == 0


def test_administrators_override_quotas_in_django_admin(client, owner):
    from django.contrib.auth.models import User

    root = User.objects.create_superuser("root", password="a-long-test-password-81")
    client.force_login(root)
    page = client.post(
        "/admin/usage/userquota/add/",
        {"user": owner.pk, "max_gpus": "2", "priority": "3"},
    )
    assert page.status_code == 302, page.content[:500]
    quota = UserQuota.objects.get(user=owner)
    assert (quota.max_gpus, quota.gpu_hours_per_month, quota.priority) == (2, None, 3)


def test_the_training_form_says_which_quota_refused_it(settings, owner, client):
    settings.CARRIL_QUOTA_MAX_GPUS = 1
    client.force_login(owner)
    dataset = dataset_for(owner)
    page = client.post(
        "/train/",
        {
            "dataset": dataset.id,
            "model": "yolov8n",
            "epochs": 1,
            "imgsz": 64,
            "batch": 4,
            "seeds": "42",
            "gpus": 2,
        },
    )
    assert page.status_code == 400
    assert "max_gpus" in page.content.decode()
    assert not Job.objects.exists()


def test_a_dataset_upload_that_would_pass_the_storage_quota_is_refused(settings, owner_api):
    settings.CARRIL_QUOTA_STORAGE_BYTES = 100
    with tempfile.TemporaryDirectory() as folder:
        archive = z.good_zip(Path(folder) / "d.zip")
        with archive.open("rb") as fh:
            refused = owner_api.post(
                "/api/v1/datasets/", {"name": "big", "file": fh}, format="multipart"
            )
    assert refused.status_code == 429
    details = refused.json()["error"]["details"]
    assert (details["quota"], details["limit"], details["usage"]) == ("storage_bytes", 100, 0)
    assert details["requested"] > 100
    assert not Dataset.objects.exists()
