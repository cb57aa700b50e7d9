"""Request id and HTTP metrics for every request."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from observability.metrics import HTTP_REQUEST_DURATION, HTTP_REQUESTS
from observability.request_id import request_id_from_header, request_id_reset, request_id_set


class RequestIdMiddleware:
    """Takes X-Request-ID from the caller (or makes one) and echoes it in the response."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = request_id_from_header(request.headers.get("X-Request-ID"))
        request.request_id = request_id
        token = request_id_set(request_id)
        try:
            response = self.get_response(request)
        finally:
            request_id_reset(token)
        response["X-Request-ID"] = request_id
        return response


class HttpMetricsMiddleware:
    """Counts and times requests by route pattern, so ids never become label values."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = ("/" + match.route) if match is not None and match.route else "unmatched"
        HTTP_REQUESTS.labels(request.method, route, str(response.status_code)).inc()
        HTTP_REQUEST_DURATION.labels(request.method, route).observe(time.perf_counter() - started)
        return response
