"""The new-training form: checked with the service's rules, created by the service."""

from __future__ import annotations

from carril_web.errors import QuotaExceeded, ResourceUnavailable, ValidationFailed
from datasets.selectors import datasets_visible_to
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods
from jobs.selectors import gpus_overview, job_get
from jobs.services import ARCHITECTURES, job_create_training
from registry.models import Stage
from registry.selectors import model_versions_list

from ui import clone
from ui.forms import TrainingForm
from ui.pages import render_page


def _form(request: HttpRequest) -> TrainingForm:
    gpus = gpus_overview(user=request.user).get("gpus") or []
    kwargs = {
        "datasets": [
            (str(d.id), d.name)
            for d in datasets_visible_to(user=request.user)
            if d.state == "ready"
        ],
        "architectures": list(ARCHITECTURES),
        "versions": [
            (str(v.id), f"{v.name} ({v.stage})")
            for v in model_versions_list(user=request.user)
            if v.stage != Stage.RETIRED
        ],
        "max_gpus": len(gpus) or None,
    }
    if request.method == "POST":
        return TrainingForm(request.POST, **kwargs)
    initial = {"dataset": request.GET.get("dataset", "")}
    if request.GET.get("from"):
        # "Clone with changes" on a job page: that job's spec, to change and start anew.
        source = job_get(user=request.user, job_id=request.GET["from"])
        initial = clone.training_initial(job=source)
        messages.info(request, f"Pre-filled from job {str(source.id)[:8]}; change what you need.")
    return TrainingForm(initial=initial, **kwargs)


@login_required
@require_http_methods(["GET", "POST"])
def train_new(request: HttpRequest) -> HttpResponse:
    form = _form(request)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            job = job_create_training(
                owner=request.user,
                dataset_id=data["dataset"],
                model=form.model_requested(),
                epochs=data["epochs"],
                imgsz=data["imgsz"],
                batch=data["batch"],
                seeds=data["seeds"],
                gpus=data["gpus"],
                **form.hyperparameters(),
                labels={key: data[key] for key in ("name", "tags", "note")},
            )
        except (ValidationFailed, QuotaExceeded, ResourceUnavailable) as exc:
            for field, errors in (exc.details.get("fields") or {}).items():
                form.add_error(field if field in form.fields else None, errors)
            if not exc.details.get("fields"):
                form.add_error(None, exc.message)
        else:
            return redirect("ui:job_detail", job_id=job.id)
    status = 400 if request.method == "POST" else 200
    return render_page(request, "ui/train/new.html", {"form": form}, section="train", status=status)
