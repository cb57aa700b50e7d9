"""Writes for accounts: issuing and revoking API tokens, the demo user."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from carril_web.errors import NotFound
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, Group
from django.contrib.auth.password_validation import validate_password
from django.utils import timezone

from accounts.models import ADMINISTRATORS_GROUP, ApiToken

TOKEN_PREFIX = "crl_"  # noqa: S105 - a label that makes leaked tokens easy to spot


def token_hash(*, token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str  # the only time the plain token exists outside the client

    def __repr__(self) -> str:
        return f"IssuedToken(token={self.token!r}, secret='***')"


def api_token_create(*, user: AbstractBaseUser, name: str = "") -> IssuedToken:
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, name=name[:100], prefix=secret[:12], key_hash=token_hash(token=secret)
    )
    return IssuedToken(token=token, secret=secret)


def api_token_revoke(*, user: AbstractBaseUser, token_id: int) -> ApiToken:
    token = ApiToken.objects.filter(id=token_id, user=user).first()
    if token is None:
        raise NotFound()
    ApiToken.objects.filter(id=token.id, revoked_at__isnull=True).update(revoked_at=timezone.now())
    # Whichever page or endpoint revokes it, this process stops honouring it at once.
    from accounts.authentication import token_cache_forget

    token_cache_forget(token_id=token.id)
    token.refresh_from_db()
    return token


def user_is_administrator(*, user: AbstractBaseUser) -> bool:
    """Administrators manage the model registry: superusers and the Administrators group."""
    if not user.is_authenticated or not user.is_active:
        return False
    return user.is_superuser or user.groups.filter(name=ADMINISTRATORS_GROUP).exists()


def user_sees_everything(*, user: AbstractBaseUser) -> bool:
    """Staff see every user's datasets and jobs; others see their own."""
    return bool(user.is_authenticated and (user.is_staff or user.is_superuser))


def administrators_group() -> Group:
    group, _ = Group.objects.get_or_create(name=ADMINISTRATORS_GROUP)
    return group


def demo_user_ensure(*, username: str, password: str | None) -> tuple[AbstractBaseUser, str | None]:
    """Make sure the demo user exists as an ordinary user.

    Returns the password only when this call created the user or set its password, so the
    launcher prints it once and never leaks it on later starts.
    """
    user_model = get_user_model()
    user = user_model.objects.filter(username=username).first()
    if user is not None and password is None:
        return user, None
    if password is None:
        password = secrets.token_urlsafe(12)
    if user is None:
        user = user_model(username=username, is_staff=False, is_superuser=False)
    elif user.check_password(password):
        return user, None
    validate_password(password, user=user)
    user.set_password(password)
    user.save()
    return user, password
