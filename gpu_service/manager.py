"""The job manager: the one writer of the journal's job records.

Every state change of a job goes through here, together with what must change with it:
the lanes it holds (admission) and the service's metrics. The manager hands admitted
jobs to an executor (the seam, `gpu_service.executors.base`) and hears back from it
through `on_event`; every event carries (job_id, attempt), and an event from any attempt
but the live one is dropped (fencing). The scheduler decides *when* queued jobs start
(its tick and `pump`); recovery decides what a restart does to running jobs; both act
through the manager's methods.

Runs on the event loop, except `on_event`, which executors call from their own
threads: progress is written from there (the journal is thread-safe), ends hop to the
loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from gpu_service.accounting import EnergyMeter, attempt_usage
from gpu_service.admission import Admission, Request
from gpu_service.errors import (
    CarrilError,
    Interrupted,
    ValidationFailed,
    WorkerCrashed,
    state_conflict,
)
from gpu_service.executors.base import (
    Attempt,
    AttemptEnded,
    AttemptEvent,
    AttemptHeartbeat,
    EpochReported,
    Event,
    Executor,
    MetricsReported,
    ProgressReported,
    WorkerRestarted,
)
from gpu_service.journal import ACTIVE, TERMINAL, Job, JobState, Journal
from gpu_service.logging import job_logged
from gpu_service.metrics import ServiceMetrics
from gpu_service.runtime.base import LaneLoad
from gpu_service.settings import Settings
from gpu_service.waitlist import Waitlist
from gpu_service.workloads.base import Kind

log = logging.getLogger(__name__)

QUEUE_VIEW_LIMIT = 100  # queued jobs listed by the GPU view (it also gives the count)
PROGRESS_INTERVAL_S = 0.25  # at most ~4 progress writes per second per job
HEARTBEAT_INTERVAL_S = 5.0


@dataclass(frozen=True)
class Submission:
    """A job as a client asks for it (the HTTP layer builds it from its own schema)."""

    kind: str
    spec: dict[str, Any] = field(default_factory=dict)
    gpus: int | None = None
    gpu_ids: list[int] | None = None
    priority: int = 0
    job_id: str | None = None
    memory_estimate_mib: int | None = None
    simulate: dict[str, Any] | None = None
    fair_share_rank: float = 0.0  # lower first among equal priorities (ADR 0035)


def request_of(job: Job) -> Request:
    ids = tuple(job.gpu_ids_requested) if job.gpu_ids_requested is not None else None
    return Request(
        job_id=job.id,
        gpus=len(ids) if ids else job.gpus_requested,
        gpu_ids=ids,
        priority=job.priority,
        submitted_at=job.submitted_at,
        memory_mib=job.memory_estimate_mib,
        fair_share_rank=job.fair_share_rank,
    )


@dataclass
class AttemptReport:
    """What the live attempt of one job has reported: written to the journal, progress
    throttled (and heartbeats while it is quiet), epoch and summary metrics always."""

    journal: Journal
    job_id: str
    attempt: int
    metrics: dict[str, Any]
    progress: dict[str, Any] = field(default_factory=dict)
    pending: bool = False
    last_write: float = 0.0  # the last write of reported progress (what is throttled)
    last_beat: float = 0.0  # the last write of any kind (a quiet job's heartbeat)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handle(self, event: AttemptEvent) -> None:
        with self.lock:
            if isinstance(event, ProgressReported):
                self.progress = event.progress
                self.pending = True
                self._flush(force=False)
            elif isinstance(event, EpochReported):
                # Stamped with its attempt: after a resume, the page can say at which
                # epoch the earlier attempt was interrupted.
                record = {**event.record, "attempt": self.attempt}
                self.metrics.setdefault("epochs", []).append(record)
                self.journal.job_metrics(job_id=self.job_id, metrics=self.metrics)
            elif isinstance(event, MetricsReported):
                self.metrics.update(event.fields)
                self.journal.job_metrics(job_id=self.job_id, metrics=self.metrics)
            elif isinstance(event, AttemptHeartbeat):
                self._flush(force=False)

    def flush(self) -> None:
        with self.lock:
            self._flush(force=True)

    def _flush(self, *, force: bool) -> None:
        now = time.monotonic()
        progress_due = self.pending and (force or now - self.last_write >= PROGRESS_INTERVAL_S)
        heartbeat_due = now - self.last_beat >= HEARTBEAT_INTERVAL_S
        if progress_due or heartbeat_due:
            self.journal.job_progress(job_id=self.job_id, progress=self.progress)
            self.last_beat = now
            # A heartbeat with nothing new does not hold back the progress that follows
            # it (an attempt's first report comes right after the heartbeat of its start).
            if self.pending:
                self.pending = False
                self.last_write = now


class JobManager:
    def __init__(
        self,
        *,
        settings: Settings,
        executor: Executor,
        journal: Journal,
        kinds: dict[str, Kind],
        metrics: ServiceMetrics,
    ) -> None:
        self.settings = settings
        self.executor = executor
        self.journal = journal
        self.kinds = kinds
        self.metrics = metrics
        gpus = executor.inventory()
        self.admission = Admission(
            capacities=settings.lane_capacities(gpu_count=len(gpus)),
            memory_total_mib={gpu.index: gpu.memory_total_mib for gpu in gpus},
            hosts={gpu.index: gpu.host for gpu in gpus},
            starvation_bound_s=settings.starvation_bound_s,
        )
        self.energy = EnergyMeter(
            measure=executor.runtime == "real", modelled_watts=settings.modelled_gpu_watts
        )
        # Called after lanes were freed or a job was queued: the scheduler's pump.
        self.wake: Callable[[], None] = lambda: None
        self._reports: dict[str, AttemptReport] = {}  # job id -> its live attempt
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing = False
        # The queue in admission order, in memory; kept in step with every write below.
        self.waitlist = Waitlist()
        self.waitlist.extend((request_of(job), job.kind) for job in journal.jobs_queued())
        metrics.watch(
            inventory=executor.inventory,
            runtime=executor.runtime,
            admission=self.admission,
            queued_kinds=lambda: list(self.waitlist.kinds().elements()),
            kinds=sorted(kinds),
        )
        # Zero-valued series from the start, so rate() and alerts see them before any event.
        for gpu in self.admission.lanes:
            metrics.worker_restarts.labels(gpu=str(gpu))
        for kind in kinds:
            for outcome in ("succeeded", "failed", "cancelled"):
                metrics.jobs.labels(kind=kind, outcome=outcome)

    def lanes_refresh(self) -> list[int]:
        """Give a lane to every GPU the executor reports that has none yet: a host that
        joined a cluster after start-up. Lanes of hosts that left stay (their jobs end
        through the executor; what is admitted there Ray places elsewhere)."""
        new = [gpu for gpu in self.executor.inventory() if gpu.index not in self.admission.lanes]
        if not new:
            return []
        capacities = self.settings.lane_capacities(gpu_count=max(g.index for g in new) + 1)
        for gpu in new:
            self.admission.lane_add(
                gpu=gpu.index,
                capacity=capacities.get(gpu.index, 1),
                memory_total_mib=gpu.memory_total_mib,
                host=gpu.host,
            )
            self.metrics.worker_restarts.labels(gpu=str(gpu.index))
        log.info("new GPUs %s on %s", [g.index for g in new], sorted({g.host for g in new}))
        self.wake()
        return [gpu.index for gpu in new]

    # ---- lifecycle ------------------------------------------------------------------

    async def open(self) -> set[str]:
        """Start the executor; the ids of running jobs it still runs (reattached)."""
        self._loop = asyncio.get_running_loop()
        await self.executor.open(sink=self.on_event)
        running = self.journal.jobs_list(states=ACTIVE, limit=1_000_000)
        alive = self.executor.reattach([self._attempt(job) for job in running])
        for job in running:
            if job.id in alive:
                self._follow(job)
                self.admission.hold(
                    job_id=job.id, gpu_ids=job.gpu_ids, memory_mib=job.memory_estimate_mib
                )
                if job.state is JobState.CANCELLING:  # asked to stop before the restart
                    self.executor.cancel(job_id=job.id, attempt=job.attempt)
        return alive

    async def close(self) -> None:
        self._closing = True
        await self.executor.close()

    # ---- submit and cancel ----------------------------------------------------------

    def submit(self, submission: Submission, *, request_id: str | None) -> tuple[Job, bool]:
        """Validate, check it can ever run, record it (queued), try to admit it."""
        kind = self.kinds.get(submission.kind)
        if kind is None:
            raise ValidationFailed(
                f"job kind {submission.kind!r} is not available on this service",
                details={"field": "kind", "available": sorted(self.kinds)},
            )
        if submission.simulate is not None and self.executor.runtime != "simulated":
            raise ValidationFailed(
                "simulated faults are only accepted under the simulated runtime",
                details={"field": "simulate"},
            )
        try:
            spec = kind.spec_model.model_validate(submission.spec)
        except ValidationError as exc:
            raise ValidationFailed(
                f"invalid spec for {submission.kind}: {_first_error(exc)}",
                details={"field": "spec", "errors": _errors(exc)},
            ) from None
        if (reason := kind.needs_cuda(spec)) and self.executor.runtime != "real":
            raise ValidationFailed(
                f"{reason}; this service has no CUDA GPU (simulated runtime)",
                details={"field": "spec", "runtime": self.executor.runtime},
            )
        kind.check(spec, self.settings.storage)
        gpu_ids = submission.gpu_ids
        gpus = len(gpu_ids) if gpu_ids is not None else (submission.gpus or kind.default_gpus)
        memory = submission.memory_estimate_mib
        if memory is None:
            memory = int(kind.memory_estimate_mib(spec))
        self.admission.check_possible(
            Request(
                job_id="-",
                gpus=gpus,
                gpu_ids=tuple(gpu_ids) if gpu_ids is not None else None,
                memory_mib=memory,
            )
        )
        job, created = self.journal.job_create(
            kind=submission.kind,
            spec=spec.model_dump(mode="json"),
            gpus_requested=gpus,
            gpu_ids_requested=gpu_ids,
            priority=submission.priority,
            memory_estimate_mib=memory,
            job_id=submission.job_id,
            simulate=submission.simulate,
            request_id=request_id,
            fair_share_rank=submission.fair_share_rank,
        )
        if created:
            self.waitlist.add(request_of(job), kind=job.kind)
            with job_logged(job.id):
                log.info("job %s (%s) queued, %s GPU(s)", job.id, job.kind, gpus)
            self.wake()
            job = self.journal.job_get(job_id=job.id)
        return job, created

    def check_possible(self, *, gpus: int) -> None:
        """ResourceUnavailable, with the reason `submit` would give, when no state of the
        lanes could ever admit a job asking for `gpus` GPUs; asked before a job exists."""
        self.admission.check_possible(Request(job_id="-", gpus=gpus, gpu_ids=None))

    def cancel(self, *, job_id: str) -> Job:
        job = self.journal.job_get(job_id=job_id)
        with job_logged(job_id):
            if job.state is JobState.QUEUED and self.journal.job_cancel_queued(job_id=job_id):
                self.waitlist.discard(job_id)
                self.metrics.job_ended(kind=job.kind, outcome="cancelled", run_seconds=None)
                log.info("job %s cancelled while queued", job_id)
            elif job.state is JobState.RUNNING and self.journal.job_request_cancel(job_id=job_id):
                self.executor.cancel(job_id=job_id, attempt=job.attempt)
            elif job.state in TERMINAL:
                raise state_conflict(state=job.state.value, consequence="it cannot be cancelled")
        return self.journal.job_get(job_id=job_id)

    # ---- admission ------------------------------------------------------------------

    def admit(self, job: Job, gpu_ids: list[int]) -> None:
        """Start a queued job on the lanes admission chose (the scheduler's plan)."""
        with job_logged(job.id):
            self._admit(job, gpu_ids)

    def _admit(self, job: Job, gpu_ids: list[int]) -> None:
        self.waitlist.discard(job.id)
        self.journal.job_start(job_id=job.id, gpu_ids=gpu_ids)
        kind = self.kinds.get(job.kind)
        if kind is None:  # queued before a restart, and this service no longer has it
            self.journal.job_fail(
                job_id=job.id,
                error=ValidationFailed(f"job kind {job.kind!r} is not available on this service"),
            )
            return
        self.admission.hold(job_id=job.id, gpu_ids=gpu_ids, memory_mib=job.memory_estimate_mib)
        self.metrics.admission_wait.labels(kind=job.kind).observe(
            max(0.0, time.time() - job.submitted_at)
        )
        log.info("job %s admitted on GPUs %s (attempt %s)", job.id, gpu_ids, job.attempt)
        # The job is recorded running and its lanes are held: that is the admission. The
        # executor starts it on the loop's next turn, after the submit has answered,
        # because a spawn costs more than the rest of the request. Still on the loop's
        # thread, which PR_SET_PDEATHSIG needs.
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (start-up paths in tests): start it now
            self._launch(job.id)
        else:
            loop.call_soon(self._launch_deferred, job.id)

    def _launch_deferred(self, job_id: str) -> None:
        if self._closing:
            return  # still running in the journal: the next start-up's recovery resolves it
        with job_logged(job_id):
            self._launch(job_id)

    def _launch(self, job_id: str) -> None:
        job = self.journal.job_get(job_id=job_id)
        if job.state is not JobState.RUNNING:
            # Cancelled between admission and this turn of the loop: nothing ran.
            self._end(job, AttemptEnded(job_id=job_id, attempt=job.attempt, state="cancelled"))
            return
        self._follow(job)
        try:
            self.executor.launch(self._attempt(job))
        except Exception as exc:
            log.exception("could not start job %s", job_id)
            self._reports.pop(job_id, None)
            self._account(job)
            self.journal.job_fail(job_id=job_id, error=CarrilError(f"could not start it: {exc}"))
            self.admission.release(job_id=job_id)
            self.wake()

    def _attempt(self, job: Job) -> Attempt:
        kind = self.kinds.get(job.kind)
        return Attempt(
            job_id=job.id,
            attempt=job.attempt,
            kind=job.kind,
            spec=job.spec,
            gpu_ids=list(job.gpu_ids),
            resident=kind is not None and kind.worker_for(job.spec) == "resident",
            simulate=job.simulate,
            progress=job.progress,
        )

    def _follow(self, job: Job) -> None:
        self._reports[job.id] = AttemptReport(
            journal=self.journal, job_id=job.id, attempt=job.attempt, metrics=dict(job.metrics)
        )

    # ---- what executors report ------------------------------------------------------

    def on_event(self, event: Event) -> None:
        """The executors' sink. Any thread; an attempt's end is handled on the loop."""
        if isinstance(event, AttemptEnded | WorkerRestarted):
            loop = self._loop
            if loop is None or _on_loop(loop):
                self._handle_on_loop(event)
            elif not loop.is_closed():
                loop.call_soon_threadsafe(self._handle_on_loop, event)
            return
        report = self._reports.get(event.job_id)
        if report is None or report.attempt != event.attempt:
            return  # a stale attempt (or a job already ended): fenced off
        report.handle(event)

    def _handle_on_loop(self, event: AttemptEnded | WorkerRestarted) -> None:
        if isinstance(event, WorkerRestarted):
            self.metrics.worker_restarts.labels(gpu=str(event.gpu)).inc()
            return
        if self._closing:
            return  # jobs still running are reconciled by the next start-up
        report = self._reports.get(event.job_id)
        if report is None or report.attempt != event.attempt:
            log.warning(
                "ignoring the end of stale attempt %s of job %s", event.attempt, event.job_id
            )
            return
        report.flush()
        del self._reports[event.job_id]
        with job_logged(event.job_id):
            self._end(self.journal.job_get(job_id=event.job_id), event)

    def _end(self, job: Job, ended: AttemptEnded) -> None:
        self._account(job)  # before the end is written: whoever sees it sees the usage
        if self._resume_after_crash(job=job, ended=ended):
            self.admission.release(job_id=job.id)
            self.wake()
            return
        if ended.state == "succeeded":
            self.journal.job_succeed(job_id=job.id, result=ended.result or {})
        elif ended.state == "cancelled":
            self.journal.job_finish_cancelled(job_id=job.id, result=ended.result)
        else:
            assert ended.error is not None
            self.journal.job_fail(job_id=job.id, error=ended.error)
        self.admission.release(job_id=job.id)
        run = time.time() - job.started_at if job.started_at else None
        self.metrics.job_ended(kind=job.kind, outcome=ended.state, run_seconds=run)
        log.info("job %s %s", job.id, ended.state)
        self.wake()

    def _resume_after_crash(self, *, job: Job, ended: AttemptEnded) -> bool:
        """A killed worker is infrastructure failing, not the job: a kind that can resume
        (training, from its last checkpoint) goes back to the queue with attempt + 1,
        within the same bound as a restart of the service. Others fail WORKER_CRASHED."""
        if ended.state != "failed" or not isinstance(ended.error, WorkerCrashed):
            return False
        # A whole node lost (an executor with several hosts says so) interrupted work that
        # had no part in it: a kind that cannot resume (inference) runs again from the start.
        node_lost = bool(ended.error.details.get("node_lost"))
        again = self.resumable(job) or (node_lost and job.attempt < self.settings.max_attempts)
        if not again or not self._requeue(job):
            return False
        log.warning(
            "job %s: worker crashed (%s); resuming as attempt %s of %s",
            job.id,
            ended.error.details,
            job.attempt + 1,
            self.settings.max_attempts,
        )
        return True

    # ---- after a restart (recovery decides, the manager writes) ----------------------

    def resumable(self, job: Job) -> bool:
        kind = self.kinds.get(job.kind)
        return kind is not None and kind.resumable and job.attempt < self.settings.max_attempts

    def resume_after_restart(self, job: Job) -> bool:
        """running -> queued with attempt + 1; it continues from its job dir."""
        self._account(job, until=job.heartbeat_at)
        return self._requeue(job)

    def _requeue(self, job: Job) -> bool:
        if not self.journal.job_requeue(job_id=job.id):
            return False
        self.waitlist.add(request_of(job), kind=job.kind)  # its place: priority, submit time
        return True

    def cancelled_by_restart(self, job: Job) -> bool:
        """It was being stopped on request; the stop is now complete."""
        self._account(job, until=job.heartbeat_at)
        changed = self.journal.job_finish_cancelled(job_id=job.id)
        if changed:
            self.metrics.job_ended(kind=job.kind, outcome="cancelled", run_seconds=None)
        return changed

    def interrupted_by_restart(self, job: Job, *, reason: str) -> bool:
        self._account(job, until=job.heartbeat_at)
        changed = self.journal.job_fail(
            job_id=job.id,
            error=Interrupted(
                details={"attempt": job.attempt, "reason": reason, "gpu_ids": job.gpu_ids}
            ),
        )
        if changed:
            self.metrics.job_ended(kind=job.kind, outcome="failed", run_seconds=None)
        return changed

    # ---- accounting (issue 16) -----------------------------------------------------

    def _account(self, job: Job, *, until: float | None = None) -> None:
        """Record what this attempt held, as its lanes are released. After a restart the
        lanes were held until the attempt's last sign of life (`until`)."""
        if job.started_at is None:
            return
        names = {gpu.index: gpu.name for gpu in self.executor.inventory()}
        self.journal.job_usage_add(
            job_id=job.id,
            usage=attempt_usage(
                attempt=job.attempt,
                gpus=len(job.gpu_ids),
                held_from=job.started_at,
                held_until=until or time.time(),
                measured_wh=self.energy.take(job.id),
                modelled_watts=self.settings.modelled_gpu_watts,
                gpu_model=" + ".join(sorted({names.get(g, "?") for g in job.gpu_ids})),
            ),
        )

    def _meter_energy(self) -> None:
        if not self.energy.due():
            return
        self.energy.sample(
            power_w={gpu.index: gpu.power_w for gpu in self.executor.inventory()},
            holders={gpu: list(lane.holders) for gpu, lane in self.admission.lanes.items()},
        )

    # ---- housekeeping ---------------------------------------------------------------

    def prune(self) -> int:
        cutoff = time.time() - self.settings.journal_retention_days * 86_400
        pruned = self.journal.jobs_prune(finished_before=cutoff)
        if pruned:
            log.info(
                "pruned %d finished jobs older than %s days",
                pruned,
                self.settings.journal_retention_days,
            )
        return pruned

    def observe_lanes(self) -> None:
        self._meter_energy()
        self.executor.observe_lanes(
            loads={
                lane.gpu: LaneLoad(jobs=len(lane.holders), reserved_mib=lane.reserved_mib)
                for lane in self.admission.lanes.values()
            }
        )

    # ---- reads for the API ----------------------------------------------------------

    def queue_view(self, *, limit: int = QUEUE_VIEW_LIMIT) -> list[dict[str, Any]]:
        """The head of the queue, in admission order (`len(self.waitlist)` is its length)."""
        now = time.time()
        return [
            {
                "id": request.job_id,
                "kind": kind,
                "gpus": request.gpus,
                "gpu_ids": list(request.gpu_ids) if request.gpu_ids is not None else None,
                "priority": request.priority,
                "waited_s": max(0.0, now - request.submitted_at),
            }
            for request, kind in self.waitlist.head(
                limit, now=now, starvation_bound_s=self.admission.starvation_bound_s
            )
        ]


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _errors(exc: ValidationError) -> list[dict[str, Any]]:
    return [
        {"field": ".".join(str(p) for p in err["loc"]), "message": err["msg"]}
        for err in exc.errors()
    ]


def _first_error(exc: ValidationError) -> str:
    first = _errors(exc)[0]
    return f"{first['field'] or 'spec'}: {first['message']}"
