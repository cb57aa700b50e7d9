"""Pretend GPUs for development and CI: the only simulated part of Carril.

Work still runs for real, on the CPU (workers see `CUDA_VISIBLE_DEVICES=""`). The
telemetry follows the lanes, so dashboards, metrics and admission behave as they would
on the real machine: a held lane uses its job's memory estimate (or a default share of
the GPU), runs near 95 % utilisation and warms up.
"""

from __future__ import annotations

import re
import threading

from gpu_service.errors import ValidationFailed
from gpu_service.runtime.base import GpuInfo, LaneLoad, RuntimeName

_UNITS = {"mib": 1, "m": 1, "gib": 1024, "g": 1024, "tib": 1024 * 1024}
_GROUP = re.compile(r"^\s*(\d+)\s*x\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*$", re.IGNORECASE)
IDLE_USED_MIB = 300  # what a driver and an idle context take on a real board
DEFAULT_JOB_SHARE = 0.3  # memory a job without an estimate appears to use


def parse_simulated_gpus(spec: str) -> list[int]:
    """'2x24GiB' or '1x80GiB,1x24GiB' -> memory per GPU in MiB; '0' -> no GPUs."""
    if spec.strip() in ("", "0"):
        return []
    sizes: list[int] = []
    for group in spec.split(","):
        match = _GROUP.match(group)
        unit = match and _UNITS.get(match.group(3).lower())
        if not match or not unit:
            raise ValidationFailed(f"CARRIL_SIMULATED_GPUS must look like '2x24GiB', not {spec!r}")
        sizes += [int(float(match.group(2)) * unit)] * int(match.group(1))
    return sizes


class SimulatedRuntime:
    name: RuntimeName = "simulated"

    def __init__(self, *, memory_mib: list[int]) -> None:
        self._memory = memory_mib
        self._lock = threading.Lock()
        self._loads: dict[int, LaneLoad] = {}

    @classmethod
    def from_spec(cls, spec: str) -> SimulatedRuntime:
        return cls(memory_mib=parse_simulated_gpus(spec))

    def inventory(self) -> list[GpuInfo]:
        with self._lock:
            loads = dict(self._loads)
        return [self._gpu(i, total, loads.get(i)) for i, total in enumerate(self._memory)]

    @staticmethod
    def _gpu(index: int, total: int, load: LaneLoad | None) -> GpuInfo:
        busy = load is not None and load.jobs > 0
        used = IDLE_USED_MIB
        if busy:
            used += load.reserved_mib or int(total * DEFAULT_JOB_SHARE) * load.jobs
        used = min(used, total)
        return GpuInfo(
            index=index,
            name=f"Simulated GPU ({total // 1024} GiB)",
            uuid=f"GPU-5137a7ed-0000-4000-8000-{index:012d}",
            memory_total_mib=total,
            memory_used_mib=used,
            memory_free_mib=total - used,
            utilization_pct=95.0 if busy else 0.0,
            temperature_c=68.0 if busy else 34.0,
            power_w=250.0 if busy else 55.0,
        )

    def child_env(self, *, gpu_ids: list[int]) -> dict[str, str]:
        # An empty list hides every CUDA device: simulated work runs on the CPU even on
        # a machine that has GPUs.
        return {"CUDA_VISIBLE_DEVICES": ""}

    def observe_lanes(self, *, loads: dict[int, LaneLoad]) -> None:
        with self._lock:
            self._loads = dict(loads)
