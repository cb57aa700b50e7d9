"""Schemathesis against both OpenAPI documents, on live servers, authenticated.

The web app runs under gunicorn with its reconciler and the GPU service (the browser
test's stack); the GPU service also runs on its own for its API. Every generated request,
valid or not, must get an answer that is not a 5xx and that matches the documented
schema for its status. Bounded and derandomised so a run is reproducible.

Jobs the fuzzer manages to start on the GPU service are cancelled straight away: a
generated diagnostic may ask to burn a CPU core for a day, which would only slow the
rest of the run down, not find anything.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error, response_schema_conformance

from tests.support.gpu_service import GpuServiceProcess
from tests.support.stack import Stack

pytestmark = pytest.mark.slow

PASSWORD = "fuzz-password-Quokka-91"
CHECKS = [not_a_server_error, response_schema_conformance]
FUZZ = settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    print_blob=True,
)


def _runner(
    *, label: str, strategies: list, call: Callable[[Any], None], calls: dict[str, int]
) -> Callable[[], None]:
    @FUZZ
    @given(case=st.one_of(strategies))
    def run(case: Any) -> None:
        calls[label] = calls.get(label, 0) + 1
        call(case)

    return run


def fuzz(*, schema: Any, call: Callable[[Any], None]) -> dict[str, str]:
    """Run `call` on generated cases (valid and invalid) of every operation; the failures.

    Each operation is its own Hypothesis run, so one failing operation does not hide the
    others. (schemathesis' pytest plugin does this per test, but its lazy loader does
    not work with this pytest; a loop is all it takes.)
    """
    failures: dict[str, str] = {}
    calls: dict[str, int] = {}
    for result in schema.get_all_operations():
        operation = result.ok()
        strategies = [operation.as_strategy(GenerationMode.POSITIVE)]
        with contextlib.suppress(Exception):  # some operations have nothing to make invalid
            strategies.append(operation.as_strategy(GenerationMode.NEGATIVE))

        run = _runner(label=operation.label, strategies=strategies, call=call, calls=calls)
        try:
            run()
        except (Exception, BaseExceptionGroup) as exc:  # schemathesis' FailureGroup is Base
            failures[operation.label] = f"{type(exc).__name__}: {exc}"[:3000]
    # Every operation was really exercised, not skipped by a generation problem.
    assert all(calls.get(r.ok().label, 0) >= 1 for r in schema.get_all_operations()), calls
    return failures


# --- the web API --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def web_stack(tmp_path_factory):
    stack = Stack(storage=tmp_path_factory.mktemp("web-fuzz"), password=PASSWORD)
    try:
        yield stack.start()
    finally:
        stack.stop()


@pytest.fixture(scope="module")
def web_token(web_stack: Stack) -> str:
    # Another user's tokens take the small ids first, so a generated DELETE of a token id
    # hits someone else's (404) rather than revoking the fuzzer's own credential.
    ada = {"Authorization": f"Token {web_stack.token('ada')}"}
    for _ in range(30):
        created = httpx.post(f"{web_stack.web_url}/api/v1/auth/tokens/", json={}, headers=ada)
        assert created.status_code == 201, created.text
    return web_stack.token("alice")


def test_the_web_api_never_answers_5xx_and_matches_its_schema(web_stack, web_token):
    auth = {"Authorization": f"Token {web_token}"}
    schema = schemathesis.openapi.from_url(f"{web_stack.web_url}/api/schema/", headers=auth)
    assert len(list(schema.get_all_operations())) >= 20

    def call(case: Any) -> None:
        case.call_and_validate(base_url=web_stack.web_url, headers=auth, checks=CHECKS, timeout=60)

    failures = fuzz(schema=schema, call=call)
    assert failures == {}, "\n\n".join(f"{k}:\n{v}" for k, v in failures.items())


# --- the GPU service API ------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpu(tmp_path_factory):
    service = GpuServiceProcess(storage=tmp_path_factory.mktemp("gpu-fuzz"), gpus="1x24GiB")
    try:
        yield service.start()
    finally:
        service.stop()


def test_the_gpu_service_api_never_answers_5xx_and_matches_its_schema(gpu):
    auth = {"Authorization": f"Bearer {gpu.token}"}
    schema = schemathesis.openapi.from_url(f"{gpu.url}/openapi.json")
    assert len(list(schema.get_all_operations())) >= 10

    def call(case: Any) -> None:
        response = case.call_and_validate(base_url=gpu.url, headers=auth, checks=CHECKS, timeout=60)
        if case.path == "/v1/jobs" and case.method == "POST" and response.status_code < 300:
            gpu.client.post(f"/v1/jobs/{response.json()['id']}/cancel")

    failures = fuzz(schema=schema, call=call)
    assert failures == {}, "\n\n".join(f"{k}:\n{v}" for k, v in failures.items())
