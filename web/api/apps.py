from __future__ import annotations

from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "api"

    def ready(self) -> None:
        import api.checks
        import api.schema  # noqa: F401 - registers the OpenAPI auth extension
