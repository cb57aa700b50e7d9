"""Unknown query parameters are refused (400 `UNKNOWN_PARAMETER`), not silently ignored.

A misspelt filter (`?stat=running`) that is ignored answers the whole list, and the
caller draws the wrong conclusion. What each operation accepts is what its OpenAPI
operation declares (`extend_schema(parameters=...)`, and the pagination drf-spectacular
adds for paginated lists), so the documentation and the check cannot disagree: a view
that reads a new parameter declares it, or every request using it is refused.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from carril_web.errors import UnknownParameter
from django.http import HttpRequest, HttpResponse, JsonResponse

from api.errors import envelope

# `<uuid:job_id>` in a Django route is `{job_id}` in an OpenAPI path.
_CONVERTER = re.compile(r"<(?:[^:>]+:)?([^>]+)>")


def openapi_path(route: str) -> str:
    """A resolved Django route (`api/v1/jobs/<uuid:job_id>/`) as its OpenAPI path."""
    return "/" + _CONVERTER.sub(r"{\1}", route)


@functools.cache
def declared_query_parameters() -> dict[tuple[str, str], frozenset[str]]:
    """(OpenAPI path, METHOD) -> the query parameters its operation declares. Built once
    per process from the same generator that serves /api/schema/ (about a second)."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    declared = {}
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            names = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
            declared[(path, method.upper())] = frozenset(names)
    return declared


def unknown_parameter_message(*, unknown: list[str], accepted: list[str]) -> str:
    names = ", ".join(f"'{name}'" for name in unknown)
    noun = "parameter" if len(unknown) == 1 else "parameters"
    takes = f"it takes {', '.join(accepted)}" if accepted else "it takes no query parameters"
    return f"Unknown query {noun} {names}; {takes}."


class UnknownQueryParameterMiddleware:
    """Refuses a request to the REST API whose query string names a parameter its
    operation does not declare. Routes and methods the schema does not describe are
    left to their views (a 404 or 405 says more than this would)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view_func: Any, view_args: Any, view_kwargs: Any
    ) -> HttpResponse | None:
        match = request.resolver_match
        if not request.GET or match is None or "api" not in match.namespaces:
            return None
        method = "GET" if request.method == "HEAD" else (request.method or "")
        accepted = declared_query_parameters().get((openapi_path(match.route), method))
        if accepted is None:
            return None
        unknown = sorted(set(request.GET) - accepted)
        if not unknown:
            return None
        shown = sorted(accepted)
        return JsonResponse(
            envelope(
                code=UnknownParameter.code,
                message=unknown_parameter_message(unknown=unknown, accepted=shown),
                details={"unknown": unknown, "accepted": shown},
            ),
            status=UnknownParameter.status,
        )
