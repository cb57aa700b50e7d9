"""The X-Request-ID of the work in progress, for logs and for calls to the GPU service."""

from __future__ import annotations

import re
import uuid
from contextvars import ContextVar

_current: ContextVar[str | None] = ContextVar("carril_request_id", default=None)
# Accept a caller's id only if it looks like one; anything else could poison the logs.
_ACCEPTABLE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def request_id_get() -> str | None:
    return _current.get()


def request_id_set(value: str | None) -> object:
    return _current.set(value)


def request_id_reset(token: object) -> None:
    _current.reset(token)  # type: ignore[arg-type]


def request_id_from_header(value: str | None) -> str:
    if value and _ACCEPTABLE.match(value):
        return value
    return uuid.uuid4().hex
