"""The FastAPI app factory. Nothing is built at import time: `create_app(settings)`
wires the runtime, the executor, the journal, the job manager and the scheduler, and
the lifespan starts and stops them."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gpu_service.api.errors import errors_install
from gpu_service.api.routes import private, public
from gpu_service.executors.base import Executor
from gpu_service.executors.select import executor_select
from gpu_service.journal import Journal
from gpu_service.kinds import KINDS
from gpu_service.logging import request_id_var
from gpu_service.manager import JobManager
from gpu_service.metrics import ServiceMetrics
from gpu_service.runtime.base import GpuRuntime
from gpu_service.runtime.select import runtime_select
from gpu_service.scheduler import Scheduler
from gpu_service.settings import Settings
from gpu_service.weights_pool import WeightsPool
from gpu_service.workers.env import worker_env

_SAFE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


class RequestIdMiddleware:
    """Accept X-Request-ID (or make one), expose it to logs and routes, echo it back."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        request_id = given if _SAFE_REQUEST_ID.match(given) else uuid.uuid4().hex
        token = request_id_var.set(request_id)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", request_id.encode()))
                message["headers"] = headers
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            request_id_var.reset(token)


def create_app(
    settings: Settings, *, runtime: GpuRuntime | None = None, executor: Executor | None = None
) -> FastAPI:
    runtime = runtime or runtime_select(settings=settings)
    metrics = ServiceMetrics()
    journal = Journal(path=settings.journal_path)
    executor = executor or executor_select(settings=settings, runtime=runtime, records=journal)
    manager = JobManager(
        settings=settings, executor=executor, journal=journal, kinds=dict(KINDS), metrics=metrics
    )
    scheduler = Scheduler(manager=manager)
    weights = WeightsPool(
        storage=settings.storage,
        env=worker_env(settings=settings, runtime=runtime, gpu_ids=[]),
        nice=settings.worker_nice,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await scheduler.start()
        try:
            yield
        finally:
            await scheduler.stop()
            weights.close()
            journal.close()

    app = FastAPI(
        title="Carril GPU service",
        version="0.1.0",
        description="Admission, durable journal and worker processes for YOLO jobs on GPUs.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.runtime = runtime
    app.state.manager = manager
    app.state.scheduler = scheduler
    app.state.metrics = metrics
    app.state.weights = weights
    errors_install(app)
    app.include_router(public)
    app.include_router(private)
    app.add_middleware(RequestIdMiddleware)
    return app
