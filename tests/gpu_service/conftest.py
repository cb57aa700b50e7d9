"""Building the GPU service's core (journal, local executor, job manager, scheduler)
in-process, on simulated GPUs, for tests below the HTTP layer."""

from __future__ import annotations

import pytest

from gpu_service.executors.local import LocalExecutor
from gpu_service.journal import Journal
from gpu_service.manager import JobManager
from gpu_service.metrics import ServiceMetrics
from gpu_service.runtime.simulated import SimulatedRuntime
from gpu_service.scheduler import Scheduler
from gpu_service.settings import load_settings
from gpu_service.workloads.diagnostic.spec import DIAGNOSTIC


@pytest.fixture
def make(tmp_path):
    """make(runtime=None, kinds=None, **settings) -> a Scheduler with its manager."""
    made = []

    def build(runtime=None, kinds=None, **overrides):
        settings = load_settings(storage=tmp_path, gpu_service_token="t" * 32, **overrides)
        journal = Journal(path=settings.journal_path)
        runtime = runtime or SimulatedRuntime.from_spec("2x24GiB")
        manager = JobManager(
            settings=settings,
            executor=LocalExecutor(settings=settings, runtime=runtime, records=journal),
            journal=journal,
            kinds=kinds if kinds is not None else {"diagnostic": DIAGNOSTIC},
            metrics=ServiceMetrics(),
        )
        made.append(journal)
        return Scheduler(manager=manager)

    yield build
    for journal in made:
        journal.close()
