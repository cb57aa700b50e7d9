"""Delivery: handing jobs, and cancels, to the GPU service.

A submitted job is claimed with a conditional UPDATE (so the web request's on-commit
delivery and any number of reconcilers never deliver it twice at once), sent with its
own id as the GPU service's job id (so a delivery whose answer was lost is answered 200
with the same job next time), and backed off exponentially while the GPU service
cannot be reached. A refusal (4xx) fails the job with the GPU service's own code.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import gpu_client
from carril_web.errors import GpuServiceUnavailable
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from gpu_service.contract import JobStatus
from jobs.models import REMOTE_STATES, Job, JobState, ReconcilerStatus

logger = logging.getLogger(__name__)

CLAIM_SECONDS = 30


@contextmanager
def _client(given: gpu_client.GpuClient | None) -> Iterator[gpu_client.GpuClient]:
    """The caller's client (the reconciler keeps one for its life), or one for this call."""
    if given is not None:
        yield given
        return
    with gpu_client.client_build() as built:
        yield built


def backoff(attempts: int) -> timedelta:
    return timedelta(seconds=min(2 ** min(attempts, 16), settings.CARRIL_DISPATCH_BACKOFF_MAX_S))


def job_dispatch(*, job_id: uuid.UUID, client: gpu_client.GpuClient | None = None) -> bool:
    """Deliver one submitted job; True if the GPU service has it now.

    Safe to call from several places at once: the row is claimed with a conditional
    UPDATE, and the GPU service takes the job's id as its own, so a delivery it got but
    we never heard back about is answered with the same job next time.
    """
    now = timezone.now()
    claimed = Job.objects.filter(
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now),
        id=job_id,
        state=JobState.SUBMITTED,
    ).update(claimed_until=now + timedelta(seconds=CLAIM_SECONDS))
    if not claimed:
        return False
    job = Job.objects.get(id=job_id)
    try:
        with _client(client) as gpu:
            accepted = gpu.job_submit(
                job_id=str(job.id),
                kind=job.kind,
                spec=job.spec,
                gpus=job.gpus,
                request_id=job.request_id or None,
            )
    except GpuServiceUnavailable as exc:
        _dispatch_failed(job=job, reason=f"{exc.message} {exc.details}")
        return False
    except gpu_client.GpuServiceRefused as exc:
        # Refused for good (bad spec, more GPUs than exist...): the job fails with the
        # GPU service's own code, so retrying cannot turn into a loop.
        _dispatch_refused(job=job, exc=exc)
        return False
    state = accepted.state if accepted.state in REMOTE_STATES else JobState.QUEUED
    now = timezone.now()
    delivered = Job.objects.filter(id=job.id, state=JobState.SUBMITTED).update(
        state=state,
        dispatched_at=now,
        claimed_until=None,
        last_dispatch_error="",
        next_attempt_at=None,
        updated_at=now,
    )
    if not delivered:
        # Cancelled while we were delivering: tell the GPU service too.
        Job.objects.filter(id=job.id).update(dispatched_at=now, cancel_pending=True)
        cancel_deliver(job_id=job.id)
    logger.info("job %s delivered (%s)", job.id, accepted.state)
    return bool(delivered)


def _dispatch_failed(*, job: Job, reason: str) -> None:
    attempts = job.dispatch_attempts + 1
    Job.objects.filter(id=job.id, state=JobState.SUBMITTED).update(
        dispatch_attempts=attempts,
        next_attempt_at=timezone.now() + backoff(attempts),
        claimed_until=None,
        last_dispatch_error=reason[:1000],
    )
    ReconcilerStatus.objects.dispatch_failed()
    logger.warning("job %s not delivered (attempt %s): %s", job.id, attempts, reason)


def _dispatch_refused(*, job: Job, exc: gpu_client.GpuServiceRefused) -> None:
    now = timezone.now()
    Job.objects.filter(id=job.id, state=JobState.SUBMITTED).update(
        state=JobState.FAILED,
        error_code=exc.code,
        error_message=exc.message,
        claimed_until=None,
        finished_at=now,
        updated_at=now,
    )
    ReconcilerStatus.objects.dispatch_failed()
    logger.warning("job %s refused by the GPU service: %s", job.id, exc)


def jobs_dispatch_due(*, client: gpu_client.GpuClient, limit: int = 50) -> int:
    """Deliver submitted jobs whose backoff has passed, oldest first."""
    now = timezone.now()
    due = (
        Job.objects.filter(state=JobState.SUBMITTED)
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
        .order_by("created_at")
        .values_list("id", flat=True)[:limit]
    )
    delivered = 0
    for job_id in list(due):
        if job_dispatch(job_id=job_id, client=client):
            delivered += 1
    return delivered


def cancel_deliver(
    *, job_id: uuid.UUID | str, client: gpu_client.GpuClient | None = None
) -> JobStatus | None:
    """Tell the GPU service to stop a delivered job; its record if it answered.

    If it cannot be reached, `cancel_pending` stays set and the reconciler tries again.
    """
    if not Job.objects.filter(id=job_id, dispatched_at__isnull=False).exists():
        return None
    try:
        with _client(client) as gpu:
            record = gpu.job_cancel(job_id=str(job_id))
    except GpuServiceUnavailable:
        return None  # cancel_pending stays set; the reconciler retries
    except gpu_client.GpuServiceRefused as exc:
        # 409: it already finished; 404: it is gone. Either way nothing is left to stop.
        logger.info("cancel of job %s refused: %s", job_id, exc)
        Job.objects.filter(id=job_id).update(cancel_pending=False)
        return None
    Job.objects.filter(id=job_id).update(cancel_pending=False)
    return record
