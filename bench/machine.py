"""The machine a run measured: recorded next to every result."""

from __future__ import annotations

import os
import platform
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def _cuda() -> str:
    import torch

    if not torch.cuda.is_available():
        return "none (no CUDA device visible)"
    names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return f"{len(names)}: {', '.join(names)}"


def load_average() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def machine_describe(*, runtime: str, load_at_start: str | None = None) -> dict[str, Any]:
    """`load_at_start` is read before the first benchmark; the other load at the end.
    A shared machine's other work shows there (the suite's own load is in both)."""
    import psutil

    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 1024**3, 1),
        "load_average_at_start": load_at_start or load_average(),
        "load_average_at_end": load_average(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "torch": _version("torch"),
        "ultralytics": _version("ultralytics"),
        "django": _version("Django"),
        "fastapi": _version("fastapi"),
        "cuda_devices": _cuda(),
        "gpu_service_runtime": runtime,
    }
