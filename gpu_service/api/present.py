"""Between the HTTP schemas and the core: request bodies -> core requests, journal
records and executor readings -> the public schemas."""

from __future__ import annotations

from datetime import UTC, datetime

from gpu_service.api.schemas import GpuPublic, GpusPublic, JobPublic, JobSubmit, LanePublic
from gpu_service.contract import PROGRESS_KEYS, Progress
from gpu_service.journal import Job
from gpu_service.manager import JobManager, Submission


def submission_of(body: JobSubmit) -> Submission:
    """The HTTP body as the plain request the core takes."""
    return Submission(
        kind=body.kind,
        spec=body.spec,
        gpus=body.gpus,
        gpu_ids=body.gpu_ids,
        priority=body.priority,
        job_id=body.job_id,
        memory_estimate_mib=body.memory_estimate_mib,
        simulate=body.simulate.model_dump(mode="json") if body.simulate else None,
        fair_share_rank=body.fair_share_rank,
    )


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
        usage=[
            {**used, "held_from": _when(used["held_from"]), "held_until": _when(used["held_until"])}
            for used in job.usage
        ],
    )


def progress_public(progress: dict) -> Progress:
    """Every progress key, None when the job has not reported it (fraction: 0.0)."""
    document = {key: progress.get(key) for key in PROGRESS_KEYS}
    document["fraction"] = progress.get("fraction") or 0.0
    return Progress(**document)  # type: ignore[typeddict-item]


def gpus_public(manager: JobManager) -> GpusPublic:
    lanes = manager.admission.lanes
    gpus = []
    for gpu in manager.executor.inventory():
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
                host=gpu.host,
                lane=LanePublic(
                    capacity=lane.capacity if lane else 0,
                    holders=sorted(lane.holders) if lane else [],
                ),
            )
        )
    return GpusPublic(
        runtime=manager.executor.runtime,
        gpus=gpus,
        queue=manager.queue_view(),  # type: ignore[arg-type]
        queued=len(manager.waitlist),
    )
