"""`manage.py check` (and so every start, migration and test run) refuses a DRF route
that skips the token-scope check or declares no scope for one of its methods."""

from __future__ import annotations

from collections.abc import Iterator

from django.core.checks import Error, register
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.views import APIView

from api.scopes import HANDLER_METHODS, ROUTE_SCOPES, TokenScopes


def drf_routes(patterns: list | None = None, prefix: str = "") -> Iterator[tuple[str, APIView]]:
    """(namespaced route name, the view as its route makes it) of every DRF view in the
    URL configuration."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            inner = f"{prefix}{pattern.namespace}:" if pattern.namespace else prefix
            yield from drf_routes(pattern.url_patterns, inner)
        elif isinstance(pattern, URLPattern):
            cls = getattr(pattern.callback, "cls", None)
            if isinstance(cls, type) and issubclass(cls, APIView):
                yield f"{prefix}{pattern.name}", cls(**pattern.callback.initkwargs)


def scope_problems() -> list[str]:
    problems = []
    for name, view in drf_routes():
        label = f"{name} ({type(view).__name__})"
        if not any(isinstance(check, TokenScopes) for check in view.get_permissions()):
            problems.append(f"{label}: its permission classes skip TokenScopes")
        for method in HANDLER_METHODS:
            if hasattr(view, method) and method not in ROUTE_SCOPES.get(name, {}):
                problems.append(f"{label}: no scope declared for {method.upper()}")
    return problems


@register()
def token_scopes_on_every_route(app_configs, **kwargs) -> list[Error]:
    return [
        Error(problem, hint="Declare it in api.scopes.ROUTE_SCOPES.", id="carril.E001")
        for problem in scope_problems()
    ]
