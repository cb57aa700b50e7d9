"""Waiting for a server-side state: exponential backoff with a ceiling and a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TypeVar

T = TypeVar("T")


def backoff(*, first_s: float = 0.5, factor: float = 1.5, max_s: float = 5.0) -> Iterator[float]:
    """Delays 0.5, 0.75, 1.1, ... up to `max_s`, forever."""
    delay = first_s
    while True:
        yield delay
        delay = min(max_s, delay * factor)


def poll(
    read: Callable[[], T],
    done: Callable[[T], bool],
    *,
    timeout_s: float | None = None,
    on_update: Callable[[T], None] | None = None,
    first_s: float = 0.5,
    max_s: float = 5.0,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Read until `done(value)`; report each value; TimeoutError past `timeout_s`."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    for delay in backoff(first_s=first_s, max_s=max_s):
        value = read()
        if on_update is not None:
            on_update(value)
        if done(value):
            return value
        if deadline is not None and time.monotonic() + delay > deadline:
            raise TimeoutError(f"still not done after {timeout_s:g} s")
        sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover
