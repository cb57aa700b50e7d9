"""Remembering, for a moment, which user a token belongs to (per process).

A poller sends the same token many times a second; this saves a database query per
request. The bound on revocation that follows is ADR 0012's: a token revoked in another
process (another gunicorn worker) stops working there within TOKEN_CACHE_SECONDS; in this
process `token_cache_forget` makes it immediate. An expiry is checked on every request,
cached or not.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

TOKEN_CACHE_SECONDS = 2.0
_TOKEN_CACHE_MAX = 1024


@dataclass(frozen=True)
class _Remembered:
    token: Any  # accounts.models.ApiToken, with its user
    expires_at: float  # time.monotonic()


class _TokenCache:
    """key hash -> the token row (with its user), for TOKEN_CACHE_SECONDS; thread-safe."""

    def __init__(self) -> None:
        self._entries: dict[str, _Remembered] = {}
        self._lock = threading.Lock()

    def get(self, *, key_hash: str) -> Any | None:
        entry = self._entries.get(key_hash)
        if entry is None or entry.expires_at <= time.monotonic():
            return None
        return entry.token

    def put(self, *, key_hash: str, token: Any) -> None:
        with self._lock:
            if len(self._entries) >= _TOKEN_CACHE_MAX:
                self._entries.clear()  # many distinct tokens at once: start over, stay small
            self._entries[key_hash] = _Remembered(
                token=token, expires_at=time.monotonic() + TOKEN_CACHE_SECONDS
            )

    def forget(self, *, token_id: int | None = None, user_id: int | None = None) -> None:
        with self._lock:
            if token_id is None and user_id is None:
                self._entries.clear()
                return
            for key, entry in list(self._entries.items()):
                if entry.token.id == token_id or entry.token.user_id == user_id:
                    del self._entries[key]


token_cache = _TokenCache()


def token_cache_forget(*, token_id: int | None = None, user_id: int | None = None) -> None:
    """Drop a token, a user's tokens, or (with neither) every token from this process.

    Call it after revoking tokens or deactivating a user, so the next request in this
    process reads the database again.
    """
    token_cache.forget(token_id=token_id, user_id=user_id)
