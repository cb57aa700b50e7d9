from __future__ import annotations

from django.apps import AppConfig


class UiConfig(AppConfig):
    """The browser UI: server-rendered pages over the apps' services and selectors."""

    name = "ui"
    default_auto_field = "django.db.models.BigAutoField"
