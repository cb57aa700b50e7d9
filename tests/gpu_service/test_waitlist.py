"""The in-memory queue: admission order, one place per job, kinds counted."""

from __future__ import annotations

import random

from gpu_service.admission import Request, admission_order
from gpu_service.waitlist import Waitlist

NOW = {"now": 10.0, "starvation_bound_s": 3600.0}  # nobody starves unless a test says so


def request(job_id: str, *, priority: int = 0, at: float = 0.0, rank: float = 0.0) -> Request:
    return Request(
        job_id=job_id,
        gpus=1,
        gpu_ids=None,
        priority=priority,
        submitted_at=at,
        fair_share_rank=rank,
    )


def test_the_queue_is_in_priority_then_submission_then_arrival_order():
    waiting = Waitlist()
    waiting.add(request("late", at=2.0), kind="diagnostic")
    waiting.add(request("urgent", priority=5, at=3.0), kind="train")
    waiting.add(request("early", at=1.0), kind="diagnostic")
    waiting.add(request("early-too", at=1.0), kind="infer")

    assert [r.job_id for r in waiting.requests(**NOW)] == ["urgent", "early", "early-too", "late"]
    assert [(r.job_id, kind) for r, kind in waiting.head(2, **NOW)] == [
        ("urgent", "train"),
        ("early", "diagnostic"),
    ]


def test_a_job_is_queued_once_and_leaves_with_its_kind_count():
    waiting = Waitlist()
    waiting.add(request("a"), kind="diagnostic")
    waiting.add(request("a"), kind="diagnostic")
    waiting.add(request("b"), kind="diagnostic")
    assert len(waiting) == 2
    assert waiting.kinds() == {"diagnostic": 2}

    waiting.discard("a")
    waiting.discard("a")  # already gone: nothing happens
    assert "a" not in waiting
    assert "b" in waiting
    assert [r.job_id for r in waiting.requests(**NOW)] == ["b"]
    waiting.discard("b")
    assert waiting.kinds() == {}
    assert not waiting


def test_removing_jobs_while_reading_the_queue_is_safe():
    waiting = Waitlist()
    for n in range(5):
        waiting.add(request(f"j{n}", at=float(n)), kind="diagnostic")
    seen = []
    for item in waiting.requests(**NOW):
        seen.append(item.job_id)
        waiting.discard(item.job_id)
    assert seen == [f"j{n}" for n in range(5)]
    assert len(waiting) == 0


def test_fair_share_orders_within_a_priority_but_a_starving_job_goes_first():
    waiting = Waitlist()
    waiting.add(request("heavy-user", at=1.0, rank=50.0), kind="train")
    waiting.add(request("light-user", at=2.0, rank=1.0), kind="train")
    waiting.add(request("starving", at=0.0, rank=99.0), kind="train")

    order = waiting.requests(now=100.0, starvation_bound_s=100.0)
    assert [r.job_id for r in order] == ["starving", "light-user", "heavy-user"]
    order = waiting.requests(now=50.0, starvation_bound_s=100.0)
    assert [r.job_id for r in order] == ["light-user", "heavy-user", "starving"]


def test_the_waitlist_gives_exactly_the_admission_order_of_the_pure_rule():
    rng = random.Random(7)
    for _ in range(50):
        waiting = Waitlist()
        queue = [
            request(
                f"j{n}",
                priority=rng.choice([0, 0, 1, 5]),
                at=float(rng.randint(0, 40)),
                rank=float(rng.choice([0, 0.5, 2, 7])),
            )
            for n in range(30)
        ]
        for item in queue:
            waiting.add(item, kind="diagnostic")
        for gone in rng.sample(queue, 5):
            waiting.discard(gone.job_id)
            queue.remove(gone)
        now, bound = float(rng.randint(0, 60)), float(rng.choice([0, 10, 30]))
        # Ties (same keys) keep arrival order in both: the queue is in arrival order.
        expected = admission_order(queue, now=now, starvation_bound_s=bound)
        got = list(waiting.requests(now=now, starvation_bound_s=bound))
        assert [r.job_id for r in got] == [r.job_id for r in expected]
