"""Dataset pages: the list with the upload form, one dataset's report and samples."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST

from ui import backend, presenters
from ui.pages import PLACEHOLDER_ID, render_page


@login_required
@require_GET
def dataset_list(request: HttpRequest) -> HttpResponse:
    rows = [presenters.dataset_row(dataset=d) for d in backend.datasets(user=request.user)]
    return render_page(
        request,
        "ui/datasets/list.html",
        {"datasets": rows, "placeholder_id": PLACEHOLDER_ID},
        section="datasets",
    )


@login_required
@require_GET
def dataset_detail(request: HttpRequest, dataset_id: uuid.UUID) -> HttpResponse:
    dataset = backend.dataset(user=request.user, dataset_id=dataset_id)
    samples = [
        presenters.dataset_sample(dataset=dataset, sample=s)
        for s in backend.dataset_samples(dataset=dataset)
    ]
    return render_page(
        request,
        "ui/datasets/detail.html",
        {
            "dataset": dataset,
            "summary": presenters.dataset_summary(dataset=dataset),
            "samples": samples,
        },
        section="datasets",
    )


@login_required
@require_GET
def dataset_image(
    request: HttpRequest, dataset_id: uuid.UUID, split: str, name: str
) -> FileResponse:
    dataset = backend.dataset(user=request.user, dataset_id=dataset_id)
    path = backend.dataset_image_path(dataset=dataset, split=split, name=name)
    return FileResponse(path.open("rb"))


@login_required
@require_POST
def dataset_delete(request: HttpRequest, dataset_id: uuid.UUID) -> HttpResponse:
    dataset = backend.dataset(user=request.user, dataset_id=dataset_id)
    name = dataset.name
    refused = backend.dataset_delete(dataset=dataset)
    if refused:
        messages.error(request, refused)
        return redirect("ui:dataset_detail", dataset_id=dataset.id)
    messages.success(request, f"Deleted dataset {name}.")
    return redirect("ui:datasets")
