"""The inference page: the form posts straight to the REST API (with upload progress);
the job page then shows the gallery."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from jobs.models import JobKind
from jobs.selectors import job_get, jobs_visible_to
from jobs.services import DEFAULT_IMGSZ, inference_imgsz
from registry.models import Stage
from registry.selectors import model_versions_list

from ui import clone, presenters
from ui.pages import PLACEHOLDER_ID, render_page

RECENT = 8


@login_required
@require_GET
def infer_new(request: HttpRequest) -> HttpResponse:
    versions = [v for v in model_versions_list(user=request.user) if v.stage != Stage.RETIRED]
    serving = next((v for v in versions if v.stage == Stage.SERVING), None)
    recent = jobs_visible_to(user=request.user, kind=JobKind.INFER)[:RECENT]
    prefill = {"version": request.GET.get("version", ""), "conf": None, "iou": None}
    if request.GET.get("from"):
        # "Clone with changes" on a job page: its settings; the images are chosen again.
        source = job_get(user=request.user, job_id=request.GET["from"])
        prefill = clone.inference_initial(job=source)
        messages.info(
            request, f"Settings pre-filled from job {str(source.id)[:8]}; choose the images again."
        )
    # The version the form opens on, and so the image size it shows (ADR 0045).
    selected = next((v for v in versions if str(v.id) == prefill["version"]), None) or serving
    selected = selected or (versions[0] if versions else None)
    return render_page(
        request,
        "ui/infer/new.html",
        {
            "versions": [presenters.version_row(version=v) for v in versions],
            "serving": presenters.version_row(version=serving) if serving else None,
            "preselect": prefill["version"],
            "prefill": prefill,
            "imgsz": inference_imgsz(version=selected) if selected else DEFAULT_IMGSZ,
            "imgsz_trained": selected.imgsz if selected else None,
            "default_imgsz": DEFAULT_IMGSZ,
            "recent_jobs": [presenters.job_row(job=j) for j in recent],
            "max_images": settings.CARRIL_INFER_MAX_IMAGES,
            "placeholder_id": PLACEHOLDER_ID,
        },
        section="infer",
    )
