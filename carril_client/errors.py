"""Typed exceptions for the web API's error envelope `{"error": {code, message, details}}`.

Each class names the codes it stands for; `error_from_response` picks the most specific
one, so a caller can `except GateFailed` or read `.code` on any of them.
"""

from __future__ import annotations

from typing import Any

import httpx


class CarrilError(Exception):
    """Anything the client raises."""

    codes: tuple[str, ...] = ()

    def __init__(
        self,
        message: str,
        *,
        code: str = "ERROR",
        status: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.details = details or {}

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class Unreachable(CarrilError):
    """The server did not answer (connection refused, DNS, timeout)."""


class ApiError(CarrilError):
    """The server answered with an error envelope."""


class ValidationFailed(ApiError):
    codes = ("VALIDATION_ERROR",)


class AuthRefused(ApiError):
    """No token, a wrong, revoked or expired one."""

    codes = ("UNAUTHORIZED", "NOT_AUTHENTICATED", "AUTHENTICATION_FAILED")


class Forbidden(ApiError):
    """Signed in but not allowed (a role, or a token's scope: `details["scope"]`)."""

    codes = ("FORBIDDEN", "PERMISSION_DENIED")


class ScopeRefused(Forbidden):
    """The token's scopes do not allow this: `details["scope"]` names the one needed."""

    codes = ("SCOPE_REFUSED",)


class NotFound(ApiError):
    codes = ("NOT_FOUND",)


class Conflict(ApiError):
    codes = ("CONFLICT", "NO_SERVING_MODEL")


class GateFailed(Conflict):
    """The promotion gate did not hold: `details` has both numbers."""

    codes = ("GATE_FAILED",)


class DatasetInvalid(ApiError):
    """`details["report"]` is the validation report (problems with file and line)."""

    codes = ("DATASET_INVALID",)


class WeightsRejected(ApiError):
    codes = ("WEIGHTS_REJECTED",)


class PayloadTooLarge(ApiError):
    codes = ("PAYLOAD_TOO_LARGE",)


class Throttled(ApiError):
    codes = ("THROTTLED",)


class QuotaExceeded(ApiError):
    """A quota of the usage limits (429 QUOTA_EXCEEDED)."""

    codes = ("QUOTA_EXCEEDED",)


class ServerUnavailable(ApiError):
    codes = ("GPU_SERVICE_UNAVAILABLE", "INTERNAL_ERROR", "SERVICE_UNAVAILABLE")


class JobFailed(CarrilError):
    """A job the client waited for ended failed, cancelled or lost."""

    def __init__(self, job: dict[str, Any]) -> None:
        error = job.get("error") or {}
        super().__init__(
            error.get("message") or f"job {job.get('id')} ended {job.get('state')}",
            code=error.get("code") or str(job.get("state", "FAILED")).upper(),
            details={"job": job},
        )
        self.job = job


_BY_CODE: dict[str, type[ApiError]] = {
    code: cls
    for cls in (
        ValidationFailed,
        AuthRefused,
        Forbidden,
        ScopeRefused,
        NotFound,
        Conflict,
        GateFailed,
        DatasetInvalid,
        WeightsRejected,
        PayloadTooLarge,
        Throttled,
        QuotaExceeded,
        ServerUnavailable,
    )
    for code in cls.codes
}
_BY_STATUS: dict[int, type[ApiError]] = {
    400: ValidationFailed,
    401: AuthRefused,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    429: Throttled,
    502: ServerUnavailable,
    503: ServerUnavailable,
}


def error_from_response(response: httpx.Response) -> ApiError:
    """The typed exception for an error response, envelope or not."""
    try:
        body = response.json()
    except ValueError:
        body = {}
    envelope = body.get("error") if isinstance(body, dict) else None
    if isinstance(envelope, dict):
        code = str(envelope.get("code") or "ERROR")
        message = str(envelope.get("message") or response.reason_phrase)
        details = envelope.get("details") if isinstance(envelope.get("details"), dict) else {}
    else:
        code = f"HTTP_{response.status_code}"
        message = response.text[:300] or response.reason_phrase
        details = {}
    cls = _BY_CODE.get(code) or _BY_STATUS.get(response.status_code) or ApiError
    if response.status_code >= 500 and cls is ApiError:
        cls = ServerUnavailable
    return cls(message, code=code, status=response.status_code, details=details)
