"""The GPU service's one exception root and its catalogue of error codes.

Every failure the service reports, over HTTP or in a job record, is one of these
codes. Routes never build error bodies by hand: they raise a `CarrilError`, and the
edge (`gpu_service.api.errors`) turns it into `{"error": {"code", "message",
"details"}}` with the status below. Each class's docstring is its default message.
"""

from __future__ import annotations

from typing import Any


class CarrilError(Exception):
    """Internal error."""

    code = "INTERNAL_ERROR"
    status = 500

    def __init__(self, message: str | None = None, *, details: dict[str, Any] | None = None):
        self.message = message or (self.__doc__ or self.code).strip()
        self.details = details or {}
        super().__init__(self.message)

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}


class ValidationFailed(CarrilError):
    """The request is not valid."""

    code = "VALIDATION_ERROR"
    status = 422


class NotFound(CarrilError):
    """No such resource."""

    code = "NOT_FOUND"
    status = 404


class Unauthorized(CarrilError):
    """A valid service token is required (Authorization: Bearer <token>)."""

    code = "UNAUTHORIZED"
    status = 401


class MethodNotAllowed(CarrilError):
    """This endpoint does not take that HTTP method."""

    code = "METHOD_NOT_ALLOWED"
    status = 405


class ResourceUnavailable(CarrilError):
    """This request can never be met by the GPUs this service has."""

    code = "RESOURCE_UNAVAILABLE"
    status = 409


class Conflict(CarrilError):
    """The job is not in a state that allows this."""

    code = "CONFLICT"
    status = 409


# A job's state in a sentence: "The job has already succeeded", not "job is succeeded".
_STATE_PHRASES = {
    "queued": "is queued",
    "running": "is running",
    "cancelling": "is already being cancelled",
    "succeeded": "has already succeeded",
    "failed": "has already failed",
    "cancelled": "has already been cancelled",
}


def state_conflict(*, state: str, consequence: str) -> Conflict:
    """ "The job has already succeeded; it cannot be cancelled." with the state in details."""
    phrase = _STATE_PHRASES.get(str(state), f"is {state}")
    return Conflict(f"The job {phrase}; {consequence}.", details={"state": str(state)})


class CudaOOM(CarrilError):
    """The GPU ran out of memory; try a smaller batch size or image size."""

    code = "CUDA_OOM"
    status = 507


class WorkerCrashed(CarrilError):
    """The worker process running this job died."""

    code = "WORKER_CRASHED"
    status = 500


class Interrupted(CarrilError):
    """The GPU service stopped while this job was running and the job cannot resume."""

    code = "INTERRUPTED"
    status = 500


class Cancelled(CarrilError):
    """The job was cancelled."""

    code = "CANCELLED"
    status = 409


class WeightsRejected(CarrilError):
    """The weights file is not a loadable, safe ultralytics checkpoint."""

    code = "WEIGHTS_REJECTED"
    status = 422


class FileMissing(CarrilError):
    """A file the job needs is missing from shared storage."""

    code = "FILE_NOT_FOUND"
    status = 422


class ImageTooLarge(CarrilError):
    """An image has more pixels than CARRIL_INFER_MAX_PIXELS allows."""

    code = "IMAGE_TOO_LARGE"
    status = 422


class JobFailed(CarrilError):
    """The job failed."""

    code = "JOB_FAILED"
    status = 500


# The documented catalogue: code -> (HTTP status, default message). docs and tests read it.
CATALOGUE: dict[str, tuple[int, str]] = {
    cls.code: (cls.status, (cls.__doc__ or "").strip())
    for cls in (
        CarrilError,
        ValidationFailed,
        NotFound,
        Unauthorized,
        MethodNotAllowed,
        ResourceUnavailable,
        Conflict,
        CudaOOM,
        WorkerCrashed,
        Interrupted,
        Cancelled,
        WeightsRejected,
        FileMissing,
        ImageTooLarge,
        JobFailed,
    )
}


def error_from_dict(data: dict[str, Any]) -> CarrilError:
    """Rebuild an error sent across a process boundary as `as_dict()`."""
    by_code = {cls.code: cls for cls in CarrilError.__subclasses__()}
    cls = by_code.get(data.get("code", ""), CarrilError)
    err = cls(data.get("message"), details=data.get("details") or {})
    err.code = data.get("code", cls.code)
    return err
