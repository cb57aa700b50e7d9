"""Shared storage paths. Every path a request names must resolve inside CARRIL_STORAGE:
the containers share that one mount, and nothing outside it is the service's business."""

from __future__ import annotations

from pathlib import Path

from gpu_service.errors import ValidationFailed


def storage_path(*, path: str | Path, storage: Path) -> Path:
    """Resolve `path` (absolute, or relative to storage) and refuse anything outside it,
    symlinks and `..` included."""
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = storage / candidate
    resolved = candidate.resolve()
    if not resolved.is_relative_to(storage.resolve()):
        raise ValidationFailed(
            "path must be inside the shared storage (CARRIL_STORAGE)",
            details={"path": str(path), "storage": str(storage)},
        )
    return resolved
