"""The in-memory queue: admission order, one place per job, kinds counted."""

from __future__ import annotations

from gpu_service.admission import Request
from gpu_service.waitlist import Waitlist


def request(job_id: str, *, priority: int = 0, at: float = 0.0) -> Request:
    return Request(job_id=job_id, gpus=1, gpu_ids=None, priority=priority, submitted_at=at)


def test_the_queue_is_in_priority_then_submission_then_arrival_order():
    waiting = Waitlist()
    waiting.add(request("late", at=2.0), kind="diagnostic")
    waiting.add(request("urgent", priority=5, at=3.0), kind="train")
    waiting.add(request("early", at=1.0), kind="diagnostic")
    waiting.add(request("early-too", at=1.0), kind="infer")

    assert [r.job_id for r in waiting.requests()] == ["urgent", "early", "early-too", "late"]
    assert [(r.job_id, kind) for r, kind in waiting.head(2)] == [
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
    assert [r.job_id for r in waiting.requests()] == ["b"]
    waiting.discard("b")
    assert waiting.kinds() == {}
    assert not waiting


def test_removing_jobs_while_reading_the_queue_is_safe():
    waiting = Waitlist()
    for n in range(5):
        waiting.add(request(f"j{n}", at=float(n)), kind="diagnostic")
    seen = []
    for item in waiting.requests():
        seen.append(item.job_id)
        waiting.discard(item.job_id)
    assert seen == [f"j{n}" for n in range(5)]
    assert len(waiting) == 0
