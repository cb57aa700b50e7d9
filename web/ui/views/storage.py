"""The administrators' storage page (issue 16): what storage holds by user and kind, and
what the next prune would free."""

from __future__ import annotations

from accounts.services import user_is_administrator
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from retention.storage import storage_overview

from ui.pages import render_page


@login_required
@require_GET
def storage_page(request: HttpRequest) -> HttpResponse:
    if not user_is_administrator(user=request.user):
        raise PermissionDenied("Only administrators see the storage page.")
    return render_page(
        request, "ui/storage/page.html", {"storage": storage_overview()}, section="storage"
    )
