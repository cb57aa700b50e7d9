"""Admission: one lane per GPU, and the policy deciding which queued job takes which lanes.

Pure and synchronous (no I/O, no clock of its own), so every rule here is unit-tested
without processes. The scheduler owns one `Admission`, asks it for a plan after every
change, and holds and releases lanes as jobs start and end.

Rules:
- A job takes all of its lanes at once or none of them: no partial hold, so no two jobs
  can each hold half of what the other needs (no deadlock).
- Order is priority, then fair share, then submission time (`admission_order`, ADR
  0035): among equal priorities, the job whose owner used fewer GPU-hours this week
  (`fair_share_rank`, given by the client; 0 for all keeps submission order) goes
  first, except that a job already waiting past the starvation bound keeps its place
  by submission time. A job that cannot start now does not block
  the ones behind it (backfill)... until it has waited longer than `starvation_bound_s`:
  from then on, nothing behind it is admitted onto the lanes it needs, so they drain.
- Memory: a job's estimate (MiB per GPU) must fit each of its GPUs' free memory, and a
  request no GPU set could ever satisfy is refused up front instead of queued forever.
- Hosts: a job's GPUs are all on one host (a job is one process, DataParallel across its
  GPUs), so "could it ever fit" asks the largest host, not the sum of them. The local
  executor has one host, where this changes nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from gpu_service.errors import ResourceUnavailable


@dataclass(frozen=True)
class Request:
    job_id: str
    gpus: int  # how many lanes; len(gpu_ids) when those are given
    gpu_ids: tuple[int, ...] | None  # exactly these GPUs, or any `gpus` of them
    priority: int = 0
    submitted_at: float = 0.0
    memory_mib: int = 0  # needed on each of its GPUs
    # Lower goes first among equal priorities: the owner's GPU-hours this week (ADR 0035).
    fair_share_rank: float = 0.0


def admission_order(
    queue: Iterable[Request], *, now: float, starvation_bound_s: float
) -> list[Request]:
    """Priority first; within a priority, requests already waiting past the starvation
    bound by submission time (fair share may not push them further back), then the rest
    by fair-share rank and submission time. A stable sort: equal keys keep the order
    given (the journal's)."""

    def key(request: Request) -> tuple[int, int, float, float]:
        starving = now - request.submitted_at >= starvation_bound_s
        rank = 0.0 if starving else request.fair_share_rank
        return (-request.priority, 0 if starving else 1, rank, request.submitted_at)

    return sorted(queue, key=key)


@dataclass
class Lane:
    gpu: int
    capacity: int
    memory_total_mib: int
    host: str = "localhost"
    holders: dict[str, int] = field(default_factory=dict)  # job id -> memory it reserved

    @property
    def free_slots(self) -> int:
        return self.capacity - len(self.holders)

    @property
    def reserved_mib(self) -> int:
        return sum(self.holders.values())


class Admission:
    def __init__(
        self,
        *,
        capacities: dict[int, int],
        memory_total_mib: dict[int, int],
        starvation_bound_s: float,
        hosts: dict[int, str] | None = None,
    ) -> None:
        self.lanes = {
            gpu: Lane(
                gpu=gpu,
                capacity=capacity,
                memory_total_mib=memory_total_mib.get(gpu, 0),
                host=(hosts or {}).get(gpu, "localhost"),
            )
            for gpu, capacity in sorted(capacities.items())
        }
        self.starvation_bound_s = starvation_bound_s

    def lane_add(self, *, gpu: int, capacity: int, memory_total_mib: int, host: str) -> None:
        """A GPU that appeared after start-up (a host joined the cluster) gets its lane."""
        self.lanes[gpu] = Lane(
            gpu=gpu, capacity=capacity, memory_total_mib=memory_total_mib, host=host
        )
        self.lanes = dict(sorted(self.lanes.items()))

    # ---- at submit time -----------------------------------------------------------

    def check_possible(self, request: Request) -> None:
        """Raise ResourceUnavailable when no state of the lanes could ever admit this."""
        usable = [lane for lane in self.lanes.values() if lane.capacity > 0]
        if request.gpu_ids is not None:
            unknown = [g for g in request.gpu_ids if g not in self.lanes]
            if unknown:
                raise ResourceUnavailable(
                    f"no GPU {unknown[0]} here", details={"gpu_ids": unknown, "gpus": len(usable)}
                )
            closed = [g for g in request.gpu_ids if self.lanes[g].capacity == 0]
            if closed:
                raise ResourceUnavailable(
                    f"GPU {closed[0]} has a lane capacity of 0", details={"gpu_ids": closed}
                )
            candidates = [self.lanes[g] for g in request.gpu_ids]
            if len({lane.host for lane in candidates}) > 1:
                raise ResourceUnavailable(
                    "the GPUs asked for are on different hosts; a job runs on one",
                    details={"gpu_ids": list(request.gpu_ids)},
                )
        else:
            hosts = _by_host(usable)
            largest_host, largest = max(
                ((host, len(lanes)) for host, lanes in hosts.items()),
                key=lambda pair: (pair[1], pair[0]),
                default=("", 0),
            )
            if request.gpus > largest:
                details: dict[str, object] = {"requested": request.gpus, "available": largest}
                where = "this service has"
                if len(hosts) > 1:  # several hosts (a cluster): name the one that came closest
                    where = f"the largest host, {largest_host}, has"
                    details["largest_host"] = largest_host
                raise ResourceUnavailable(
                    f"asked for {request.gpus} GPUs; {where} {largest}", details=details
                )
            candidates = usable
        fitting = [lane for lane in candidates if lane.memory_total_mib >= request.memory_mib]
        enough_on_one_host = any(len(lanes) >= request.gpus for lanes in _by_host(fitting).values())
        if not enough_on_one_host or (
            request.gpu_ids is not None and len(fitting) != len(candidates)
        ):
            raise ResourceUnavailable(
                f"needs {request.memory_mib} MiB per GPU; not enough GPUs have that much",
                details={
                    "memory_estimate_mib": request.memory_mib,
                    "memory_total_mib": {lane.gpu: lane.memory_total_mib for lane in candidates},
                },
            )

    # ---- the plan -----------------------------------------------------------------

    def plan(
        self,
        *,
        queue: Iterable[Request],
        now: float,
        free_memory_mib: dict[int, int] | None = None,
        ordered: bool = False,
    ) -> list[tuple[Request, tuple[int, ...]]]:
        """Which queued requests to start now, and on which GPUs. Holds nothing.

        `queue` is put in admission order here (`admission_order`), unless `ordered` says
        it already is (the service's waitlist keeps it so); it is read only as far as
        needed: once no lane has a free slot nothing behind can start, so a full service
        plans in constant time whatever the queue's length. `free_memory_mib` is what the
        runtime reports; lanes also subtract what their holders reserved, because a job
        that just started may not have allocated its memory yet.
        """
        slots = {gpu: lane.free_slots for gpu, lane in self.lanes.items()}
        memory = {
            gpu: self._free_mib(lane, reported=(free_memory_mib or {}).get(gpu))
            for gpu, lane in self.lanes.items()
        }
        blocked: set[int] = set()
        admitted: list[tuple[Request, tuple[int, ...]]] = []
        if not ordered:
            queue = admission_order(queue, now=now, starvation_bound_s=self.starvation_bound_s)
        for request in queue:
            if not any(free > 0 and gpu not in blocked for gpu, free in slots.items()):
                break
            chosen = self._choose(request, slots=slots, memory=memory, blocked=blocked)
            if chosen is not None:
                for gpu in chosen:
                    slots[gpu] -= 1
                    memory[gpu] -= request.memory_mib
                admitted.append((request, chosen))
            elif now - request.submitted_at >= self.starvation_bound_s:
                blocked |= self._lanes_to_drain(request, slots=slots, blocked=blocked)
        return admitted

    def _free_mib(self, lane: Lane, *, reported: int | None) -> int:
        by_reservation = lane.memory_total_mib - lane.reserved_mib
        return by_reservation if reported is None else min(reported, by_reservation)

    def _choose(
        self,
        request: Request,
        *,
        slots: dict[int, int],
        memory: dict[int, int],
        blocked: set[int],
    ) -> tuple[int, ...] | None:
        def fits(gpu: int) -> bool:
            return (
                gpu not in blocked
                and slots.get(gpu, 0) > 0
                and (request.memory_mib == 0 or memory[gpu] >= request.memory_mib)
            )

        if request.gpu_ids is not None:
            return request.gpu_ids if all(fits(g) for g in request.gpu_ids) else None
        # Prefer the emptiest lanes, so single-GPU jobs spread over the GPUs.
        free = sorted((g for g in self.lanes if fits(g)), key=lambda g: (-slots[g], g))
        chosen = self._first_host_with(request.gpus, free)
        return tuple(sorted(chosen)) if chosen is not None else None

    def _lanes_to_drain(
        self, request: Request, *, slots: dict[int, int], blocked: set[int]
    ) -> set[int]:
        """The lanes a starving request waits for; nothing new may start on them."""
        if request.gpu_ids is not None:
            return set(request.gpu_ids)
        # The lanes with the fewest holders drain first; earlier starving requests
        # already claimed theirs.
        candidates = sorted(
            (g for g, lane in self.lanes.items() if lane.capacity > 0 and g not in blocked),
            key=lambda g: (-slots[g], g),
        )
        return set(self._first_host_with(request.gpus, candidates) or candidates[: request.gpus])

    def _first_host_with(self, count: int, ordered: list[int]) -> list[int] | None:
        """The first `count` GPUs of one host, in the given order of preference: the host
        whose count-th GPU comes earliest in that order."""
        taken: dict[str, list[int]] = defaultdict(list)
        for gpu in ordered:
            same_host = taken[self.lanes[gpu].host]
            same_host.append(gpu)
            if len(same_host) == count:
                return same_host
        return None

    # ---- holding ------------------------------------------------------------------

    def hold(self, *, job_id: str, gpu_ids: tuple[int, ...] | list[int], memory_mib: int) -> None:
        lanes = [self.lanes[g] for g in gpu_ids]
        if any(lane.free_slots <= 0 for lane in lanes):
            raise ResourceUnavailable("lane already full", details={"gpu_ids": list(gpu_ids)})
        for lane in lanes:
            lane.holders[job_id] = memory_mib

    def release(self, *, job_id: str) -> list[int]:
        released = []
        for lane in self.lanes.values():
            if lane.holders.pop(job_id, None) is not None:
                released.append(lane.gpu)
        return released

    def holding(self, *, job_id: str) -> list[int]:
        return [lane.gpu for lane in self.lanes.values() if job_id in lane.holders]


def _by_host(lanes: Iterable[Lane]) -> dict[str, list[Lane]]:
    hosts: dict[str, list[Lane]] = defaultdict(list)
    for lane in lanes:
        hosts[lane.host].append(lane)
    return hosts
