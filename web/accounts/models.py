"""API tokens, stored hashed: the database never holds a token anyone could replay."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

ADMINISTRATORS_GROUP = "Administrators"


class ApiToken(models.Model):
    """A user's API token. Only its SHA-256 is kept; the token is shown once at creation."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, blank=True)
    # The first characters, kept so a person can tell their tokens apart in a list.
    prefix = models.CharField(max_length=12)
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Set at creation from CARRIL_TOKEN_TTL_DAYS; null only for a token made before expiry
    # existed and not yet given one (migration 0002 gives every active token one).
    expires_at = models.DateTimeField(null=True, blank=True)
    # Empty: the token acts with all of its user's rights. Otherwise only the routes these
    # scopes name (api.scopes; a CI token, made by an administrator).
    scopes = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and not self.is_expired
