"""job_get's SELECT compiled once (jobs/compiled_get.py) answers what the ORM answers."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta

import pytest
from carril_web.errors import NotFound
from django.core.exceptions import ValidationError
from django.utils import timezone
from jobs.compiled_get import job_row_get
from jobs.models import Job
from jobs.selectors import job_get

from tests.web.factories import DELIVERED, TRAIN_RESULT, dataset_for, model_version


def orm_job(job_id) -> Job:
    return Job.objects.select_related("owner", "model_version").get(id=job_id)


def same_row(got: Job, expected: Job) -> None:
    for field in Job._meta.concrete_fields:
        assert getattr(got, field.attname) == getattr(expected, field.attname), field.name
    assert got._state.adding is False
    assert got._state.db == expected._state.db


@pytest.fixture
def running(owner) -> Job:
    now = timezone.now()
    return Job.objects.create(
        owner=owner,
        kind="train",
        state="running",
        dispatched_at=DELIVERED,
        started_at=now,
        next_attempt_at=now + timedelta(seconds=5),
        dataset=dataset_for(owner),
        spec={"dataset": "x", "epochs": 1000, "seeds": [1], "imgsz": 32},
        progress={"stage": "training", "epoch": 11, "epochs": 1000, "fraction": 0.011},
        metrics={"worker_pid": 4242, "epochs": [{"epoch": 1, "mAP50": 0.25}]},
        gpu_ids=[0, 1],
        tags=",night,",
        note="a note",
    )


@pytest.fixture
def inference(owner) -> Job:
    return Job.objects.create(
        owner=owner,
        kind="infer",
        state="succeeded",
        dispatched_at=DELIVERED,
        model_version=model_version(fingerprint="b" * 64),
        spec={"images": ["a"], "imgsz": 640},
        result={**TRAIN_RESULT, "imgsz": 640},
        finished_at=timezone.now(),
    )


@pytest.mark.parametrize("sees_everything", [False, True])
def test_the_compiled_read_gives_the_orms_job_with_its_owner_and_model_version(
    owner, running, inference, sees_everything, django_assert_num_queries
):
    for job in (running, inference):
        expected = orm_job(job.id)
        with django_assert_num_queries(1):
            got = job_row_get(job_id=job.id, owner_id=None if sees_everything else owner.pk)
            # Joined, as select_related would: reading them costs no query.
            owner_name = got.owner.username
            version = got.model_version
        same_row(got, expected)
        assert owner_name == expected.owner.username
        for field in type(expected.owner)._meta.concrete_fields:
            assert getattr(got.owner, field.attname) == getattr(expected.owner, field.attname)
        if expected.model_version is None:
            assert version is None
        else:
            assert version.pk == expected.model_version.pk
            assert version.imgsz == expected.model_version.imgsz
            assert version.fingerprint == expected.model_version.fingerprint


def test_the_compiled_read_takes_the_id_as_a_string_too(running):
    same_row(job_row_get(job_id=str(running.id), owner_id=None), orm_job(running.id))


def test_another_owners_job_is_not_read(running, other):
    assert job_row_get(job_id=running.id, owner_id=other.pk) is None
    with pytest.raises(NotFound):
        job_get(user=other, job_id=running.id)


def test_a_missing_or_malformed_id_is_not_found(owner, running):
    assert job_row_get(job_id=uuid.uuid4(), owner_id=None) is None
    with pytest.raises(ValidationError):
        job_row_get(job_id="not-a-uuid", owner_id=None)
    for job_id in (uuid.uuid4(), "not-a-uuid", ""):
        with pytest.raises(NotFound):
            job_get(user=owner, job_id=job_id)


def test_each_call_reads_the_row_as_it_is_now(owner, running):
    assert job_get(user=owner, job_id=running.id).progress["epoch"] == 11
    Job.objects.filter(id=running.id).update(progress={"epoch": 12}, state="cancelling")
    again = job_get(user=owner, job_id=running.id)
    assert (again.progress, again.state) == ({"epoch": 12}, "cancelling")


@pytest.mark.django_db(transaction=True)
def test_threads_read_through_their_own_connections(owner, running, inference):
    """Each gunicorn thread has its own connection, so its own compiled query."""
    answers: list[str] = []

    def poll() -> None:
        try:
            answers.append(job_row_get(job_id=running.id, owner_id=owner.pk).state)
        finally:
            from django.db import connection

            connection.close()

    thread = threading.Thread(target=poll)
    thread.start()
    thread.join()
    assert answers == ["running"]
    assert job_row_get(job_id=inference.id, owner_id=owner.pk).state == "succeeded"
