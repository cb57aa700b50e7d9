"""The environment of every process that may import torch or ultralytics (workers and
the weights helper): pinned to its GPUs, offline, silent. Built in one place."""

from __future__ import annotations

from gpu_service.runtime.base import GpuRuntime
from gpu_service.settings import Settings
from gpu_service.workloads.offline import offline_environment


def worker_env(*, settings: Settings, runtime: GpuRuntime, gpu_ids: list[int]) -> dict[str, str]:
    env = dict(runtime.child_env(gpu_ids=gpu_ids))
    env.update(offline_environment(storage=settings.storage))
    env["CARRIL_INFER_CACHE_SIZE"] = str(settings.infer_cache_size)
    return env
