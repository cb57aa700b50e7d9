"""Token scopes: what a limited API token (a CI token) may do.

A token without scopes acts with all of its user's rights (as before). A token with
scopes may call only the routes those scopes name; everything else answers
`403 SCOPE_REFUSED` naming the scope it would need. Scopes only ever narrow a user's
rights: the user's role still applies on top (ADR 0039).
"""

from __future__ import annotations

from typing import Any

from carril_web.errors import ScopeRefused
from rest_framework.permissions import SAFE_METHODS, BasePermission

SCOPES: dict[str, str] = {
    "read": "read everything the user may see",
    "datasets": "upload and delete datasets",
    "train": "start trainings, evaluations and exports; cancel jobs; name, tag and annotate them",
    "infer": "start inference jobs",
    "promote-gated": "make a model version serving only through a promotion gate (`require`)",
    "models": "change model stages without a gate; import weights",
    "tokens": "list, create and revoke API tokens",
    "webhooks": "register and manage webhooks",
}
# Writes by route name; a write not listed needs a token without scopes.
_WRITE_SCOPES: dict[str, str] = {
    "datasets": "datasets",
    "dataset-detail": "datasets",
    "job-train": "train",
    "job-evaluate": "train",
    "model-export": "train",
    "job-cancel": "train",
    "job-detail": "train",  # PATCH: a job's name, tags and note
    "job-infer": "infer",
    "model-import": "models",
    "tokens": "tokens",
    "token-revoke": "tokens",
    "webhooks": "webhooks",
    "webhook-detail": "webhooks",
    "webhook-redeliver": "webhooks",
}
ALL = "(a token without scopes)"


def scope_needed(request: Any) -> str:
    match = getattr(request, "resolver_match", None)
    name = match.url_name if match is not None else ""
    if name in {"tokens", "token-revoke"}:
        return "tokens"  # reading tokens is managing them
    if request.method in SAFE_METHODS:
        return "read"
    if name == "model-stage":
        data = request.data if isinstance(request.data, dict) else {}
        gated = data.get("stage") == "serving" and isinstance(data.get("require"), dict)
        return "promote-gated" if gated else "models"
    return _WRITE_SCOPES.get(name, ALL)


def scopes_allow(*, scopes: list[str], needed: str) -> bool:
    if needed in scopes:
        return True
    return needed == "promote-gated" and "models" in scopes


class TokenScopes(BasePermission):
    """Refuses a scoped token's request outside its scopes (session requests: no scopes)."""

    def has_permission(self, request: Any, view: Any) -> bool:
        scopes = list(getattr(request.auth, "scopes", None) or [])
        if not scopes:
            return True
        needed = scope_needed(request)
        if not scopes_allow(scopes=scopes, needed=needed):
            raise ScopeRefused(
                f"This token's scopes do not include `{needed}`.",
                details={"scope": needed, "token_scopes": scopes},
            )
        return True
