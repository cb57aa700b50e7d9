"""Jobs: the list, the live job page and its JSON status view, cancel, inference results."""

from __future__ import annotations

import uuid

from api.documents import job_detections_public
from api.pagination import METRIC_SORTS, ByMetric, NewestFirst
from carril_web.errors import Conflict, Forbidden, QuotaExceeded, ValidationFailed
from datasets.selectors import datasets_visible_to
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from jobs.evaluation import load_evaluation
from jobs.labels import LABEL_FIELDS, job_labels_set
from jobs.listing import job_list_filters
from jobs.models import EVALUATED_KINDS, Job, JobKind, JobState
from jobs.rerun import job_run_again as job_run_again_service
from jobs.selectors import job_get, job_input_image, job_input_images, job_log_tail, jobs_visible_to
from jobs.services import job_cancel as job_cancel_service
from registry.selectors import model_version_of_job
from rest_framework.request import Request as ApiRequest

from ui import presenters
from ui.pages import render_page
from ui.views.job_video import video_view


@login_required
@require_GET
def job_list(request: HttpRequest) -> HttpResponse:
    problem = ""
    sort = request.GET.get("sort") or ""
    try:
        filters = job_list_filters(params=request.GET)
        # Keyset pages, as the API's job list: a deep page costs what the first does.
        pages: NewestFirst | ByMetric = ByMetric(sort=sort) if sort else NewestFirst()
        page = pages.paginate_queryset(
            jobs_visible_to(user=request.user, **filters), ApiRequest(request)
        )
    except ValidationFailed as exc:
        fields = exc.details.get("fields") or {}
        problem = "; ".join(f"{name}: {' '.join(msgs)}" for name, msgs in fields.items())
        filters, sort, page, pages = {}, "", [], NewestFirst()
    return render_page(
        request,
        "ui/jobs/list.html",
        {
            "jobs": [presenters.job_row(job=j) for j in page],
            "newer": pages.get_previous_link() if page else None,
            "older": pages.get_next_link() if page else None,
            "problem": problem,
            "state": filters.get("state") or "",
            "kind": filters.get("kind") or "",
            "tag": filters.get("tag") or "",
            "dataset": str(filters.get("dataset_id") or ""),
            "sort": sort,
            "states": list(JobState.values),
            "kinds": list(JobKind.values),
            "datasets": [(str(d.id), d.name) for d in datasets_visible_to(user=request.user)],
            "sorts": [("", "Newest first")]
            + [
                (s, f"{s.removeprefix('-')}, {'highest' if s[0] == '-' else 'lowest'} first")
                for s in METRIC_SORTS
            ],
        },
        section="jobs",
        status=400 if problem else 200,
    )


def _attempts(job: Job) -> list:
    """The usage rows of the job's ended attempts: a job that never started has none, and
    its page is polled without asking for them."""
    return list(job.usage.all()) if job.started_at else []


@login_required
@require_POST
def job_labels(request: HttpRequest, job_id: uuid.UUID) -> HttpResponse:
    """The job page's small form: rename, retag, annotate (the owner only)."""
    job = job_get(user=request.user, job_id=job_id)
    values = {key: request.POST.get(key, "") for key in LABEL_FIELDS}
    try:
        job_labels_set(job=job, user=request.user, values=values)
    except (ValidationFailed, Forbidden) as exc:
        fields = exc.details.get("fields") or {}
        messages.error(
            request,
            "; ".join(f"{name}: {' '.join(msgs)}" for name, msgs in fields.items()) or exc.message,
        )
    else:
        messages.info(request, "Name, tags and note saved.")
    return redirect("ui:job_detail", job_id=job.id)


def _has_detections(job: Job) -> bool:
    return job.kind == JobKind.INFER and job.state == JobState.SUCCEEDED


def evaluation_url(*, job: Job) -> str | None:
    """The job's evaluation page, once the job has written its evaluation (ADR 0042)."""
    if job.kind not in EVALUATED_KINDS or load_evaluation(job=job) is None:
        return None
    return reverse("ui:job_evaluation", kwargs={"job_id": job.id})


@login_required
@require_GET
def job_detail(request: HttpRequest, job_id: uuid.UUID) -> HttpResponse:
    job = job_get(user=request.user, job_id=job_id)
    detections = None
    if _has_detections(job):
        detections = presenters.detections_view(
            job=job,
            document=job_detections_public(job=job),
            stored_names=list(job_input_images(job=job)),
        )
    page = presenters.job_page(
        job=job,
        log=job_log_tail(job=job),
        usage=_attempts(job),
        model_version=model_version_of_job(job=job) if job.kind == JobKind.TRAIN else None,
        detections=detections,
    )
    page["labels"] = {
        "name": job.name,
        "tags": job.tag_list,
        "note": job.note,
        "editable": job.owner_id == request.user.pk,
    }
    return render_page(
        request,
        "ui/jobs/detail.html",
        {"page": page, "video": video_view(job=job), "evaluation_url": evaluation_url(job=job)},
        section="train" if job.kind == JobKind.TRAIN else "infer",
    )


@login_required
@require_GET
def job_status(request: HttpRequest, job_id: uuid.UUID) -> JsonResponse:
    """What the job page polls. Reads the row the reconciler keeps fresh, never the GPU
    service, so a slow or absent GPU service cannot slow the page down."""
    job = job_get(user=request.user, job_id=job_id)
    return JsonResponse(
        presenters.job_status(job=job, log=job_log_tail(job=job), usage=_attempts(job))
    )


@login_required
@require_http_methods(["GET", "POST"])
def job_cancel(request: HttpRequest, job_id: uuid.UUID) -> HttpResponse:
    """GET asks for confirmation (a page of its own, so it works without JavaScript);
    POST cancels."""
    job = job_get(user=request.user, job_id=job_id)
    if request.method == "GET":
        if not job.is_cancellable:
            messages.info(request, presenters.not_cancellable_message(job=job))
            return redirect("ui:job_detail", job_id=job.id)
        return render_page(
            request,
            "ui/jobs/cancel.html",
            {"job": presenters.job_row(job=job)},
            section="train" if job.kind == JobKind.TRAIN else "infer",
        )
    try:
        job = job_cancel_service(job=job)
    except Conflict as exc:
        messages.error(request, exc.message)
    else:
        if job.state == JobState.CANCELLED:  # it had not reached the GPU service yet
            messages.info(request, "The job is cancelled.")
        else:
            messages.info(request, "Cancel requested; the job stops at its next checkpoint.")
    return redirect("ui:job_detail", job_id=job.id)


@login_required
@require_POST
def job_run_again(request: HttpRequest, job_id: uuid.UUID) -> HttpResponse:
    """ "Run again": a new job with this one's spec; its page is where this leads."""
    job = job_get(user=request.user, job_id=job_id)
    try:
        again = job_run_again_service(owner=request.user, job=job)
    except (Conflict, ValidationFailed, QuotaExceeded) as exc:
        messages.error(request, exc.message)
        return redirect("ui:job_detail", job_id=job.id)
    messages.info(request, f"Started again from job {str(job.id)[:8]}.")
    return redirect("ui:job_detail", job_id=again.id)


@login_required
@require_GET
def job_image(request: HttpRequest, job_id: uuid.UUID, name: str) -> FileResponse:
    """An input image of an inference job, for the gallery."""
    job = job_get(user=request.user, job_id=job_id)
    return FileResponse(job_input_image(job=job, name=name).open("rb"))


@login_required
@require_GET
def job_detections(request: HttpRequest, job_id: uuid.UUID) -> JsonResponse:
    """The inference job's detections document (the API's), offered as a download."""
    job = job_get(user=request.user, job_id=job_id)
    if not _has_detections(job):
        raise Http404("Only a succeeded inference job has detections.")
    response = JsonResponse(job_detections_public(job=job))
    response["Content-Disposition"] = f'attachment; filename="detections-{job.id}.json"'
    return response
