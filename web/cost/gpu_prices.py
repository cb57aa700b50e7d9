"""The cloud price per GPU-hour for each GPU model (ADR 0049).

GPU-hours are measured per GPU model (the name the runtime reported, on each attempt's
usage row), and an hour of a large GPU costs more in the cloud than an hour of a small
one. `CARRIL_GPU_PRICES` (checked when the web starts) or the `gpu_prices` input gives a
price to some models; every other model takes the single cloud price of the comparison
(on-demand, or committed). The formulas take one cloud rate: the measured mix's average,
weighted by GPU-hours, so the cloud cost at the measured usage is the sum of the rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from carril_web.env import prices_parse
from carril_web.errors import ValidationFailed
from django.conf import settings


def gpu_prices_chosen(params: Mapping[str, str]) -> dict[str, float]:
    """The configured prices, or the caller's `gpu_prices` (same syntax) in their place."""
    raw = params.get("gpu_prices")
    if raw in (None, ""):
        return dict(settings.CARRIL_GPU_PRICES)
    try:
        return prices_parse(raw)
    except ValueError as exc:
        raise ValidationFailed(
            f"gpu_prices: {exc}", details={"fields": {"gpu_prices": [str(exc)]}}
        ) from None


def priced_rows(
    *, hours_by_model: Mapping[str, float], prices: Mapping[str, float], default: float
) -> list[dict[str, Any]]:
    """One row per GPU model that ran: its GPU-hours, the price used and where it came
    from (`listed` in the prices, or the `default` single price), and its cloud cost."""
    listed = {name.casefold(): price for name, price in prices.items()}
    rows = []
    for model, hours in hours_by_model.items():
        price = listed.get(model.casefold())
        rows.append(
            {
                "gpu_model": model,
                "gpu_hours": hours,
                "price_per_gpu_hour": default if price is None else price,
                "price_from": "default" if price is None else "listed",
                "cloud_cost": round(hours * (default if price is None else price), 4),
            }
        )
    return rows


def mix_rate(rows: list[dict[str, Any]], *, default: float) -> float:
    """The cloud price of one GPU-hour of the measured mix (the default when nothing ran)."""
    hours = sum(row["gpu_hours"] for row in rows)
    if not hours:
        return default
    return sum(row["gpu_hours"] * row["price_per_gpu_hour"] for row in rows) / hours
