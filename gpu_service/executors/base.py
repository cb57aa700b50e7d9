"""The executor seam: where an admitted job becomes running work, and back.

The job manager decides *what* runs and records it (journal, lanes, metrics); an
executor decides *how* it runs: spawned processes on this machine (`local.py`), tasks on
a Ray cluster (`ray.py`, issue 12). The manager talks to nothing else below it, so a
second executor plugs in here without changes above. ADR 0015.

An executor

- reports its inventory: every GPU it can place work on, with the host it is on and
  its memory. Admission builds one lane per GPU from it, and answers "could this
  request ever fit?" from it (a multi-GPU job must fit on one host: DataParallel runs
  in one process);
- launches one *attempt* of an admitted job on the GPUs admission chose, and cancels it;
- reports back through one sink, every event tagged with (job_id, attempt) so the
  manager can drop what a stale attempt still says (fencing). Each launched attempt
  ends with exactly one `AttemptEnded`, sent only once nothing of the attempt can still
  use its GPUs (the lanes are released on it);
- after a restart of the service, says which attempts it still runs (`reattach`);
  the manager's recovery resolves the others.

Logs and artifacts are files in shared storage (`jobs/<job_id>/`), not events.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from gpu_service.errors import CarrilError
from gpu_service.runtime.base import GpuInfo, LaneLoad, RuntimeName


@dataclass(frozen=True)
class Attempt:
    """One run of an admitted job, as the manager hands it to an executor."""

    job_id: str
    attempt: int  # 1, then +1 each time the job is resumed
    kind: str
    spec: dict[str, Any]  # validated by the kind, plain JSON
    gpu_ids: list[int]  # inventory indices admission chose (on one host)
    resident: bool = False  # the kind prefers a long-lived worker that keeps models loaded
    simulate: dict[str, Any] | None = None  # faults to inject (simulated runtime only)
    progress: dict[str, Any] = field(default_factory=dict)  # last reported, for resumes


# ---- events: executor -> manager -----------------------------------------------------


@dataclass(frozen=True)
class AttemptEvent:
    job_id: str
    attempt: int


@dataclass(frozen=True)
class AttemptHeartbeat(AttemptEvent):
    """The attempt is alive (sent while it is quiet, at least every few seconds)."""


@dataclass(frozen=True)
class ProgressReported(AttemptEvent):
    progress: dict[str, Any]  # the whole progress document so far (contract.Progress)


@dataclass(frozen=True)
class EpochReported(AttemptEvent):
    record: dict[str, Any]  # one contract.EpochRecord


@dataclass(frozen=True)
class MetricsReported(AttemptEvent):
    fields: dict[str, Any]  # summary fields to merge into the job's metrics


@dataclass(frozen=True)
class AttemptEnded(AttemptEvent):
    state: Literal["succeeded", "failed", "cancelled"]
    result: dict[str, Any] | None = None
    error: CarrilError | None = None  # WorkerCrashed when the work died under it


@dataclass(frozen=True)
class WorkerRestarted:
    """Not about an attempt: the executor replaced a dead long-lived worker."""

    gpu: int


Event = (
    AttemptHeartbeat
    | ProgressReported
    | EpochReported
    | MetricsReported
    | AttemptEnded
    | WorkerRestarted
)
# Called from any thread the executor likes; the manager hops to its event loop itself.
EventSink = Callable[[Event], None]


class Executor(Protocol):
    name: str  # "local", "ray"
    runtime: RuntimeName  # what the GPUs are: "real", or "simulated" (work on the CPU)

    def inventory(self) -> list[GpuInfo]:
        """Every GPU work can be placed on, with its host and current telemetry."""

    def observe_lanes(self, *, loads: dict[int, LaneLoad]) -> None:
        """Told after every admission change (simulated telemetry follows the lanes)."""

    async def open(self, *, sink: EventSink) -> None:
        """Start: remember the sink, stop what an earlier run of the service left
        behind that `reattach` will not claim. Called once, on the event loop."""

    def reattach(self, attempts: list[Attempt]) -> set[str]:
        """After a restart: the job ids among `attempts` (recorded running) that this
        executor still runs and will report on. The manager recovers the rest."""

    def launch(self, attempt: Attempt) -> None:
        """Start the attempt. Called on the event loop; may raise (the job then fails)."""

    def cancel(self, *, job_id: str, attempt: int) -> bool:
        """Ask the attempt to stop (and make sure it does). False if it is not running
        here. It still ends with an AttemptEnded."""

    async def close(self) -> None:
        """Stop everything it runs; nothing may outlive the service."""
