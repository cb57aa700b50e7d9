"""Delivery from the web app to the GPU service survives the reconciler being killed after
the GPU service took a job but before the web row recorded it. Real processes on both
sides. (The GPU service down at submit time is proven in
tests/web/integration/test_web_with_gpu_service.py.)"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.support.gpu_service import GpuServiceProcess
from tests.support.stack import Stack

QUICK = {"spec": {"seconds": 0.3, "step_s": 0.1}}


@pytest.fixture
def platform(tmp_path: Path):
    storage = tmp_path / "storage"
    gpu = GpuServiceProcess(storage=storage, gpus="1x24GiB")  # started by each test
    web = Stack(storage=storage, gpu=gpu, reconcile_interval_s=0.3)
    try:
        yield web.prepare()
    finally:
        web.stop()  # the GPU service and the database too


def _keys(web: Stack) -> list[str]:
    return [job["web_job"] for job in web.journal_jobs().values()]


KILL_AFTER_SUBMIT = """
import os, signal
import gpu_client
from django.contrib.auth.models import User
from jobs.models import Job
from jobs.reconciler import reconcile_once

owner = User.objects.get_or_create(username="reliability")[0]
job = Job.objects.create(owner=owner, kind="diagnostic", spec={spec}, gpus=1)
print(job.id, flush=True)
real_submit = gpu_client.GpuClient.job_submit

def submit_then_die(self, **kwargs):
    real_submit(self, **kwargs)  # the GPU service has the job now...
    os.kill(os.getpid(), signal.SIGKILL)  # ...and the reconciler dies before recording it

gpu_client.GpuClient.job_submit = submit_then_die
with gpu_client.client_build() as client:
    reconcile_once(client=client)
"""


def test_a_reconciler_killed_between_dispatch_and_recording_leaves_exactly_one_gpu_job(
    platform: Stack,
) -> None:
    platform.gpu.start()
    died = platform.script(KILL_AFTER_SUBMIT.format(spec=QUICK["spec"]))
    assert died.returncode == -signal.SIGKILL, died.stderr
    job_id = died.stdout.split()[0]

    row = platform.web_jobs()[job_id]
    assert row["state"] == "submitted"
    assert row["gpu_job_id"] == ""  # never recorded
    assert row["claimed_until"] is not None  # the dead reconciler's claim
    assert _keys(platform) == [job_id]  # but the GPU service has it

    # The claim lapses after 30 s; move its end into the past instead of waiting.
    platform.web_execute("UPDATE jobs_job SET claimed_until = '2000-01-01 00:00:00'")
    platform.reconcile_once()
    platform.reconciler_start()
    platform.wait_until(
        lambda: platform.web_jobs()[job_id]["state"] == "succeeded",
        timeout_s=90,
        what="the job to be recorded and to succeed",
    )

    [gpu_job] = platform.journal_jobs().values()  # still exactly one
    assert gpu_job["web_job"] == job_id
    assert platform.web_jobs()[job_id]["gpu_job_id"] == gpu_job["id"]
