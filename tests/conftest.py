"""Fixtures shared by every test suite."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.gpu_service import GpuServiceProcess


@pytest.fixture
def gpu_service(tmp_path: Path) -> Iterator[Callable[..., GpuServiceProcess]]:
    """Factory: `gpu_service(gpus="2x24GiB", env={...})` starts the real GPU service on
    the simulated runtime, on a free port, with storage under tmp_path; every service it
    started is stopped at the end of the test."""
    started: list[GpuServiceProcess] = []

    def start(**kwargs: Any) -> GpuServiceProcess:
        kwargs.setdefault("storage", tmp_path / f"storage{len(started)}")
        service = GpuServiceProcess(**kwargs).start()
        started.append(service)
        return service

    yield start
    for service in started:
        service.stop()
