"""Settings a worker reads from the environment the supervisor gave it.

The service builds its settings once at start-up and passes the few a workload needs to
each worker as `CARRIL_*` variables (see `Supervisor._child_env`).
"""

from __future__ import annotations

import os

from gpu_service import errors


def int_setting(name: str, *, default: int, minimum: int = 1) -> int:
    """An integer variable, at least `minimum`; a value that is not an integer is an error."""
    raw = os.environ.get(name, str(default))
    try:
        value = int(raw)
    except ValueError:
        raise errors.CarrilError(f"{name} must be an integer, got {raw!r}") from None
    return max(value, minimum)
