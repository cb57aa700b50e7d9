"""The `diagnostic` kind in the worker: hold the lanes, report progress, obey cancel
and the simulated faults."""

from __future__ import annotations

import math
import os
import time
from typing import Any

from gpu_service.workloads.base import JobContext
from gpu_service.workloads.diagnostic.spec import DiagnosticSpec


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
