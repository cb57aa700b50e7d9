"""The cost formulas against cases computed by hand (docs/cost.md).

The case: a 7200 machine over 36 months (200 a month) plus 20 of operations: 220 fixed.
0.25 kWh per GPU-hour at 0.40 per kWh: 0.10 per GPU-hour locally. The cloud: 1.10 per
GPU-hour and nothing fixed. Break-even: 220 / (1.10 - 0.10) = 220 GPU-hours a month,
where both cost 242."""

from __future__ import annotations

import pytest
from cost.formulas import (
    Inputs,
    break_even_gpu_hours,
    cloud_cost,
    compare,
    curves,
    hybrid_cost,
    local_cost,
    payback_months,
)


def case(**changes) -> Inputs:
    values = {
        "hardware_price": 7200.0,
        "amortisation_months": 36.0,
        "gpus": 2.0,
        "energy_price_per_kwh": 0.40,
        "kwh_per_gpu_hour": 0.25,
        "ops_per_month": 20.0,
        "cloud_rate_per_gpu_hour": 1.10,
        "transfer_in_per_gb": 0.0,
        "storage_per_gb_month": 0.0,
        "model_transfer_per_gb": 0.05,
        "training_share": 0.5,
        "dataset_gb_per_month": 0.0,
        "storage_gb": 0.0,
        "models_gb_per_month": 2.0,
    }
    values.update(changes)
    return Inputs(**values)


def test_local_and_cloud_at_300_gpu_hours():
    assert local_cost(case(), 300) == pytest.approx(250.0)  # 220 + 300 x 0.10
    assert cloud_cost(case(), 300) == pytest.approx(330.0)  # 300 x 1.10


def test_hybrid_trains_locally_and_serves_in_the_cloud():
    # 220 + 150 x 0.10 + 150 x 1.10 + 2 GB x 0.05 = 220 + 15 + 165 + 0.1
    assert hybrid_cost(case(), 300) == pytest.approx(400.1)


def test_the_break_even_is_where_local_and_cloud_cost_the_same():
    h = break_even_gpu_hours(case())
    assert h == pytest.approx(220.0)
    assert local_cost(case(), h) == pytest.approx(242.0)
    assert cloud_cost(case(), h) == pytest.approx(242.0)


def test_the_clouds_fixed_costs_move_the_break_even():
    # 50 GB uploaded x 0.10 + 1000 GB stored x 0.015 = 20 fixed: (220 - 20) / 1.0 = 200.
    inputs = case(
        dataset_gb_per_month=50,
        transfer_in_per_gb=0.10,
        storage_gb=1000,
        storage_per_gb_month=0.015,
    )
    assert break_even_gpu_hours(inputs) == pytest.approx(200.0)


def test_no_break_even_when_the_cloud_is_cheaper_per_hour_than_local_energy():
    assert break_even_gpu_hours(case(cloud_rate_per_gpu_hour=0.08)) is None


def test_months_to_pay_back():
    # Saved a month at 300 GPU-hours: 330 - (20 + 30) = 280; 7200 / 280 = 25.714...
    assert payback_months(case(), 300) == pytest.approx(7200 / 280)
    assert payback_months(case(), 0) is None  # nothing used: the hardware never pays


def test_the_comparison_names_the_cheapest_option():
    assert compare(case(), 300)["cheapest"] == "local"
    assert compare(case(), 100)["cheapest"] == "cloud"  # 210 vs 110 and hybrid 280.1
    assert compare(case(), 300)["capacity_gpu_hours"] == 1460.0


def test_the_curves_are_the_formulas_sampled():
    c = curves(case(), up_to=440.0, points=3)
    assert c["gpu_hours"] == [0.0, 220.0, 440.0]
    assert c["local"] == [220.0, 242.0, 264.0]
    assert c["cloud"] == [0.0, 242.0, 484.0]
    assert c["local"][1] == c["cloud"][1]  # the crossing
