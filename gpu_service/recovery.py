"""Start-up reconciliation: nothing stays `running` forever, nothing is silently dropped.

A job the journal says is running, and that the executor did not reattach, has no
worker any more (the service stopped, its workers died with it). Resumable kinds
(training) go back to the queue with attempt + 1 and keep their job dir, so they
continue from their checkpoint; the rest fail with INTERRUPTED, a distinct code a client
may retry on. A worker that *crashed* while the service kept running is not retried
here: that crash may be the job's own doing. Recovery decides; the manager writes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from gpu_service.journal import ACTIVE, JobState
from gpu_service.manager import JobManager

log = logging.getLogger(__name__)


@dataclass
class Recovery:
    requeued: list[str] = field(default_factory=list)
    interrupted: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)


def journal_recover(
    *, manager: JobManager, reattached: set[str] | frozenset[str] = frozenset()
) -> Recovery:
    recovery = Recovery()
    max_attempts = manager.settings.max_attempts
    for job in manager.journal.jobs_list(states=ACTIVE, limit=1_000_000):
        if job.id in reattached:
            continue  # still running under the executor; it will report its end
        if job.state is JobState.CANCELLING:
            manager.cancelled_by_restart(job)
            recovery.cancelled.append(job.id)
        elif manager.resumable(job):
            manager.resume_after_restart(job)
            recovery.requeued.append(job.id)
        else:
            kind = manager.kinds.get(job.kind)
            reason = (
                "its kind cannot resume"
                if kind is None or not kind.resumable
                else f"it already ran {job.attempt} of {max_attempts} attempts"
            )
            manager.interrupted_by_restart(job, reason=reason)
            recovery.interrupted.append(job.id)
    if recovery.requeued or recovery.interrupted or recovery.cancelled:
        log.warning(
            "start-up recovery: %d resumed, %d interrupted, %d cancelled",
            len(recovery.requeued),
            len(recovery.interrupted),
            len(recovery.cancelled),
        )
    return recovery
