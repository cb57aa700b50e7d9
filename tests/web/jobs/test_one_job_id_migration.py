"""Migrations 0003/0004: rows written under two ids move to one (issue 11)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE = [("jobs", "0002_initial")]
AFTER = [("jobs", "0004_remove_job_gpu_job_id")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture
def old_rows(transactional_db, storage: Path):
    apps = migrate(BEFORE)
    User = apps.get_model("auth", "User")
    Job = apps.get_model("jobs", "Job")
    owner = User.objects.create(username="before")
    now = timezone.now()
    folder = storage / "jobs" / "gpu-old-1"
    (folder / "weights").mkdir(parents=True)
    (folder / "job.log").write_text("epoch 1\n")
    rows = {
        "finished": Job.objects.create(
            id=uuid.uuid4(),
            owner=owner,
            kind="train",
            state="succeeded",
            gpu_job_id="gpu-old-1",
            dispatched_at=now,
            result={
                "weights": {"fingerprint": "b" * 64, "path": f"{folder}/weights/best.pt"},
                "manifest_path": f"{folder}/manifest.json",
            },
        ),
        "running": Job.objects.create(
            id=uuid.uuid4(),
            owner=owner,
            kind="train",
            state="running",
            gpu_job_id="gpu-old-2",
            dispatched_at=now,
        ),
        "submitted": Job.objects.create(
            id=uuid.uuid4(), owner=owner, kind="train", state="submitted"
        ),
    }
    yield {name: job.id for name, job in rows.items()}
    # Leave the database as the other tests expect it: every app at its latest migration
    # (going back to jobs 0002 also unapplied the apps that depend on later jobs ones).
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    migrate(executor.loader.graph.leaf_nodes())


def test_a_finished_job_finds_its_files_under_its_own_id(old_rows, storage):
    apps = migrate(AFTER)
    job = apps.get_model("jobs", "Job").objects.get(id=old_rows["finished"])
    folder = storage / "jobs" / str(job.id)
    assert (folder / "job.log").read_text() == "epoch 1\n"
    # The same link the GPU service makes for its journal; the old folder stays.
    assert folder.is_symlink()
    assert (storage / "jobs" / "gpu-old-1" / "job.log").exists()
    assert job.result["weights"]["path"] == f"{folder}/weights/best.pt"
    assert job.result["manifest_path"] == f"{folder}/manifest.json"
    assert job.state == "succeeded"


def test_a_link_the_gpu_service_made_first_is_kept(old_rows, storage):
    job_id = str(old_rows["finished"])
    (storage / "jobs" / job_id).symlink_to("gpu-old-1", target_is_directory=True)
    apps = migrate(AFTER)
    job = apps.get_model("jobs", "Job").objects.get(id=job_id)
    assert (storage / "jobs" / job_id / "job.log").read_text() == "epoch 1\n"
    assert job.result["manifest_path"] == f"{storage / 'jobs' / job_id}/manifest.json"


def test_an_unfinished_job_is_left_to_the_gpu_service_which_adopts_its_id(old_rows):
    apps = migrate(AFTER)
    job = apps.get_model("jobs", "Job").objects.get(id=old_rows["running"])
    assert job.state == "running"
    assert job.dispatched_at is not None


def test_an_undelivered_job_is_left_to_be_delivered_under_its_own_id(old_rows):
    apps = migrate(AFTER)
    job = apps.get_model("jobs", "Job").objects.get(id=old_rows["submitted"])
    assert job.state == "submitted"
    assert job.dispatched_at is None
