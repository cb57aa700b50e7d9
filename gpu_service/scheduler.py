"""The scheduler: when queued jobs start. A pump after every change, and a 1 s tick.

The pump asks admission for a plan (who may start now, on which lanes) and hands each
admitted job to the manager, which records it and launches it. The tick exists because
starvation bounds and real free memory change with time, not only on events; it also
prunes old finished records. Start-up runs the recovery of the previous run's jobs
before the first pump.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from gpu_service.manager import JobManager
from gpu_service.recovery import journal_recover

log = logging.getLogger(__name__)

TICK_S = 1.0
PRUNE_EVERY_S = 3600.0


class Scheduler:
    def __init__(self, *, manager: JobManager) -> None:
        self.manager = manager
        manager.wake = self.pump
        self._tick: asyncio.Task[None] | None = None
        self._last_prune = 0.0

    async def start(self) -> None:
        alive = await self.manager.open()
        journal_recover(manager=self.manager, reattached=alive)
        self.prune()
        self.pump()
        self._tick = asyncio.create_task(self._tick_forever(), name="scheduler-tick")

    async def stop(self) -> None:
        if self._tick is not None:
            self._tick.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._tick
        await self.manager.close()

    async def _tick_forever(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            try:
                self.manager.lanes_refresh()  # GPUs of hosts that joined a cluster
                self.pump()
                if time.time() - self._last_prune > PRUNE_EVERY_S:
                    self.prune()
            except Exception:
                log.exception("scheduler tick failed")

    def prune(self) -> int:
        self._last_prune = time.time()
        return self.manager.prune()

    def pump(self) -> None:
        """Start every queued job admission allows now."""
        manager = self.manager
        if manager.waitlist:
            free = None
            if manager.executor.runtime == "real":
                free = {gpu.index: gpu.memory_free_mib for gpu in manager.executor.inventory()}
            now = time.time()
            plan = manager.admission.plan(
                queue=manager.waitlist.requests(
                    now=now, starvation_bound_s=manager.admission.starvation_bound_s
                ),
                now=now,
                free_memory_mib=free,
                ordered=True,
            )
            for request, gpu_ids in plan:
                manager.admit(manager.journal.job_get(job_id=request.job_id), list(gpu_ids))
        manager.observe_lanes()
