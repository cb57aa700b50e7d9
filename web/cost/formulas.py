"""The cost formulas (docs/cost.md), pure: monthly cost as a function of GPU-hours per
month for local, cloud and hybrid, the break-even, and the months to pay back.

local(h)  = hardware / N + h x kWh per GPU-hour x price per kWh + ops
cloud(h)  = h x cloud rate + dataset GB uploaded x transfer-in + GB stored x storage price
hybrid(h) = hardware / N + ops + s h x kWh per GPU-hour x price per kWh
            + (1 - s) h x cloud rate + GB of models moved x model transfer
with s the training share of GPU-hours. Break-even: local(h) = cloud(h), so
h* = (hardware / N + ops - cloud fixed) / (cloud rate - energy per GPU-hour), none when
the cloud rate is not above the energy per GPU-hour. Pay-back: hardware / (cloud(h) -
(ops + energy(h))), none when running locally saves nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

HOURS_PER_MONTH = 730.0  # 8760 / 12


@dataclass(frozen=True)
class Inputs:
    hardware_price: float
    amortisation_months: float
    gpus: float
    energy_price_per_kwh: float
    kwh_per_gpu_hour: float
    ops_per_month: float
    cloud_rate_per_gpu_hour: float
    transfer_in_per_gb: float
    storage_per_gb_month: float
    model_transfer_per_gb: float
    training_share: float
    dataset_gb_per_month: float
    storage_gb: float
    models_gb_per_month: float


def local_fixed(i: Inputs) -> float:
    return i.hardware_price / i.amortisation_months + i.ops_per_month


def energy_per_gpu_hour(i: Inputs) -> float:
    return i.kwh_per_gpu_hour * i.energy_price_per_kwh


def cloud_fixed(i: Inputs) -> float:
    return i.dataset_gb_per_month * i.transfer_in_per_gb + i.storage_gb * i.storage_per_gb_month


def local_cost(i: Inputs, h: float) -> float:
    return local_fixed(i) + h * energy_per_gpu_hour(i)


def cloud_cost(i: Inputs, h: float) -> float:
    return cloud_fixed(i) + h * i.cloud_rate_per_gpu_hour


def hybrid_cost(i: Inputs, h: float) -> float:
    s = i.training_share
    return (
        local_fixed(i)
        + s * h * energy_per_gpu_hour(i)
        + (1 - s) * h * i.cloud_rate_per_gpu_hour
        + i.models_gb_per_month * i.model_transfer_per_gb
    )


def break_even_gpu_hours(i: Inputs) -> float | None:
    """GPU-hours per month where local and cloud cost the same (None: never)."""
    slope = i.cloud_rate_per_gpu_hour - energy_per_gpu_hour(i)
    if slope <= 0:
        return None
    return max(0.0, (local_fixed(i) - cloud_fixed(i)) / slope)


def payback_months(i: Inputs, h: float) -> float | None:
    """Months until the hardware is paid by what running locally saves over the cloud."""
    saving = cloud_cost(i, h) - (i.ops_per_month + h * energy_per_gpu_hour(i))
    if saving <= 0:
        return None
    return i.hardware_price / saving


def capacity_gpu_hours(i: Inputs) -> float:
    return i.gpus * HOURS_PER_MONTH


def compare(i: Inputs, h: float) -> dict[str, float | str | None]:
    costs = {"local": local_cost(i, h), "cloud": cloud_cost(i, h), "hybrid": hybrid_cost(i, h)}
    return {
        **{k: round(v, 4) for k, v in costs.items()},
        "cheapest": min(costs, key=costs.get),  # type: ignore[arg-type]
        "break_even_gpu_hours": _round(break_even_gpu_hours(i)),
        "payback_months": _round(payback_months(i, h)),
        "capacity_gpu_hours": capacity_gpu_hours(i),
    }


def curves(i: Inputs, *, up_to: float, points: int = 60) -> dict[str, list[float]]:
    xs = [up_to * n / (points - 1) for n in range(points)]
    return {
        "gpu_hours": [round(x, 4) for x in xs],
        "local": [round(local_cost(i, x), 4) for x in xs],
        "cloud": [round(cloud_cost(i, x), 4) for x in xs],
        "hybrid": [round(hybrid_cost(i, x), 4) for x in xs],
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
