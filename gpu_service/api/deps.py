"""Dependencies as named `Annotated` aliases, so route signatures read as declarations.

All of them are `async def` on purpose: FastAPI runs a plain `def` dependency in its
thread pool, and a thread hop per dependency (four on a submit) cost more than the
route's own work. None of them blocks.
"""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import Depends, Request

from gpu_service.errors import Unauthorized
from gpu_service.journal import Journal
from gpu_service.logging import request_id_var
from gpu_service.manager import JobManager
from gpu_service.settings import Settings
from gpu_service.weights_pool import WeightsPool


async def _settings(request: Request) -> Settings:
    return request.app.state.settings


async def _manager(request: Request) -> JobManager:
    return request.app.state.manager


async def _journal(request: Request) -> Journal:
    return request.app.state.manager.journal


async def _weights(request: Request) -> WeightsPool:
    return request.app.state.weights


async def _request_id(request: Request) -> str | None:
    value = request_id_var.get()
    return None if value == "-" else value


SettingsDep = Annotated[Settings, Depends(_settings)]
ManagerDep = Annotated[JobManager, Depends(_manager)]
JournalDep = Annotated[Journal, Depends(_journal)]
WeightsDep = Annotated[WeightsPool, Depends(_weights)]
RequestIdDep = Annotated[str | None, Depends(_request_id)]


async def require_token(request: Request, settings: SettingsDep) -> None:
    """Bearer token, compared in constant time so its bytes cannot be guessed by timing."""
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not secrets.compare_digest(
        given.strip().encode(), settings.token.encode()
    ):
        raise Unauthorized()
