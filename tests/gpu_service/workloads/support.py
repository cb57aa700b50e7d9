"""Test helpers for the workloads: a synthetic shapes dataset and an in-process job context.

The context is a small stand-in for the worker's real one (unit level only); the
end-to-end tests go through the real service with real child processes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpu_service.workloads.simulated_oom import cuda_out_of_memory, out_of_memory_reason
from gpu_service.workloads.synthetic import SHAPES, make_shapes_dataset

__all__ = ["SHAPES", "FakeJobContext", "SimulatedCrash", "make_shapes_dataset"]


@dataclass
class FakeJobContext:
    """Records what a workload reports; can stop or fail at a given step."""

    storage: Path
    spec: dict[str, Any]
    kind: str = "train"
    job_id: str = "job-1"
    attempt: int = 1
    devices: list[int] = field(default_factory=list)
    runtime: str = "simulated"
    stop_at_step: int | None = None
    oom_at_step: int | None = None
    oom_above_batch: int | None = None
    fired: set[str] = field(default_factory=set)
    crash_at_step: int | None = None
    progress_log: list[dict[str, Any]] = field(default_factory=list)
    epochs: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    steps: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.job_dir = self.storage / "jobs" / self.job_id
        self.job_dir.mkdir(parents=True, exist_ok=True)
        self.logger = logging.getLogger(f"test.job.{self.job_id}")

    def progress(self, **fields: Any) -> None:
        self.progress_log.append(fields)

    def epoch_metrics(self, record: dict[str, Any]) -> None:
        self.epochs.append(record)

    def set_metrics(self, **fields: Any) -> None:
        self.summary.update(fields)

    def should_stop(self) -> bool:
        return (
            self.stop_at_step is not None
            and bool(self.steps)
            and (self.steps[-1] >= self.stop_at_step)
        )

    def fault_point(self, step: int, *, batch: int | None = None) -> None:
        self.steps.append(step)
        faults = {"oom_at_step": self.oom_at_step, "oom_above_batch": self.oom_above_batch}
        why = out_of_memory_reason(faults=faults, step=step, batch=batch, fired=self.fired)
        if why:
            raise cuda_out_of_memory(why=why)
        if self.crash_at_step is not None and step == self.crash_at_step:
            raise SimulatedCrash(step)


class SimulatedCrash(BaseException):
    """Stands in for a killed worker: nothing in the workload may catch it."""
