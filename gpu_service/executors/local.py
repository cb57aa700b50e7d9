"""The local executor: attempts run in worker processes spawned on this machine.

The first implementation of the executor seam (base.py). Its GPUs are the runtime's
(NVML, or the simulated ones), all on this host; its workers are
`gpu_service.workers`: a fresh process per training attempt, one resident process per
GPU for inference. Workers die with the service (PR_SET_PDEATHSIG), so after a restart
there is nothing to reattach: `open` stops any that survived anyway, and the manager's
recovery resumes or interrupts their jobs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import socket

from gpu_service.executors.base import Attempt, EventSink
from gpu_service.runtime.base import GpuInfo, GpuRuntime, LaneLoad, RuntimeName
from gpu_service.settings import Settings
from gpu_service.workers.env import worker_env
from gpu_service.workers.parent import PoolConfig, WorkerPool, WorkerRecords


class LocalExecutor:
    name = "local"

    def __init__(self, *, settings: Settings, runtime: GpuRuntime, records: WorkerRecords):
        self._runtime = runtime
        self.runtime: RuntimeName = runtime.name
        self.host = socket.gethostname()
        self.pool = WorkerPool(
            config=PoolConfig(
                storage=str(settings.storage),
                runtime=runtime.name,
                log_level=settings.log_level.upper(),
                nice=settings.worker_nice,
                threads=settings.worker_threads if runtime.name == "simulated" else 0,
                cancel_grace_s=settings.cancel_grace_s,
                warm=settings.warm_workers,
                sched=settings.worker_sched,
                ioprio=settings.worker_ioprio,
            ),
            records=records,
            env=lambda gpu_ids: worker_env(settings=settings, runtime=runtime, gpu_ids=gpu_ids),
        )

    def inventory(self) -> list[GpuInfo]:
        return [dataclasses.replace(gpu, host=self.host) for gpu in self._runtime.inventory()]

    def observe_lanes(self, *, loads: dict[int, LaneLoad]) -> None:
        self._runtime.observe_lanes(loads=loads)

    async def open(self, *, sink: EventSink) -> None:
        self.pool.bind(asyncio.get_running_loop(), sink)
        self.pool.orphans_stop()

    def reattach(self, attempts: list[Attempt]) -> set[str]:
        return set()  # our workers died with the previous service (or open stopped them)

    def launch(self, attempt: Attempt) -> None:
        self.pool.job_start(attempt)

    def cancel(self, *, job_id: str, attempt: int) -> bool:
        return self.pool.job_cancel(job_id=job_id, attempt=attempt)

    def pid(self, *, job_id: str) -> int | None:
        """The worker process running the job, if any (tests and diagnostics)."""
        return self.pool.job_pid(job_id=job_id)

    async def close(self) -> None:
        await self.pool.shutdown()
