"""The reconciler: delivers what is undelivered, refreshes what is unfinished.

One pass: dispatch due submitted jobs (with backoff), refresh every delivered,
unfinished job through the batched status call (registering trained weights and
marking jobs the GPU service forgot as lost), then cache the GPU picture for the
dashboard, and record the pass for `carril_web_reconciler_lag_seconds`.

The pace adapts (ADR 0011): while any job is unfinished and the GPU service answers,
passes come every `ACTIVE_INTERVAL_S`, so a person learns a job finished within a
fraction of a second; when nothing is unfinished, a full pass comes every configured
interval, and in between the loop only asks the database whether work has appeared.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import gpu_client
from carril_web.errors import GpuServiceUnavailable
from django.db import close_old_connections

from jobs.selectors import jobs_unfinished_exist
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
    active: bool = False  # some job is still unfinished after this pass


# Seconds between passes while jobs are unfinished; also how often an idle loop looks
# (in the database only) for new work.
ACTIVE_INTERVAL_S = 0.1


def reconcile_once(*, client: gpu_client.GpuClient, gpus: bool = True) -> PassOutcome:
    """One pass. Still one batched status call per 500 jobs, whatever the pace."""
    delivered = jobs_dispatch_due(client=client)
    try:
        refreshed = job_refresh_many(client=client)
        reachable = True
    except GpuServiceUnavailable as exc:
        logger.warning("GPU service unavailable; jobs not refreshed: %s", exc.details)
        refreshed, reachable = 0, False
    if gpus:
        gpus_snapshot_store(client=client)
    reconciler_pass_done()
    return PassOutcome(
        delivered=delivered,
        refreshed=refreshed,
        reachable=reachable,
        active=jobs_unfinished_exist(),
    )


class Reconciler:
    """The loop `manage.py reconcile` runs; SIGTERM/SIGINT end it after the current pass."""

    def __init__(
        self,
        *,
        interval_s: float,
        active_interval_s: float = ACTIVE_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.interval_s = interval_s
        self.active_interval_s = min(active_interval_s, interval_s)
        self._clock = clock
        self._stop = threading.Event()
        self._gpus_fetched_at: float | None = None
        # One client for the loop's life: building one costs tens of milliseconds (its TLS
        # context), which at the fast pace would be most of a pass.
        self._client: gpu_client.GpuClient | None = None

    def stop(self, *_: object) -> None:
        self._stop.set()

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGTERM, self.stop)
        signal.signal(signal.SIGINT, self.stop)

    def run(self, *, once: bool = False) -> None:
        try:
            while not self._stop.is_set():
                outcome = self._pass()
                if once:
                    return
                self.wait_after(outcome=outcome)
                # Between passes, like between requests: drop connections the database closed.
                close_old_connections()
        finally:
            self._client_drop()

    def _client_drop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _pass(self) -> PassOutcome | None:
        # The GPU picture is for people: the configured pace is enough, even when fast.
        now = self._clock()
        gpus = self._gpus_fetched_at is None or now - self._gpus_fetched_at >= self.interval_s
        try:
            if self._client is None:
                self._client = gpu_client.client_build()
            outcome = reconcile_once(client=self._client, gpus=gpus)
        except Exception:  # the loop outlives any one bad pass; the log says why
            logger.exception("reconcile pass failed")
            self._client_drop()  # start the next pass from a fresh client
            return None
        if gpus:
            self._gpus_fetched_at = now
        if outcome.delivered or outcome.refreshed:
            logger.info(
                "reconciled: %s delivered, %s refreshed", outcome.delivered, outcome.refreshed
            )
        return outcome

    def wait_after(self, *, outcome: PassOutcome | None) -> None:
        """Wait for the next pass: short while jobs run, the configured interval otherwise."""
        if outcome is None or not outcome.reachable:
            # A failing pass or an absent GPU service: do not knock faster than configured.
            self._stop.wait(self.interval_s)
            return
        if outcome.active:
            self._stop.wait(self.active_interval_s)
            return
        deadline = self._clock() + self.interval_s
        while True:
            left = deadline - self._clock()
            if left <= 0 or self._stop.wait(min(self.active_interval_s, left)):
                return
            try:
                if jobs_unfinished_exist():
                    return
            except Exception:  # a database hiccup: keep the configured pace, say why
                logger.exception("looking for unfinished jobs failed")
