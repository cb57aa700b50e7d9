"""DRF authentication for `Authorization: Token <token>` against hashed tokens."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from rest_framework import authentication, exceptions

from accounts.models import ApiToken
from accounts.services import token_hash

# last_used_at is informational; writing it on every request would make reads write.
_LAST_USED_RESOLUTION = timedelta(minutes=1)


class HashedTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Token"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Invalid token header.")
        try:
            secret = header[1].decode()
        except UnicodeError as exc:
            raise exceptions.AuthenticationFailed("Invalid token header.") from exc
        token = (
            ApiToken.objects.select_related("user")
            .filter(key_hash=token_hash(token=secret), revoked_at__isnull=True)
            .first()
        )
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > _LAST_USED_RESOLUTION:
            ApiToken.objects.filter(id=token.id).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request) -> str:
        return self.keyword
