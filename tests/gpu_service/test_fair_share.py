"""Fair share in admission (issue 16, ADR 0035): among equal priorities, the owner with
fewer GPU-hours this week goes first; priority still comes first, a job waiting past the
starvation bound keeps its place, and backfill still fills what the first cannot use."""

from __future__ import annotations

from gpu_service.admission import Admission, Request, admission_order

GIB = 1024


def one_gpu(*, bound: float = 60.0) -> Admission:
    return Admission(capacities={0: 1}, memory_total_mib={0: 24 * GIB}, starvation_bound_s=bound)


def req(job_id: str, *, rank: float = 0.0, at: float = 0.0, priority: int = 0, gpus: int = 1):
    return Request(
        job_id=job_id,
        gpus=gpus,
        gpu_ids=None,
        priority=priority,
        submitted_at=at,
        fair_share_rank=rank,
    )


def first(admission: Admission, queue: list[Request], *, now: float) -> list[str]:
    return [request.job_id for request, _ in admission.plan(queue=queue, now=now)]


def test_among_equal_priorities_the_lighter_user_goes_first():
    heavy = req("heavy", rank=40.0, at=1.0)
    light = req("light", rank=2.0, at=5.0)
    assert first(one_gpu(), [heavy, light], now=10.0) == ["light"]


def test_equal_ranks_keep_submission_order():
    queue = [req("a", at=1.0), req("b", at=2.0), req("c", at=3.0)]
    assert [r.job_id for r in admission_order(queue, now=4.0, starvation_bound_s=60)] == [
        "a",
        "b",
        "c",
    ]


def test_priority_comes_before_fair_share():
    heavy_but_urgent = req("urgent", rank=90.0, at=3.0, priority=5)
    light = req("light", rank=0.0, at=1.0)
    assert first(one_gpu(), [light, heavy_but_urgent], now=10.0) == ["urgent"]


def test_a_job_waiting_past_the_starvation_bound_is_not_pushed_back_by_fair_share():
    heavy = req("heavy", rank=40.0, at=0.0)
    light = req("light", rank=1.0, at=50.0)
    assert first(one_gpu(bound=60.0), [heavy, light], now=30.0) == ["light"]  # within bound
    assert first(one_gpu(bound=60.0), [heavy, light], now=61.0) == ["heavy"]  # past it


def test_backfill_still_starts_a_heavier_users_job_the_lighter_one_cannot_use():
    admission = Admission(
        capacities={0: 1, 1: 1}, memory_total_mib={0: 24 * GIB, 1: 24 * GIB}, starvation_bound_s=60
    )
    admission.hold(job_id="running", gpu_ids=[0], memory_mib=0)
    light_two_gpus = req("light", rank=1.0, at=1.0, gpus=2)
    heavy_one_gpu = req("heavy", rank=50.0, at=2.0)
    assert first(admission, [heavy_one_gpu, light_two_gpus], now=10.0) == ["heavy"]


def test_the_rank_a_client_gives_is_journalled_and_reaches_admission(make):
    from gpu_service.manager import Submission, request_of

    scheduler = make()
    scheduler.manager.admission.hold(job_id="busy", gpu_ids=[0, 1], memory_mib=0)
    job, _ = scheduler.manager.submit(
        Submission(kind="diagnostic", fair_share_rank=3.5), request_id=None
    )
    assert request_of(scheduler.manager.journal.job_get(job_id=job.id)).fair_share_rank == 3.5
