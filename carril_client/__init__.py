"""Carril's Python client (`Client`) and command line (`carril`, in `carril_client.cli`)."""

from carril_client.client import Client
from carril_client.errors import (
    ApiError,
    AuthRefused,
    CarrilError,
    Conflict,
    DatasetInvalid,
    Forbidden,
    GateFailed,
    JobFailed,
    NotFound,
    QuotaExceeded,
    Throttled,
    Unreachable,
    ValidationFailed,
)

__all__ = [
    "ApiError",
    "AuthRefused",
    "CarrilError",
    "Client",
    "Conflict",
    "DatasetInvalid",
    "Forbidden",
    "GateFailed",
    "JobFailed",
    "NotFound",
    "QuotaExceeded",
    "Throttled",
    "Unreachable",
    "ValidationFailed",
]
