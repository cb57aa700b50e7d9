"""What the web app shows to whoever asks: /metrics needs its bearer token in production
(Prometheus sends it from a credentials file), and is off there without one.

Weak production secrets, private dev files and the demo password are proven in
tests/web/carril_web/test_web_settings.py and tests/test_carril_run.py."""

from __future__ import annotations

import pytest
from django.test import Client

TOKEN = "m7Q2-vXk9LzT4sYb0mRc8HdJ5uEa1gFo3iKl6tNpWw"


@pytest.fixture
def production(settings) -> None:
    settings.PRODUCTION = True
    settings.CARRIL_METRICS_TOKEN = TOKEN


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        f"Token {TOKEN}",
        "Bearer",
        "Bearer wrong",
        f"Bearer {TOKEN}x",
        f"Bearer {TOKEN[:-1]}",
    ],
)
def test_metrics_in_production_refuse_anyone_without_the_bearer_token(
    production, header: str | None, db
) -> None:
    extra = {} if header is None else {"HTTP_AUTHORIZATION": header}
    response = Client().get("/metrics", **extra)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert b"carril_" not in response.content


def test_metrics_in_production_answer_prometheus_with_the_token(production, db) -> None:
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert b"carril_" in response.content


def test_metrics_in_production_without_a_token_are_served_to_nobody(settings, db) -> None:
    settings.PRODUCTION = True
    settings.CARRIL_METRICS_TOKEN = ""
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 401


def test_metrics_in_dev_without_a_token_stay_open_for_a_local_prometheus(db) -> None:
    assert Client().get("/metrics").status_code == 200
