"""Journal records and runtime readings -> the public schemas."""

from __future__ import annotations

from datetime import UTC, datetime

from gpu_service.api.schemas import GpuPublic, GpusPublic, JobPublic, LanePublic
from gpu_service.contract import PROGRESS_KEYS, Progress
from gpu_service.journal import Job
from gpu_service.scheduler import Scheduler


def _when(ts: float | None) -> datetime | None:
    return datetime.fromtimestamp(ts, tz=UTC) if ts is not None else None


def job_public(job: Job) -> JobPublic:
    return JobPublic(
        id=job.id,
        kind=job.kind,  # type: ignore[arg-type]
        spec=job.spec,
        priority=job.priority,
        state=job.state.value,
        gpus_requested=job.gpus_requested,
        gpu_ids_requested=job.gpu_ids_requested,
        gpu_ids=job.gpu_ids,
        attempt=job.attempt,
        progress=progress_public(job.progress),
        metrics=job.metrics,
        result=job.result,
        error=job.error,  # type: ignore[arg-type]
        submitted_at=_when(job.submitted_at),  # type: ignore[arg-type]
        started_at=_when(job.started_at),
        finished_at=_when(job.finished_at),
        heartbeat_at=_when(job.heartbeat_at),
        request_id=job.request_id,
    )


def progress_public(progress: dict) -> Progress:
    """Every progress key, None when the job has not reported it (fraction: 0.0)."""
    document = {key: progress.get(key) for key in PROGRESS_KEYS}
    document["fraction"] = progress.get("fraction") or 0.0
    return Progress(**document)  # type: ignore[typeddict-item]


def gpus_public(scheduler: Scheduler) -> GpusPublic:
    lanes = scheduler.admission.lanes
    gpus = []
    for gpu in scheduler.runtime.inventory():
        lane = lanes.get(gpu.index)
        gpus.append(
            GpuPublic(
                index=gpu.index,
                name=gpu.name,
                uuid=gpu.uuid,
                memory_total_mib=gpu.memory_total_mib,
                memory_used_mib=gpu.memory_used_mib,
                memory_free_mib=gpu.memory_free_mib,
                utilization_pct=gpu.utilization_pct,
                temperature_c=gpu.temperature_c,
                power_w=gpu.power_w,
                lane=LanePublic(
                    capacity=lane.capacity if lane else 0,
                    holders=sorted(lane.holders) if lane else [],
                ),
            )
        )
    return GpusPublic(
        runtime=scheduler.runtime.name,
        gpus=gpus,
        queue=scheduler.queue_view(),  # type: ignore[arg-type]
    )
