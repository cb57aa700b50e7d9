"""Failed sign-ins are throttled by django-axes, with Carril's rule on top (ADR 0024).

Axes counts failures in the database (`axes.AccessAttempt`, one row per username, client
address and user agent), so every web process - each gunicorn worker, each container -
shares one count. The rule, in `SignInThrottleHandler` (AXES_HANDLER):

- a username at one address is throttled after AXES_FAILURE_LIMIT failures there (axes'
  own combined lockout parameters); a sign-in clears that username's failures at that
  address, and nothing else;
- an address is throttled for everyone after CARRIL_LOGIN_ADDRESS_FAILURE_LIMIT failures
  from it, whatever the usernames;
- a username failed CARRIL_LOGIN_USERNAME_DELAY_AFTER times, from anywhere, is slowed:
  each attempt waits 1 s after its last failure, doubling with each further failure, up
  to CARRIL_LOGIN_USERNAME_DELAY_MAX_S. Refused attempts are not counted, so a guesser
  cannot stretch the wait, and an address the username signed in from in the last
  CARRIL_LOGIN_KNOWN_ADDRESS_DAYS does not wait: the owner is never locked out by a
  guesser elsewhere.

The other pieces of the wiring:

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
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from axes.backends import AxesStandaloneBackend
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username, get_failure_limit
from axes.models import AccessAttempt, AccessLog
from axes.signals import user_locked_out
from carril_web.errors import Throttled
from django.conf import settings
from django.contrib.auth.signals import user_logged_in
from django.db.models import Max, Q, Sum
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
    when there is none (a unix socket, an in-process `force_login`): then such clients
    share one count per username, and there is no address ceiling or known address."""
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


def cooloff_seconds() -> int:
    return int(settings.AXES_COOLOFF_TIME.total_seconds())


@dataclass(frozen=True)
class Throttle:
    """Why a sign-in attempt is refused, and for how long."""

    message: str
    retry_after_s: int


def _wait_text(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} second(s)"
    return f"{math.ceil(seconds / 60)} minute(s)"


def _until(moment: datetime, now: datetime) -> int:
    return max(1, math.ceil((moment - now).total_seconds()))


def _account_here_throttle(wait: int) -> Throttle:
    return Throttle(
        f"Too many failed sign-ins for this account from this address; "
        f"try again in {_wait_text(wait)}.",
        wait,
    )


def _address_throttle(wait: int) -> Throttle:
    return Throttle(
        f"Too many failed sign-ins from this address; try again in {_wait_text(wait)}.",
        wait,
    )


def username_delay_s(failures: int) -> int:
    """How long a username waits after its last failure: nothing until
    CARRIL_LOGIN_USERNAME_DELAY_AFTER failures, then 1 s doubling with each one more,
    never over CARRIL_LOGIN_USERNAME_DELAY_MAX_S."""
    over = failures - settings.CARRIL_LOGIN_USERNAME_DELAY_AFTER
    if over < 0:
        return 0
    return min(2 ** min(over, 30), settings.CARRIL_LOGIN_USERNAME_DELAY_MAX_S)


class SignInThrottleHandler(AxesDatabaseHandler):
    """Axes' database handler with the address ceiling, the username slowdown and the
    known addresses added (AXES_HANDLER). Its checks are reads; the only writes are
    axes' own (a failure's row, a success's reset) and one row a success keeps per
    username and address. None of them holds a transaction open."""

    def is_locked(self, request: HttpRequest, credentials: dict | None = None) -> bool:
        throttle = self._throttle(request, credentials)
        request.carril_throttle = throttle
        return throttle is not None

    def user_login_failed(
        self, sender: Any, credentials: dict, request: HttpRequest | None = None, **kwargs: Any
    ) -> None:
        refused_before_checking = request is not None and request.axes_locked_out
        super().user_login_failed(sender, credentials, request, **kwargs)
        if request is None or refused_before_checking:
            return  # counted nothing (AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT off)
        if self.is_whitelisted(request, credentials):
            return
        wait = cooloff_seconds()
        if request.axes_locked_out:
            # Axes counted this failure and it reached the limit for the username here.
            request.carril_throttle = _account_here_throttle(wait)
            return
        address = request.axes_ip_address
        if address is None:
            return
        failures = self._recent(request).filter(ip_address=address)
        total = failures.aggregate(n=Sum("failures_since_start"))["n"] or 0
        if total >= settings.CARRIL_LOGIN_ADDRESS_FAILURE_LIMIT:
            # The failure that reaches the ceiling is answered as throttled, as axes
            # does for its own limit.
            request.axes_locked_out = True
            request.axes_credentials = credentials
            request.carril_throttle = _address_throttle(wait)
            user_locked_out.send(
                "axes",
                request=request,
                username=get_client_username(request, credentials),
                ip_address=address,
            )

    def user_logged_in(self, sender: Any, request: HttpRequest, user: Any, **kwargs: Any) -> None:
        # Axes clears this username's failures at this address (the combined lockout
        # parameters); other usernames' failures from here stay counted.
        super().user_logged_in(sender, request, user, **kwargs)
        address = request.axes_ip_address
        if address is None:
            return
        # Two single statements, no transaction: a rare duplicate row is harmless.
        known = AccessLog.objects.filter(username=user.get_username(), ip_address=address)
        if not known.update(attempt_time=request.axes_attempt_time):
            AccessLog.objects.create(
                username=user.get_username(),
                ip_address=address,
                user_agent=request.axes_user_agent,
                http_accept=request.axes_http_accept,
                path_info=request.axes_path_info,
            )

    def _recent(self, request: HttpRequest):
        since = request.axes_attempt_time - settings.AXES_COOLOFF_TIME
        return AccessAttempt.objects.filter(attempt_time__gte=since)

    def _throttle(self, request: HttpRequest, credentials: dict | None) -> Throttle | None:
        username = get_client_username(request, credentials)
        address = request.axes_ip_address
        now = request.axes_attempt_time
        cooloff = settings.AXES_COOLOFF_TIME
        here = Q(username=username, ip_address=address)
        from_address = Q(ip_address=address)
        for_username = Q(username=username)
        # One read for all three counts.
        counts = (
            self._recent(request)
            .filter(for_username | from_address)
            .aggregate(
                here_n=Sum("failures_since_start", filter=here),
                here_at=Max("attempt_time", filter=here),
                address_n=Sum("failures_since_start", filter=from_address),
                address_at=Max("attempt_time", filter=from_address),
                username_n=Sum("failures_since_start", filter=for_username),
                username_at=Max("attempt_time", filter=for_username),
            )
        )
        if (counts["here_n"] or 0) >= get_failure_limit(request, credentials):
            return _account_here_throttle(_until(counts["here_at"] + cooloff, now))
        if address is not None and (
            (counts["address_n"] or 0) >= settings.CARRIL_LOGIN_ADDRESS_FAILURE_LIMIT
        ):
            return _address_throttle(_until(counts["address_at"] + cooloff, now))
        if username is None:
            return None
        delay = username_delay_s(counts["username_n"] or 0)
        if not delay or counts["username_at"] + timedelta(seconds=delay) <= now:
            return None
        if address is not None and self._known(username=username, address=address, now=now):
            return None
        wait = _until(counts["username_at"] + timedelta(seconds=delay), now)
        return Throttle(
            f"Too many failed sign-ins for this account recently, so its sign-ins are "
            f"slowed; try again in {_wait_text(wait)}.",
            wait,
        )

    @staticmethod
    def _known(*, username: str, address: str, now: datetime) -> bool:
        since = now - timedelta(days=settings.CARRIL_LOGIN_KNOWN_ADDRESS_DAYS)
        return AccessLog.objects.filter(
            username=username, ip_address=address, attempt_time__gte=since
        ).exists()


def throttled_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: Any = None
) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE: what a throttled sign-in attempt gets."""
    throttle = getattr(request, "carril_throttle", None) or _account_here_throttle(
        cooloff_seconds()
    )
    wait = throttle.retry_after_s
    username = (credentials or {}).get("username") or request.POST.get("username", "")
    logger.warning(
        "sign-in throttled: username=%r client=%s path=%s retry_after=%ss",
        str(username)[:150],
        client_address(request),
        request.path,
        wait,
    )
    if request.path.startswith("/api/"):
        error = Throttled(throttle.message, details={"retry_after_s": wait})
        response: HttpResponse = JsonResponse({"error": error.as_dict()}, status=error.status)
    else:
        response = HttpResponse(
            render_to_string("ui/throttled.html", {"message": throttle.message}, request=request),
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
    Django it happened, as `login()` does for the pages: this username's failures at this
    address start afresh (AXES_RESET_ON_SUCCESS), the address becomes one it is known
    from, and `last_login` is set."""
    user_logged_in.send(sender=user.__class__, request=request, user=user)
