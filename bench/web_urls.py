"""The real web app's routes, plus `bench/bare-job/`: a bare Django view.

The bare view returns, byte for byte, a job status document the polling benchmark
captured from the real `GET /api/v1/jobs/{id}/` (written to
`<CARRIL_STORAGE>/bench/bare-job.json` before the load starts): no authentication,
no database, no DRF. It is the floor the real view is measured against. The benchmark
captures several documents in turn (a running job, a finished one), so the bytes are
read again when the file changes (one stat a request).
"""

from __future__ import annotations

from carril_web.urls import handler404, handler500
from carril_web.urls import urlpatterns as carril_urlpatterns
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import path

_read: dict[str, tuple[int, bytes]] = {}


def _body() -> bytes:
    path = settings.CARRIL_STORAGE / "bench" / "bare-job.json"
    stamp = path.stat().st_mtime_ns
    seen = _read.get("body")
    if seen is None or seen[0] != stamp:
        seen = _read["body"] = (stamp, path.read_bytes())
    return seen[1]


def bare_job(request: HttpRequest) -> HttpResponse:
    return HttpResponse(_body(), content_type="application/json")


urlpatterns = [path("bench/bare-job/", bare_job, name="bench-bare-job"), *carril_urlpatterns]

__all__ = ["handler404", "handler500", "urlpatterns"]
