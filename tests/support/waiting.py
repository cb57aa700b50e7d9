"""Polling until something holds, for tests that drive real processes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_until(
    predicate: Callable[[], Any],
    *,
    timeout_s: float,
    what: str,
    logs: Callable[[], str],
    poll_s: float = 0.05,
) -> Any:
    """The first truthy value of `predicate`; after `timeout_s`, an AssertionError that
    says what was awaited and shows the processes' `logs`."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}:\n{logs()}")
        time.sleep(poll_s)
