"""DRF authentication for `Authorization: Token <token>` (or `Bearer <token>`, what most
HTTP clients send by default) against hashed tokens."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Model, Q
from django.db.models.base import ModelState
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


def _request_copy(instance: Model) -> Any:
    """What copy.copy gives a model instance (its own attributes, its own record of loaded
    relations), without the pickling round trip copy.copy takes for models: every API
    request makes two of these."""
    clone = instance.__class__.__new__(instance.__class__)
    clone.__dict__.update(instance.__dict__)
    clone._state = ModelState()
    clone._state.__dict__.update(instance._state.__dict__)
    clone._state.fields_cache = dict(instance._state.fields_cache)
    return clone


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
        token = _request_copy(token)
        token.user = _request_copy(token.user)
        return token.user, token

    def authenticate_header(self, request: Any) -> str:
        return self.keyword
