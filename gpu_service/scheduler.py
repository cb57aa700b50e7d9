"""The service core: submit, admit, start, end, cancel. Runs on the event loop.

It wires the journal (what is true), admission (who may run where), the supervisor
(worker processes) and the runtime (the GPUs). Routes call `submit`, `cancel` and the
read helpers; everything else happens here in response to jobs ending and a 1 s tick.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from pydantic import ValidationError

from gpu_service.admission import Admission, Request
from gpu_service.api.schemas import JobSubmit
from gpu_service.errors import CarrilError, Conflict, ValidationFailed, WorkerCrashed
from gpu_service.journal import ACTIVE, TERMINAL, Job, JobState, Journal
from gpu_service.logging import job_logged
from gpu_service.metrics import ServiceMetrics
from gpu_service.recovery import journal_recover
from gpu_service.runtime.base import GpuRuntime, LaneLoad
from gpu_service.settings import Settings
from gpu_service.supervisor import Outcome, Supervisor
from gpu_service.workloads.base import Kind

log = logging.getLogger(__name__)

TICK_S = 1.0
PRUNE_EVERY_S = 3600.0


def request_of(job: Job) -> Request:
    ids = tuple(job.gpu_ids_requested) if job.gpu_ids_requested is not None else None
    return Request(
        job_id=job.id,
        gpus=len(ids) if ids else job.gpus_requested,
        gpu_ids=ids,
        priority=job.priority,
        submitted_at=job.submitted_at,
        memory_mib=job.memory_estimate_mib,
    )


class Scheduler:
    def __init__(
        self,
        *,
        settings: Settings,
        runtime: GpuRuntime,
        journal: Journal,
        kinds: dict[str, Kind],
        metrics: ServiceMetrics,
    ) -> None:
        self.settings = settings
        self.runtime = runtime
        self.journal = journal
        self.kinds = kinds
        self.metrics = metrics
        gpus = runtime.inventory()
        self.admission = Admission(
            capacities=settings.lane_capacities(gpu_count=len(gpus)),
            memory_total_mib={gpu.index: gpu.memory_total_mib for gpu in gpus},
            starvation_bound_s=settings.starvation_bound_s,
        )
        self.supervisor = Supervisor(
            settings=settings,
            runtime=runtime,
            journal=journal,
            on_outcome=self._job_ended,
            on_worker_restart=self._worker_restarted,
        )
        metrics.watch(
            runtime=runtime,
            admission=self.admission,
            queued_kinds=lambda: [job.kind for job in journal.jobs_queued()],
            kinds=sorted(kinds),
        )
        # Zero-valued series from the start, so rate() and alerts see them before any event.
        for gpu in self.admission.lanes:
            metrics.worker_restarts.labels(gpu=str(gpu))
        for kind in kinds:
            for outcome in ("succeeded", "failed", "cancelled"):
                metrics.jobs.labels(kind=kind, outcome=outcome)
        self._tick: asyncio.Task[None] | None = None
        self._last_prune = 0.0

    # ---- lifecycle ------------------------------------------------------------------

    async def start(self) -> None:
        self.supervisor.bind(asyncio.get_running_loop())
        self.supervisor.orphans_stop()
        journal_recover(
            journal=self.journal, kinds=self.kinds, max_attempts=self.settings.max_attempts
        )
        self.prune()
        self.pump()
        self._tick = asyncio.create_task(self._tick_forever(), name="scheduler-tick")

    async def stop(self) -> None:
        if self._tick is not None:
            self._tick.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._tick
        await self.supervisor.shutdown()

    async def _tick_forever(self) -> None:
        """Starvation bounds and real free memory change with time, not only on events."""
        while True:
            await asyncio.sleep(TICK_S)
            try:
                self.pump()
                if time.time() - self._last_prune > PRUNE_EVERY_S:
                    self.prune()
            except Exception:
                log.exception("scheduler tick failed")

    def prune(self) -> int:
        self._last_prune = time.time()
        cutoff = time.time() - self.settings.journal_retention_days * 86_400
        pruned = self.journal.jobs_prune(finished_before=cutoff)
        if pruned:
            log.info(
                "pruned %d finished jobs older than %s days",
                pruned,
                self.settings.journal_retention_days,
            )
        return pruned

    # ---- submit and cancel ----------------------------------------------------------

    def submit(self, *, body: JobSubmit, request_id: str | None) -> tuple[Job, bool]:
        """Validate, check it can ever run, record it (queued), try to admit it."""
        kind = self.kinds.get(body.kind)
        if kind is None:
            raise ValidationFailed(
                f"job kind {body.kind!r} is not available on this service",
                details={"field": "kind", "available": sorted(self.kinds)},
            )
        if body.simulate is not None and self.runtime.name != "simulated":
            raise ValidationFailed(
                "simulated faults are only accepted under the simulated runtime",
                details={"field": "simulate"},
            )
        try:
            spec = kind.spec_model.model_validate(body.spec)
        except ValidationError as exc:
            raise ValidationFailed(
                f"invalid spec for {body.kind}: {_first_error(exc)}",
                details={"field": "spec", "errors": _errors(exc)},
            ) from None
        kind.check(spec, self.settings.storage)
        gpu_ids = body.gpu_ids
        gpus = len(gpu_ids) if gpu_ids is not None else (body.gpus or kind.default_gpus)
        memory = body.memory_estimate_mib
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
            kind=body.kind,
            spec=spec.model_dump(mode="json"),
            gpus_requested=gpus,
            gpu_ids_requested=gpu_ids,
            priority=body.priority,
            memory_estimate_mib=memory,
            job_id=body.job_id,
            simulate=body.simulate.model_dump(mode="json") if body.simulate else None,
            request_id=request_id,
        )
        if created:
            with job_logged(job.id):
                log.info("job %s (%s) queued, %s GPU(s)", job.id, job.kind, gpus)
            self.pump()
            job = self.journal.job_get(job_id=job.id)
        return job, created

    def cancel(self, *, job_id: str) -> Job:
        job = self.journal.job_get(job_id=job_id)
        if job.state is JobState.QUEUED and self.journal.job_cancel_queued(job_id=job_id):
            self.metrics.job_ended(kind=job.kind, outcome="cancelled", run_seconds=None)
        elif job.state is JobState.RUNNING and self.journal.job_request_cancel(job_id=job_id):
            self.supervisor.job_cancel(job_id=job_id)
        elif job.state in TERMINAL:
            raise Conflict(f"job is already {job.state}", details={"state": job.state.value})
        return self.journal.job_get(job_id=job_id)

    # ---- admission ------------------------------------------------------------------

    def pump(self) -> None:
        """Start every queued job admission allows now."""
        queued = self.journal.jobs_queued()
        if queued:
            free = None
            if self.runtime.name == "real":
                free = {gpu.index: gpu.memory_free_mib for gpu in self.runtime.inventory()}
            by_id = {job.id: job for job in queued}
            plan = self.admission.plan(
                queue=[request_of(job) for job in queued], now=time.time(), free_memory_mib=free
            )
            for request, gpu_ids in plan:
                self._start(by_id[request.job_id], list(gpu_ids))
        self._observe_lanes()

    def _start(self, job: Job, gpu_ids: list[int]) -> None:
        with job_logged(job.id):
            self._admit(job, gpu_ids)

    def _admit(self, job: Job, gpu_ids: list[int]) -> None:
        self.journal.job_start(job_id=job.id, gpu_ids=gpu_ids)
        kind = self.kinds.get(job.kind)
        if kind is None:  # queued before a restart, and its module no longer imports
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
        # worker process starts on the loop's next turn, after the submit has answered,
        # because a spawn costs more than the rest of the request. Still on the loop's
        # thread, which PR_SET_PDEATHSIG needs.
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (start-up paths in tests): start it now
            self._worker_start(job_id=job.id, gpu_ids=gpu_ids, kind=kind)
        else:
            loop.call_soon(self._worker_start_deferred, job.id, gpu_ids, kind)

    def _worker_start_deferred(self, job_id: str, gpu_ids: list[int], kind: Kind) -> None:
        if self.supervisor.closing:
            return  # still running in the journal: the next start-up's recovery resolves it
        self._worker_start(job_id=job_id, gpu_ids=gpu_ids, kind=kind)

    def _worker_start(self, *, job_id: str, gpu_ids: list[int], kind: Kind) -> None:
        with job_logged(job_id):
            self._worker_start_logged(job_id=job_id, gpu_ids=gpu_ids, kind=kind)

    def _worker_start_logged(self, *, job_id: str, gpu_ids: list[int], kind: Kind) -> None:
        job = self.journal.job_get(job_id=job_id)
        if job.state is not JobState.RUNNING:
            # Cancelled between admission and this turn of the loop: nothing ran.
            self._job_ended(Outcome(job_id=job_id, state="cancelled"))
            return
        try:
            self.supervisor.job_start(job=job, gpu_ids=gpu_ids, kind=kind)
        except Exception as exc:
            log.exception("could not start a worker for job %s", job_id)
            self.journal.job_fail(
                job_id=job_id, error=CarrilError(f"could not start a worker: {exc}")
            )
            self.admission.release(job_id=job_id)

    def _job_ended(self, outcome: Outcome) -> None:
        with job_logged(outcome.job_id):
            self._job_ended_logged(outcome)

    def _job_ended_logged(self, outcome: Outcome) -> None:
        job = self.journal.job_get(job_id=outcome.job_id)
        if self._resume_after_crash(job=job, outcome=outcome):
            self.admission.release(job_id=job.id)
            self.pump()
            return
        if outcome.state == "succeeded":
            self.journal.job_succeed(job_id=job.id, result=outcome.result or {})
        elif outcome.state == "cancelled":
            self.journal.job_finish_cancelled(job_id=job.id, result=outcome.result)
        else:
            assert outcome.error is not None
            self.journal.job_fail(job_id=job.id, error=outcome.error)
        self.admission.release(job_id=job.id)
        run = time.time() - job.started_at if job.started_at else None
        self.metrics.job_ended(kind=job.kind, outcome=outcome.state, run_seconds=run)
        self.pump()

    def _resume_after_crash(self, *, job: Job, outcome: Outcome) -> bool:
        """A killed worker is infrastructure failing, not the job: a kind that can resume
        (training, from its last checkpoint) goes back to the queue with attempt + 1,
        within the same bound as a restart of the service. Others fail WORKER_CRASHED."""
        if outcome.state != "failed" or not isinstance(outcome.error, WorkerCrashed):
            return False
        kind = self.kinds.get(job.kind)
        if kind is None or not kind.resumable or job.attempt >= self.settings.max_attempts:
            return False
        if not self.journal.job_requeue(job_id=job.id):
            return False
        log.warning(
            "job %s: worker crashed (%s); resuming as attempt %s of %s",
            job.id,
            outcome.error.details,
            job.attempt + 1,
            self.settings.max_attempts,
        )
        return True

    def _worker_restarted(self, gpu: int) -> None:
        self.metrics.worker_restarts.labels(gpu=str(gpu)).inc()

    def _observe_lanes(self) -> None:
        self.runtime.observe_lanes(
            loads={
                lane.gpu: LaneLoad(jobs=len(lane.holders), reserved_mib=lane.reserved_mib)
                for lane in self.admission.lanes.values()
            }
        )

    # ---- reads for the API ----------------------------------------------------------

    def queue_view(self) -> list[dict[str, Any]]:
        now = time.time()
        return [
            {
                "id": job.id,
                "kind": job.kind,
                "gpus": job.gpus_requested,
                "gpu_ids": job.gpu_ids_requested,
                "priority": job.priority,
                "waited_s": max(0.0, now - job.submitted_at),
            }
            for job in self.journal.jobs_queued()
        ]

    def active_jobs(self) -> list[Job]:
        return self.journal.jobs_list(states=ACTIVE, limit=1000)


def _errors(exc: ValidationError) -> list[dict[str, Any]]:
    return [
        {"field": ".".join(str(p) for p in err["loc"]), "message": err["msg"]}
        for err in exc.errors()
    ]


def _first_error(exc: ValidationError) -> str:
    first = _errors(exc)[0]
    return f"{first['field'] or 'spec'}: {first['message']}"
