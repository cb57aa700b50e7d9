"""Storage retention (issue 16): `manage.py prune --dry-run` lists exactly what the policy
says, and a real prune frees it without touching a serving or candidate version's
weights, an export, a running or queued job's files, or what a queued job needs."""

from __future__ import annotations

import io
import os
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone
from jobs.models import Job
from registry.models import ModelEvent
from retention.models import RetentionPin

from tests.web.factories import dataset_for, model_version


def put(path: Path, size: int = 100) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    return path


def job(owner, kind: str, state: str, *, days_ago: float | None = None, **fields) -> Job:
    finished = timezone.now() - timedelta(days=days_ago) if days_ago is not None else None
    return Job.objects.create(
        owner=owner,
        kind=kind,
        state=state,
        finished_at=finished,
        dispatched_at=timezone.now(),
        **fields,
    )


def retired(fingerprint: str, *, days_ago: float):
    version = model_version(fingerprint=fingerprint, stage="retired")
    event = ModelEvent.objects.create(
        model_version=version,
        action="retire",
        from_stage="candidate",
        to_stage="retired",
        reason="old",
    )
    ModelEvent.objects.filter(id=event.id).update(
        created_at=timezone.now() - timedelta(days=days_ago)
    )
    return version


@pytest.fixture
def world(owner, storage):
    """One of everything the policy decides about, and what it must keep."""
    w = storage / "weights"
    dataset = dataset_for(owner)
    serving = model_version(fingerprint="a" * 64, stage="serving")
    put(w / f"{serving.fingerprint}.pt")
    trained_job = job(owner, "train", "succeeded", days_ago=1)
    candidate = model_version(fingerprint="b" * 64, stage="candidate")
    candidate.source_job = trained_job
    candidate.source = "training"
    candidate.save()
    put(w / f"{candidate.fingerprint}.pt")
    last = put(storage / "jobs" / str(trained_job.id) / "seed-42" / "weights" / "last.pt", 500)
    best = put(storage / "jobs" / str(trained_job.id) / "seed-42" / "weights" / "best.pt", 500)
    old_retired = retired("c" * 64, days_ago=100)
    put(w / f"{old_retired.fingerprint}.pt", 300)
    pinned = retired("d" * 64, days_ago=100)
    RetentionPin.objects.create(model_version=pinned, reason="audit")
    put(w / f"{pinned.fingerprint}.pt")
    recent_retired = retired("e" * 64, days_ago=3)
    put(w / f"{recent_retired.fingerprint}.pt")
    needed = retired("f" * 64, days_ago=100)  # a queued inference still uses it
    put(w / f"{needed.fingerprint}.pt")
    queued = job(owner, "infer", "queued", model_version=needed)
    put(storage / "uploads" / "infer" / str(queued.id) / "0000-a.jpg")
    old_infer = job(owner, "infer", "succeeded", days_ago=40)
    upload = put(storage / "uploads" / "infer" / str(old_infer.id) / "0000-a.jpg", 200)
    annotated = put(storage / "jobs" / str(old_infer.id) / "annotated" / "0000-a.jpg", 200)
    results = put(storage / "jobs" / str(old_infer.id) / "results.json")
    new_infer = job(owner, "infer", "succeeded", days_ago=2)
    put(storage / "uploads" / "infer" / str(new_infer.id) / "0000-a.jpg")
    old_failed = job(owner, "train", "failed", days_ago=40)
    failed_dir = storage / "jobs" / str(old_failed.id)
    put(failed_dir / "job.log", 400)
    running = job(owner, "train", "running", dataset=dataset)
    running_last = put(storage / "jobs" / str(running.id) / "seed-1" / "weights" / "last.pt")
    export = put(storage / "exports" / ("a" * 64) / "model.onnx")
    stale = put(storage / "datasets" / ".incoming-stale" / "upload.zip", 50).parent
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    fresh = put(storage / "datasets" / ".incoming-fresh" / "upload.zip", 50).parent
    return {
        "gone": {
            last: 500,
            w / f"{old_retired.fingerprint}.pt": 300,
            storage / "uploads" / "infer" / str(old_infer.id): 200,
            storage / "jobs" / str(old_infer.id) / "annotated": 200,
            failed_dir: 400,
            stale: 50,
        },
        "kept": [
            w / f"{serving.fingerprint}.pt",
            w / f"{candidate.fingerprint}.pt",
            w / f"{pinned.fingerprint}.pt",
            w / f"{recent_retired.fingerprint}.pt",
            w / f"{needed.fingerprint}.pt",
            best,
            results,
            storage / "uploads" / "infer" / str(queued.id) / "0000-a.jpg",
            storage / "uploads" / "infer" / str(new_infer.id) / "0000-a.jpg",
            running_last,
            export,
            fresh,
            dataset.data_yaml,
        ],
        "upload": upload,
        "annotated": annotated,
    }


def prune(*args: str) -> list[str]:
    out = io.StringIO()
    call_command("prune", *args, stdout=out)
    return out.getvalue().splitlines()


def listed(lines: list[str]) -> dict[Path, int]:
    return {
        Path(line.split("\t")[3]): int(line.split("\t")[1])
        for line in lines
        if line.startswith(("would free\t", "freed\t"))
    }


def test_a_dry_run_lists_exactly_what_the_policy_says_and_deletes_nothing(world):
    lines = prune("--dry-run")
    assert listed(lines) == world["gone"]
    assert lines[-1] == "total would free: 1650 bytes in 6 items"
    assert all(path.exists() for path in world["gone"])


def test_a_prune_frees_it_and_keeps_serving_weights_exports_and_running_jobs(world):
    lines = prune()
    assert listed(lines) == world["gone"]
    assert not any(path.exists() for path in world["gone"])
    assert [path for path in world["kept"] if not path.exists()] == []
    assert prune("--dry-run")[-1] == "total would free: 0 bytes in 0 items"


def test_what_became_protected_after_the_plan_is_kept(world, monkeypatch):
    from registry.models import ModelVersion
    from retention import prune as pruning

    plan = pruning.prune_plan()
    old_retired = next(p for p in world["gone"] if "c" * 64 in p.name)
    # Brought back to candidate between the plan and the deletion.
    ModelVersion.objects.filter(fingerprint="c" * 64).update(stage="candidate")
    monkeypatch.setattr(pruning, "prune_plan", lambda: plan)
    report = pruning.prune_run(dry_run=False)
    assert old_retired.exists()
    assert [item.path for item in report.skipped] == [old_retired]
    assert len(report.items) == 5


def test_the_reconciler_prunes_at_its_start_and_then_on_its_interval(world, settings):
    from retention.prune import PruneSchedule

    settings.CARRIL_PRUNE_INTERVAL_S = 60
    now = [0.0]
    schedule = PruneSchedule(clock=lambda: now[0])
    assert schedule.run_if_due().bytes == 1650
    now[0] = 30.0
    assert schedule.run_if_due() is None
    now[0] = 61.0
    assert schedule.run_if_due().bytes == 0
    settings.CARRIL_PRUNE_INTERVAL_S = 0
    now[0] = 1000.0
    assert schedule.run_if_due() is None


def test_the_storage_page_shows_usage_by_user_and_kind_and_the_next_prune(
    world, admin, owner, client
):
    client.force_login(owner)
    assert client.get("/storage/").status_code == 403
    client.force_login(admin)
    page = client.get("/storage/")
    assert page.status_code == 200
    storage = page.context["storage"]
    assert storage["prune"]["bytes"] == 1650
    assert {row["kind"] for row in storage["rows"] if row["user"] == "olivia"} >= {
        "datasets",
        "train job folders",
        "infer job folders",
        "inference uploads",
        "weights",
    }
    assert "retired-weights" in page.content.decode()


def test_the_reconcilers_loop_prunes_at_its_start(world, fake_gpu, monkeypatch):
    import gpu_client
    from jobs.reconciler import Reconciler

    monkeypatch.setattr(gpu_client, "client_build", fake_gpu.client)
    for active in Job.objects.filter(state__in=["queued", "running"]):
        fake_gpu.jobs[str(active.id)] = {"id": str(active.id), "state": active.state}
    Reconciler(interval_s=1.0).run(once=True)
    assert not any(path.exists() for path in world["gone"])
    assert [path for path in world["kept"] if not path.exists()] == []
