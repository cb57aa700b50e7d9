"""A cloud price per GPU model (ADR 0049): listed models take their own price, the others
the single cloud price; the formulas take the mix's rate weighted by GPU-hours."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from jobs.models import Job
from usage.models import AttemptUsage

from tests.web.cost.test_cost_api import HAND

# No fixed cloud costs, so the cloud cost at the measured usage is the rows' sum alone.
MEASURED = {k: v for k, v in HAND.items() if k != "gpu_hours_per_month"}


@pytest.fixture
def usage_by_model(owner):
    """3 GPU-hours on an H100 and 1 on an A10 in the window."""
    now = timezone.now()
    for model, hours in (("NVIDIA H100 80GB HBM3", 3), ("NVIDIA A10", 1)):
        job = Job.objects.create(owner=owner, kind="train", state="succeeded")
        AttemptUsage.objects.create(
            job=job,
            attempt=1,
            gpus=1,
            held_from=now - timedelta(hours=hours),
            held_until=now,
            gpu_seconds=hours * 3600,
            energy_wh=hours * 300,
            energy_source="modelled",
            gpu_model=model,
        )


def test_a_listed_model_takes_its_price_and_the_others_the_single_price(
    owner_api, usage_by_model, settings
):
    settings.CARRIL_GPU_PRICES = {"nvidia h100 80gb hbm3": 2.5}  # names compared without case

    body = owner_api.get("/api/v1/cost/", MEASURED).json()

    assert body["by_gpu_model"] == [
        {
            "gpu_model": "NVIDIA A10",
            "gpu_hours": 1.0,
            "price_per_gpu_hour": 1.1,
            "price_from": "default",
            "cloud_cost": 1.1,
        },
        {
            "gpu_model": "NVIDIA H100 80GB HBM3",
            "gpu_hours": 3.0,
            "price_per_gpu_hour": 2.5,
            "price_from": "listed",
            "cloud_cost": 7.5,
        },
    ]
    # (3 x 2.5 + 1 x 1.1) / 4 = 2.15 per GPU-hour; at 4 GPU-hours the cloud costs 8.6.
    assert body["inputs"]["cloud_rate_per_gpu_hour"] == pytest.approx(2.15)
    assert body["inputs"]["cloud_single_rate_per_gpu_hour"] == 1.1
    assert body["at_measured"]["cloud"] == pytest.approx(8.6)
    # Break-even: F_local = 220, e = 0.1, so 220 / (2.15 - 0.1).
    assert body["at_measured"]["break_even_gpu_hours"] == pytest.approx(220 / 2.05, abs=1e-4)


def test_unlisted_models_follow_the_committed_price_when_it_is_chosen(
    owner_api, usage_by_model, settings
):
    settings.CARRIL_GPU_PRICES = {"NVIDIA H100 80GB HBM3": 2.5}
    query = {**MEASURED, "use_committed": "1", "cloud_committed_per_gpu_hour": "0.7"}

    body = owner_api.get("/api/v1/cost/", query).json()

    prices = {row["gpu_model"]: row["price_per_gpu_hour"] for row in body["by_gpu_model"]}
    assert prices == {"NVIDIA A10": 0.7, "NVIDIA H100 80GB HBM3": 2.5}
    assert body["at_measured"]["cloud"] == pytest.approx(8.2)


def test_the_caller_can_give_other_prices_and_a_bad_list_is_refused_by_name(
    owner_api, usage_by_model, settings
):
    settings.CARRIL_GPU_PRICES = {"NVIDIA H100 80GB HBM3": 2.5}

    body = owner_api.get("/api/v1/cost/", {**MEASURED, "gpu_prices": "NVIDIA A10=0.5"}).json()
    assert body["inputs"]["gpu_prices"] == {"NVIDIA A10": 0.5}
    assert body["at_measured"]["cloud"] == pytest.approx(3 * 1.1 + 0.5)

    refused = owner_api.get("/api/v1/cost/", {"gpu_prices": "NVIDIA A10=free"})
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert error["details"]["fields"]["gpu_prices"] == [
        "the price of 'NVIDIA A10' is not a number: 'free'"
    ]


def test_with_nothing_measured_the_single_price_is_the_rate(owner_api, settings):
    settings.CARRIL_GPU_PRICES = {"NVIDIA H100 80GB HBM3": 2.5}

    body = owner_api.get("/api/v1/cost/", HAND).json()

    assert body["by_gpu_model"] == []
    assert body["inputs"]["cloud_rate_per_gpu_hour"] == 1.1
    assert body["at_measured"]["cloud"] == 330.0  # the hand-computed case is unchanged


def test_the_cost_page_shows_the_price_used_for_each_model(owner, client, usage_by_model, settings):
    settings.CARRIL_GPU_PRICES = {"NVIDIA H100 80GB HBM3": 2.5}
    client.force_login(owner)

    html = client.get("/cost/", MEASURED).content.decode()

    assert (
        "<tr><td>NVIDIA H100 80GB HBM3</td><td>3.00</td><td>2.5000 USD</td>"
        "<td>its own price</td><td>7.50 USD</td></tr>"
    ) in html
    assert (
        "<tr><td>NVIDIA A10</td><td>1.00</td><td>1.1000 USD</td>"
        "<td>the single cloud price</td><td>1.10 USD</td></tr>"
    ) in html
    assert 'data-testid="cost-cloud-rate">2.1500 USD' in html
    assert 'placeholder="NVIDIA H100 80GB HBM3=2.5"' in html
