"""Migration 0007: trainings that finished before it get their final metrics copied out,
so the job list sorts them too (issue 13, ADR 0044)."""

from __future__ import annotations

import uuid

from tests.support.migrations import migrate, migrate_to_latest

BEFORE = [("jobs", "0005_export_kind")]
AFTER = [("jobs", "0007_job_name_tags_note")]


def test_a_training_finished_before_the_migration_is_sortable_by_its_best_seed(
    transactional_db,
):
    apps = migrate(BEFORE)
    owner = apps.get_model("auth", "User").objects.create(username="before")
    Job = apps.get_model("jobs", "Job")
    seeds = [
        {"seed": 1, "metrics": {"mAP50": 0.2, "mAP50-95": 0.1}},
        {"seed": 2, "metrics": {"mAP50": 0.6, "mAP50-95": 0.4, "precision": 0.7}},
    ]
    trained = Job.objects.create(
        id=uuid.uuid4(),
        owner=owner,
        kind="train",
        state="succeeded",
        metrics={"epochs": [], "best_seed": 2, "seeds": seeds},
    )
    running = Job.objects.create(id=uuid.uuid4(), owner=owner, kind="train", state="running")
    try:
        apps = migrate(AFTER)
        Job = apps.get_model("jobs", "Job")
        assert Job.objects.get(id=trained.id).final_metrics == {
            "mAP50": 0.6,
            "mAP50-95": 0.4,
            "precision": 0.7,
        }
        after = Job.objects.get(id=running.id)
        assert (after.final_metrics, after.name, after.tags, after.note) == ({}, "", "", "")
    finally:
        migrate_to_latest()
