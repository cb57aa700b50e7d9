"""The `diagnostic` kind: hold the lanes for a while, optionally burning CPU.

It exercises everything but the model: admission, worker processes, progress, cancel,
faults and telemetry. Tests, benchmarks and operators checking a deployment use it.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gpu_service.workloads.base import JobContext, Kind


class DiagnosticSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seconds: float = Field(1.0, ge=0, le=86_400, description="how long to hold the lanes")
    burn_cpu: bool = Field(False, description="spin a CPU core instead of sleeping")
    step_s: float = Field(1.0, gt=0, le=60, description="progress and fault-point interval")


def diagnostic_run(ctx: JobContext) -> dict[str, Any]:
    spec = DiagnosticSpec.model_validate(ctx.spec)
    steps = max(1, math.ceil(spec.seconds / spec.step_s))
    ctx.set_metrics(worker_pid=os.getpid())
    ctx.progress(stage="holding", batch=0, batches=steps, fraction=0.0)
    started = time.monotonic()
    for step in range(steps):
        if ctx.should_stop():
            ctx.logger.info("stop requested at step %s", step)
            return {"steps_done": step, "stopped": True, "seconds": time.monotonic() - started}
        ctx.fault_point(step)
        deadline = started + min(spec.seconds, (step + 1) * spec.step_s)
        _hold_until(deadline=deadline, burn_cpu=spec.burn_cpu, ctx=ctx)
        ctx.progress(batch=step + 1, fraction=(step + 1) / steps)
    return {
        "steps_done": steps,
        "stopped": False,
        "seconds": time.monotonic() - started,
        "burned_cpu": spec.burn_cpu,
        "devices": ctx.devices,
    }


def _hold_until(*, deadline: float, burn_cpu: bool, ctx: JobContext) -> None:
    while (now := time.monotonic()) < deadline and not ctx.should_stop():
        if burn_cpu:
            _spin(until=min(deadline, now + 0.05))
        else:
            time.sleep(min(0.05, deadline - now))


def _spin(*, until: float) -> None:
    x = 0
    while time.monotonic() < until:
        x = (x * 31 + 7) % 1_000_003


DIAGNOSTIC = Kind(name="diagnostic", spec_model=DiagnosticSpec, run=diagnostic_run)
