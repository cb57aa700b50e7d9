"""Pick the executor from CARRIL_EXECUTOR: the local one (default), or Ray's."""

from __future__ import annotations

from gpu_service.executors.base import Executor
from gpu_service.executors.local import LocalExecutor
from gpu_service.runtime.base import GpuRuntime
from gpu_service.settings import Settings
from gpu_service.workers.parent import WorkerRecords


def executor_select(*, settings: Settings, runtime: GpuRuntime, records: WorkerRecords) -> Executor:
    if settings.executor == "ray":
        # Imported only in Ray mode: `make run` never loads Ray.
        from gpu_service.executors.ray import RayExecutor

        return RayExecutor(settings=settings)
    return LocalExecutor(settings=settings, runtime=runtime, records=records)
