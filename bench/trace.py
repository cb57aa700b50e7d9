"""A seeded mixed trace for the scheduling benchmark, and a discrete-event simulation of
two admission policies over it: Carril's (`gpu_service.admission.Admission`, the
module the service runs) and strict first-in-first-out (head-of-line blocking).

All jobs arrive at time 0 in trace order. Durations are in seconds.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from gpu_service.admission import Admission, Request


@dataclass(frozen=True)
class TraceJob:
    index: int
    gpus: int  # 2: a DataParallel "training"; 1: an "inference"
    seconds: float


def trace_make(*, jobs: int, seed: int, unit_s: float) -> list[TraceJob]:
    rng = random.Random(seed)
    trace = []
    for index in range(jobs):
        if rng.random() < 0.35:
            trace.append(
                TraceJob(index=index, gpus=2, seconds=round(rng.uniform(3, 8) * unit_s, 3))
            )
        else:
            trace.append(
                TraceJob(index=index, gpus=1, seconds=round(rng.uniform(1, 3) * unit_s, 3))
            )
    if not any(job.gpus == 2 for job in trace):  # a tiny trace still mixes both kinds
        first = trace[0]
        trace[0] = TraceJob(index=0, gpus=2, seconds=first.seconds)
    return trace


def lower_bound(trace: list[TraceJob], *, gpus: int) -> float:
    """No schedule can finish before all GPU-seconds are spread evenly, nor before the
    longest job."""
    return max(sum(job.gpus * job.seconds for job in trace) / gpus, max(j.seconds for j in trace))


def schedule_figures(
    *, trace: list[TraceJob], starts: dict[int, float], ends: dict[int, float], gpus: int
) -> dict[str, float]:
    """Makespan, lane-held fraction and the longest wait of a two-GPU job, from 0."""
    makespan = max(ends.values())
    held = sum(job.gpus * (ends[job.index] - starts[job.index]) for job in trace)
    two_gpu_waits = [starts[job.index] for job in trace if job.gpus == 2]
    return {
        "makespan_s": makespan,
        "lower_bound_s": lower_bound(trace, gpus=gpus),
        "ratio": makespan / lower_bound(trace, gpus=gpus),
        "busy_fraction": held / (gpus * makespan),
        "longest_two_gpu_wait_s": max(two_gpu_waits, default=0.0),
    }


def simulate(
    *,
    trace: list[TraceJob],
    policy: str,
    gpus: int = 2,
    overhead_s: float = 0.0,
    starvation_bound_s: float = 300.0,
) -> dict[str, Any]:
    """Run the trace through `policy` ("carril" or "fifo"); each job holds its lanes for
    its duration plus `overhead_s` (a worker process starting)."""
    admission = Admission(
        capacities=dict.fromkeys(range(gpus), 1),
        memory_total_mib=dict.fromkeys(range(gpus), 24_576),
        starvation_bound_s=starvation_bound_s,
    )
    queue = [
        Request(job_id=str(job.index), gpus=job.gpus, gpu_ids=None, submitted_at=job.index * 1e-6)
        for job in trace
    ]
    by_id = {str(job.index): job for job in trace}
    starts: dict[int, float] = {}
    ends: dict[int, float] = {}
    running: dict[str, float] = {}  # job id -> end time
    now = 0.0
    while queue or running:
        plan = (
            admission.plan(queue=queue, now=now) if policy == "carril" else _fifo(admission, queue)
        )
        for request, chosen in plan:
            admission.hold(job_id=request.job_id, gpu_ids=chosen, memory_mib=0)
            job = by_id[request.job_id]
            starts[job.index] = now
            running[request.job_id] = now + job.seconds + overhead_s
            queue.remove(request)
        if not running:
            raise RuntimeError(f"{policy}: nothing runs and {len(queue)} jobs wait")
        now = min(running.values())
        for job_id in [j for j, end in running.items() if end <= now]:
            admission.release(job_id=job_id)
            ends[int(job_id)] = running.pop(job_id)
    return {"policy": policy, **schedule_figures(trace=trace, starts=starts, ends=ends, gpus=gpus)}


def _fifo(admission: Admission, queue: list[Request]) -> list[tuple[Request, tuple[int, ...]]]:
    """Strict first-in-first-out: start jobs in order until the first that does not fit."""
    free = [gpu for gpu, lane in admission.lanes.items() if lane.free_slots > 0]
    plan = []
    for request in queue:
        if request.gpus > len(free):
            break
        chosen, free = tuple(free[: request.gpus]), free[request.gpus :]
        plan.append((request, chosen))
    return plan
