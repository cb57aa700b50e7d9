"""Writes for accounts: issuing and revoking API tokens, the demo user."""

from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass
from datetime import timedelta

from carril_web.errors import Forbidden, NotFound
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, Group
from django.contrib.auth.password_validation import validate_password
from django.db import transaction
from django.utils import timezone

from accounts.models import ADMINISTRATORS_GROUP, ApiToken
from accounts.token_cache import token_cache_forget

logger = logging.getLogger(__name__)

TOKEN_PREFIX = "crl_"  # noqa: S105 - a label that makes leaked tokens easy to spot


def token_hash(*, token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str  # the only time the plain token exists outside the client

    def __repr__(self) -> str:
        return f"IssuedToken(token={self.token!r}, secret='***')"


def api_token_create(
    *, user: AbstractBaseUser, name: str = "", scopes: list[str] | None = None
) -> IssuedToken:
    """A new token, expiring CARRIL_TOKEN_TTL_DAYS from now; with `scopes`, limited to
    them (api.scopes)."""
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=name[:100],
        prefix=secret[:12],
        key_hash=token_hash(token=secret),
        expires_at=timezone.now() + timedelta(days=settings.CARRIL_TOKEN_TTL_DAYS),
        scopes=sorted(set(scopes or [])),
    )
    return IssuedToken(token=token, secret=secret)


def api_token_create_scoped(
    *, actor: AbstractBaseUser, username: str | None, name: str, scopes: list[str]
) -> IssuedToken:
    """A token limited to `scopes` (a CI token) for `username` or the actor; only an
    administrator makes one."""
    from django.contrib.auth import get_user_model

    if not user_is_administrator(user=actor):
        raise Forbidden("Only administrators make tokens with scopes or for other users.")
    user = actor
    if username:
        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None:
            raise NotFound(f"No active user {username!r}.")
    return api_token_create(user=user, name=name, scopes=scopes)


def api_token_obtain(*, user: AbstractBaseUser, name: str) -> IssuedToken:
    """What `auth/token/` gives: a new token that replaces the user's active token of the
    same name, so a script that signs in on every run keeps one token, not hundreds."""
    with transaction.atomic():
        replaced = list(
            ApiToken.objects.filter(user=user, name=name[:100], revoked_at__isnull=True)
            .select_for_update()
            .values_list("id", flat=True)
        )
        ApiToken.objects.filter(id__in=replaced).update(revoked_at=timezone.now())
        issued = api_token_create(user=user, name=name)
    for token_id in replaced:
        token_cache_forget(token_id=token_id)
    return issued


def api_token_revoke(*, user: AbstractBaseUser, token_id: int) -> ApiToken:
    token = ApiToken.objects.filter(id=token_id, user=user).first()
    if token is None:
        raise NotFound()
    ApiToken.objects.filter(id=token.id, revoked_at__isnull=True).update(revoked_at=timezone.now())
    # Whichever page or endpoint revokes it, this process stops honouring it at once.
    token_cache_forget(token_id=token.id)
    token.refresh_from_db()
    return token


def api_tokens_revoke_all(*, user: AbstractBaseUser) -> int:
    """Revoke every active token of the user (their password changed); how many."""
    revoked = ApiToken.objects.filter(user=user, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    token_cache_forget(user_id=user.pk)
    if revoked:
        logger.info("revoked %s API token(s) of user %s: password changed", revoked, user.pk)
    return revoked


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


def demo_user_ensure(
    *, username: str, password: str | None, administrator: bool = False
) -> tuple[AbstractBaseUser, str | None]:
    """Make sure the demo user exists: an ordinary user, or with `administrator` (what
    `make run` asks for: on a single-user development install the one user must be able
    to do the whole flow, promotion and adding users included) a superuser.

    Returns the password only when this call created the user or set its password, so the
    launcher prints it once and never leaks it on later starts.
    """
    user_model = get_user_model()
    user = user_model.objects.filter(username=username).first()
    if user is not None and administrator and not (user.is_staff and user.is_superuser):
        # A demo user made by an earlier `make run` becomes the administrator it now is.
        user_model.objects.filter(id=user.id).update(is_staff=True, is_superuser=True)
        user.refresh_from_db()
    if user is not None and password is None:
        return user, None
    if password is None:
        password = secrets.token_urlsafe(12)
    if user is None:
        user = user_model(username=username, is_staff=administrator, is_superuser=administrator)
    elif user.check_password(password):
        return user, None
    validate_password(password, user=user)
    user.set_password(password)
    user.save()
    return user, password
