"""The runtime seam: the only place that knows what the GPUs are.

Two implementations: `nvml.NvmlRuntime` (real GPUs, read through NVML) and
`simulated.SimulatedRuntime` (N pretend GPUs whose telemetry follows the lanes; work
runs on the CPU). Everything else asks the seam, never CUDA: the API process must not
initialise CUDA, because a CUDA context cannot survive into spawned workers and would
hold GPU memory in the one process that must stay up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

RuntimeName = Literal["real", "simulated"]


@dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str
    uuid: str
    memory_total_mib: int
    memory_used_mib: int
    memory_free_mib: int
    utilization_pct: float
    temperature_c: float | None
    power_w: float | None
    host: str = "localhost"  # the machine it is on (executors place work per host)


@dataclass(frozen=True)
class LaneLoad:
    """What the lanes say about one GPU, for runtimes that cannot measure it."""

    jobs: int  # jobs holding the lane
    reserved_mib: int  # sum of their memory estimates


class GpuRuntime(Protocol):
    name: RuntimeName

    def inventory(self) -> list[GpuInfo]:
        """Every GPU with its current telemetry; [] when there are none (or NVML fails)."""

    def child_env(self, *, gpu_ids: list[int]) -> dict[str, str]:
        """Environment a worker needs so that it sees exactly these GPUs."""

    def observe_lanes(self, *, loads: dict[int, LaneLoad]) -> None:
        """Told after every admission change; the simulated runtime's telemetry follows it."""
