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

# What every Carril process creates is its owner's only: storage holds users' datasets,
# job outputs, weights, exports and the journal (ADR 0057). The services run as one user
# (the images share uid 10001), so owner-only modes keep nothing from the other service.
PRIVATE_UMASK = 0o077


def storage_make_private(root: Path) -> Path:
    """Give this process an owner-only umask, and `root` (made if missing) mode 0700.

    An existing root of ours that others may enter is closed too, which also closes
    what older versions wrote inside it with wider modes.
    """
    os.umask(PRIVATE_UMASK)
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = root.stat()
    if info.st_uid == os.geteuid() and info.st_mode & 0o077:
        root.chmod(0o700)
    return root


def inside_storage(*, path: str | Path, storage: Path, field: str = "path") -> Path:
    """Resolve `path` (absolute, or relative to storage) and refuse anything outside it,
    symlinks and `..` included. `field` names the request field in the error."""
    root = Path(storage).resolve()
    candidate = Path(path)
    resolved = resolved_or_none(candidate if candidate.is_absolute() else root / candidate)
    if resolved is None:
        raise ValidationFailed(
            f"{field}: not a usable file path (NUL byte, bytes that are not text, or too long)",
            details={"field": field, "path": str(path)},
        )
    if not resolved.is_relative_to(root):
        raise ValidationFailed(
            f"{field}: {path} is outside the shared storage (CARRIL_STORAGE)",
            details={"field": field, "path": str(path)},
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
