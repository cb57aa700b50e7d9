"""The model registry page: versions, their history, stage changes (administrators)."""

from __future__ import annotations

import uuid

from carril_web.errors import CarrilWebError
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST
from registry.models import Stage
from registry.selectors import model_events_recent, model_version_get, model_versions_list
from registry.services import model_version_set_stage

from ui import presenters
from ui.pages import PLACEHOLDER_ID, render_page

STAGES = list(Stage.values)


@login_required
@require_GET
def model_list(request: HttpRequest) -> HttpResponse:
    versions = [presenters.version_row(version=v) for v in model_versions_list()]
    return render_page(
        request,
        "ui/models/list.html",
        {
            "versions": versions,
            "serving": next((v for v in versions if v["stage"] == "serving"), None),
            "events": [presenters.event_row(event=e) for e in model_events_recent()],
            "stages": STAGES,
            "placeholder_id": PLACEHOLDER_ID,
        },
        section="models",
    )


@login_required
@require_POST
def model_stage(request: HttpRequest, version_id: uuid.UUID) -> HttpResponse:
    version = model_version_get(version_id=version_id)
    try:
        model_version_set_stage(
            actor=request.user,
            version=version,
            stage=request.POST.get("stage", ""),
            reason=request.POST.get("reason", ""),
        )
    except CarrilWebError as exc:
        # Forbidden for non-administrators, a missing reason, an unchanged stage.
        fields = exc.details.get("fields") or {}
        detail = " ".join(str(m) for msgs in fields.values() for m in msgs)
        messages.error(request, f"{exc.message} {detail}".strip())
        return redirect("ui:models")
    messages.success(request, f"{version.name} is now {request.POST.get('stage')}.")
    return redirect("ui:models")
