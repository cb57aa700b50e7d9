"""Start-up reconciliation: nothing stays `running` forever, nothing is silently dropped.

A job the journal says is running has no worker any more (the service stopped, its
workers died with it). Resumable kinds (training) go back to the queue with attempt + 1
and keep their job dir, so they continue from their checkpoint; the rest fail with
INTERRUPTED, a distinct code a client may retry on. A worker that *crashed* while the
service kept running is not retried here: that crash may be the job's own doing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from gpu_service.errors import Interrupted
from gpu_service.journal import ACTIVE, JobState, Journal
from gpu_service.workloads.base import Kind

log = logging.getLogger(__name__)


@dataclass
class Recovery:
    requeued: list[str] = field(default_factory=list)
    interrupted: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)


def journal_recover(*, journal: Journal, kinds: dict[str, Kind], max_attempts: int) -> Recovery:
    recovery = Recovery()
    for job in journal.jobs_list(states=ACTIVE, limit=1_000_000):
        kind = kinds.get(job.kind)
        if job.state is JobState.CANCELLING:
            # It was being stopped on request; the stop is now complete.
            journal.job_finish_cancelled(job_id=job.id)
            recovery.cancelled.append(job.id)
        elif kind is not None and kind.resumable and job.attempt < max_attempts:
            journal.job_requeue(job_id=job.id)
            recovery.requeued.append(job.id)
        else:
            reason = (
                "its kind cannot resume"
                if kind is None or not kind.resumable
                else f"it already ran {job.attempt} of {max_attempts} attempts"
            )
            journal.job_fail(
                job_id=job.id,
                error=Interrupted(
                    details={"attempt": job.attempt, "reason": reason, "gpu_ids": job.gpu_ids}
                ),
            )
            recovery.interrupted.append(job.id)
    if recovery.requeued or recovery.interrupted or recovery.cancelled:
        log.warning(
            "start-up recovery: %d resumed, %d interrupted, %d cancelled",
            len(recovery.requeued),
            len(recovery.interrupted),
            len(recovery.cancelled),
        )
    return recovery
