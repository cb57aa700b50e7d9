"""A model version's exports on its page: download any format, start an export,
set the serving format (administrators). The rules are the registry's (`registry.exports`)."""

from __future__ import annotations

import uuid

from carril_web.downloads import download_response
from carril_web.errors import CarrilWebError
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST
from jobs.services import job_create_export
from registry import exports as registry_exports
from registry.selectors import model_version_get


def _version(request: HttpRequest, version_id: uuid.UUID):
    """The version, if `request.user` may see it (registry/visibility.py), else 404."""
    try:
        return model_version_get(user=request.user, version_id=version_id)
    except CarrilWebError as exc:
        raise Http404(exc.message) from exc


@login_required
@require_GET
def model_download(request: HttpRequest, version_id: uuid.UUID) -> FileResponse:
    """Whoever may see the version may download its weights and exports."""
    version = _version(request, version_id)
    try:
        download = registry_exports.model_version_download(
            version=version, fmt=request.GET.get("format", "pt")
        )
    except CarrilWebError as exc:
        raise Http404(exc.message) from exc
    return download_response(download)


@login_required
@require_POST
def model_serving_format(request: HttpRequest, version_id: uuid.UUID) -> HttpResponse:
    version = _version(request, version_id)
    try:
        registry_exports.model_version_set_serving_format(
            actor=request.user, version=version, fmt=request.POST.get("format", "")
        )
    except CarrilWebError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request, f"{version.name} now serves inference from {version.serving_format}."
        )
    return redirect("ui:model_version", version_id=version.id)


@login_required
@require_POST
def model_export_start(request: HttpRequest, version_id: uuid.UUID) -> HttpResponse:
    """Start an export job from the version's page, then follow it on the job's page."""
    version = _version(request, version_id)
    try:
        imgsz = int(request.POST.get("imgsz") or 0) or None
    except ValueError:
        imgsz = -1  # refused below with the image-size rule's message
    try:
        job = job_create_export(
            owner=request.user,
            version=version,
            fmt=request.POST.get("format", ""),
            imgsz=imgsz,
            half=bool(request.POST.get("half")),
            dynamic=bool(request.POST.get("dynamic")),
        )
    except CarrilWebError as exc:
        fields = exc.details.get("fields") or {}
        detail = " ".join(str(m) for msgs in fields.values() for m in msgs)
        messages.error(request, f"{exc.message} {detail}".strip())
        return redirect("ui:model_version", version_id=version.id)
    messages.success(request, f"Exporting {version.name} to {job.spec['format']}.")
    return redirect("ui:job_detail", job_id=job.id)
