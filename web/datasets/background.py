"""Running dataset validations outside the request that received the upload (ADR 0025).

One small thread pool per web process. Its threads are daemons: a process that stops
mid-validation loses that work, and the validation's lapsed claim lets another process
(or this one, restarted) take it over. `sweeper_start` (called from wsgi.py, so only in a
serving process, never in a management command or a test) looks for such validations
at start and every SWEEP_INTERVAL_S after.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import close_old_connections

logger = logging.getLogger(__name__)

SWEEP_INTERVAL_S = 30.0

_tasks: queue.SimpleQueue[tuple[Callable[..., Any], dict[str, Any]]] = queue.SimpleQueue()
_workers: list[threading.Thread] = []
_lock = threading.Lock()


def _work() -> None:
    while True:
        fn, kwargs = _tasks.get()
        try:
            fn(**kwargs)
        except Exception:  # one bad validation must not end the pool; the log says why
            logger.exception("background task %s failed", getattr(fn, "__name__", fn))
        finally:
            close_old_connections()  # a thread's connection is its own; do not leak it


def run_soon(fn: Callable[..., Any], **kwargs: Any) -> None:
    """Run `fn(**kwargs)` on one of this process's background threads."""
    with _lock:
        while len(_workers) < settings.CARRIL_DATASET_VALIDATION_THREADS:
            worker = threading.Thread(
                target=_work, name=f"carril-validate-{len(_workers)}", daemon=True
            )
            worker.start()
            _workers.append(worker)
    _tasks.put((fn, kwargs))


def sweeper_start(sweep: Callable[[], Any], *, interval_s: float = SWEEP_INTERVAL_S) -> None:
    """Call `sweep()` now and every `interval_s`, on a daemon thread."""

    def loop() -> None:
        while True:
            try:
                sweep()
            except Exception:
                logger.exception("dataset validation sweep failed")
            finally:
                close_old_connections()
            threading.Event().wait(interval_s)

    threading.Thread(target=loop, name="carril-validate-sweeper", daemon=True).start()
