"""The GPU service's public HTTP contract (pydantic v2).

The documents the web app reads back (job status, progress, results) are defined once
in `gpu_service.contract` (standard library only, so the web app imports them too);
these models are the HTTP edge around them. Add fields; never rename or remove one.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpu_service.contract import JOB_ID_PATTERN, JobStateName, KindName, Progress

__all__ = ["JobStateName", "KindName"]


class SimulatedFaults(BaseModel):
    """Faults a test asks the simulated runtime to inject. Refused under the real runtime."""

    model_config = ConfigDict(extra="forbid")

    oom_at_step: int | None = Field(None, ge=0, description="raise CUDA out-of-memory at this step")
    oom_above_batch: int | None = Field(
        None, ge=1, le=4096, description="out of memory for every forward pass over this batch"
    )
    crash_at_step: int | None = Field(None, ge=0, description="kill the worker at this step")
    crash_mode: Literal["exit", "abort", "segfault"] = "exit"
    start_delay_s: float = Field(0.0, ge=0, le=600, description="slow start")


class JobSubmit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: KindName
    spec: dict[str, Any] = Field(default_factory=dict)
    gpus: int | None = Field(None, ge=1, le=64, description="how many GPUs, any of them")
    gpu_ids: list[int] | None = Field(None, min_length=1, max_length=64)
    priority: int = Field(0, ge=-100, le=100, description="higher runs first")
    job_id: str | None = Field(
        None,
        pattern=JOB_ID_PATTERN,
        description="the job's id (journal, storage folder, logs); a known id answers 200 "
        "with that job, so it is also the idempotency key. Generated when absent.",
    )
    memory_estimate_mib: int | None = Field(None, ge=0, le=10_000_000)
    simulate: SimulatedFaults | None = None
    fair_share_rank: float = Field(
        0.0,
        ge=0,
        le=1e12,
        description="among equal priorities, lower runs first (the web sends the owner's "
        "GPU-hours this week); waiting past the starvation bound overrides it",
    )

    @model_validator(mode="after")
    def _one_way_to_ask_for_gpus(self) -> JobSubmit:
        if self.gpus is not None and self.gpu_ids is not None:
            raise ValueError("give either gpus or gpu_ids, not both")
        if self.gpu_ids is not None and len(set(self.gpu_ids)) != len(self.gpu_ids):
            raise ValueError("gpu_ids must not repeat")
        return self


class JobAccepted(BaseModel):
    id: str
    state: JobStateName
    status_url: str


class ErrorBody(BaseModel):
    code: str
    message: str
    details: dict[str, Any] = Field(default_factory=dict)


class ErrorEnvelope(BaseModel):
    error: ErrorBody


class AttemptUsagePublic(BaseModel):
    attempt: int
    gpus: int
    held_from: datetime
    held_until: datetime
    gpu_seconds: float
    energy_wh: float
    energy_source: Literal["measured", "modelled"]
    gpu_model: str = ""


class JobPublic(BaseModel):
    id: str
    kind: KindName
    spec: dict[str, Any]
    priority: int
    state: JobStateName
    gpus_requested: int
    gpu_ids_requested: list[int] | None
    gpu_ids: list[int]  # the GPUs (lanes) it holds or held
    attempt: int
    progress: Progress  # every key present, None when unknown
    # {"epochs": [ {seed, epoch, box_loss, cls_loss, dfl_loss, precision, recall,
    #   mAP50, mAP50-95}, ...], plus summary fields}
    metrics: dict[str, Any]
    result: dict[str, Any] | None
    error: ErrorBody | None
    submitted_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    heartbeat_at: datetime | None
    request_id: str | None
    # One per attempt that held lanes: GPUs x wall time, and energy (issue 16).
    usage: list[AttemptUsagePublic] = Field(default_factory=list)


class JobsPublic(BaseModel):
    jobs: list[JobPublic]


class JobsStatusQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ids: list[str] = Field(max_length=1000)


class JobsStatus(BaseModel):
    jobs: list[JobPublic]
    missing: list[str]  # ids this service does not know (the web app marks them lost)


class JobLogs(BaseModel):
    job_id: str
    lines: list[str]


class LanePublic(BaseModel):
    capacity: int
    holders: list[str]  # job ids


class GpuPublic(BaseModel):
    index: int
    name: str
    uuid: str
    memory_total_mib: int
    memory_used_mib: int
    memory_free_mib: int
    utilization_pct: float
    temperature_c: float | None
    power_w: float | None
    host: str  # the machine it is on, as the executor reports it
    lane: LanePublic


class QueuedJob(BaseModel):
    id: str
    kind: KindName
    gpus: int
    gpu_ids: list[int] | None
    priority: int
    waited_s: float


class AdmissionCheck(BaseModel):
    """Could a job asking for this many GPUs ever be admitted here? The web asks before it
    creates a training, so a count no host has is refused at submit, not at delivery."""

    model_config = ConfigDict(extra="forbid")

    gpus: int = Field(ge=1, le=64, description="how many GPUs, any of them, on one host")


class AdmissionPossible(BaseModel):
    gpus: int = Field(description="the count asked about; some state of the lanes admits it")


class GpusPublic(BaseModel):
    runtime: Literal["real", "simulated"]
    gpus: list[GpuPublic]
    queue: list[QueuedJob] = Field(
        description="the head of the queue in admission order: its first 100 jobs"
    )
    queued: int = Field(0, description="how many jobs are queued in all")


class Health(BaseModel):
    status: Literal["ok"]
    runtime: Literal["real", "simulated"]
    simulated: bool
    gpus: int


class WeightsImport(BaseModel):
    """Register a .pt file already written to shared storage (under CARRIL_STORAGE)."""

    model_config = ConfigDict(extra="forbid")

    path: str


class MediaProbe(BaseModel):
    """A video or a zip of images already in shared storage, checked as an infer job's
    submit would check it, before the web creates that job (ADR 0048)."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, max_length=1000, description="mp4, webm, avi or zip")
    max_seconds: float = Field(600, gt=0, le=7200, description="longest video accepted")


class MediaPublic(BaseModel):
    kind: Literal["video", "archive"]
    fps: float | None = None
    frames: int | None = None
    seconds: float | None = None
    width: int | None = None
    height: int | None = None
    images: int | None = None  # a zip's image count


class WeightsPublic(BaseModel):
    fingerprint: str  # sha256 hex of the file's bytes
    task: str
    architecture: str | None
    class_names: list[str]
    imgsz: int | None
    size_bytes: int
