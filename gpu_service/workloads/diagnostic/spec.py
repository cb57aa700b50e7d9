"""The `diagnostic` kind as the API process declares it: hold the lanes for a while,
optionally burning CPU (`diagnostic/run.py` does it in the worker).

It exercises everything but the model: admission, worker processes, progress, cancel,
faults and telemetry. Tests, benchmarks and operators checking a deployment use it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gpu_service.workloads.base import Kind


class DiagnosticSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seconds: float = Field(1.0, ge=0, le=86_400, description="how long to hold the lanes")
    burn_cpu: bool = Field(False, description="spin a CPU core instead of sleeping")
    step_s: float = Field(1.0, gt=0, le=60, description="progress and fault-point interval")
    worker: Literal["fresh", "resident"] = Field(
        "fresh",
        description=(
            "fresh: a process of its own, like a training; resident: the GPU's long-lived"
            " worker, like an inference (one-GPU jobs; a multi-GPU job always runs fresh)"
        ),
    )


def _worker(spec: DiagnosticSpec) -> Literal["fresh", "resident"]:
    return spec.worker


DIAGNOSTIC = Kind(name="diagnostic", spec_model=DiagnosticSpec, worker_choice=_worker)
