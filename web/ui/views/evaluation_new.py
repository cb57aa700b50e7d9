"""The evaluate form of a model version: checked with the service's rules, created by
the service (`job_create_evaluation`), then the job's page."""

from __future__ import annotations

import uuid

from carril_web.errors import QuotaExceeded, ValidationFailed
from datasets.selectors import datasets_visible_to
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods
from jobs.services import job_create_evaluation
from registry import selectors as registry_selectors

from ui.evaluation_form import EvaluationForm
from ui.pages import render_page


@login_required
@require_http_methods(["GET", "POST"])
def evaluation_new(request: HttpRequest, version_id: uuid.UUID) -> HttpResponse:
    version = registry_selectors.model_version_get(user=request.user, version_id=version_id)
    datasets = [
        (str(d.id), d.name) for d in datasets_visible_to(user=request.user) if d.state == "ready"
    ]
    if request.method == "POST":
        form = EvaluationForm(request.POST, datasets=datasets)
    else:
        source = version.source_job.dataset_id if version.source_job else None
        initial = {"dataset": str(source or ""), "imgsz": version.imgsz or 640}
        form = EvaluationForm(initial=initial, datasets=datasets)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            job = job_create_evaluation(
                owner=request.user,
                version_id=version.id,
                dataset_id=data["dataset"],
                split=data["split"],
                imgsz=data["imgsz"],
                conf=data["conf"],
                iou=data["iou"],
            )
        except (ValidationFailed, QuotaExceeded) as exc:
            fields = exc.details.get("fields") or {}
            for field, errors in fields.items():
                form.add_error(field if field in form.fields else None, errors)
            if not fields:
                form.add_error(None, exc.message)
        else:
            return redirect("ui:job_detail", job_id=job.id)
    status = 400 if request.method == "POST" else 200
    context = {"form": form, "version": version}
    return render_page(request, "ui/evaluation/new.html", context, section="models", status=status)
