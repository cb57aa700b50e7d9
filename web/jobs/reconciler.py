"""The reconciler: delivers what is undelivered, refreshes what is unfinished.

One pass: dispatch due submitted jobs (with backoff), refresh every delivered,
unfinished job through the batched status call (registering trained weights and
marking jobs the GPU service forgot as lost), then cache the GPU picture for the
dashboard, and record the pass for `carril_web_reconciler_lag_seconds`.
"""

from __future__ import annotations

import logging
import signal
import threading
from dataclasses import dataclass

import gpu_client
from carril_web.errors import GpuServiceUnavailable
from django.db import close_old_connections

from jobs.services import (
    gpus_snapshot_store,
    job_refresh_many,
    jobs_dispatch_due,
    reconciler_pass_done,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PassOutcome:
    delivered: int
    refreshed: int
    reachable: bool


def reconcile_once(*, client: gpu_client.GpuClient) -> PassOutcome:
    delivered = jobs_dispatch_due(client=client)
    try:
        refreshed = job_refresh_many(client=client)
        reachable = True
    except GpuServiceUnavailable as exc:
        logger.warning("GPU service unavailable; jobs not refreshed: %s", exc.details)
        refreshed, reachable = 0, False
    gpus_snapshot_store(client=client)
    reconciler_pass_done()
    return PassOutcome(delivered=delivered, refreshed=refreshed, reachable=reachable)


class Reconciler:
    """The loop `manage.py reconcile` runs; SIGTERM/SIGINT end it after the current pass."""

    def __init__(self, *, interval_s: float):
        self.interval_s = interval_s
        self._stop = threading.Event()

    def stop(self, *_: object) -> None:
        self._stop.set()

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGTERM, self.stop)
        signal.signal(signal.SIGINT, self.stop)

    def run(self, *, once: bool = False) -> None:
        while not self._stop.is_set():
            try:
                with gpu_client.client_build() as client:
                    outcome = reconcile_once(client=client)
                if outcome.delivered or outcome.refreshed:
                    logger.info(
                        "reconciled: %s delivered, %s refreshed",
                        outcome.delivered,
                        outcome.refreshed,
                    )
            except Exception:  # the loop outlives any one bad pass; the log says why
                logger.exception("reconcile pass failed")
            if once:
                return
            self._stop.wait(self.interval_s)
            # Between passes, like between requests: drop connections the database closed.
            close_old_connections()
