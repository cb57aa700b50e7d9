"""The reconciler's pace: short while jobs are unfinished, the configured interval when
idle or when the GPU service does not answer; idle waits wake up for new work."""

from __future__ import annotations

import pytest
from jobs.models import Job
from jobs.reconciler import PassOutcome, Reconciler, reconcile_once

from tests.web.factories import DELIVERED


class FakeStop:
    """Stands in for the stop event: records each wait and moves the fake clock on."""

    def __init__(self) -> None:
        self.now = 100.0
        self.waits: list[float] = []
        self.on_wait = lambda: None

    def clock(self) -> float:
        return self.now

    def wait(self, seconds: float) -> bool:
        self.waits.append(round(seconds, 6))
        self.now += seconds
        self.on_wait()
        return False

    def is_set(self) -> bool:
        return False


@pytest.fixture
def paced() -> tuple[Reconciler, FakeStop]:
    stop = FakeStop()
    reconciler = Reconciler(interval_s=2.0, active_interval_s=0.25, clock=stop.clock)
    reconciler._stop = stop  # type: ignore[assignment]
    return reconciler, stop


def outcome(*, active: bool, reachable: bool = True) -> PassOutcome:
    return PassOutcome(delivered=0, refreshed=0, reachable=reachable, active=active)


def test_it_waits_the_short_interval_while_a_job_is_unfinished(paced):
    reconciler, stop = paced
    reconciler.wait_after(outcome=outcome(active=True))
    assert stop.waits == [0.25]


def test_it_waits_the_configured_interval_when_the_gpu_service_does_not_answer(paced):
    reconciler, stop = paced
    reconciler.wait_after(outcome=outcome(active=True, reachable=False))
    reconciler.wait_after(outcome=None)  # a pass that raised
    assert stop.waits == [2.0, 2.0]


def test_an_idle_wait_lasts_the_configured_interval_when_no_work_appears(paced, db):
    reconciler, stop = paced
    reconciler.wait_after(outcome=outcome(active=False))
    assert sum(stop.waits) == pytest.approx(2.0)
    assert max(stop.waits) == 0.25


def test_an_idle_wait_ends_as_soon_as_a_job_appears(paced, owner):
    reconciler, stop = paced

    def a_job_arrives_on_the_second_look() -> None:
        if len(stop.waits) == 2:
            Job.objects.create(owner=owner, kind="train", state="queued", dispatched_at=DELIVERED)

    stop.on_wait = a_job_arrives_on_the_second_look
    reconciler.wait_after(outcome=outcome(active=False))
    assert stop.waits == [0.25, 0.25]


def test_the_short_interval_is_never_longer_than_the_configured_one():
    assert Reconciler(interval_s=0.1, active_interval_s=0.25).active_interval_s == 0.1


def test_a_pass_says_whether_jobs_are_still_unfinished(owner, fake_gpu):
    assert reconcile_once(client=fake_gpu.client()).active is False
    job = Job.objects.create(owner=owner, kind="train", state="running", dispatched_at=DELIVERED)
    fake_gpu.jobs[str(job.id)] = {"id": str(job.id), "state": "running"}
    assert reconcile_once(client=fake_gpu.client()).active is True
    fake_gpu.jobs[str(job.id)] = {"id": str(job.id), "state": "succeeded", "result": {}}
    assert reconcile_once(client=fake_gpu.client()).active is False


def test_fast_passes_fetch_the_gpu_picture_only_at_the_configured_pace(
    owner, fake_gpu, monkeypatch, paced
):
    import gpu_client

    reconciler, _stop = paced
    job = Job.objects.create(owner=owner, kind="train", state="running", dispatched_at=DELIVERED)
    fake_gpu.jobs[str(job.id)] = {"id": str(job.id), "state": "running"}
    monkeypatch.setattr(gpu_client, "client_build", fake_gpu.client)
    for _ in range(9):  # 9 passes, 0.25 s apart: 2 s of fast passes
        reconciler._pass()
        reconciler.wait_after(outcome=outcome(active=True))
    calls = [f"{r.method} {r.url.path}" for r in fake_gpu.requests]
    assert calls.count("GET /v1/gpus") == 2
    assert calls.count("POST /v1/jobs/status") == 9


def test_the_loop_keeps_one_gpu_client_across_passes_and_replaces_it_after_a_failure(
    owner, fake_gpu, monkeypatch, paced
):
    import gpu_client

    reconciler, _stop = paced
    built = []

    def build():
        built.append(fake_gpu.client())
        return built[-1]

    monkeypatch.setattr(gpu_client, "client_build", build)
    for _ in range(3):
        assert reconciler._pass() is not None
    assert len(built) == 1
    monkeypatch.setattr("jobs.reconciler.jobs_dispatch_due", lambda **_: 1 / 0)
    assert reconciler._pass() is None
    monkeypatch.undo()
    monkeypatch.setattr(gpu_client, "client_build", build)
    assert reconciler._pass() is not None
    assert len(built) == 2
