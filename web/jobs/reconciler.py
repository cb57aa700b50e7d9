"""The reconciler: the web's side of a job after delivery, in one pass.

One pass: deliver due submitted jobs (`delivery`, with backoff), refresh every
delivered, unfinished job through the batched status call (mirroring the GPU service's
record onto the row, registering trained weights, marking jobs the GPU service forgot
as lost, retrying cancels it missed), cache the GPU picture for the dashboard, and
record the pass in the reconciler's status row for `carril_web_reconciler_lag_seconds`.

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
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import gpu_client
from carril_web.errors import GpuServiceUnavailable
from django.db import close_old_connections, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from registry.exports import model_export_register_from_job
from registry.services import model_version_register_from_training
from retention.prune import PruneSchedule
from usage.services import usage_record
from webhooks.services import webhooks_pass

from gpu_service.contract import TERMINAL_STATES as REMOTE_TERMINAL_STATES
from gpu_service.contract import JobStatus
from jobs.delivery import cancel_deliver, jobs_dispatch_due
from jobs.models import ACTIVE_STATES, Job, JobKind, JobState, ReconcilerStatus
from jobs.run_metrics import final_metrics_of
from jobs.selectors import jobs_unfinished_exist

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PassOutcome:
    delivered: int
    refreshed: int
    reachable: bool
    active: bool = False  # some job is still unfinished after this pass


# --- refreshing -----------------------------------------------------------------------
def job_apply_remote(*, job_id: uuid.UUID | str, record: JobStatus) -> bool:
    """Mirror the GPU service's record of a job onto its row; True if the row changed.

    A cancel asked for here wins over a `queued`/`running` the service reports before
    it has acted on it, and nothing moves a job out of a terminal state.
    """
    remote_state = record["state"]
    job = Job.objects.filter(id=job_id).first()
    if job is None or job.is_terminal:
        return False
    state = remote_state
    if job.state == JobState.CANCELLING and remote_state in {"queued", "running"}:
        state = JobState.CANCELLING
    error = record["error"]
    fields: dict[str, Any] = {
        "state": state,
        "progress": record["progress"],
        "metrics": record["metrics"],
        "final_metrics": final_metrics_of(metrics=record["metrics"], result=record["result"]),
        "result": record["result"],
        "gpu_ids": record["gpu_ids"],
        "started_at": _when(record["started_at"]) or job.started_at,
        "finished_at": _when(record["finished_at"]),
        "error_code": error["code"] if error else "",
        "error_message": error["message"] if error else "",
        "updated_at": timezone.now(),
    }
    if state in REMOTE_TERMINAL_STATES and fields["finished_at"] is None:
        fields["finished_at"] = timezone.now()
    with transaction.atomic():
        changed = (
            Job.objects.filter(id=job_id, state__in=ACTIVE_STATES)
            .exclude(state=JobState.SUBMITTED, dispatched_at__isnull=True)
            .update(**fields)
        )
        usage_record(job_id=job_id, usage=record.get("usage") or [])
        if changed and state == JobState.SUCCEEDED and job.kind == JobKind.TRAIN:
            job.refresh_from_db()
            model_version_register_from_training(job=job)
        elif changed and state == JobState.SUCCEEDED and job.kind == JobKind.EXPORT:
            job.refresh_from_db()
            model_export_register_from_job(job=job)
    return bool(changed)


def _when(value: Any) -> datetime | None:
    if not value:
        return None
    return parse_datetime(value) if isinstance(value, str) else value


def job_mark_lost(*, job_id: uuid.UUID | str) -> bool:
    now = timezone.now()
    return bool(
        Job.objects.filter(id=job_id, state__in=ACTIVE_STATES, dispatched_at__isnull=False).update(
            state=JobState.LOST,
            error_code="LOST",
            error_message="The GPU service no longer knows this job.",
            finished_at=now,
            updated_at=now,
        )
    )


def _cancel_retry(*, job_id: uuid.UUID | str, client: gpu_client.GpuClient) -> None:
    record = cancel_deliver(job_id=job_id, client=client)
    if record is not None:
        job_apply_remote(job_id=job_id, record=record)


def job_refresh_many(*, client: gpu_client.GpuClient, batch_size: int = 500) -> int:
    """Refresh every delivered, unfinished job through the batched status call.

    Raises GpuServiceUnavailable if the service cannot answer: nothing is marked lost
    on a failed call, only on an answer that lists the job as missing.
    """
    rows = [
        (str(job_id), cancel_pending)
        for job_id, cancel_pending in Job.objects.filter(
            state__in=ACTIVE_STATES, dispatched_at__isnull=False
        ).values_list("id", "cancel_pending")
    ]
    changed = 0
    for start in range(0, len(rows), batch_size):
        chunk = rows[start : start + batch_size]
        asked = {job_id for job_id, _ in chunk}
        status = client.jobs_status(ids=list(asked))
        for record in status.jobs:
            job_id = record["id"]
            if job_id in asked and job_apply_remote(job_id=job_id, record=record):
                changed += 1
        for job_id in status.missing:
            if job_id in asked and job_mark_lost(job_id=job_id):
                logger.warning("job %s lost: the GPU service no longer knows it", job_id)
                changed += 1
        for job_id, cancel_pending in chunk:
            if cancel_pending:
                _cancel_retry(job_id=job_id, client=client)
    # A job cancelled while it was being delivered is `cancelled` here already, but the
    # GPU service may not have heard: keep telling it until it has.
    stranded = Job.objects.filter(
        state=JobState.CANCELLED, cancel_pending=True, dispatched_at__isnull=False
    ).values_list("id", flat=True)
    for job_id in list(stranded):
        _cancel_retry(job_id=job_id, client=client)
    return changed


def gpus_snapshot_store(*, client: gpu_client.GpuClient) -> None:
    """Keep the GPU service's /v1/gpus answer, so pages never wait on the GPU service."""
    try:
        snapshot = client.gpus()
    except (GpuServiceUnavailable, gpu_client.GpuServiceRefused) as exc:
        ReconcilerStatus.objects.gpus_failed(error=str(exc))
        return
    ReconcilerStatus.objects.gpus_stored(snapshot=snapshot, at=timezone.now())


# --- one pass ---------------------------------------------------------------------------

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
    # Last, after the jobs' own work, within its own time budget (ADR 0040).
    webhooks_pass()
    ReconcilerStatus.objects.pass_done(at=timezone.now())
    return PassOutcome(
        delivered=delivered,
        refreshed=refreshed,
        reachable=reachable,
        active=jobs_unfinished_exist(),
    )


# --- the loop ---------------------------------------------------------------------------
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
        self.prune = PruneSchedule(clock=clock)

    def stop(self, *_: object) -> None:
        self._stop.set()

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGTERM, self.stop)
        signal.signal(signal.SIGINT, self.stop)

    def run(self, *, once: bool = False) -> None:
        try:
            while not self._stop.is_set():
                outcome = self._pass()
                self.prune.run_if_due()  # retention: at start, then on its interval
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
