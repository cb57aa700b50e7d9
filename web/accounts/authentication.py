"""DRF authentication for `Authorization: Token <token>` against hashed tokens."""

from __future__ import annotations

import copy
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.utils import timezone
from rest_framework import authentication, exceptions

from accounts.models import ApiToken
from accounts.services import token_hash

# last_used_at is informational; writing it on every request would make reads write.
_LAST_USED_RESOLUTION = timedelta(minutes=1)
# A poller sends the same token many times a second; remembering who it belongs to for a
# moment saves a database query per request. Kept short because a revocation made in
# another process (another gunicorn worker) only takes effect there when this expires;
# in this process `token_cache_forget` makes it immediate.
TOKEN_CACHE_SECONDS = 2.0
_TOKEN_CACHE_MAX = 1024


@dataclass(frozen=True)
class _Remembered:
    token: ApiToken
    expires_at: float  # time.monotonic()


class _TokenCache:
    """key hash -> the token row (with its user), for TOKEN_CACHE_SECONDS; thread-safe."""

    def __init__(self) -> None:
        self._entries: dict[str, _Remembered] = {}
        self._lock = threading.Lock()

    def get(self, *, key_hash: str) -> ApiToken | None:
        entry = self._entries.get(key_hash)
        if entry is None or entry.expires_at <= time.monotonic():
            return None
        return entry.token

    def put(self, *, key_hash: str, token: ApiToken) -> None:
        with self._lock:
            if len(self._entries) >= _TOKEN_CACHE_MAX:
                self._entries.clear()  # many distinct tokens at once: start over, stay small
            self._entries[key_hash] = _Remembered(
                token=token, expires_at=time.monotonic() + TOKEN_CACHE_SECONDS
            )

    def forget(self, *, token_id: int | None = None) -> None:
        with self._lock:
            if token_id is None:
                self._entries.clear()
                return
            for key, entry in list(self._entries.items()):
                if entry.token.id == token_id:
                    del self._entries[key]


_cache = _TokenCache()


def token_cache_forget(*, token_id: int | None = None) -> None:
    """Drop a token (or, without an id, every token) from this process's memory.

    Call it after revoking a token or deactivating a user, so the next request in this
    process reads the database again.
    """
    _cache.forget(token_id=token_id)


def _token_lookup(*, key_hash: str) -> ApiToken | None:
    token = (
        ApiToken.objects.select_related("user")
        .filter(key_hash=key_hash, revoked_at__isnull=True)
        .first()
    )
    if token is None or not token.user.is_active:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > _LAST_USED_RESOLUTION:
        ApiToken.objects.filter(id=token.id).update(last_used_at=now)
        token.last_used_at = now
    _cache.put(key_hash=key_hash, token=token)
    return token


class HashedTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Token"

    def authenticate(self, request: Any) -> tuple[Any, ApiToken] | None:
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Invalid token header.")
        try:
            secret = header[1].decode()
        except UnicodeError as exc:
            raise exceptions.AuthenticationFailed("Invalid token header.") from exc
        key_hash = token_hash(token=secret)
        token = _cache.get(key_hash=key_hash) or _token_lookup(key_hash=key_hash)
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        # Each request gets its own copies: a view may annotate the user it was given.
        token = copy.copy(token)
        token.user = copy.copy(token.user)
        return token.user, token

    def authenticate_header(self, request: Any) -> str:
        return self.keyword
