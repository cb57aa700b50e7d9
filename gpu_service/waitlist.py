"""The queued jobs in admission order, kept in memory by the job manager.

The journal stays the record; this is its index for the hot paths. A submit, the pump
and the GPU view used to read and decode every queued row from SQLite (about 16 us per
queued job on every submit, so enqueueing N jobs cost O(N^2)). The manager, the one
writer of job records, adds a job here when it records it queued (submit, a resume,
start-up) and removes it when it leaves the queue (admitted, cancelled), so a submit
costs O(log N) and the pump reads the queue's head lazily.
"""

from __future__ import annotations

import bisect
import itertools
from collections import Counter
from collections.abc import Iterable, Iterator

from gpu_service.admission import Request

_Key = tuple[int, float, int]  # (-priority, submitted_at, arrival): admission order


class Waitlist:
    def __init__(self) -> None:
        self._keys: list[_Key] = []  # sorted
        self._requests: dict[_Key, Request] = {}
        self._key_of: dict[str, _Key] = {}  # job id -> its key
        self._kind_of: dict[str, str] = {}
        self._kinds: Counter[str] = Counter()
        self._arrivals = itertools.count()

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._key_of

    def add(self, request: Request, *, kind: str) -> None:
        """Queue it (again); a job already queued keeps its place."""
        if request.job_id in self._key_of:
            return
        key = (-request.priority, request.submitted_at, next(self._arrivals))
        bisect.insort(self._keys, key)
        self._requests[key] = request
        self._key_of[request.job_id] = key
        self._kind_of[request.job_id] = kind
        self._kinds[kind] += 1

    def discard(self, job_id: str) -> None:
        key = self._key_of.pop(job_id, None)
        if key is None:
            return
        del self._keys[bisect.bisect_left(self._keys, key)]
        del self._requests[key]
        kind = self._kind_of.pop(job_id)
        self._kinds[kind] -= 1
        if not self._kinds[kind]:
            del self._kinds[kind]

    def requests(self) -> Iterator[Request]:
        """In admission order, lazily: a plan that stops early reads only the head.
        Iterates over a snapshot of the order, so admitting while iterating is safe."""
        for key in list(self._keys):
            request = self._requests.get(key)
            if request is not None:
                yield request

    def head(self, count: int) -> list[tuple[Request, str]]:
        """The first `count` queued requests, each with its job's kind."""
        requests = [self._requests[key] for key in self._keys[:count]]
        return [(request, self._kind_of[request.job_id]) for request in requests]

    def kinds(self) -> Counter[str]:
        return Counter(self._kinds)

    def extend(self, pairs: Iterable[tuple[Request, str]]) -> None:
        for request, kind in pairs:
            self.add(request, kind=kind)
