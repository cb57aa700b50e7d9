from __future__ import annotations

from django.apps import AppConfig


class ObservabilityConfig(AppConfig):
    name = "observability"

    def ready(self) -> None:
        from observability.metrics import register_db_collector

        register_db_collector()
