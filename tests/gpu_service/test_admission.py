from __future__ import annotations

import pytest

from gpu_service.admission import Admission, Request
from gpu_service.errors import ResourceUnavailable

GIB = 1024


def two_gpus(*, bound: float = 60.0, capacity: int = 1) -> Admission:
    return Admission(
        capacities={0: capacity, 1: capacity},
        memory_total_mib={0: 24 * GIB, 1: 24 * GIB},
        starvation_bound_s=bound,
    )


def req(job_id: str, *, gpus: int = 1, gpu_ids=None, priority=0, at=0.0, mib=0) -> Request:
    ids = tuple(gpu_ids) if gpu_ids is not None else None
    return Request(
        job_id=job_id,
        gpus=len(ids) if ids else gpus,
        gpu_ids=ids,
        priority=priority,
        submitted_at=at,
        memory_mib=mib,
    )


def admit(admission: Admission, queue: list[Request], *, now: float = 1.0, **kw):
    plan = admission.plan(queue=queue, now=now, **kw)
    for request, gpus in plan:
        admission.hold(job_id=request.job_id, gpu_ids=gpus, memory_mib=request.memory_mib)
    return {request.job_id: gpus for request, gpus in plan}


def test_it_reserves_both_lanes_together_for_a_two_gpu_job():
    admission = two_gpus()
    assert admit(admission, [req("train", gpus=2)]) == {"train": (0, 1)}
    assert admission.holding(job_id="train") == [0, 1]


def test_it_never_holds_part_of_a_multi_gpu_request():
    admission = two_gpus()
    admit(admission, [req("infer", gpus=1)])
    assert admit(admission, [req("train", gpus=2)]) == {}
    assert admission.holding(job_id="train") == []
    assert admission.lanes[1].holders == {}


def test_it_spreads_single_gpu_jobs_over_both_lanes():
    admission = two_gpus()
    assert admit(admission, [req("a"), req("b", at=0.1), req("c", at=0.2)]) == {
        "a": (0,),
        "b": (1,),
    }


def test_it_admits_higher_priority_first():
    admission = two_gpus()
    queue = [req("urgent", priority=5, at=2.0), req("old", at=0.0), req("older", at=-1.0)]
    queue.sort(key=lambda r: (-r.priority, r.submitted_at))
    assert set(admit(admission, queue, now=3.0)) == {"urgent", "older"}


def test_it_honours_explicit_gpu_ids():
    admission = two_gpus()
    admit(admission, [req("a", gpu_ids=[1])])
    assert admit(admission, [req("b", gpu_ids=[1]), req("c", gpu_ids=[0])]) == {"c": (0,)}


def test_small_jobs_backfill_a_free_lane_while_a_two_gpu_job_waits():
    admission = two_gpus(bound=60)
    admit(admission, [req("running")])
    queue = [req("train", gpus=2, at=0.0), req("small", at=1.0)]
    assert admit(admission, queue, now=2.0) == {"small": (1,)}


def test_a_starving_two_gpu_job_stops_new_work_on_the_lanes_it_needs():
    admission = two_gpus(bound=60)
    admit(admission, [req("running")])
    queue = [req("train", gpus=2, at=0.0), req("small", at=1.0)]
    assert admit(admission, queue, now=61.0) == {}
    admission.release(job_id="running")
    assert admit(admission, queue, now=62.0) == {"train": (0, 1)}


def test_a_starving_job_on_one_named_gpu_leaves_the_other_lane_usable():
    admission = two_gpus(bound=10)
    admit(admission, [req("running", gpu_ids=[0])])
    queue = [req("wants0", gpu_ids=[0], at=0.0), req("small", at=1.0), req("small0", gpu_ids=[0])]
    assert admit(admission, queue, now=20.0) == {"small": (1,)}


def test_it_refuses_a_job_that_needs_more_gpus_than_exist():
    with pytest.raises(ResourceUnavailable) as caught:
        two_gpus().check_possible(req("x", gpus=3))
    assert caught.value.details == {"requested": 3, "available": 2}


def test_it_refuses_a_gpu_id_that_does_not_exist():
    with pytest.raises(ResourceUnavailable):
        two_gpus().check_possible(req("x", gpu_ids=[0, 7]))


def test_it_refuses_more_memory_than_a_gpu_has():
    with pytest.raises(ResourceUnavailable):
        two_gpus().check_possible(req("x", mib=25 * GIB))


def test_it_accepts_a_request_that_fits_an_empty_machine():
    two_gpus().check_possible(req("x", gpus=2, mib=24 * GIB))


def test_it_waits_for_free_memory_on_a_shared_lane():
    admission = two_gpus(capacity=2)
    admit(admission, [req("a", gpu_ids=[0], mib=20 * GIB)])
    assert admit(admission, [req("b", gpu_ids=[0], mib=8 * GIB)]) == {}
    assert admit(admission, [req("c", gpu_ids=[0], mib=4 * GIB)]) == {"c": (0,)}


def test_it_trusts_the_runtime_when_it_reports_less_free_memory():
    admission = two_gpus()
    plan = admission.plan(
        queue=[req("a", mib=10 * GIB)], now=1.0, free_memory_mib={0: 1 * GIB, 1: 1 * GIB}
    )
    assert plan == []


def test_release_frees_every_lane_the_job_held():
    admission = two_gpus()
    admit(admission, [req("train", gpus=2)])
    assert admission.release(job_id="train") == [0, 1]
    assert admit(admission, [req("next", gpus=2)]) == {"next": (0, 1)}


def test_a_lane_with_capacity_two_admits_two_jobs():
    admission = Admission(capacities={0: 2}, memory_total_mib={0: 24 * GIB}, starvation_bound_s=60)
    assert admit(admission, [req("a"), req("b"), req("c")]) == {"a": (0,), "b": (0,)}


def two_hosts() -> Admission:
    """Two machines (as a Ray executor reports them): a with GPUs 0-2, b with GPUs 3-4."""
    return Admission(
        capacities=dict.fromkeys(range(5), 1),
        memory_total_mib=dict.fromkeys(range(5), 24 * GIB),
        hosts={0: "a", 1: "a", 2: "a", 3: "b", 4: "b"},
        starvation_bound_s=60,
    )


def test_a_job_could_ever_fit_only_if_one_host_has_enough_gpus():
    admission = two_hosts()
    admission.check_possible(req("three", gpus=3))
    with pytest.raises(ResourceUnavailable, match="largest host, a, has 3") as refused:
        admission.check_possible(req("four", gpus=4))
    assert refused.value.details["largest_host"] == "a"
    with pytest.raises(ResourceUnavailable, match="different hosts"):
        admission.check_possible(req("split", gpu_ids=[2, 3]))


def test_a_multi_gpu_job_is_placed_on_one_host():
    admission = two_hosts()
    admission.hold(job_id="busy", gpu_ids=[0], memory_mib=0)
    # Four lanes are free in all (1, 2, 3, 4), but no host has three of them.
    assert admission.plan(queue=[req("three", gpus=3)], now=0) == []
    [(_, chosen)] = admission.plan(queue=[req("two", gpus=2)], now=0)
    assert chosen in {(1, 2), (3, 4)}


def test_once_every_lane_is_taken_the_plan_reads_no_further_into_the_queue():
    admission = two_gpus()
    read = []

    def queue():
        for n in range(10_000):
            read.append(n)
            yield req(f"j{n}", at=float(n))

    # An ordered queue (the service's waitlist) is read lazily.
    assert admit(admission, queue(), ordered=True) == {"j0": (0,), "j1": (1,)}
    assert len(read) == 3  # the third finds no free lane: nothing behind it can start
    read.clear()
    assert admit(admission, queue(), ordered=True) == {}
    assert len(read) == 1
