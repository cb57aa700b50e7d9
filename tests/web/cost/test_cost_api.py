"""GET /api/v1/cost/ and the cost page: example prices by default (labelled, dated),
every input a parameter, the measured usage from the usage rows."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from jobs.models import Job
from usage.models import AttemptUsage

HAND = {
    "hardware_price": "7200",
    "amortisation_months": "36",
    "ops_per_month": "20",
    "energy_price_per_kwh": "0.4",
    "kwh_per_gpu_hour": "0.25",
    "cloud_on_demand_per_gpu_hour": "1.1",
    "storage_per_gb_month": "0",
    "transfer_in_per_gb": "0",
    "model_transfer_per_gb": "0.05",
    "training_share": "0.5",
    "gpu_hours_per_month": "300",
}


def test_defaults_are_the_dated_example_prices(owner_api):
    body = owner_api.get("/api/v1/cost/").json()
    assert body["prices"]["as_of"] == "2026-11-01"
    assert "not" in body["prices"]["label"]
    assert "live" in body["prices"]["label"]
    assert body["inputs"]["hardware_price"] == 7200.0
    assert body["measured"]["gpu_hours"] == 0.0
    assert set(body["curves"]) == {"gpu_hours", "local", "cloud", "hybrid"}


def test_every_input_is_a_parameter_and_the_answer_matches_the_hand_computed_case(owner_api):
    body = owner_api.get("/api/v1/cost/", HAND).json()
    answer = body["at_measured"]
    assert (answer["local"], answer["cloud"], answer["cheapest"]) == (250.0, 330.0, "local")
    assert answer["break_even_gpu_hours"] == pytest.approx(220.0)
    assert answer["payback_months"] == pytest.approx(25.7143, abs=1e-4)
    committed = owner_api.get(
        "/api/v1/cost/", {**HAND, "use_committed": "1", "cloud_committed_per_gpu_hour": "0.6"}
    ).json()
    assert committed["inputs"]["cloud_rate_per_gpu_hour"] == 0.6
    assert committed["at_measured"]["break_even_gpu_hours"] == pytest.approx(440.0)  # 220/0.5


def test_a_bad_input_is_a_validation_error_naming_it(owner_api):
    response = owner_api.get("/api/v1/cost/", {"hardware_price": "lots"})
    assert response.status_code == 400
    assert "hardware_price" in response.json()["error"]["details"]["fields"]


def test_the_measured_usage_comes_from_the_usage_rows(owner, owner_api):
    now = timezone.now()
    for kind, seconds in (("train", 3 * 3600), ("infer", 3600)):
        job = Job.objects.create(owner=owner, kind=kind, state="succeeded")
        AttemptUsage.objects.create(
            job=job,
            attempt=1,
            gpus=1,
            held_from=now - timedelta(hours=1),
            held_until=now,
            gpu_seconds=seconds,
            energy_wh=seconds / 3600 * 300,
            energy_source="modelled",
        )
    body = owner_api.get("/api/v1/cost/").json()
    assert body["measured"]["gpu_hours"] == 4.0
    assert body["measured"]["training_gpu_hours"] == 3.0
    assert body["measured"]["gpu_hours_by_model"] == {"unknown": 4.0}
    assert body["inputs"]["training_share"] == 0.75
    assert body["inputs"]["kwh_per_gpu_hour"] == 0.3
    assert body["inputs"]["gpu_hours_per_month"] == 4.0


def test_the_cost_page_shows_the_answer_and_the_chart(owner, client):
    client.force_login(owner)
    page = client.get("/cost/", HAND)
    html = page.content.decode()
    assert page.status_code == 200
    assert 'data-testid="cost-break-even">220.0 GPU-hours' in html
    assert 'data-testid="cost-cheapest"><strong>local<' in html
    assert 'id="cost-data"' in html
    assert client.get("/cost/", {"gpus": "-1"}).status_code == 400


def _used(user, *, kind: str, hours: float, dataset_bytes: int) -> None:
    from datasets.models import Dataset

    now = timezone.now()
    job = Job.objects.create(owner=user, kind=kind, state="succeeded")
    AttemptUsage.objects.create(
        job=job,
        attempt=1,
        gpus=1,
        held_from=now - timedelta(hours=hours),
        held_until=now,
        gpu_seconds=hours * 3600,
        energy_wh=hours * 300,
        energy_source="modelled",
    )
    Dataset.objects.create(owner=user, name=f"{user.username}-data", size_bytes=dataset_bytes)


def test_an_ordinary_user_is_measured_on_their_own_usage_and_an_administrator_on_everyones(
    owner, other, owner_api, other_api, admin_api
):
    _used(owner, kind="train", hours=3, dataset_bytes=2 * 10**9)
    _used(other, kind="infer", hours=1, dataset_bytes=10**9)
    own = owner_api.get("/api/v1/cost/").json()["measured"]
    assert (own["user"], own["gpu_hours"], own["training_gpu_hours"]) == ("olivia", 3.0, 3.0)
    assert own["dataset_gb_uploaded"] == 2.0
    theirs = other_api.get("/api/v1/cost/").json()["measured"]
    assert (theirs["user"], theirs["gpu_hours"], theirs["training_gpu_hours"]) == (
        "oscar",
        1.0,
        0.0,
    )
    assert theirs["dataset_gb_uploaded"] == 1.0
    everyone = admin_api.get("/api/v1/cost/").json()["measured"]
    assert (everyone["user"], everyone["gpu_hours"]) == (None, 4.0)
    assert everyone["dataset_gb_uploaded"] == 3.0


def test_the_cost_page_measures_an_ordinary_user_on_their_own_usage(owner, other, admin, client):
    import json
    import re

    _used(owner, kind="train", hours=3, dataset_bytes=0)
    _used(other, kind="infer", hours=1, dataset_bytes=0)
    for user, whose, hours in ((other, "your own usage", 1.0), (admin, "everyone's usage", 4.0)):
        client.force_login(user)
        html = client.get("/cost/").content.decode()
        assert f'data-testid="cost-whose">{whose}<' in html
        data = re.search(r'<script id="cost-data" type="application/json">(.*?)</script>', html)
        assert json.loads(data[1])["measured"]["gpu_hours"] == hours
