"""Who may call what, beyond being signed in."""

from __future__ import annotations

from accounts.services import user_is_administrator
from rest_framework.permissions import BasePermission, IsAuthenticated

from api.scopes import TokenScopes


class IsAdministrator(BasePermission):
    """Members of the Administrators group (and superusers) manage the model registry."""

    message = "Only administrators may do this."

    def has_permission(self, request, view) -> bool:
        return user_is_administrator(user=request.user)


# A view's own permission classes replace the defaults: these keep the token-scope check
# (api.checks refuses a DRF view without it).
ADMINISTRATORS_ONLY = [IsAuthenticated, TokenScopes, IsAdministrator]
