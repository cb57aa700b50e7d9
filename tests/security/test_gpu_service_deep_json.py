"""The GPU service answers JSON nested far too deep with a 4xx from its catalogue on every
route that takes a body, found by walking its routers: never a 500, no traceback in its
log, and it stays up. (It holds today: FastAPI turns a body json.loads cannot finish into
400. This keeps it so; the web app's own limit is tests/web/api/test_api_json_depth.py.)"""

from __future__ import annotations

import re

import pytest
from fastapi.routing import APIRoute

from gpu_service.api.routes import private, public
from gpu_service.errors import CATALOGUE
from tests.support.gpu_service import GpuServiceProcess

DEPTHS = [200, 900, 1000, 100_000]


def body_routes() -> list[str]:
    paths = [
        route.path
        for router in (public, private)
        for route in router.routes
        if isinstance(route, APIRoute) and route.methods & {"POST", "PUT", "PATCH"}
    ]
    return [re.sub(r"\{[^}]+\}", "x", path) for path in paths]


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    service = GpuServiceProcess(storage=tmp_path_factory.mktemp("storage"), gpus="1x24GiB")
    yield service.start()
    service.stop()


def test_the_walk_finds_the_job_submit_route():
    assert "/v1/jobs" in body_routes()


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("route", body_routes())
def test_deeply_nested_json_is_refused_by_the_gpu_service_without_a_500(
    service: GpuServiceProcess, route: str, depth: int
) -> None:
    deep = "[" * depth + "]" * depth
    bodies = [
        deep,
        f'{{"kind": "train", "spec": {{"dataset": {deep}, "epochs": 1}}}}',
        f'{{"ids": {deep}, "path": {deep}}}',
    ]
    for body in bodies:
        response = service.client.post(
            route, content=body, headers={"Content-Type": "application/json"}
        )
        assert 400 <= response.status_code < 500, response.text[:300]
        assert response.json()["error"]["code"] in CATALOGUE
    assert service.client.get("/healthz").status_code == 200
    assert service.client.get("/v1/jobs").json()["jobs"] == []
    assert "Traceback" not in service.log_tail(400)
