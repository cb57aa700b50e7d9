"""Out-of-memory under the simulated runtime, raised where and as a real GPU raises it.

On a GPU, running out of memory is a `torch.OutOfMemoryError` (a `RuntimeError` whose
text starts "CUDA out of memory") thrown from inside the model's forward pass. Ultralytics
relies on exactly that: in the first epoch it catches it, halves the batch and retries (up
to three times); later it lets it through. So the simulated fault is raised from a
forward pre-hook on the model, as that error, never from a callback or as a CarrilError:
the code that handles it is then the code that will handle the real one.

Two faults, asked for in a job's `simulate`:
- `oom_above_batch`: the pretend GPU holds at most that many images per forward pass;
  every larger batch runs out of memory (memory that grows with the batch).
- `oom_at_step`: one spike at that step, once per attempt (a retry with a smaller batch
  gets past it, as it would on a real board).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

CUDA_OOM_TEXT = "CUDA out of memory. Tried to allocate {mib} MiB (simulated: {why})"


def cuda_out_of_memory(*, why: str, mib: int = 512) -> RuntimeError:
    """The error a real CUDA allocation failure raises; a plain RuntimeError with the same
    text where torch is not loaded (the diagnostic kind has no model)."""
    text = CUDA_OOM_TEXT.format(mib=mib, why=why)
    torch = sys.modules.get("torch")
    error_type = getattr(torch, "OutOfMemoryError", RuntimeError) if torch else RuntimeError
    return error_type(text)


def out_of_memory_reason(
    *, faults: dict[str, Any], step: int, batch: int | None, fired: set[str]
) -> str | None:
    """Why this forward pass runs out of memory, or None; records a one-shot spike in `fired`."""
    limit = faults.get("oom_above_batch")
    if limit is not None and batch is not None and batch > limit:
        return f"batch {batch} is over the {limit} images this GPU holds"
    spike = f"oom_at_step:{step}"
    if faults.get("oom_at_step") == step and spike not in fired:
        fired.add(spike)
        return f"spike at step {step}"
    return None


def batch_size(args: tuple[Any, ...]) -> int | None:
    """Images in a forward pass: a tensor (inference) or ultralytics' batch dict (training)."""
    if not args:
        return None
    first = args[0]
    if isinstance(first, dict):
        first = first.get("img")
    shape = getattr(first, "shape", None)
    return int(shape[0]) if shape is not None and len(shape) else None


@contextlib.contextmanager
def faults_in_forward(
    model: Any, *, fault_point: Callable[..., None], step: Callable[[], int | None]
) -> Iterator[None]:
    """While inside, every forward pass of `model` first passes `fault_point(step, batch=n)`.

    `step()` returns None for passes that are not job steps (validation inside training).
    """

    handle = install_faults_in_forward(model, fault_point=fault_point, step=step)
    try:
        yield
    finally:
        handle.remove()


def install_faults_in_forward(
    model: Any, *, fault_point: Callable[..., None], step: Callable[[], int | None]
) -> Any:
    """The hook of `faults_in_forward`, for a model that is thrown away with its job (a
    trainer's); returns the handle that removes it."""

    def hook(module: Any, args: tuple[Any, ...]) -> None:
        number = step()
        if number is not None:
            fault_point(number, batch=batch_size(args))

    return model.register_forward_pre_hook(hook)
