"""What a job kind is, and what a running job may ask of the process that hosts it.

This is the seam between the service core (admission, journal, workers) and the
workloads (diagnostic, train, infer). Each kind is one package split by the process
that uses it: `<kind>/spec.py` is what the API process declares (a `Kind`: the spec,
submit-time checks, the memory estimate; it must not import torch), and `<kind>/run.py`
and its neighbours run in the worker (`gpu_service.workloads.runners`). Workloads know
nothing about HTTP, the journal or lanes: they get a `JobContext` in a child process
that is already pinned to its GPUs (CUDA_VISIBLE_DEVICES set before spawn), do their
work, report progress through the context, and return a JSON-able result (the
documents of `gpu_service.contract`) or raise a `CarrilError`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol

from pydantic import AfterValidator, BaseModel, Field

from gpu_service.contract import FINGERPRINT, IMGSZ_MAX, IMGSZ_MIN, IMGSZ_MULTIPLE

WorkerStyle = Literal["fresh", "resident"]


class JobContext(Protocol):
    """Handed to `Kind.run` inside the worker process."""

    job_id: str
    kind: str
    spec: dict[str, Any]  # already validated by Kind.spec_model; plain JSON
    attempt: int  # 1 on the first run; +1 each time the job is resumed after a restart
    storage: Path  # CARRIL_STORAGE, the same absolute path in every container
    job_dir: Path  # storage/jobs/<id>/: artifacts, checkpoints; survives restarts
    devices: list[int]  # ordinals as this process sees them (0..n-1); [] means CPU
    runtime: str  # "real" or "simulated"
    logger: logging.Logger  # writes to the job's log file (job_dir/job.log)

    def progress(self, **fields: Any) -> None:
        """Merge fields into the job's progress (stage, seed, seeds, epoch, epochs,
        batch, batches, fraction). Cheap to call per batch: the host throttles writes."""

    def epoch_metrics(self, record: dict[str, Any]) -> None:
        """Append one epoch's record (seed, epoch, losses, precision, recall, mAP50,
        mAP50-95) to the job's metrics history; always written."""

    def set_metrics(self, **fields: Any) -> None:
        """Merge summary metrics (e.g. best seed, its fitness) into the job's metrics."""

    def should_stop(self) -> bool:
        """True once a cancel was asked for; check it between steps."""

    def fault_point(self, step: int, *, batch: int | None = None) -> None:
        """Under the simulated runtime, trigger the faults a test asked for at this step
        (out-of-memory raises the error CUDA raises, see `simulated_oom`; crash kills the
        process). Kinds with a model call it from the forward pass, with the batch size.
        No-op otherwise."""


def _multiple_of_32(value: int) -> int:
    if value % IMGSZ_MULTIPLE:
        raise ValueError(f"must be a multiple of {IMGSZ_MULTIPLE}")
    return value


# An image size in pixels, as training and inference take it.
ImageSize = Annotated[
    int,
    Field(ge=IMGSZ_MIN, le=IMGSZ_MAX, description=f"multiple of {IMGSZ_MULTIPLE}"),
    AfterValidator(_multiple_of_32),
]


def _registered_weights(value: str) -> str:
    if not FINGERPRINT.match(value):
        raise ValueError("must be the sha256 fingerprint of registered weights")
    return value


# The weights an inference, export or evaluation runs: a registered version's fingerprint.
WeightsFingerprint = Annotated[
    str,
    Field(description="sha256 fingerprint of a registered model version"),
    AfterValidator(_registered_weights),
]

# What the worker calls for a kind (gpu_service.workloads.runners).
Runner = Callable[[JobContext], dict[str, Any]]


@dataclass(frozen=True)
class Kind:
    """A job kind the service can admit, as the API process declares it."""

    name: str
    spec_model: type[BaseModel]
    worker: WorkerStyle = "fresh"  # fresh: a new process per job; resident: one per GPU
    # The worker a given spec asks for, where the kind lets the job choose (diagnostic
    # jobs do: they check either path); None keeps `worker`.
    worker_choice: Callable[[BaseModel], WorkerStyle | None] = lambda spec: None
    resumable: bool = False  # may it run again after a restart with attempt + 1?
    default_gpus: int = 1
    # Memory a job needs on each of its GPUs, in MiB, when the request gives none.
    memory_estimate_mib: Callable[[BaseModel], int] = lambda spec: 0
    # Submit-time checks beyond the spec's shape (files exist, fingerprint known...).
    # Raise ValidationFailed / FileMissing / NotFound; runs in the API process, so it
    # must be quick and must not import torch.
    check: Callable[[BaseModel, Path], None] = lambda spec, storage: None
    # Why this spec can only run on a real CUDA GPU (a TensorRT engine), or None: such a
    # job is refused at submit on a service without one.
    needs_cuda: Callable[[BaseModel], str | None] = lambda spec: None

    def worker_for(self, spec: dict[str, Any]) -> WorkerStyle:
        """The worker style of a job with this (already validated) spec."""
        return self.worker_choice(self.spec_model.model_validate(spec)) or self.worker
