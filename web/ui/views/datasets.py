"""Dataset pages: the list with the upload form, one dataset's report and samples."""

from __future__ import annotations

import uuid

from carril_web.errors import Conflict
from datasets.layout import ACCEPTED_LAYOUTS, AUTO_SPLIT_RULE
from datasets.selectors import dataset_get, dataset_image_path, dataset_samples, datasets_visible_to
from datasets.services import dataset_delete as dataset_delete_service
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST

from ui import presenters
from ui.pages import PLACEHOLDER_ID, render_page

SAMPLE_SPLITS = ("train", "val", "test")
SAMPLES_PER_SPLIT = 6


@login_required
@require_GET
def dataset_list(request: HttpRequest) -> HttpResponse:
    rows = [presenters.dataset_row(dataset=d) for d in datasets_visible_to(user=request.user)]
    return render_page(
        request,
        "ui/datasets/list.html",
        {
            "datasets": rows,
            "placeholder_id": PLACEHOLDER_ID,
            "layouts": [{"title": title, "tree": tree} for title, tree in ACCEPTED_LAYOUTS],
            "auto_split_rule": AUTO_SPLIT_RULE,
        },
        section="datasets",
    )


@login_required
@require_GET
def dataset_detail(request: HttpRequest, dataset_id: uuid.UUID) -> HttpResponse:
    dataset = dataset_get(user=request.user, dataset_id=dataset_id)
    samples = [
        presenters.dataset_sample(dataset=dataset, sample=s)
        for split in SAMPLE_SPLITS
        for s in dataset_samples(dataset=dataset, split=split, limit=SAMPLES_PER_SPLIT)
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
    dataset = dataset_get(user=request.user, dataset_id=dataset_id)
    path = dataset_image_path(dataset=dataset, split=split, name=name)
    return FileResponse(path.open("rb"))


@login_required
@require_POST
def dataset_delete(request: HttpRequest, dataset_id: uuid.UUID) -> HttpResponse:
    dataset = dataset_get(user=request.user, dataset_id=dataset_id)
    name = dataset.name
    try:
        dataset_delete_service(dataset=dataset)
    except Conflict as exc:
        messages.error(request, exc.message)
        return redirect("ui:dataset_detail", dataset_id=dataset.id)
    messages.success(request, f"Deleted dataset {name}.")
    return redirect("ui:datasets")
