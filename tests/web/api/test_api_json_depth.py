"""JSON nested a thousand levels deep is refused with 400 VALIDATION_ERROR on every API
route that takes JSON, found by walking the URL configuration, and nothing is logged as
an error: before the parser's depth limit it reached Python's recursion limit and
answered 500 with a traceback, the token endpoint included (no account needed)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from api.parsers import JSON_MAX_DEPTH, DepthLimitedJSONParser, json_depth_exceeds
from django.contrib.auth.models import User
from django.urls import URLPattern, URLResolver, get_resolver
from jobs.models import Job, JobKind, JobState
from rest_framework.parsers import JSONParser
from rest_framework.test import APIClient
from rest_framework.views import APIView
from webhooks.models import Webhook, WebhookDelivery

from tests.web.carril_web.test_web_settings import ROOT
from tests.web.conftest import PASSWORD
from tests.web.factories import DELIVERED, model_version

DEEP = ("[" * 1000 + "]" * 1000).encode()
DEEP_IN_A_FIELD = b'{"name": ' + b'{"a": ' * 1000 + b"1" + b"}" * 1000 + b"}"
WRITES = ("post", "put", "patch")


def _routes(patterns: list[Any], prefix: str = "") -> Iterator[tuple[str, URLPattern]]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        else:
            yield prefix + str(pattern.pattern), pattern


def json_write_routes() -> list[tuple[str, str]]:
    """(route, method) for every DRF view method that writes and parses JSON."""
    found = []
    for route, pattern in _routes(get_resolver().url_patterns):
        view = getattr(pattern.callback, "cls", None)
        if view is None or not issubclass(view, APIView):
            continue
        if not any(isinstance(parser, JSONParser) for parser in view().get_parsers()):
            continue
        found += [(route, method) for method in WRITES if hasattr(view, method)]
    return found


ROUTES = json_write_routes()


def test_the_walk_finds_the_routes_named_in_the_finding():
    routes = {route for route, _method in ROUTES}
    assert {"api/v1/auth/token/", "api/v1/auth/tokens/", "api/v1/jobs/train/"} <= routes
    assert ("api/v1/jobs/<uuid:job_id>/", "patch") in ROUTES
    assert len(ROUTES) >= 12


def test_every_json_parser_of_the_api_is_the_depth_limited_one():
    for route, pattern in _routes(get_resolver().url_patterns):
        view = getattr(pattern.callback, "cls", None)
        if view is not None and issubclass(view, APIView):
            for parser in view().get_parsers():
                if isinstance(parser, JSONParser):
                    assert isinstance(parser, DepthLimitedJSONParser), route


@pytest.fixture
def records(db: None, storage) -> dict[str, str]:
    """A superuser's records for every kind of id a route takes, so each request gets as
    far as reading its body."""
    boss = User.objects.create_superuser("boss", password=PASSWORD)
    version = model_version()
    job = Job.objects.create(
        owner=boss,
        kind=JobKind.TRAIN,
        state=JobState.RUNNING,
        spec={},
        dispatched_at=DELIVERED,
    )
    hook = Webhook.objects.create(owner=boss, url="https://example.com/hook", secret="s" * 32)
    delivery = WebhookDelivery.objects.create(
        webhook=hook, event="job.succeeded", event_key="k", payload={}
    )
    return {
        "job_id": str(job.id),
        "version_id": str(version.id),
        "webhook_id": str(hook.id),
        "delivery_id": str(delivery.id),
        "token_id": "1",
        "username": "boss",
        "dataset_id": str(uuid.uuid4()),
    }


def _url(route: str, records: dict[str, str]) -> str:
    url = "/" + route
    for name, value in records.items():
        for converter in ("uuid", "int", "str"):
            url = url.replace(f"<{converter}:{name}>", value)
    assert "<" not in url, url
    return url


@pytest.fixture
def parsed(monkeypatch) -> list[bytes]:
    """What the JSON parser was asked to read during the test (a route that takes no
    body, such as a cancel, never asks it)."""
    seen: list[bytes] = []
    real = DepthLimitedJSONParser.parse

    def spy(self, stream, media_type=None, parser_context=None):
        seen.append(b"")
        return real(self, stream, media_type, parser_context)

    monkeypatch.setattr(DepthLimitedJSONParser, "parse", spy)
    return seen


@pytest.mark.parametrize("body", [DEEP, DEEP_IN_A_FIELD], ids=["array", "in-a-field"])
@pytest.mark.parametrize(("route", "method"), ROUTES, ids=[f"{m} {r}" for r, m in ROUTES])
def test_json_nested_a_thousand_deep_answers_400_validation_error_on_every_json_route(
    route: str, method: str, body: bytes, records: dict[str, str], parsed, caplog
):
    client = APIClient()
    client.force_authenticate(User.objects.get(username="boss"))
    with caplog.at_level(logging.WARNING):
        response = getattr(client, method)(
            _url(route, records), data=body, content_type="application/json"
        )

    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    if not parsed:  # the route takes no body: answered as if it had none
        assert response.status_code < 500, response.content[:300]
        assert route.endswith(("/cancel/", "/redeliver/")), f"{route} never read its body"
        return
    assert response.status_code == 400, response.content[:300]
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert error["details"] == {"reason": "too_deep", "max_depth": JSON_MAX_DEPTH}
    assert str(JSON_MAX_DEPTH) in error["message"]


@pytest.mark.parametrize("route", ["/api/v1/auth/token/", "/api/v1/auth/tokens/"])
def test_deep_json_without_an_account_is_refused_without_a_500(anon_api, route, caplog):
    with caplog.at_level(logging.WARNING):
        response = anon_api.post(route, data=DEEP, content_type="application/json")

    assert response.status_code in (400, 401), response.content[:300]
    if route == "/api/v1/auth/token/":  # reads the body before it knows who is asking
        assert response.status_code == 400
        assert response.json()["error"]["details"]["reason"] == "too_deep"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


def test_json_at_the_limit_still_parses_and_one_level_more_does_not():
    at_limit = b"[" * JSON_MAX_DEPTH + b"]" * JSON_MAX_DEPTH
    assert not json_depth_exceeds(at_limit)
    assert json_depth_exceeds(b"[" + at_limit + b"]")


def test_brackets_inside_strings_do_not_count_towards_the_depth():
    text = b'{"name": "' + b"[{" * 500 + b'\\"[[[", "tags": ["a]]]"]}'
    assert not json_depth_exceeds(text)


def test_a_long_flat_list_is_not_too_deep():
    assert not json_depth_exceeds(b"[" + b",".join([b"[1]"] * 100_000) + b"]")


def test_the_error_catalogue_states_the_limit_the_parser_applies():
    text = (ROOT / "docs" / "api-errors.md").read_text()
    assert f"JSON nested deeper than {JSON_MAX_DEPTH} arrays and objects" in text
    assert f'"max_depth": {JSON_MAX_DEPTH}' in text
