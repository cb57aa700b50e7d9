"""Every route in the web app's URL configuration, walked from `get_resolver()`, with
sample URL arguments for each, so access tests cover routes nobody listed by hand."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.urls.converters import IntConverter, PathConverter, UUIDConverter

# The DRF routes anyone may call without signing in (api.scopes declares them public
# too); every other route needs a user.
PUBLIC_ROUTES = {"api:token-obtain", "api-schema", "api-docs"}
WRITE_METHODS = ("post", "put", "patch", "delete")
HANDLER_METHODS = ("get", *WRITE_METHODS)


@dataclass(frozen=True)
class Walked:
    name: str  # namespaced, e.g. "api:job-detail"
    callback: Callable[..., Any]
    converters: dict[str, Any]

    @property
    def drf_view(self) -> type | None:
        from rest_framework.views import APIView

        cls = getattr(self.callback, "cls", None)
        return cls if isinstance(cls, type) and issubclass(cls, APIView) else None

    @property
    def methods(self) -> list[str]:
        """A DRF view's handler methods (it answers 405 to the others)."""
        view = self.drf_view
        return [m for m in HANDLER_METHODS if view is not None and hasattr(view, m)]

    def url(self) -> str:
        return reverse(self.name, kwargs={k: _sample(c) for k, c in self.converters.items()})


def _sample(converter: Any) -> Any:
    if isinstance(converter, UUIDConverter):
        return uuid.UUID(int=7)
    if isinstance(converter, IntConverter):
        return 7
    if isinstance(converter, PathConverter):
        return "some/file.txt"
    return "somename"


def every_route(
    patterns: list | None = None, prefix: str = "", converters: dict | None = None
) -> Iterator[Walked]:
    """Every named route; Django's own admin site stands in by its index."""
    converters = converters or {}
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        found = {**converters, **getattr(pattern.pattern, "converters", {})}
        if isinstance(pattern, URLResolver):
            if pattern.namespace == "admin":
                [index] = [p for p in pattern.url_patterns if getattr(p, "name", "") == "index"]
                yield Walked("admin:index", index.callback, {})
                continue
            inner = f"{prefix}{pattern.namespace}:" if pattern.namespace else prefix
            yield from every_route(pattern.url_patterns, inner, found)
        elif isinstance(pattern, URLPattern):
            assert pattern.name, f"an unnamed route: {pattern.pattern}"
            yield Walked(f"{prefix}{pattern.name}", pattern.callback, found)


def drf_routes() -> list[Walked]:
    return [route for route in every_route() if route.drf_view is not None]
