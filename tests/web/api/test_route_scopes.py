"""Token scopes on every route: each DRF view runs the scope check and declares, for
each of its methods, the scope it needs; a read-only token writes nothing anywhere.
Routes are walked from the URL configuration, so a new one is covered without a row
here (ADR 0039)."""

from __future__ import annotations

import pytest
from accounts.services import api_token_create
from django.test import override_settings
from rest_framework.test import APIClient

from tests.support.routes import PUBLIC_ROUTES, WRITE_METHODS, drf_routes

ROUTES = drf_routes()
WRITES = [
    (r, m) for r in ROUTES if r.name not in PUBLIC_ROUTES for m in r.methods if m in WRITE_METHODS
]


def _view(route):
    return route.drf_view(**route.callback.initkwargs)


@pytest.mark.parametrize("route", ROUTES, ids=[r.name for r in ROUTES])
def test_every_drf_view_runs_the_token_scope_check(route) -> None:
    from api.scopes import TokenScopes

    checks = [type(check) for check in _view(route).get_permissions()]
    assert TokenScopes in checks, f"{route.name}: {checks}"


@pytest.mark.parametrize("route", ROUTES, ids=[r.name for r in ROUTES])
def test_every_method_of_every_drf_route_declares_its_scope(route) -> None:
    from api.scopes import ALL, PUBLIC, SCOPES, declared_scope

    assert route.methods, route.name
    for method in route.methods:
        needed = declared_scope(name=route.name, method=method)
        if route.name in PUBLIC_ROUTES:
            assert needed == PUBLIC, (route.name, method)
        else:
            assert needed in {*SCOPES, ALL}, (route.name, method, needed)


def test_the_scope_table_names_only_routes_that_exist() -> None:
    from api.scopes import ROUTE_SCOPES

    assert set(ROUTE_SCOPES) == {route.name for route in ROUTES}


@pytest.mark.parametrize(
    ("route", "method"), WRITES, ids=[f"{m.upper()} {r.name}" for r, m in WRITES]
)
def test_a_read_only_token_of_an_administrator_cannot_write_anywhere(route, method, admin) -> None:
    client = APIClient()
    token = api_token_create(user=admin, name="read-only", scopes=["read"])
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token.secret}")
    response = getattr(client, method)(route.url(), {}, format="json")
    assert response.status_code == 403, response.content[:300]
    error = response.json()["error"]
    assert error["code"] == "SCOPE_REFUSED"
    assert error["details"]["scope"] not in {None, "read"}
    assert error["details"]["token_scopes"] == ["read"]


@override_settings(ROOT_URLCONF="tests.web.api.unscoped_urls")
def test_a_route_without_a_declared_scope_is_refused_and_named_by_the_system_check(
    owner_api,
) -> None:
    from api.checks import token_scopes_on_every_route

    response = owner_api.get("/undeclared/")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "SCOPE_REFUSED"
    assert "declares no token scope" in response.json()["error"]["message"]
    problems = sorted(error.msg for error in token_scopes_on_every_route(None))
    assert problems == [
        "undeclared (Undeclared): no scope declared for GET",
        "unscoped (Unscoped): its permission classes skip TokenScopes",
        "unscoped (Unscoped): no scope declared for PUT",
    ]
