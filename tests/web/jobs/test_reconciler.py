"""The reconciler mirrors the GPU service onto job rows, registers trained weights, and
marks jobs the GPU service forgot as lost."""

from __future__ import annotations

from django.core.management import call_command
from jobs.models import Job, JobState, ReconcilerStatus
from jobs.reconciler import reconcile_once
from jobs.services import job_create_training
from registry.models import ModelVersion

from tests.web.factories import TRAIN_RESULT, dataset_for


def delivered_job(owner, fake_gpu, run_on_commit):
    with run_on_commit():
        job = job_create_training(
            owner=owner,
            dataset_id=dataset_for(owner).id,
            model="yolov8n",
            epochs=2,
            imgsz=64,
            batch=4,
            seeds=[42, 7],
            gpus=1,
        )
    job.refresh_from_db()
    return job


def test_it_copies_progress_and_metrics_from_the_gpu_service(owner, fake_gpu, run_on_commit):
    job = delivered_job(owner, fake_gpu, run_on_commit)
    fake_gpu.set_state(
        job.id,
        "running",
        progress={"seed": 1, "seeds": 2, "epoch": 1, "epochs": 2, "fraction": 0.25},
        metrics={"epochs": [{"seed": 42, "epoch": 1, "mAP50": 0.1}]},
        started_at="2026-01-01T00:00:01Z",
        gpu_ids=[0],
    )
    outcome = reconcile_once(client=fake_gpu.client())
    assert outcome.refreshed == 1
    job.refresh_from_db()
    assert job.state == JobState.RUNNING
    assert job.progress["fraction"] == 0.25
    assert job.metrics["epochs"][0]["mAP50"] == 0.1
    assert job.started_at is not None
    assert job.gpu_ids == [0]


def test_a_successful_training_registers_its_best_weights_once(owner, fake_gpu, run_on_commit):
    job = delivered_job(owner, fake_gpu, run_on_commit)
    fake_gpu.set_state(job.id, "succeeded", result=TRAIN_RESULT, finished_at="2026-01-01T00:10:00Z")
    reconcile_once(client=fake_gpu.client())
    reconcile_once(client=fake_gpu.client())
    version = ModelVersion.objects.get()
    assert version.fingerprint == "b" * 64
    assert version.stage == "candidate"
    assert version.source_job_id == job.id
    assert version.metrics["best_seed"] == 7
    assert version.class_names == ["square", "disc"]
    assert Job.objects.get(id=job.id).state == JobState.SUCCEEDED


def test_a_finished_training_s_best_seed_metrics_are_copied_out_for_sorting(
    owner, fake_gpu, run_on_commit
):
    job = delivered_job(owner, fake_gpu, run_on_commit)
    fake_gpu.set_state(
        job.id,
        "succeeded",
        metrics={"epochs": [], **{k: TRAIN_RESULT[k] for k in ("best_seed", "seeds")}},
        result=TRAIN_RESULT,
        finished_at="2026-01-01T00:10:00Z",
    )
    reconcile_once(client=fake_gpu.client())
    job.refresh_from_db()
    assert job.final_metrics == {"mAP50": 0.4}  # seed 7's, the best, not seed 42's


def test_a_job_the_gpu_service_no_longer_knows_is_marked_lost(owner, fake_gpu, run_on_commit):
    job = delivered_job(owner, fake_gpu, run_on_commit)
    fake_gpu.forget(job.id)
    reconcile_once(client=fake_gpu.client())
    job.refresh_from_db()
    assert job.state == JobState.LOST
    assert job.error_code == "LOST"


def test_nothing_is_marked_lost_while_the_gpu_service_is_down(owner, fake_gpu, run_on_commit):
    job = delivered_job(owner, fake_gpu, run_on_commit)
    fake_gpu.up = False
    outcome = reconcile_once(client=fake_gpu.client())
    assert outcome.reachable is False
    assert Job.objects.get(id=job.id).state == JobState.QUEUED


def test_a_finished_job_never_moves_again(owner, fake_gpu, run_on_commit):
    job = delivered_job(owner, fake_gpu, run_on_commit)
    fake_gpu.set_state(
        job.id, "failed", error={"code": "CUDA_OOM", "message": "oom", "details": {}}
    )
    reconcile_once(client=fake_gpu.client())
    fake_gpu.set_state(job.id, "running", error=None)
    reconcile_once(client=fake_gpu.client())
    job.refresh_from_db()
    assert job.state == JobState.FAILED
    assert job.error_code == "CUDA_OOM"


def test_a_cancel_asked_here_is_not_undone_by_a_stale_running(owner, fake_gpu, run_on_commit):
    job = delivered_job(owner, fake_gpu, run_on_commit)
    Job.objects.filter(id=job.id).update(state=JobState.CANCELLING)
    fake_gpu.set_state(job.id, "running")
    reconcile_once(client=fake_gpu.client())
    assert Job.objects.get(id=job.id).state == JobState.CANCELLING
    fake_gpu.set_state(job.id, "cancelled")
    reconcile_once(client=fake_gpu.client())
    assert Job.objects.get(id=job.id).state == JobState.CANCELLED


def test_each_pass_caches_the_gpus_and_records_its_time(owner, fake_gpu):
    reconcile_once(client=fake_gpu.client())
    status = ReconcilerStatus.objects.get(id=1)
    assert status.last_pass_at is not None
    assert status.gpus["gpus"][0]["uuid"] == "GPU-sim-0"
    fake_gpu.up = False
    reconcile_once(client=fake_gpu.client())
    status.refresh_from_db()
    assert status.gpus["gpus"][0]["uuid"] == "GPU-sim-0"  # the last good picture stays
    assert status.gpus_error


def test_manage_py_reconcile_once_runs_one_pass(owner, fake_gpu, run_on_commit):
    fake_gpu.up = False
    with run_on_commit():
        job = job_create_training(
            owner=owner,
            dataset_id=dataset_for(owner).id,
            model="yolov8n",
            epochs=1,
            imgsz=64,
            batch=2,
            seeds=[1],
            gpus=1,
        )
    fake_gpu.up = True
    Job.objects.filter(id=job.id).update(next_attempt_at=None)
    call_command("reconcile", "--once")
    assert Job.objects.get(id=job.id).state == JobState.QUEUED
