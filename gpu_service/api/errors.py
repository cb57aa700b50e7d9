"""The edge where errors become HTTP: one envelope, `{"error": {code, message, details}}`.

Routes raise `CarrilError`s; validation errors from pydantic, unknown routes and
unexpected exceptions are put in the same envelope so clients parse one shape.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from gpu_service.errors import (
    CarrilError,
    MethodNotAllowed,
    NotFound,
    Unauthorized,
    ValidationFailed,
)

log = logging.getLogger(__name__)


class AsciiJSONResponse(JSONResponse):
    """JSON with every non-ASCII character escaped: an error may echo what a client sent,
    and a lone surrogate (valid in JSON text, not in UTF-8) must not turn a 4xx into a 500."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def envelope(error: CarrilError, *, headers: dict[str, str] | None = None) -> JSONResponse:
    return AsciiJSONResponse({"error": error.as_dict()}, status_code=error.status, headers=headers)


def _field(loc: tuple[Any, ...]) -> str:
    # Drop the "body"/"query" prefix: clients name fields as they sent them.
    parts = [str(p) for p in loc[1:]] if loc and loc[0] in ("body", "query", "path") else loc
    return ".".join(str(p) for p in parts) or "body"


async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = [{"field": _field(tuple(e["loc"])), "message": e["msg"]} for e in exc.errors()]
    first = errors[0] if errors else {"field": "body", "message": "invalid"}
    return envelope(
        ValidationFailed(f"{first['field']}: {first['message']}", details={"errors": errors})
    )


async def _carril(request: Request, exc: CarrilError) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, Unauthorized) else None
    return envelope(exc, headers=headers)


async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    # Starlette raises these before a route runs; map them onto the catalogue.
    if exc.status_code == 404:
        return envelope(NotFound(f"no route {request.url.path}"))
    if exc.status_code == 401:
        error: CarrilError = Unauthorized()
    elif exc.status_code == 405:
        error = MethodNotAllowed(f"{request.method} is not allowed here")
    elif 400 <= exc.status_code < 500:
        error = ValidationFailed(f"the request could not be read: {exc.detail}")
    else:
        error = CarrilError(str(exc.detail))
    error.status = exc.status_code
    return envelope(error, headers=getattr(exc, "headers", None))


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return envelope(CarrilError())


def errors_install(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation)  # type: ignore[arg-type]
    app.add_exception_handler(CarrilError, _carril)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _http)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _unexpected)
