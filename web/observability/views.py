"""Health and metrics: health is open to the load balancer; metrics need the
`CARRIL_METRICS_TOKEN` bearer token when one is set (always, in production)."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception:
        return JsonResponse({"status": "error", "database": "unreachable"}, status=503)
    return JsonResponse({"status": "ok", "database": "ok"})


_REFUSED = "metrics need Authorization: Bearer <CARRIL_METRICS_TOKEN>\n"


def _metrics_allowed(request: HttpRequest) -> bool:
    token = settings.CARRIL_METRICS_TOKEN
    if not token:
        return not settings.PRODUCTION  # production without a token: metrics are off
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.encode(), token.encode())


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not _metrics_allowed(request):
        response = HttpResponse(
            "metrics need Authorization: Bearer <CARRIL_METRICS_TOKEN>\n", status=401
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)
