"""Failed sign-ins are throttled per username and per client address (django-axes).

Axes counts failures in the database (`axes.AccessAttempt`), so every web process - each
gunicorn worker, each container - shares one count. This module holds Carril's three
pieces of the wiring (ADR 0024):

- `client_address`: the address a failure is counted against. The connection's address,
  unless CARRIL_TRUSTED_PROXIES says how many proxies in front append to
  `X-Forwarded-For`; then the entry the outermost trusted proxy appended. Entries a client
  wrote itself are never used, so rotating the header changes nothing.
- `throttled_response`: 429 THROTTLED with Retry-After, logged; the API's error envelope
  under /api/, a short page elsewhere (the UI and admin sign-in).
- `RequestOnlyAxesBackend`: axes refuses to run without a request; code that
  authenticates without one (management commands, the test client's `login`) has no
  client to throttle, so it is passed through.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import Any

from axes.backends import AxesStandaloneBackend
from carril_web.errors import Throttled
from django.conf import settings
from django.contrib.auth.signals import user_logged_in
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

logger = logging.getLogger(__name__)


def _address(value: str) -> str | None:
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        return None


def client_address(request: HttpRequest) -> str | None:
    """The address failed sign-ins are counted against (AXES_CLIENT_IP_CALLABLE); None
    when there is none (a unix socket, an in-process `force_login`): then only the
    username is counted."""
    connection = _address(request.META.get("REMOTE_ADDR", "") or "")
    proxies = settings.CARRIL_TRUSTED_PROXIES
    if proxies <= 0:
        return connection
    forwarded = [
        part for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()
    ]
    # Each trusted proxy appended the address it saw; the outermost one's entry is the
    # client. Anything left of it came from the client and is not believed.
    if len(forwarded) < proxies:
        return connection
    return _address(forwarded[-proxies]) or connection


def retry_after_seconds() -> int:
    return int(settings.AXES_COOLOFF_TIME.total_seconds())


def throttled_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: Any = None
) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE: what a throttled sign-in attempt gets."""
    wait = retry_after_seconds()
    username = (credentials or {}).get("username") or request.POST.get("username", "")
    logger.warning(
        "sign-in throttled: username=%r client=%s path=%s retry_after=%ss",
        str(username)[:150],
        client_address(request),
        request.path,
        wait,
    )
    message = (
        f"Too many failed sign-ins for this account or from this address; "
        f"try again in {max(1, wait // 60)} minute(s)."
    )
    if request.path.startswith("/api/"):
        error = Throttled(message, details={"retry_after_s": wait})
        response: HttpResponse = JsonResponse({"error": error.as_dict()}, status=error.status)
    else:
        response = HttpResponse(
            render_to_string("ui/throttled.html", {"message": message}, request=request),
            status=Throttled.status,
        )
    response["Retry-After"] = str(wait)
    return response


class RequestOnlyAxesBackend(AxesStandaloneBackend):
    def authenticate(self, request: HttpRequest | None, *args: Any, **kwargs: Any) -> None:
        if request is None:
            return None
        return super().authenticate(request, *args, **kwargs)


def sign_in_succeeded(*, request: HttpRequest, user: Any) -> None:
    """A password sign-in that starts no session (the API token endpoint) tells axes and
    Django it happened, as `login()` does for the pages: the failure counts start afresh
    (AXES_RESET_ON_SUCCESS) and `last_login` is set."""
    user_logged_in.send(sender=user.__class__, request=request, user=user)
