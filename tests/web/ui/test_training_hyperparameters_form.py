"""Early stopping, the optimizer, the learning rate and the augmentations in the training
form as in the API: one rules table (`jobs.services`, from the GPU service's contract),
the same message for the same bad value, the same defaults (ADR 0045)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from jobs.models import Job
from jobs.services import TRAINING_DEFAULTS

FORM = {"model": "yolov8n", "epochs": 1, "imgsz": 64, "batch": 2, "seeds": "1", "gpus": 1}


def api_body(dataset, **fields):
    body = {k: v for k, v in FORM.items() if k != "seeds"}
    return {"dataset": str(dataset.id), **body, "seeds": [1], **fields}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("optimizer", "Lion"),
        ("lr0", 0),
        ("lr0", 2),
        ("patience", -1),
        ("mosaic", 1.5),
        ("fliplr", -0.1),
        ("hsv_h", 2),
        ("hsv_s", 1.01),
        ("hsv_v", -1),
        ("scale", 0.95),
        ("degrees", 181),
    ],
)
def test_a_bad_hyperparameter_gets_the_same_message_from_the_api_and_the_form(
    owner_client: Client, owner_api, dataset, field, value
) -> None:
    api = owner_api.post("/api/v1/jobs/train/", api_body(dataset, **{field: value}), format="json")
    assert api.status_code == 400, api.content
    api_messages = api.json()["error"]["details"]["fields"][field]

    page = owner_client.post(
        reverse("ui:train_new"), {"dataset": str(dataset.id), **FORM, field: value}
    )
    assert page.status_code == 400
    assert page.context["form"].errors[field] == api_messages
    assert not Job.objects.exists()


def test_the_api_and_a_form_left_at_its_defaults_ask_for_the_same_training(
    owner_client: Client, owner_api, dataset, fake_gpu, run_on_commit
) -> None:
    with run_on_commit():
        api = owner_api.post(
            "/api/v1/jobs/train/", {"dataset": str(dataset.id), "model": "yolov8n"}, format="json"
        )
    assert api.status_code == 202, api.content
    page = owner_client.get(reverse("ui:train_new"))
    form = page.context["form"]
    # What the page shows pre-filled is what it sends untouched.
    # (An empty input is sent as "", as a browser sends it.)
    posted = {name: form[name].value() for name in form.fields}
    posted = {name: "" if value is None else value for name, value in posted.items()}
    posted |= {"dataset": str(dataset.id), "model": "yolov8n", "lr0": ""}
    with run_on_commit():
        response = owner_client.post(reverse("ui:train_new"), posted)
    assert response.status_code == 302
    from_api, from_form = (
        Job.objects.get(id=api.json()["id"]),
        Job.objects.exclude(id=api.json()["id"]).get(),
    )
    assert from_form.spec == from_api.spec
    assert from_api.spec["epochs"] == TRAINING_DEFAULTS["epochs"] == 50
    assert from_api.spec["patience"] == 100
    assert from_api.spec["optimizer"] == "auto"
    assert "lr0" not in from_api.spec  # unset: the optimizer chooses


def test_the_form_passes_the_chosen_hyperparameters_into_the_job_spec(
    owner_client: Client, dataset, fake_gpu, run_on_commit
) -> None:
    chosen = {
        "optimizer": "RMSProp",
        "lr0": "0.003",
        "patience": "5",
        "mosaic": "0",
        "degrees": "10",
    }
    with run_on_commit():
        response = owner_client.post(
            reverse("ui:train_new"), {"dataset": str(dataset.id), **FORM, **chosen}
        )
    assert response.status_code == 302
    spec = Job.objects.get().spec
    assert (spec["optimizer"], spec["lr0"], spec["patience"]) == ("RMSProp", 0.003, 5)
    assert (spec["mosaic"], spec["degrees"], spec["fliplr"]) == (0.0, 10.0, 0.5)


def test_the_job_page_lists_the_hyperparameters_it_ran_with(
    owner_client: Client, dataset, fake_gpu, run_on_commit
) -> None:
    with run_on_commit():
        owner_client.post(
            reverse("ui:train_new"),
            {"dataset": str(dataset.id), **FORM, "optimizer": "NAdam", "degrees": "7.5"},
        )
    job = Job.objects.get()
    facts = dict(
        owner_client.get(reverse("ui:job_detail", kwargs={"job_id": job.id})).context["page"][
            "facts"
        ]
    )
    assert facts["Optimizer"] == "NAdam"
    assert facts["Rotation (degrees)"] == 7.5
    assert facts["Early stopping patience"] == 100
