"""The real web app's routes, plus `bench/bare-job/`: a bare Django view.

The bare view returns, byte for byte, a job status document the polling benchmark
captured from the real `GET /api/v1/jobs/{id}/` (written to
`<CARRIL_STORAGE>/bench/bare-job.json` before the load starts): no authentication,
no database, no DRF. It is the floor the real view is measured against.
"""

from __future__ import annotations

from functools import cache

from carril_web.urls import handler404, handler500
from carril_web.urls import urlpatterns as carril_urlpatterns
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import path


@cache
def _body() -> bytes:
    return (settings.CARRIL_STORAGE / "bench" / "bare-job.json").read_bytes()


def bare_job(request: HttpRequest) -> HttpResponse:
    return HttpResponse(_body(), content_type="application/json")


urlpatterns = [path("bench/bare-job/", bare_job, name="bench-bare-job"), *carril_urlpatterns]

__all__ = ["handler404", "handler500", "urlpatterns"]
