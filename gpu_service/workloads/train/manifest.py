"""The run manifest: what a job was given, what ran it, and what it produced."""

from __future__ import annotations

import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpu_service.storage import write_json_atomically
from gpu_service.workloads.base import JobContext
from gpu_service.workloads.weights import fingerprint_file

SCHEMA_VERSION = 1


def runtime_versions(*, runtime: str, devices: list[int]) -> dict[str, Any]:
    import torch
    import ultralytics

    cuda = torch.cuda.is_available() and bool(devices)
    return {
        "runtime": runtime,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if cuda else None,
        "ultralytics": ultralytics.__version__,
        "devices": [{"ordinal": d, "name": torch.cuda.get_device_name(d)} for d in devices if cuda]
        or [{"ordinal": None, "name": "cpu"}],
        "data_parallel": len(devices) > 1,
    }


def build_manifest(
    *,
    ctx: JobContext,
    spec: dict[str, Any],
    data_yaml: Path,
    outcomes: list[dict[str, Any]],
    best_seed: int,
    fitness_metric: str,
    weights: dict[str, Any],
    weights_path: Path,
) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "job_id": ctx.job_id,
        "kind": ctx.kind,
        "attempt": ctx.attempt,
        "written_at": datetime.now(UTC).isoformat(),
        "inputs": {
            "dataset": _relative(spec["dataset"], ctx.storage),
            "data_yaml": _relative(data_yaml, ctx.storage),
            "data_yaml_sha256": fingerprint_file(path=data_yaml),
            "model": spec["model"],
        },
        "parameters": {**spec, "dataset": _relative(spec["dataset"], ctx.storage)},
        "runtime": runtime_versions(runtime=ctx.runtime, devices=ctx.devices),
        "seeds": [
            {k: o[k] for k in ("seed", "fitness", "metrics", "epochs_run", "batch_effective")}
            | {"weights_fingerprint": o["fingerprint"]}
            for o in outcomes
        ],
        "best_seed": best_seed,
        "fitness_metric": fitness_metric,
        "outputs": {
            "weights": {
                "fingerprint": weights["fingerprint"],
                "path": _relative(weights_path, ctx.storage),
                "size_bytes": weights["size_bytes"],
            },
            "class_names": weights["class_names"],
            "architecture": weights["architecture"],
        },
    }


def _relative(path: Path | str, storage: Path) -> str:
    """A path as users may see it: relative to storage, never the server's own layout."""
    full = Path(path) if Path(path).is_absolute() else Path(storage) / path
    try:
        return full.resolve().relative_to(Path(storage).resolve()).as_posix()
    except ValueError:
        return Path(path).name


def write_manifest(*, job_dir: Path, manifest: dict[str, Any]) -> Path:
    return write_json_atomically(job_dir / "manifest.json", manifest)
