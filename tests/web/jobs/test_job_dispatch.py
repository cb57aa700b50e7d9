"""Creating a job writes its row, then delivers it after commit; failures back off."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from jobs.delivery import job_dispatch, jobs_dispatch_due
from jobs.models import Job, JobState, ReconcilerStatus
from jobs.services import job_cancel, job_create_training

from tests.web.factories import dataset_for


def create(owner, **overrides):
    params = dict(
        owner=owner,
        dataset_id=dataset_for(owner).id,
        model="yolov8n",
        epochs=2,
        imgsz=64,
        batch=4,
        seeds=[42, 7],
        gpus=2,
    )
    params.update(overrides)
    return job_create_training(**params)


def test_it_writes_the_row_as_submitted_and_delivers_it_after_commit(
    owner, fake_gpu, run_on_commit
):
    with run_on_commit():
        job = create(owner)
        assert Job.objects.get(id=job.id).state == JobState.SUBMITTED
        assert fake_gpu.jobs == {}
    job.refresh_from_db()
    assert job.state == JobState.QUEUED
    remote = fake_gpu.jobs[str(job.id)]  # the GPU service knows it by the same id
    assert remote["spec"]["dataset"] == str(job.dataset.path)
    assert remote["spec"]["seeds"] == [42, 7]
    assert remote["gpus_requested"] == 2


def test_a_job_whose_transaction_rolls_back_is_never_delivered(owner, fake_gpu, run_on_commit):
    from django.db import transaction

    dataset = dataset_for(owner)
    with run_on_commit():
        try:
            with transaction.atomic():
                create(owner, dataset_id=dataset.id)
                raise RuntimeError("boom")
        except RuntimeError:
            pass
    assert not Job.objects.exists()
    assert fake_gpu.jobs == {}


def test_a_failed_delivery_leaves_the_job_submitted_with_a_backoff(owner, fake_gpu, run_on_commit):
    fake_gpu.up = False
    with run_on_commit():
        job = create(owner)
    job.refresh_from_db()
    assert job.state == JobState.SUBMITTED
    assert job.dispatch_attempts == 1
    assert job.next_attempt_at > timezone.now()
    assert job.last_dispatch_error
    assert ReconcilerStatus.objects.get(id=1).dispatch_failures == 1


def test_the_reconciler_delivers_it_once_the_backoff_has_passed(owner, fake_gpu, run_on_commit):
    fake_gpu.up = False
    with run_on_commit():
        job = create(owner)
    fake_gpu.up = True
    assert jobs_dispatch_due(client=fake_gpu.client()) == 0  # still backing off
    Job.objects.filter(id=job.id).update(next_attempt_at=timezone.now() - timedelta(seconds=1))
    assert jobs_dispatch_due(client=fake_gpu.client()) == 1
    job.refresh_from_db()
    assert job.state == JobState.QUEUED
    assert str(job.id) in fake_gpu.jobs


def test_delivering_twice_gives_one_gpu_job(owner, fake_gpu):
    job = create(owner)  # on_commit callbacks not run: not delivered yet
    assert job_dispatch(job_id=job.id, client=fake_gpu.client())
    # The answer was lost: the row still says submitted, and it is delivered again.
    Job.objects.filter(id=job.id).update(state=JobState.SUBMITTED, dispatched_at=None)
    assert job_dispatch(job_id=job.id, client=fake_gpu.client())
    assert len(fake_gpu.jobs) == 1


def test_a_claimed_job_is_not_delivered_by_someone_else(owner, fake_gpu):
    job = create(owner)
    Job.objects.filter(id=job.id).update(claimed_until=timezone.now() + timedelta(seconds=30))
    assert not job_dispatch(job_id=job.id, client=fake_gpu.client())
    assert fake_gpu.jobs == {}


def test_a_job_the_gpu_service_refuses_fails_with_its_code(owner, fake_gpu, run_on_commit):
    fake_gpu.refuse_submit = (409, "RESOURCE_UNAVAILABLE")
    with run_on_commit():
        job = create(owner, gpus=8)
    job.refresh_from_db()
    assert job.state == JobState.FAILED
    assert job.error_code == "RESOURCE_UNAVAILABLE"
    assert job.finished_at is not None


def test_cancelling_an_undelivered_job_cancels_it_here_and_it_is_never_delivered(owner, fake_gpu):
    job = create(owner)
    job_cancel(job=job)
    assert Job.objects.get(id=job.id).state == JobState.CANCELLED
    assert not job_dispatch(job_id=job.id, client=fake_gpu.client())
    assert fake_gpu.jobs == {}


def test_cancelling_a_delivered_job_asks_the_gpu_service(owner, fake_gpu, run_on_commit):
    with run_on_commit():
        job = create(owner)
    job.refresh_from_db()
    job = job_cancel(job=job)
    assert job.state == JobState.CANCELLING
    assert fake_gpu.jobs[str(job.id)]["state"] == "cancelling"
    assert job.cancel_pending is False


def test_a_cancel_the_gpu_service_missed_is_retried_by_the_reconciler(
    owner, fake_gpu, run_on_commit
):
    from jobs.reconciler import job_refresh_many

    with run_on_commit():
        job = create(owner)
    job.refresh_from_db()
    fake_gpu.up = False
    job = job_cancel(job=job)
    assert job.cancel_pending is True
    fake_gpu.up = True
    job_refresh_many(client=fake_gpu.client())
    job.refresh_from_db()
    assert job.cancel_pending is False
    assert fake_gpu.jobs[str(job.id)]["state"] == "cancelling"


def test_the_request_id_is_kept_on_the_job_and_sent_to_the_gpu_service(
    owner_api, owner, fake_gpu, run_on_commit
):
    dataset = dataset_for(owner)
    body = {
        "dataset": str(dataset.id),
        "model": "yolov8n",
        "epochs": 1,
        "imgsz": 64,
        "batch": 2,
        "seeds": [1],
    }
    with run_on_commit():
        response = owner_api.post(
            "/api/v1/jobs/train/", body, format="json", HTTP_X_REQUEST_ID="req-abc-123"
        )
    assert response.status_code == 202
    assert Job.objects.get(id=response.json()["id"]).request_id == "req-abc-123"
    submit = next(r for r in fake_gpu.requests if r.url.path == "/v1/jobs")
    assert submit.headers["X-Request-ID"] == "req-abc-123"
