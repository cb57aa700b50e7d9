"""The break-even page (issue 16): the three monthly costs against GPU-hours per month,
the measured point and the crossing; every input editable in the form (a GET)."""

from __future__ import annotations

from carril_web.errors import ValidationFailed
from cost.service import cost_document
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from ui.pages import render_page

FIELDS = [
    ("hardware_price", "Hardware price (the machine with its GPUs)"),
    ("amortisation_months", "Amortised over (months)"),
    ("gpus", "GPUs in the machine"),
    ("energy_price_per_kwh", "Energy price per kWh"),
    ("kwh_per_gpu_hour", "kWh per GPU-hour (blank: measured)"),
    ("ops_per_month", "Operations per month"),
    ("cloud_on_demand_per_gpu_hour", "Cloud on-demand price per GPU-hour"),
    ("cloud_committed_per_gpu_hour", "Cloud committed price per GPU-hour"),
    ("transfer_in_per_gb", "Cloud data transfer in per GB"),
    ("storage_per_gb_month", "Cloud storage per GB-month"),
    ("model_transfer_per_gb", "Moving models per GB (hybrid)"),
    ("training_share", "Training share of GPU-hours, 0-1 (blank: measured)"),
    ("gpu_hours_per_month", "GPU-hours per month (blank: measured)"),
]


@login_required
@require_GET
def cost_page(request: HttpRequest) -> HttpResponse:
    problem = None
    try:
        document = cost_document(request.GET, requester=request.user)
    except ValidationFailed as exc:
        problem = exc.message
        document = cost_document({}, requester=request.user)
    given = request.GET
    fields = [
        {
            "name": name,
            "label": label,
            "value": given.get(name, ""),
            "placeholder": document["inputs"].get(name),
        }
        for name, label in FIELDS
    ]
    return render_page(
        request,
        "ui/cost/page.html",
        {
            "cost": document,
            "fields": fields,
            "gpu_prices": given.get("gpu_prices", ""),
            "gpu_prices_configured": ", ".join(
                f"{name}={price:g}" for name, price in document["inputs"]["gpu_prices"].items()
            ),
            "problem": problem,
            "use_committed": given.get("use_committed") in {"1", "true", "on", "yes"},
        },
        section="cost",
        status=400 if problem else 200,
    )
