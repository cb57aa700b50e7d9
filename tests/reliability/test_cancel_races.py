"""A cancel that races the delivery of the same job still reaches the GPU service."""

from __future__ import annotations

from jobs.delivery import job_dispatch
from jobs.models import Job
from jobs.reconciler import reconcile_once
from jobs.services import job_cancel


def test_a_cancel_that_races_delivery_reaches_the_gpu_service_even_if_it_was_down(
    owner, fake_gpu
) -> None:
    job = Job.objects.create(owner=owner, kind="diagnostic", spec={"seconds": 1}, gpus=1)
    client = fake_gpu.client()
    real_submit = client.job_submit

    def submit_while_the_user_cancels(**kwargs):
        accepted = real_submit(**kwargs)  # the GPU service has it...
        job_cancel(job=Job.objects.get(id=job.id))  # ...the user cancels meanwhile...
        fake_gpu.up = False  # ...and the GPU service drops away before it hears of it
        return accepted

    client.job_submit = submit_while_the_user_cancels
    job_dispatch(job_id=job.id, client=client)
    job.refresh_from_db()
    assert job.state == "cancelled"
    assert job.dispatched_at  # the GPU service has it, under the job's own id

    fake_gpu.up = True
    for _ in range(2):
        reconcile_once(client=fake_gpu.client())

    assert fake_gpu.jobs[str(job.id)]["state"] == "cancelling"
