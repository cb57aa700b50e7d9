"""The simulated out-of-memory: the error CUDA raises, from the forward pass."""

from __future__ import annotations

import pytest

from gpu_service.workloads.simulated_oom import (
    cuda_out_of_memory,
    faults_in_forward,
    out_of_memory_reason,
)


def test_the_simulated_out_of_memory_is_the_error_cuda_raises() -> None:
    import torch

    error = cuda_out_of_memory(why="test")

    assert type(error) is torch.OutOfMemoryError
    assert isinstance(error, RuntimeError)  # what ultralytics' retry catches
    assert str(error).startswith("CUDA out of memory.")


def test_a_batch_over_the_limit_always_runs_out_and_a_spike_only_once() -> None:
    fired: set[str] = set()
    faults = {"oom_above_batch": 2, "oom_at_step": 5}

    assert out_of_memory_reason(faults=faults, step=1, batch=3, fired=fired)
    assert out_of_memory_reason(faults=faults, step=2, batch=3, fired=fired)
    assert out_of_memory_reason(faults=faults, step=1, batch=2, fired=fired) is None
    assert out_of_memory_reason(faults=faults, step=5, batch=2, fired=fired)
    assert out_of_memory_reason(faults=faults, step=5, batch=2, fired=fired) is None


def test_the_fault_comes_from_the_forward_pass_and_the_hook_goes_with_the_block() -> None:
    import torch

    model = torch.nn.Linear(4, 2)
    seen: list[tuple[int, int | None]] = []

    def fault_point(step: int, *, batch: int | None = None) -> None:
        seen.append((step, batch))
        if batch and batch > 2:
            raise cuda_out_of_memory(why="test")

    with faults_in_forward(model, fault_point=fault_point, step=lambda: 7):
        model(torch.zeros(2, 4))
        with pytest.raises(torch.OutOfMemoryError):
            model(torch.zeros(3, 4))
    model(torch.zeros(3, 4))

    assert seen == [(7, 2), (7, 3)]


def test_every_job_context_takes_the_batch_at_a_fault_point() -> None:
    # The forward hook passes batch=...; a context without it would fail every inference
    # (make gpu-check's context runs only on a GPU host, so nothing else would catch it).
    import inspect

    from gpu_service.gpu_check import CheckContext
    from gpu_service.workers.child import WorkerJobContext
    from tests.gpu_service.workloads.support import FakeJobContext

    for context in (CheckContext, WorkerJobContext, FakeJobContext):
        assert "batch" in inspect.signature(context.fault_point).parameters, context
