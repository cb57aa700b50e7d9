"""Real GPUs, read through NVML (nvidia-ml-py). Never initialises CUDA.

NVML is imported lazily and any NVML failure reads as zero GPUs: a host without a
driver must still be able to start the service (and fall back to the simulated runtime).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from gpu_service.runtime.base import GpuInfo, LaneLoad, RuntimeName

log = logging.getLogger(__name__)
MIB = 1024 * 1024


class NvmlRuntime:
    name: RuntimeName = "real"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nvml: Any = None

    def _init(self) -> Any:
        if self._nvml is None:
            import pynvml  # lazy: the simulated runtime and the web app never need it

            pynvml.nvmlInit()
            self._nvml = pynvml
        return self._nvml

    def inventory(self) -> list[GpuInfo]:
        with self._lock:
            try:
                nvml = self._init()
                return [self._read(nvml, i) for i in range(nvml.nvmlDeviceGetCount())]
            except Exception as exc:  # NVML raises its own error types, or ImportError
                log.warning("NVML unavailable, reading zero GPUs: %s", exc)
                return []

    @staticmethod
    def _read(nvml: Any, index: int) -> GpuInfo:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        memory = nvml.nvmlDeviceGetMemoryInfo(handle)

        def optional(fn: Any, *args: Any) -> Any:
            try:
                return fn(handle, *args)
            except Exception:  # not every board reports power or temperature
                return None

        name = nvml.nvmlDeviceGetName(handle)
        uuid = nvml.nvmlDeviceGetUUID(handle)
        utilization = optional(nvml.nvmlDeviceGetUtilizationRates)
        temperature = optional(nvml.nvmlDeviceGetTemperature, nvml.NVML_TEMPERATURE_GPU)
        power_mw = optional(nvml.nvmlDeviceGetPowerUsage)
        return GpuInfo(
            index=index,
            name=name.decode() if isinstance(name, bytes) else str(name),
            uuid=uuid.decode() if isinstance(uuid, bytes) else str(uuid),
            memory_total_mib=int(memory.total // MIB),
            memory_used_mib=int(memory.used // MIB),
            memory_free_mib=int(memory.free // MIB),
            utilization_pct=float(utilization.gpu) if utilization is not None else 0.0,
            temperature_c=float(temperature) if temperature is not None else None,
            power_w=power_mw / 1000.0 if power_mw is not None else None,
        )

    def child_env(self, *, gpu_ids: list[int]) -> dict[str, str]:
        # PCI bus order makes CUDA's ordinals agree with NVML's indices.
        return {
            "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
            "CUDA_VISIBLE_DEVICES": ",".join(str(g) for g in gpu_ids),
        }

    def observe_lanes(self, *, loads: dict[int, LaneLoad]) -> None:
        """Real telemetry is measured, not derived from the lanes."""
