"""Who may call what, beyond being signed in."""

from __future__ import annotations

from accounts.services import user_is_administrator
from rest_framework.permissions import BasePermission


class IsAdministrator(BasePermission):
    """Members of the Administrators group (and superusers) manage the model registry."""

    message = "Only administrators may do this."

    def has_permission(self, request, view) -> bool:
        return user_is_administrator(user=request.user)
