"""Weights import and lookup, run in a spawned helper process.

Reading a checkpoint means importing torch and ultralytics; the API process must never
do that (CUDA, memory, import time). One spawned process, reused, does it instead.
"""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from gpu_service.errors import CarrilError, error_from_dict
from gpu_service.workers.child import die_with_parent
from gpu_service.workloads import weights


def _pool_init(parent_pid: int, env: dict[str, str], nice: int) -> None:
    die_with_parent(parent_pid=parent_pid)
    os.environ.update(env)
    if nice:  # loading a checkpoint is CPU work the API must not wait behind
        os.nice(nice)


def _call(action: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Runs in the helper; errors come back as data, so their codes survive pickling."""
    try:
        return {"value": getattr(weights, action)(**kwargs)}
    except CarrilError as exc:
        return {"error": exc.as_dict()}


class WeightsPool:
    def __init__(self, *, storage: Path, env: dict[str, str], nice: int = 0) -> None:
        self._storage = storage
        self._env = env
        self._nice = nice
        self._pool: ProcessPoolExecutor | None = None

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=1,
                mp_context=get_context("spawn"),
                initializer=_pool_init,
                initargs=(os.getpid(), self._env, self._nice),
            )
        return self._pool

    async def _run(self, action: str, **kwargs: Any) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        reply = await loop.run_in_executor(self._executor(), _call, action, kwargs)
        if "error" in reply:
            raise error_from_dict(reply["error"])
        return reply["value"]

    async def weights_import(self, *, src: Path) -> dict[str, Any]:
        return await self._run("import_weights", src=src, storage=self._storage)

    async def weights_describe(self, *, fingerprint: str) -> dict[str, Any]:
        return await self._run("describe_weights", fingerprint=fingerprint, storage=self._storage)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
