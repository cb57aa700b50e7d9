"""Top-level routes: the REST API, its schema and docs, health, metrics, and the UI pages."""

from __future__ import annotations

from importlib.util import find_spec

from api.scopes import TokenScopes
from csp.constants import UNSAFE_INLINE
from csp.decorators import csp_update
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from observability import views as observability_views

SCOPED = [TokenScopes]

urlpatterns = [
    path("api/v1/", include("api.urls")),
    # Public, declared so in api.scopes like every DRF route.
    path("api/schema/", SpectacularAPIView.as_view(permission_classes=SCOPED), name="api-schema"),
    # The split view serves Swagger UI's start-up script as a file, not inline; its page
    # keeps one small <style> block, which only this page's policy allows (ADR 0058).
    path(
        "api/docs/",
        csp_update({"style-src": [UNSAFE_INLINE]})(
            SpectacularSwaggerSplitView.as_view(url_name="api-schema", permission_classes=SCOPED)
        ),
        name="api-docs",
    ),
    path("healthz", observability_views.healthz, name="healthz"),
    path("metrics", observability_views.metrics, name="metrics"),
    path("admin/", admin.site.urls),
]

# The browser UI (web/ui/) is written alongside; its routes mount at the root once present.
if find_spec("ui.urls") is not None:
    urlpatterns.append(path("", include("ui.urls")))

handler404 = "api.errors.not_found_view"
handler500 = "api.errors.server_error_view"
