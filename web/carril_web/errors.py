"""The web app's one exception root and its catalogue of error codes.

Services raise these; only the API edge (`api.errors`) turns them into
`{"error": {"code", "message", "details"}}`. Each class's docstring is its default
message. `docs/api-errors.md` lists the same catalogue and a test keeps them in step.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404


class CarrilWebError(Exception):
    """Internal error."""

    code = "INTERNAL_ERROR"
    status = 500

    def __init__(self, message: str | None = None, *, details: dict[str, Any] | None = None):
        self.message = message or (self.__doc__ or self.code).strip()
        self.details = details or {}
        super().__init__(self.message)

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}


class ValidationFailed(CarrilWebError):
    """The request is not valid."""

    code = "VALIDATION_ERROR"
    status = 400


class UnknownParameter(CarrilWebError):
    """The request has a query parameter this operation does not take."""

    code = "UNKNOWN_PARAMETER"
    status = 400


class Unauthorized(CarrilWebError):
    """Sign in, or send Authorization: Bearer <token> (or Token <token>)."""

    code = "UNAUTHORIZED"
    status = 401


class Forbidden(CarrilWebError):
    """You are not allowed to do this."""

    code = "FORBIDDEN"
    status = 403


class NotFound(CarrilWebError, Http404):
    """No such resource."""

    # Also an Http404, so a page that reads a missing or foreign record answers Django's
    # 404 page, exactly as the API answers 404.

    code = "NOT_FOUND"
    status = 404


class NoEvaluation(NotFound):
    """This job has no evaluation: trainings and evaluate jobs write one when they succeed."""

    code = "NO_EVALUATION"
    status = 404


class Conflict(CarrilWebError):
    """The resource is not in a state that allows this."""

    code = "CONFLICT"
    status = 409


class GateFailed(CarrilWebError):
    """The candidate does not beat the serving version by the required margin."""

    code = "GATE_FAILED"
    status = 409


class ScopeRefused(CarrilWebError):
    """This token's scopes do not allow this."""

    code = "SCOPE_REFUSED"
    status = 403


class ResourceUnavailable(CarrilWebError):
    """No host of the GPU service has as many GPUs as this job asks for."""

    # The GPU service's own code and reason (its admission refuses the same job with them).

    code = "RESOURCE_UNAVAILABLE"
    status = 409


class DatasetInvalid(CarrilWebError):
    """The dataset is not a valid YOLO detection dataset; see the report."""

    code = "DATASET_INVALID"
    status = 400


class ImageTooLarge(CarrilWebError):
    """An image has more pixels than this server accepts."""

    code = "IMAGE_TOO_LARGE"
    status = 400


class WeightsRejected(CarrilWebError):
    """The weights file is not a loadable, safe ultralytics checkpoint."""

    code = "WEIGHTS_REJECTED"
    status = 422


class NoServingModel(CarrilWebError):
    """No model version is serving; promote one or choose a model version."""

    code = "NO_SERVING_MODEL"
    status = 409


class GpuServiceUnavailable(CarrilWebError):
    """The GPU service cannot be reached right now; try again shortly."""

    code = "GPU_SERVICE_UNAVAILABLE"
    status = 503


class PayloadTooLarge(CarrilWebError):
    """The upload is larger than this server accepts."""

    code = "PAYLOAD_TOO_LARGE"
    status = 413


class UnsupportedMediaType(CarrilWebError):
    """This operation does not take a body of that content type."""

    code = "UNSUPPORTED_MEDIA_TYPE"
    status = 415


class NotAcceptable(CarrilWebError):
    """This API answers application/json only; send Accept: application/json or */*."""

    code = "NOT_ACCEPTABLE"
    status = 406


class MethodNotAllowed(CarrilWebError):
    """This method is not allowed here."""

    code = "METHOD_NOT_ALLOWED"
    status = 405


class Throttled(CarrilWebError):
    """Too many requests; slow down."""

    code = "THROTTLED"
    status = 429


class QuotaExceeded(CarrilWebError):
    """A quota would be passed: details name the quota, its limit and the current usage."""

    code = "QUOTA_EXCEEDED"
    status = 429


# Codes that appear only on job records. A job the GPU service failed or refused keeps
# that service's own code (CUDA_OOM, RESOURCE_UNAVAILABLE, FILE_NOT_FOUND...).
JOB_ERROR_CODES: dict[str, str] = {
    "LOST": "The GPU service no longer knows this job (its journal was lost or reset).",
}

CATALOGUE: dict[str, tuple[int, str]] = {
    cls.code: (cls.status, (cls.__doc__ or "").strip())
    for cls in (
        CarrilWebError,
        ValidationFailed,
        UnknownParameter,
        Unauthorized,
        Forbidden,
        NotFound,
        NoEvaluation,
        Conflict,
        GateFailed,
        ScopeRefused,
        ResourceUnavailable,
        DatasetInvalid,
        ImageTooLarge,
        WeightsRejected,
        NoServingModel,
        GpuServiceUnavailable,
        PayloadTooLarge,
        UnsupportedMediaType,
        NotAcceptable,
        MethodNotAllowed,
        Throttled,
        QuotaExceeded,
    )
}
