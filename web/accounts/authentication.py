"""DRF authentication for `Authorization: Token <token>` (or `Bearer <token>`, what most
HTTP clients send by default) against hashed tokens."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

from django.db.models import Q
from django.utils import timezone
from rest_framework import authentication, exceptions

from accounts.models import ApiToken
from accounts.services import token_hash
from accounts.token_cache import TOKEN_CACHE_SECONDS, token_cache, token_cache_forget

__all__ = ["TOKEN_CACHE_SECONDS", "HashedTokenAuthentication", "token_cache_forget"]

# last_used_at is informational; writing it on every request would make reads write.
_LAST_USED_RESOLUTION = timedelta(minutes=1)


def _token_lookup(*, key_hash: str) -> ApiToken | None:
    now = timezone.now()
    token = (
        ApiToken.objects.select_related("user")
        .filter(key_hash=key_hash, revoked_at__isnull=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .first()
    )
    if token is None or not token.user.is_active:
        return None
    if token.last_used_at is None or now - token.last_used_at > _LAST_USED_RESOLUTION:
        ApiToken.objects.filter(id=token.id).update(last_used_at=now)
        token.last_used_at = now
    token_cache.put(key_hash=key_hash, token=token)
    return token


class HashedTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Token"
    # The same token under either scheme; any other scheme is not ours to judge.
    schemes = (b"token", b"bearer")

    def authenticate(self, request: Any) -> tuple[Any, ApiToken] | None:
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() not in self.schemes:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Invalid token header.")
        try:
            secret = header[1].decode()
        except UnicodeError as exc:
            raise exceptions.AuthenticationFailed("Invalid token header.") from exc
        key_hash = token_hash(token=secret)
        token = token_cache.get(key_hash=key_hash) or _token_lookup(key_hash=key_hash)
        if token is None or token.is_expired:
            raise exceptions.AuthenticationFailed("Invalid, expired or revoked token.")
        # Each request gets its own copies: a view may annotate the user it was given.
        token = copy.copy(token)
        token.user = copy.copy(token.user)
        return token.user, token

    def authenticate_header(self, request: Any) -> str:
        return self.keyword
