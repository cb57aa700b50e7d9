"""The edge where every API failure becomes `{"error": {"code", "message", "details"}}`."""

from __future__ import annotations

from typing import Any

from carril_web import errors
from django.core.exceptions import PermissionDenied, RequestDataTooBig, TooManyFilesSent
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from rest_framework import exceptions as drf
from rest_framework.response import Response
from rest_framework.views import set_rollback

_DRF_CODES: list[tuple[type[drf.APIException], str]] = [
    (drf.NotAuthenticated, errors.Unauthorized.code),
    (drf.AuthenticationFailed, errors.Unauthorized.code),
    (drf.PermissionDenied, errors.Forbidden.code),
    (drf.NotFound, errors.NotFound.code),
    (drf.MethodNotAllowed, errors.MethodNotAllowed.code),
    (drf.Throttled, errors.Throttled.code),
    (drf.ValidationError, errors.ValidationFailed.code),
    (drf.ParseError, errors.ValidationFailed.code),
    # Each code answers with one status (docs/api-errors.md): not VALIDATION_ERROR's 400.
    (drf.UnsupportedMediaType, errors.UnsupportedMediaType.code),
    (drf.NotAcceptable, errors.NotAcceptable.code),
]


def envelope(*, code: str, message: str, details: dict[str, Any] | None = None) -> dict:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's EXCEPTION_HANDLER: our errors, DRF's and Django's, all in one envelope."""
    if isinstance(exc, Http404) and not isinstance(exc, errors.CarrilWebError):
        exc = errors.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = errors.Forbidden()
    elif isinstance(exc, RequestDataTooBig | TooManyFilesSent):
        # Django raises these while DRF reads the body; unhandled, they become an HTML 400.
        exc = errors.PayloadTooLarge(str(exc) or None)
    if isinstance(exc, errors.CarrilWebError):
        set_rollback()
        return Response(
            envelope(code=exc.code, message=exc.message, details=exc.details), status=exc.status
        )
    if isinstance(exc, drf.APIException):
        set_rollback()
        code = next((c for cls, c in _DRF_CODES if isinstance(exc, cls)), "INTERNAL_ERROR")
        if isinstance(exc, drf.ValidationError):
            message = "The request is not valid."
            details = {
                "fields": exc.detail
                if isinstance(exc.detail, dict)
                else {"non_field_errors": exc.detail}
            }
        elif isinstance(exc, drf.UnsupportedMediaType) and context.get("view") is not None:
            accepted = [parser.media_type for parser in context["view"].get_parsers()]
            message = f"{exc.detail} This operation takes {' or '.join(accepted)}."
            details = {"accepted": accepted}
        else:
            message = str(exc.detail)
            details = {}
        headers = {}
        if getattr(exc, "auth_header", None):
            headers["WWW-Authenticate"] = exc.auth_header
        if getattr(exc, "wait", None):
            headers["Retry-After"] = str(int(exc.wait))
        return Response(
            envelope(code=code, message=message, details=details),
            status=exc.status_code,
            headers=headers,
        )
    return None


def not_found_view(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """404 for URLs no route matches: JSON under /api/, Django's page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse(envelope(code="NOT_FOUND", message="No such resource."), status=404)
    from django.views.defaults import page_not_found

    return page_not_found(request, exception or Http404())


def server_error_view(request: HttpRequest) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse(envelope(code="INTERNAL_ERROR", message="Internal error."), status=500)
    from django.views.defaults import server_error

    return server_error(request)
