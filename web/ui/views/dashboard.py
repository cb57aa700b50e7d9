"""The dashboard: GPUs and their lanes, the queue, the user's recent jobs."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET
from jobs.selectors import gpus_overview, jobs_visible_to

from ui import presenters
from ui.pages import render_page

RECENT_JOBS = 10


def _context(request: HttpRequest) -> dict[str, Any]:
    gpus = presenters.gpus_view(overview=gpus_overview(user=request.user))
    recent = jobs_visible_to(user=request.user)[:RECENT_JOBS]
    return {
        "gpus": gpus,
        "runtime": gpus["runtime"],
        "recent_jobs": [presenters.job_row(job=j) for j in recent],
    }


@login_required
@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    context = _context(request)
    context["poll_config"] = {"status_url": reverse("ui:dashboard_status")}
    return render_page(request, "ui/dashboard/page.html", context, section="dashboard")


@login_required
@require_GET
def dashboard_status(request: HttpRequest) -> JsonResponse:
    """Fragments for the dashboard's poller, rendered by the same templates as the page."""
    context = _context(request)
    return JsonResponse(
        {
            "runtime": context["runtime"],
            "gpus_html": render_to_string("ui/dashboard/_gpus.html", context, request=request),
            "queue_html": render_to_string("ui/dashboard/_queue.html", context, request=request),
            "jobs_html": render_to_string("ui/dashboard/_jobs.html", context, request=request),
        }
    )
