"""The cost comparison's document: example prices (or what the caller gives), Carril's
measured usage over the last 30 days, the three monthly costs, the break-even, the
pay-back and the curves to plot (docs/cost.md).

What is measured is the caller's own usage; administrators see the whole platform's, as
with `usage/` (ADR 0039)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from carril_web.errors import ValidationFailed
from datasets.models import Dataset
from django.db.models import Sum
from django.utils import timezone
from registry.models import ModelVersion
from retention.policy import storage_root, tree_bytes
from retention.storage import storage_by_user_and_kind
from usage.selectors import usage_rows

from cost import example_prices
from cost.formulas import Inputs, compare, curves
from cost.gpu_prices import gpu_prices_chosen, mix_rate, priced_rows

GB = 1e9
WINDOW = timedelta(days=30)  # "per month": the last 30 days
MODELLED_KWH_PER_GPU_HOUR = 0.3  # when nothing was measured or modelled yet
NUMBERS = [k for k, v in example_prices.DEFAULTS.items() if k not in {"currency", "gpu_model"}]


def measured(*, user=None, now=None) -> dict[str, Any]:
    """The last 30 days of `user`'s usage; everyone's when `user` is None."""
    now = now or timezone.now()
    since = now - WINDOW
    rows = usage_rows(start=since, end=now + timedelta(seconds=1), user=user)
    datasets = Dataset.objects.filter(created_at__gte=since)
    versions = ModelVersion.objects.filter(created_at__gte=since, source="training")
    storage = storage_by_user_and_kind()
    if user is not None:
        datasets = datasets.filter(owner=user)
        versions = versions.filter(source_job__owner=user)
        storage = [row for row in storage if row["user"] == user.get_username()]
    seconds = rows.aggregate(s=Sum("gpu_seconds"))["s"] or 0.0
    train = rows.filter(job__kind="train").aggregate(s=Sum("gpu_seconds"))["s"] or 0.0
    energy_wh = rows.aggregate(e=Sum("energy_wh"))["e"] or 0.0
    uploaded = datasets.aggregate(s=Sum("size_bytes"))["s"]
    models = sum(
        tree_bytes(storage_root() / "weights" / f"{fp}.pt")
        for fp in versions.values_list("fingerprint", flat=True)
    )
    by_model = rows.values("gpu_model").annotate(s=Sum("gpu_seconds")).order_by("gpu_model")
    return {
        "window_days": WINDOW.days,
        "user": user.get_username() if user is not None else None,  # None: everyone
        "gpu_hours_by_model": {
            (row["gpu_model"] or "unknown"): round(row["s"] / 3600, 6) for row in by_model
        },
        "gpu_hours": round(seconds / 3600, 6),
        "training_gpu_hours": round(train / 3600, 6),
        "inference_gpu_hours": round((seconds - train) / 3600, 6),
        "energy_kwh": round(energy_wh / 1000, 6),
        "energy_sources": sorted(set(rows.values_list("energy_source", flat=True))),
        "dataset_gb_uploaded": round((uploaded or 0) / GB, 6),
        "storage_gb": round(sum(r["bytes"] for r in storage) / GB, 6),
        "models_gb_moved": round(models / GB, 6),
    }


def _number(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ValidationFailed(
            f"{name} must be a number", details={"fields": {name: ["must be a number"]}}
        ) from None
    if value < 0 or value != value or value in (float("inf"),):
        raise ValidationFailed(
            f"{name} must be 0 or more", details={"fields": {name: ["must be 0 or more"]}}
        )
    return value


def inputs_from(params: Mapping[str, str]) -> dict[str, Any]:
    """The example defaults, with what the caller gave in their place."""
    chosen: dict[str, Any] = dict(example_prices.DEFAULTS)
    for name in (*NUMBERS, "gpu_hours_per_month"):
        raw = params.get(name)
        if raw in (None, ""):
            continue
        if name == "use_committed":
            chosen[name] = raw.lower() in {"1", "true", "yes", "on"}
        else:
            chosen[name] = _number(name, raw)
    if params.get("gpu_model"):
        chosen["gpu_model"] = params["gpu_model"][:200]
    if not chosen["amortisation_months"]:
        raise ValidationFailed(
            "amortisation_months must be more than 0",
            details={"fields": {"amortisation_months": ["must be more than 0"]}},
        )
    if chosen.get("training_share") is not None and chosen["training_share"] > 1:
        raise ValidationFailed(
            "training_share is a fraction from 0 to 1",
            details={"fields": {"training_share": ["must be from 0 to 1"]}},
        )
    return chosen


def cost_document(params: Mapping[str, str], *, requester) -> dict[str, Any]:
    """The comparison at `requester`'s own measured usage (administrators: everyone's)."""
    from accounts.services import user_is_administrator

    chosen = inputs_from(params)
    seen = measured(user=None if user_is_administrator(user=requester) else requester)
    hours = chosen.get("gpu_hours_per_month")
    hours = seen["gpu_hours"] if hours is None else hours
    kwh = chosen["kwh_per_gpu_hour"]
    if kwh is None:
        kwh = (
            seen["energy_kwh"] / seen["gpu_hours"]
            if seen["gpu_hours"]
            else MODELLED_KWH_PER_GPU_HOUR
        )
    share = chosen["training_share"]
    if share is None:
        share = seen["training_gpu_hours"] / seen["gpu_hours"] if seen["gpu_hours"] else 0.5
    single = (
        chosen["cloud_committed_per_gpu_hour"]
        if chosen["use_committed"] and chosen["cloud_committed_per_gpu_hour"] is not None
        else chosen["cloud_on_demand_per_gpu_hour"]
    )
    prices = gpu_prices_chosen(params)
    rows = priced_rows(hours_by_model=seen["gpu_hours_by_model"], prices=prices, default=single)
    rate = mix_rate(rows, default=single)
    inputs = Inputs(
        hardware_price=chosen["hardware_price"],
        amortisation_months=chosen["amortisation_months"],
        gpus=chosen["gpus"],
        energy_price_per_kwh=chosen["energy_price_per_kwh"],
        kwh_per_gpu_hour=kwh,
        ops_per_month=chosen["ops_per_month"],
        cloud_rate_per_gpu_hour=rate,
        transfer_in_per_gb=chosen["transfer_in_per_gb"],
        storage_per_gb_month=chosen["storage_per_gb_month"],
        model_transfer_per_gb=chosen["model_transfer_per_gb"],
        training_share=share,
        dataset_gb_per_month=seen["dataset_gb_uploaded"],
        storage_gb=seen["storage_gb"],
        models_gb_per_month=seen["models_gb_moved"],
    )
    answer = compare(inputs, hours)
    span = max(
        inputs.gpus * 730.0,
        2 * (answer["break_even_gpu_hours"] or 0.0),
        1.2 * hours,
        10.0,
    )
    return {
        "prices": {"as_of": example_prices.AS_OF, "label": example_prices.LABEL},
        "inputs": {
            **chosen,
            "kwh_per_gpu_hour": round(kwh, 6),
            "training_share": round(share, 6),
            "cloud_rate_per_gpu_hour": round(rate, 6),
            "cloud_single_rate_per_gpu_hour": single,
            "gpu_prices": prices,
            "gpu_hours_per_month": hours,
        },
        "measured": seen,
        "by_gpu_model": rows,
        "at_measured": answer,
        "curves": curves(inputs, up_to=span),
    }
