"""GPU accounting (issue 16): what each attempt of a job held, and the energy it used.

An attempt holds its lanes from its admission (`started_at` in the journal) until the
manager releases them. Its GPU time is the number of GPUs x that wall time. Its energy
is measured where the runtime reads power (NVML on real GPUs: each GPU's power,
sampled on the scheduler's tick, integrated and shared among the jobs holding the
lane), and modelled where it cannot: the simulated runtime, or a board that reports no
power, uses a declared wattage per GPU (`CARRIL_MODELLED_GPU_WATTS`) and says so.

The manager (the one writer of job records) asks this module for an attempt's record
when it releases the lanes and writes it to the journal; nothing here writes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

MIN_SAMPLE_INTERVAL_S = 0.5  # the pump runs after every event; power is read at most 2/s


class EnergyMeter:
    """Integrates each holder's share of its GPUs' power between samples."""

    def __init__(self, *, measure: bool, modelled_watts: float) -> None:
        self.measure = measure
        self.modelled_watts = modelled_watts
        self._wh: dict[str, float] = {}  # job id -> measured watt-hours so far
        self._last: float | None = None
        self._lock = threading.Lock()

    def sample(
        self,
        *,
        power_w: Mapping[int, float | None],
        holders: Mapping[int, list[str]],
        now: float | None = None,
    ) -> None:
        """Power per GPU now, and the jobs holding each GPU's lane."""
        if not self.measure:
            return
        now = time.monotonic() if now is None else now
        with self._lock:
            last, self._last = self._last, now
            if last is None:
                return
            dt = now - last
            for gpu, jobs in holders.items():
                watts = power_w.get(gpu)
                if not jobs or watts is None:
                    continue
                share = watts * dt / 3600.0 / len(jobs)
                for job_id in jobs:
                    self._wh[job_id] = self._wh.get(job_id, 0.0) + share

    def due(self, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        return self.measure and (self._last is None or now - self._last >= MIN_SAMPLE_INTERVAL_S)

    def take(self, job_id: str) -> float | None:
        """The measured watt-hours of the job's attempt (None: nothing was measured)."""
        with self._lock:
            return self._wh.pop(job_id, None)


def attempt_usage(
    *,
    attempt: int,
    gpus: int,
    held_from: float,
    held_until: float,
    measured_wh: float | None,
    modelled_watts: float,
    gpu_model: str = "",
) -> dict[str, Any]:
    """One attempt's record as the journal keeps it (times as epoch seconds)."""
    held_until = max(held_until, held_from)
    gpu_seconds = gpus * (held_until - held_from)
    if measured_wh is not None:
        energy_wh, source = measured_wh, "measured"
    else:
        energy_wh, source = modelled_watts * gpu_seconds / 3600.0, "modelled"
    return {
        "attempt": attempt,
        "gpus": gpus,
        "held_from": held_from,
        "held_until": held_until,
        "gpu_seconds": round(gpu_seconds, 6),
        "energy_wh": round(energy_wh, 6),
        "energy_source": source,
        "gpu_model": gpu_model,  # the GPUs' name as the runtime reports it
    }
