"""Health and metrics: health is open to the load balancer; metrics need the
`CARRIL_METRICS_TOKEN` bearer token when one is set (always, in production), and series
that name users are served only with it."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from observability.metrics import PER_USER


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception:
        return JsonResponse({"status": "error", "database": "unreachable"}, status=503)
    return JsonResponse({"status": "ok", "database": "ok"})


_REFUSED = "metrics need Authorization: Bearer <CARRIL_METRICS_TOKEN>\n"


def _has_metrics_token(request: HttpRequest) -> bool:
    token = settings.CARRIL_METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    return bool(token) and (
        scheme.lower() == "bearer" and hmac.compare_digest(given.encode(), token.encode())
    )


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    with_token = _has_metrics_token(request)
    # Without a token configured, development /metrics is open (production: off).
    open_dev = not settings.CARRIL_METRICS_TOKEN and not settings.PRODUCTION
    if not (with_token or open_dev):
        response = HttpResponse(
            "metrics need Authorization: Bearer <CARRIL_METRICS_TOKEN>\n", status=401
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    body = generate_latest(REGISTRY)
    if with_token:
        body += generate_latest(PER_USER)
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
