"""Shared storage (CARRIL_STORAGE): the one place paths are resolved against it and the
one way JSON documents are written to it.

Every path a request or a job spec names must resolve inside storage: the containers
share that one mount, and nothing outside it is the service's business. Documents that
others read while a job runs (results, manifests, weights sidecars) are written whole
or not at all.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from gpu_service.errors import ValidationFailed


def inside_storage(*, path: str | Path, storage: Path, field: str = "path") -> Path:
    """Resolve `path` (absolute, or relative to storage) and refuse anything outside it,
    symlinks and `..` included. `field` names the request field in the error."""
    root = Path(storage).resolve()
    candidate = Path(path)
    try:
        resolved = (candidate if candidate.is_absolute() else root / candidate).resolve()
    except (ValueError, OSError):  # a NUL byte, a name too long: no file we could read
        resolved = None
    if resolved is None or not resolved.is_relative_to(root):
        raise ValidationFailed(
            f"{field}: {path} is outside the shared storage (CARRIL_STORAGE)",
            details={"field": field, "path": str(path)},
        )
    return resolved


def write_json_atomically(path: Path, data: Any, *, sort_keys: bool = False) -> Path:
    """Write `data` as JSON to `path` via a temporary file in the same folder, flushed
    to disk and renamed over it: a reader sees the old document or the new one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=2, sort_keys=sort_keys)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return path
