"""Token scopes: what a limited API token (a CI token) may do.

A token without scopes acts with all of its user's rights (as before). A token with
scopes may call only the routes those scopes name; everything else answers
`403 SCOPE_REFUSED` naming the scope it would need. Scopes only ever narrow a user's
rights: the user's role still applies on top (ADR 0039).

Every DRF route declares, per method, the scope it needs in `ROUTE_SCOPES`, and every
DRF view runs `TokenScopes`. A route or method missing from the table is refused to
everyone, and `manage.py check` (api.checks) names it, so a new route cannot quietly
skip the check.
"""

from __future__ import annotations

from typing import Any

from carril_web.errors import ScopeRefused
from rest_framework.permissions import BasePermission

SCOPES: dict[str, str] = {
    "read": "read everything the user may see",
    "datasets": "upload and delete datasets",
    "train": "start trainings, evaluations and exports; cancel jobs; name, tag and annotate them",
    "infer": "start inference jobs",
    "promote-gated": "make a model version serving only through a promotion gate (`require`)",
    "models": "change model stages without a gate, choose a serving format; import weights",
    "tokens": "list, create and revoke API tokens",
    "webhooks": "register and manage webhooks",
}
ALL = "(a token without scopes)"  # only a token without scopes may
PUBLIC = "(public)"  # no sign-in needed: a token's scopes do not matter

# Route name (namespaced) -> method -> the scope it needs.
ROUTE_SCOPES: dict[str, dict[str, str]] = {
    "api-schema": {"get": PUBLIC},
    "api-docs": {"get": PUBLIC},
    "api:token-obtain": {"post": PUBLIC},  # a password, not a token
    "api:tokens": {"get": "tokens", "post": "tokens"},  # reading tokens is managing them
    "api:token-revoke": {"delete": "tokens"},
    "api:datasets": {"get": "read", "post": "datasets"},
    "api:dataset-detail": {"get": "read", "delete": "datasets"},
    "api:dataset-samples": {"get": "read"},
    "api:dataset-image": {"get": "read"},
    "api:models": {"get": "read"},
    "api:model-import": {"post": "models"},
    "api:model-detail": {"get": "read"},
    # To serving with `require`: `promote-gated` is enough (scope_needed).
    "api:model-stage": {"post": "models"},
    "api:model-download": {"get": "read"},
    "api:model-exports": {"get": "read"},
    "api:model-export": {"post": "train"},
    "api:model-serving-format": {"post": "models"},
    "api:jobs": {"get": "read"},
    "api:job-train": {"post": "train"},
    "api:jobs-compare": {"get": "read"},
    "api:job-infer": {"post": "infer"},
    "api:job-evaluate": {"post": "train"},
    "api:job-detail": {"get": "read", "patch": "train"},  # PATCH: name, tags and note
    "api:job-cancel": {"post": "train"},
    "api:job-logs": {"get": "read"},
    "api:job-detections": {"get": "read"},
    "api:job-evaluation": {"get": "read"},
    "api:job-artifact": {"get": "read"},
    "api:gpus": {"get": "read"},
    "api:usage": {"get": "read"},
    "api:cost": {"get": "read"},
    "api:quota-own": {"get": "read"},
    # Lifting quotas and priorities: no CI job needs it.
    "api:quota-user": {"get": "read", "put": ALL},
    "api:webhooks": {"get": "read", "post": "webhooks"},
    "api:webhook-detail": {"get": "read", "delete": "webhooks"},
    "api:webhook-deliveries": {"get": "read"},
    "api:webhook-redeliver": {"post": "webhooks"},
}
HANDLER_METHODS = ("get", "post", "put", "patch", "delete")


def route_name(request: Any) -> str:
    match = getattr(request, "resolver_match", None)
    return match.view_name if match is not None else ""


def declared_scope(*, name: str, method: str) -> str | None:
    """What `method` on route `name` needs; HEAD as GET, OPTIONS as a read."""
    method = method.lower()
    declared = ROUTE_SCOPES.get(name)
    if declared is None:
        return None
    if method == "head":
        method = "get"
    if method == "options":
        return declared.get("get", "read")
    return declared.get(method)


def scope_needed(request: Any) -> str | None:
    needed = declared_scope(name=route_name(request), method=request.method)
    if needed == "models" and route_name(request) == "api:model-stage":
        data = request.data if isinstance(request.data, dict) else {}
        if data.get("stage") == "serving" and isinstance(data.get("require"), dict):
            return "promote-gated"
    return needed


def scopes_allow(*, scopes: list[str], needed: str) -> bool:
    if needed == PUBLIC or needed in scopes:
        return True
    return needed == "promote-gated" and "models" in scopes


def token_scopes(request: Any) -> list[str]:
    """The scopes of the token the request came with; [] for a session or a token
    without scopes (all of the user's rights)."""
    return list(getattr(request.auth, "scopes", None) or [])


class TokenScopes(BasePermission):
    """Refuses a scoped token's request outside its scopes (session requests: no
    scopes), and everyone's on a route that declares no scope."""

    def has_permission(self, request: Any, view: Any) -> bool:
        method = request.method.lower()
        if method in HANDLER_METHODS and not hasattr(view, method):
            return True  # DRF answers 405
        needed = scope_needed(request)
        if needed is None:
            raise ScopeRefused(
                f"{route_name(request) or 'This route'} declares no token scope for "
                f"{request.method}; it is refused until it does (api/scopes.py).",
                details={"scope": None, "token_scopes": token_scopes(request)},
            )
        scopes = token_scopes(request)
        if scopes and not scopes_allow(scopes=scopes, needed=needed):
            raise ScopeRefused(
                f"This token's scopes do not include `{needed}`.",
                details={"scope": needed, "token_scopes": scopes},
            )
        return True


def scopes_handed_on(*, held: list[str], asked: list[str] | None, user: Any, for_user: str | None):
    """The scopes of a token a scoped token makes: for its own user only, with its own
    scopes or fewer; none asked means its own, never all of the user's rights."""
    if for_user and for_user != user.get_username():
        raise ScopeRefused(
            "A token with scopes makes tokens only for its own user; to make one for "
            f"{for_user!r}, sign in or use a token without scopes.",
            details={"scope": ALL, "token_scopes": held, "field": "user"},
        )
    wanted = list(asked or held)
    beyond = [scope for scope in wanted if not scopes_allow(scopes=held, needed=scope)]
    if beyond:
        raise ScopeRefused(
            f"A token hands on only scopes it holds; `{beyond[0]}` is not one of this "
            f"token's ({', '.join(held)}).",
            details={"scope": beyond[0], "token_scopes": held, "field": "scopes"},
        )
    return wanted
