"""The queued jobs in admission order, kept in memory by the job manager.

The journal stays the record; this is its index for the hot paths. A submit, the pump
and the GPU view used to read and decode every queued row from SQLite (about 16 us per
queued job on every submit, so enqueueing N jobs cost O(N^2)). The manager, the one
writer of job records, adds a job here when it records it queued (submit, a resume,
start-up) and removes it when it leaves the queue (admitted, cancelled), so a submit
costs O(log N) and the pump reads the queue's head lazily.

The order is `admission.admission_order`'s (priority; within a priority, requests past
the starvation bound by submission time, then the rest by fair-share rank and submission
time), produced without sorting the whole queue: each priority keeps two sorted
indices, one by submission time (its head is whoever starves) and one by rank.
"""

from __future__ import annotations

import bisect
import itertools
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from gpu_service.admission import Request

_ByTime = tuple[float, int]  # (submitted_at, arrival)
_ByRank = tuple[float, float, int]  # (fair_share_rank, submitted_at, arrival)


@dataclass
class _Level:
    """The queued requests of one priority."""

    by_time: list[_ByTime] = field(default_factory=list)
    by_rank: list[_ByRank] = field(default_factory=list)


class Waitlist:
    def __init__(self) -> None:
        self._levels: dict[int, _Level] = {}
        self._priorities: list[int] = []  # sorted, highest first (stored negated)
        self._requests: dict[int, Request] = {}  # arrival -> request
        self._arrival_of: dict[str, int] = {}  # job id -> arrival
        self._kind_of: dict[str, str] = {}
        self._kinds: Counter[str] = Counter()
        self._arrivals = itertools.count()

    def __len__(self) -> int:
        return len(self._arrival_of)

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._arrival_of

    def add(self, request: Request, *, kind: str) -> None:
        """Queue it (again); a job already queued keeps its place."""
        if request.job_id in self._arrival_of:
            return
        arrival = next(self._arrivals)
        level = self._levels.get(request.priority)
        if level is None:
            level = self._levels[request.priority] = _Level()
            bisect.insort(self._priorities, -request.priority)
        bisect.insort(level.by_time, (request.submitted_at, arrival))
        bisect.insort(level.by_rank, (request.fair_share_rank, request.submitted_at, arrival))
        self._requests[arrival] = request
        self._arrival_of[request.job_id] = arrival
        self._kind_of[request.job_id] = kind
        self._kinds[kind] += 1

    def discard(self, job_id: str) -> None:
        arrival = self._arrival_of.pop(job_id, None)
        if arrival is None:
            return
        request = self._requests.pop(arrival)
        level = self._levels[request.priority]
        _remove(level.by_time, (request.submitted_at, arrival))
        _remove(level.by_rank, (request.fair_share_rank, request.submitted_at, arrival))
        if not level.by_time:
            del self._levels[request.priority]
            _remove(self._priorities, -request.priority)
        kind = self._kind_of.pop(job_id)
        self._kinds[kind] -= 1
        if not self._kinds[kind]:
            del self._kinds[kind]

    def requests(self, *, now: float, starvation_bound_s: float) -> Iterator[Request]:
        """In admission order, lazily: a plan that stops early reads only the head.
        Iterates over snapshots, so admitting while iterating is safe."""
        starving_since = now - starvation_bound_s
        for negated in list(self._priorities):
            level = self._levels.get(-negated)
            if level is None:
                continue
            by_time, by_rank = list(level.by_time), list(level.by_rank)
            for submitted_at, arrival in by_time:
                if submitted_at > starving_since:
                    break
                if arrival in self._requests:
                    yield self._requests[arrival]
            for _, submitted_at, arrival in by_rank:
                if submitted_at > starving_since and arrival in self._requests:
                    yield self._requests[arrival]

    def head(
        self, count: int, *, now: float, starvation_bound_s: float
    ) -> list[tuple[Request, str]]:
        """The first `count` queued requests, each with its job's kind."""
        requests = itertools.islice(
            self.requests(now=now, starvation_bound_s=starvation_bound_s), count
        )
        return [(request, self._kind_of[request.job_id]) for request in requests]

    def kinds(self) -> Counter[str]:
        return Counter(self._kinds)

    def extend(self, pairs: Iterable[tuple[Request, str]]) -> None:
        for request, kind in pairs:
            self.add(request, kind=kind)


def _remove(keys: list, key: object) -> None:
    del keys[bisect.bisect_left(keys, key)]
