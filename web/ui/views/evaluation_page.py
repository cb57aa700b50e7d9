"""A job's evaluation page (issue 13). A first version: the headline metrics and the
per-class table from the evaluation document; the full page (confusion matrix, curves,
gallery) replaces it."""

from __future__ import annotations

import uuid

from carril_web.errors import NotFound
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from jobs.evaluation import load_evaluation
from jobs.selectors import job_get

from ui.pages import render_page


@login_required
@require_GET
def job_evaluation(request: HttpRequest, job_id: uuid.UUID) -> HttpResponse:
    job = job_get(user=request.user, job_id=job_id)
    document = load_evaluation(job=job)
    if document is None:
        raise NotFound("This job has no evaluation.")
    return render_page(
        request,
        "ui/jobs/evaluation.html",
        {
            "job": job,
            "evaluation": document,
            "metrics": list((document.get("metrics") or {}).items()),
            # "mAP50-95" is no name a template can read.
            "per_class": [
                {**row, "map50_95": row.get("mAP50-95")} for row in document.get("per_class") or []
            ],
        },
        section="train" if job.kind == "train" else "models",
    )
