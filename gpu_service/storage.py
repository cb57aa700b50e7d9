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
    resolved = resolved_or_none(candidate)
    if resolved is None:
        raise ValidationFailed(
            "path is not a usable file path (NUL byte, bytes that are not text, or too long)",
            details={"path": str(path)},
        )
    if not resolved.is_relative_to(storage.resolve()):
        raise ValidationFailed(
            "path must be inside the shared storage (CARRIL_STORAGE)",
            details={"path": str(path), "storage": str(storage)},
        )
    return resolved


def resolved_or_none(candidate: Path) -> Path | None:
    """`candidate.resolve()`, or None for a path no file can have: a NUL byte (ValueError),
    a lone surrogate (UnicodeEncodeError), a name too long (OSError). Refusing these here
    keeps them a 4xx instead of an unhandled exception deeper in."""
    try:
        resolved = candidate.resolve()
        resolved.stat()
    except FileNotFoundError:
        return resolved
    except (ValueError, OSError):
        return None
    return resolved
