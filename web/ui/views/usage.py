"""The usage page (issue 16): GPU-hours of one month per day, per user, per kind."""

from __future__ import annotations

from carril_web.errors import CarrilWebError
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from usage.selectors import usage_visible

from ui.pages import render_page


@login_required
@require_GET
def usage_page(request: HttpRequest) -> HttpResponse:
    month, user = request.GET.get("month") or None, request.GET.get("user") or None
    try:
        summary = usage_visible(requester=request.user, month=month, username=user)
        problem = None
    except CarrilWebError as exc:
        summary = usage_visible(requester=request.user, month=None)
        problem = exc.message
    return render_page(
        request,
        "ui/usage/page.html",
        {"usage": summary, "problem": problem, "chosen_user": user or ""},
        section="usage",
        status=400 if problem else 200,
    )
