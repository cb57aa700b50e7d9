"""Jobs: the list, the live job page and its JSON status view, cancel, inference results."""

from __future__ import annotations

import uuid

from api.pagination import NewestFirst
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST
from rest_framework.request import Request as ApiRequest

from ui import backend, presenters
from ui.pages import render_page

STATES = [
    "submitted",
    "queued",
    "running",
    "cancelling",
    "succeeded",
    "failed",
    "cancelled",
    "lost",
]
KINDS = ["train", "infer"]


@login_required
@require_GET
def job_list(request: HttpRequest) -> HttpResponse:
    state = request.GET.get("state") if request.GET.get("state") in STATES else ""
    kind = request.GET.get("kind") if request.GET.get("kind") in KINDS else ""
    # Keyset pages, as the API's job list: a deep page costs what the first does.
    pages = NewestFirst()
    page = pages.paginate_queryset(
        backend.jobs(user=request.user, state=state, kind=kind), ApiRequest(request)
    )
    return render_page(
        request,
        "ui/jobs/list.html",
        {
            "jobs": [presenters.job_row(job=j) for j in page],
            "newer": pages.get_previous_link(),
            "older": pages.get_next_link(),
            "state": state,
            "kind": kind,
            "states": STATES,
            "kinds": KINDS,
        },
        section="jobs",
    )


@login_required
@require_GET
def job_detail(request: HttpRequest, job_id: uuid.UUID) -> HttpResponse:
    job = backend.job(user=request.user, job_id=job_id)
    detections = None
    if job.kind == "infer" and job.state == "succeeded":
        detections = presenters.detections_view(job=job, images=backend.job_detections(job=job))
    page = presenters.job_page(
        job=job,
        log=backend.job_log_tail(job=job),
        model_version=backend.model_version_of_job(job=job) if job.kind == "train" else None,
        detections=detections,
    )
    return render_page(
        request,
        "ui/jobs/detail.html",
        {"page": page},
        section="train" if job.kind == "train" else "infer",
    )


@login_required
@require_GET
def job_status(request: HttpRequest, job_id: uuid.UUID) -> JsonResponse:
    """What the job page polls. Reads the row the reconciler keeps fresh, never the GPU
    service, so a slow or absent GPU service cannot slow the page down."""
    job = backend.job(user=request.user, job_id=job_id)
    return JsonResponse(presenters.job_status(job=job, log=backend.job_log_tail(job=job)))


@login_required
@require_POST
def job_cancel(request: HttpRequest, job_id: uuid.UUID) -> HttpResponse:
    job = backend.job(user=request.user, job_id=job_id)
    outcome = backend.job_cancel(job=job)
    if outcome is None:
        messages.info(request, "Cancel requested; the job stops at its next checkpoint.")
    else:
        messages.error(request, outcome)
    return redirect("ui:job_detail", job_id=job.id)


@login_required
@require_GET
def job_image(request: HttpRequest, job_id: uuid.UUID, name: str) -> FileResponse:
    """An input image of an inference job, for the gallery."""
    job = backend.job(user=request.user, job_id=job_id)
    path = backend.job_input_image(job=job, name=name)
    if path is None:
        raise Http404("No such image in this job.")
    return FileResponse(path.open("rb"))


@login_required
@require_GET
def job_detections(request: HttpRequest, job_id: uuid.UUID) -> JsonResponse:
    """The inference job's detections as JSON, offered as a download."""
    job = backend.job(user=request.user, job_id=job_id)
    response = JsonResponse({"job": str(job.id), "images": backend.job_detections(job=job)})
    response["Content-Disposition"] = f'attachment; filename="detections-{job.id}.json"'
    return response
