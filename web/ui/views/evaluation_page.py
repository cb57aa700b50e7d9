"""A job's evaluation page: the evaluation document (`jobs.evaluation`) drawn (issue 13)."""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from jobs.evaluation import load_evaluation
from jobs.models import JobKind
from jobs.selectors import job_get

from ui.evaluation_view import evaluation_page
from ui.pages import render_page


@login_required
@require_GET
def job_evaluation(request: HttpRequest, job_id: uuid.UUID) -> HttpResponse:
    job = job_get(user=request.user, job_id=job_id)
    page = evaluation_page(job=job, document=load_evaluation(job=job))
    return render_page(
        request,
        "ui/jobs/evaluation.html",
        {"page": page},
        section="train" if job.kind == JobKind.TRAIN else "infer",
    )
