from __future__ import annotations

import sqlite3

import pytest

from gpu_service.errors import Conflict, CudaOOM, NotFound
from gpu_service.journal import JobState, Journal


@pytest.fixture
def journal(tmp_path):
    journal = Journal(path=tmp_path / "journal.sqlite3")
    yield journal
    journal.close()


def create(journal: Journal, **kw):
    fields = {"kind": "diagnostic", "spec": {"seconds": 1}, "gpus_requested": 1}
    fields.update(kw)
    return journal.job_create(gpu_ids_requested=None, **fields)


def test_it_records_a_queued_job_before_anything_runs(journal):
    job, created = create(journal, request_id="req-1", priority=3)
    assert created
    stored = journal.job_get(job_id=job.id)
    assert stored.state is JobState.QUEUED
    assert (stored.attempt, stored.priority, stored.request_id) == (1, 3, "req-1")
    assert stored.spec == {"seconds": 1}


def test_it_uses_wal_mode(journal, tmp_path):
    db = sqlite3.connect(tmp_path / "journal.sqlite3")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_given_job_id_is_the_record_id_and_a_known_one_returns_the_existing_job(journal):
    first, created = create(journal, job_id="k1")
    again, created_again = create(journal, job_id="k1", spec={"seconds": 9})
    assert created
    assert not created_again
    assert first.id == again.id == "k1"
    assert again.spec == {"seconds": 1}


def test_without_a_job_id_the_journal_generates_one(journal):
    first, _ = create(journal)
    second, _ = create(journal)
    assert first.id != second.id


def test_a_journal_from_before_one_job_id_renames_its_jobs_to_the_clients_ids(tmp_path):
    path = tmp_path / "journal.sqlite3"
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE jobs (id TEXT PRIMARY KEY, idempotency_key TEXT UNIQUE, kind TEXT NOT NULL,"
        " spec TEXT NOT NULL, priority INTEGER NOT NULL, state TEXT NOT NULL,"
        " gpus_requested INTEGER NOT NULL, gpu_ids_requested TEXT,"
        " gpu_ids TEXT NOT NULL DEFAULT '[]', memory_estimate_mib INTEGER NOT NULL DEFAULT 0,"
        " simulate TEXT, attempt INTEGER NOT NULL DEFAULT 1, progress TEXT NOT NULL DEFAULT '{}',"
        " metrics TEXT NOT NULL DEFAULT '{}', result TEXT, error TEXT, submitted_at REAL NOT NULL,"
        " started_at REAL, finished_at REAL, heartbeat_at REAL, request_id TEXT);"
        "INSERT INTO jobs (id, idempotency_key, kind, spec, priority, state, gpus_requested,"
        " submitted_at) VALUES ('gpu-made', 'web-job-1', 'diagnostic', '{}', 0, 'queued', 1, 1),"
        " ('direct', NULL, 'diagnostic', '{}', 0, 'queued', 1, 2);"
    )
    db.commit()
    db.close()
    (tmp_path / "jobs" / "gpu-made").mkdir(parents=True)
    (tmp_path / "jobs" / "gpu-made" / "job.log").write_text("ran\n")
    journal = Journal(path=path)
    try:
        assert journal.job_get(job_id="web-job-1").state is JobState.QUEUED
        assert journal.job_get(job_id="direct").kind == "diagnostic"
        with pytest.raises(NotFound):
            journal.job_get(job_id="gpu-made")
        assert (tmp_path / "jobs" / "web-job-1" / "job.log").read_text() == "ran\n"
        _, created = create(journal, job_id="web-job-1")
        assert not created
        fresh, created = create(journal, job_id="web-job-2")
        assert created
        assert fresh.id == "web-job-2"
    finally:
        journal.close()


def test_a_job_runs_and_succeeds(journal):
    job, _ = create(journal)
    journal.job_start(job_id=job.id, gpu_ids=[0, 1])
    assert journal.job_succeed(job_id=job.id, result={"ok": True})
    done = journal.job_get(job_id=job.id)
    assert done.state is JobState.SUCCEEDED
    assert done.gpu_ids == [0, 1]
    assert done.result == {"ok": True}
    assert done.finished_at is not None
    assert done.started_at is not None


def test_a_finished_job_cannot_start_again(journal):
    job, _ = create(journal)
    journal.job_start(job_id=job.id, gpu_ids=[0])
    journal.job_fail(job_id=job.id, error=CudaOOM())
    with pytest.raises(Conflict):
        journal.job_start(job_id=job.id, gpu_ids=[0])
    assert journal.job_get(job_id=job.id).error["code"] == "CUDA_OOM"


def test_a_late_success_does_not_overwrite_a_failure(journal):
    job, _ = create(journal)
    journal.job_start(job_id=job.id, gpu_ids=[0])
    assert journal.job_fail(job_id=job.id, error=CudaOOM())
    assert not journal.job_succeed(job_id=job.id, result={})
    assert journal.job_get(job_id=job.id).state is JobState.FAILED


def test_cancelling_a_queued_job_is_immediate(journal):
    job, _ = create(journal)
    assert journal.job_cancel_queued(job_id=job.id)
    cancelled = journal.job_get(job_id=job.id)
    assert cancelled.state is JobState.CANCELLED
    assert cancelled.error["code"] == "CANCELLED"


def test_cancelling_a_running_job_goes_through_cancelling(journal):
    job, _ = create(journal)
    journal.job_start(job_id=job.id, gpu_ids=[0])
    assert not journal.job_cancel_queued(job_id=job.id)
    assert journal.job_request_cancel(job_id=job.id)
    assert journal.job_get(job_id=job.id).state is JobState.CANCELLING
    assert journal.job_finish_cancelled(job_id=job.id)
    assert journal.job_get(job_id=job.id).state is JobState.CANCELLED


def test_progress_is_only_written_while_the_job_is_active(journal):
    job, _ = create(journal)
    assert not journal.job_progress(job_id=job.id, progress={"fraction": 0.5})
    journal.job_start(job_id=job.id, gpu_ids=[0])
    assert journal.job_progress(job_id=job.id, progress={"fraction": 0.5})
    assert journal.job_get(job_id=job.id).progress == {"fraction": 0.5}


def test_requeue_increments_the_attempt_and_drops_the_lanes(journal):
    job, _ = create(journal)
    journal.job_start(job_id=job.id, gpu_ids=[0])
    assert journal.job_requeue(job_id=job.id)
    again = journal.job_get(job_id=job.id)
    assert (again.state, again.attempt, again.gpu_ids) == (JobState.QUEUED, 2, [])


def test_queued_jobs_come_back_in_priority_then_submission_order(journal):
    low, _ = create(journal, now=1.0)
    high, _ = create(journal, priority=5, now=3.0)
    older, _ = create(journal, now=0.5)
    assert [j.id for j in journal.jobs_queued()] == [high.id, older.id, low.id]


def test_pruning_deletes_only_old_terminal_records(journal):
    old, _ = create(journal)
    journal.job_cancel_queued(job_id=old.id, now=100.0)
    recent, _ = create(journal)
    journal.job_cancel_queued(job_id=recent.id, now=1000.0)
    waiting, _ = create(journal)
    assert journal.jobs_prune(finished_before=500.0) == 1
    with pytest.raises(NotFound):
        journal.job_get(job_id=old.id)
    assert {j.id for j in journal.jobs_list()} == {recent.id, waiting.id}


def test_jobs_get_skips_unknown_ids_and_keeps_order(journal):
    a, _ = create(journal)
    b, _ = create(journal)
    assert [j.id for j in journal.jobs_get(job_ids=[b.id, "nope", a.id])] == [b.id, a.id]


def test_the_record_survives_reopening(tmp_path):
    journal = Journal(path=tmp_path / "j.sqlite3")
    job, _ = create(journal)
    journal.close()
    assert Journal(path=tmp_path / "j.sqlite3").job_get(job_id=job.id).state is JobState.QUEUED
