"""What a worker runs for each kind: the worker-side half of every workload.

Imported by the child side of the workers (`gpu_service.workers.child`). None of these
modules imports torch or ultralytics at import time; they do so when a job runs, after
the worker has set its GPU and offline environment.
"""

from __future__ import annotations

from typing import Any

from gpu_service.workloads.base import JobContext, Runner
from gpu_service.workloads.diagnostic.run import diagnostic_run
from gpu_service.workloads.evaluate.run import evaluate_job
from gpu_service.workloads.export.run import export_job
from gpu_service.workloads.infer.run import infer_job
from gpu_service.workloads.train.run import train_job


def _train(ctx: JobContext) -> dict[str, Any]:
    return train_job(ctx=ctx)


def _infer(ctx: JobContext) -> dict[str, Any]:
    return infer_job(ctx=ctx)


def _export(ctx: JobContext) -> dict[str, Any]:
    return export_job(ctx=ctx)


def _evaluate(ctx: JobContext) -> dict[str, Any]:
    return evaluate_job(ctx=ctx)


RUNNERS: dict[str, Runner] = {
    "diagnostic": diagnostic_run,
    "train": _train,
    "infer": _infer,
    "export": _export,
    "evaluate": _evaluate,
}
