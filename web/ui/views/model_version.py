"""One model version's page (metrics, stage history, source) and its weights download."""

from __future__ import annotations

import uuid

from carril_web.errors import NotFound
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from jobs.selectors import jobs_visible_to
from registry import selectors as registry_selectors

from ui import version_page
from ui.pages import render_page
from ui.views.models import STAGES


@login_required
@require_GET
def model_version_detail(request: HttpRequest, version_id: uuid.UUID) -> HttpResponse:
    version = registry_selectors.model_version_get(version_id=version_id)
    try:
        registry_selectors.model_version_weights_path(version=version)
        has_weights = True
    except NotFound:
        has_weights = False
    source_job_visible = (
        version.source_job_id is not None
        and jobs_visible_to(user=request.user).filter(id=version.source_job_id).exists()
    )
    page = version_page.version_page(
        version=version,
        events=list(registry_selectors.model_version_events(version=version)),
        source_job_visible=source_job_visible,
        has_weights=has_weights,
    )
    return render_page(
        request,
        "ui/models/detail.html",
        {"version": page, "stages": STAGES},
        section="models",
    )


@login_required
@require_GET
def model_weights(request: HttpRequest, version_id: uuid.UUID) -> FileResponse:
    """The version's .pt file. Every signed-in user may read the registry, so every
    signed-in user may download what it serves."""
    version = registry_selectors.model_version_get(version_id=version_id)
    try:
        path = registry_selectors.model_version_weights_path(version=version)
    except NotFound as exc:
        raise Http404(exc.message) from exc
    return FileResponse(
        path.open("rb"),
        as_attachment=True,
        filename=version_page.weights_filename(version=version),
        content_type="application/octet-stream",
    )
