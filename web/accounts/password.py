"""A password change revokes the user's API tokens.

Django has no "password changed" signal, but it calls `password_changed` on every
validator in AUTH_PASSWORD_VALIDATORS whenever a user saved after `set_password` -
the account page, the admin, `manage.py changepassword`, a reset. It does not call it
when it only re-hashes an unchanged password at sign-in. So the hook lives here, in a
validator that validates nothing.
"""

from __future__ import annotations

from typing import Any

from accounts.services import api_tokens_revoke_all


class RevokeApiTokensOnPasswordChange:
    def validate(self, password: str, user: Any = None) -> None:
        return None

    def password_changed(self, password: str, user: Any = None) -> None:
        if user is None or user.pk is None:
            return
        api_tokens_revoke_all(user=user)

    def get_help_text(self) -> str:
        return "Changing your password revokes your API tokens."
