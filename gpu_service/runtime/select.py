"""Pick the runtime from CARRIL_GPU_RUNTIME: real, simulated, or auto."""

from __future__ import annotations

import logging

from gpu_service.errors import ValidationFailed
from gpu_service.runtime.base import GpuRuntime
from gpu_service.runtime.nvml import NvmlRuntime
from gpu_service.runtime.simulated import SimulatedRuntime
from gpu_service.settings import Settings

log = logging.getLogger(__name__)


def runtime_select(*, settings: Settings) -> GpuRuntime:
    """auto = real when NVML finds at least one GPU, else simulated, said loudly: a
    production host that silently fell back to pretend GPUs would look healthy."""
    if settings.gpu_runtime == "simulated":
        return SimulatedRuntime.from_spec(settings.simulated_gpus)
    real = NvmlRuntime()
    if real.inventory():
        return real
    if settings.gpu_runtime == "real":
        raise ValidationFailed("CARRIL_GPU_RUNTIME=real but NVML finds no GPU")
    log.warning(
        "NO GPU FOUND: using the SIMULATED runtime (%s); set CARRIL_GPU_RUNTIME to choose",
        settings.simulated_gpus,
    )
    return SimulatedRuntime.from_spec(settings.simulated_gpus)
