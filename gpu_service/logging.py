"""Logging set-up: text in dev, JSON lines (python-json-logger) when CARRIL_LOG_FORMAT=json.

Every line carries the request id of the HTTP request it belongs to and the id of the
job it is about (each "-" when there is none), so one X-Request-ID or one job id can be
followed from the browser to the web app to this service.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import sys
from collections.abc import Iterator

from gpu_service.settings import Settings

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
job_var: contextvars.ContextVar[str] = contextvars.ContextVar("job", default="-")


@contextlib.contextmanager
def job_logged(job_id: str) -> Iterator[None]:
    """Lines logged inside carry `job=<job_id>`."""
    token = job_var.set(job_id)
    try:
        yield
    finally:
        job_var.reset(token)


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_var.get()
        record.job = job_var.get()
        return True


def logging_configure(*, settings: Settings) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RequestIdFilter())
    if settings.log_format == "json":
        from pythonjsonlogger.json import JsonFormatter

        handler.setFormatter(
            JsonFormatter(
                "%(asctime)s %(levelname)s %(name)s %(message)s %(request_id)s %(job)s",
                rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
            )
        )
    else:
        handler.setFormatter(
            logging.Formatter(
                "%(asctime)s %(levelname)s [%(request_id)s] [job %(job)s] %(name)s: %(message)s"
            )
        )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.log_level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
