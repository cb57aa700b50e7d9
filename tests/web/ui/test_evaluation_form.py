"""Starting an evaluation from a model version's page, and the job page's link to the
evaluation once the document exists (issue 13, ADR 0042)."""

from __future__ import annotations

import json
from pathlib import Path

from datasets.models import Dataset
from django.test import Client
from django.urls import reverse
from jobs.models import Job
from registry.models import ModelVersion

DOCUMENT = {
    "version": 1,
    "source": "training",
    "split": "val",
    "imgsz": 96,
    "conf": 0.001,
    "iou": 0.7,
    "seed": 7,
    "metrics": {"precision": 0.5, "recall": 0.25, "mAP50": 0.4, "mAP50-95": 0.3},
    "per_class": [
        {
            "class_id": 0,
            "class_name": "square",
            "images": 1,
            "instances": 1,
            "precision": 0.5,
            "recall": 0.25,
            "mAP50": 0.4,
            "mAP50-95": 0.3125,
        },
        {
            "class_id": 1,
            "class_name": "disc",
            "images": 0,
            "instances": 0,
            "precision": None,
            "recall": None,
            "mAP50": None,
            "mAP50-95": None,
        },
    ],
    "confusion_matrix": {"labels": ["square", "disc", "background"], "counts": []},
    "curves": {},
    "samples": [],
    "plots": [],
}


def _version(finished_training: Job) -> ModelVersion:
    version = ModelVersion.objects.get(source_job=finished_training)
    version.imgsz = 96
    version.save(update_fields=["imgsz"])
    return version


def _write_evaluation(storage: Path, job: Job) -> None:
    folder = storage / "jobs" / str(job.id) / "evaluation"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "evaluation.json").write_text(json.dumps(DOCUMENT))


def test_the_version_page_links_to_a_form_set_to_its_dataset_and_training_size(
    owner_client: Client, finished_training: Job, dataset: Dataset
) -> None:
    version = _version(finished_training)
    url = reverse("ui:evaluation_new", kwargs={"version_id": version.id})

    page = owner_client.get(reverse("ui:model_version", kwargs={"version_id": version.id}))
    form = owner_client.get(url)

    assert f'href="{url}" data-testid="version-evaluate"' in page.content.decode()
    html = form.content.decode()
    assert form.status_code == 200
    assert f'<option value="{dataset.id}" selected>shapes</option>' in html
    assert 'name="imgsz" value="96"' in html


def test_the_form_starts_an_evaluate_job_and_opens_its_page(
    owner_client: Client, finished_training: Job, dataset: Dataset, fake_gpu, run_on_commit
) -> None:
    version = _version(finished_training)
    body = {"dataset": str(dataset.id), "split": "val", "imgsz": 64, "conf": 0.25, "iou": 0.6}

    with run_on_commit():
        response = owner_client.post(
            reverse("ui:evaluation_new", kwargs={"version_id": version.id}), body
        )

    job = Job.objects.get(kind="evaluate")
    assert response.status_code == 302
    assert response["Location"] == reverse("ui:job_detail", kwargs={"job_id": job.id})
    assert fake_gpu.jobs[str(job.id)]["spec"] == {
        "model": version.fingerprint,
        "dataset": str(dataset.path),
        "split": "val",
        "imgsz": 64,
        "conf": 0.25,
        "iou": 0.6,
    }
    page = owner_client.get(response["Location"]).content.decode()
    assert "Evaluate yolov8n-best on shapes (val)" in page


def test_the_form_refuses_what_the_service_refuses_and_starts_nothing(
    owner_client: Client, finished_training: Job, dataset: Dataset
) -> None:
    version = _version(finished_training)
    url = reverse("ui:evaluation_new", kwargs={"version_id": version.id})

    bad_size = owner_client.post(url, {"dataset": str(dataset.id), "split": "val", "imgsz": 100})
    no_test = owner_client.post(
        url, {"dataset": str(dataset.id), "split": "test", "imgsz": 64, "conf": 0.1, "iou": 0.7}
    )

    assert bad_size.status_code == 400
    assert "Must be a multiple of 32." in bad_size.content.decode()
    assert no_test.status_code == 400
    assert "The dataset has no test split (it has: train, val)." in no_test.content.decode()
    assert not Job.objects.filter(kind="evaluate").exists()


def test_the_job_page_links_to_the_evaluation_only_once_it_exists(
    owner_client: Client, finished_training: Job, storage: Path
) -> None:
    job_url = reverse("ui:job_detail", kwargs={"job_id": finished_training.id})
    evaluation_url = reverse("ui:job_evaluation", kwargs={"job_id": finished_training.id})

    before = owner_client.get(job_url).content.decode()
    _write_evaluation(storage, finished_training)
    after = owner_client.get(job_url).content.decode()

    assert 'data-testid="job-evaluation-link"' not in before
    assert f'href="{evaluation_url}" data-testid="job-evaluation-link"' in after


def test_the_evaluation_page_says_when_there_is_none_and_draws_the_document_once_written(
    owner_client: Client, finished_training: Job, storage: Path
) -> None:
    url = reverse("ui:job_evaluation", kwargs={"job_id": finished_training.id})
    before = owner_client.get(url)
    assert before.status_code == 200
    assert "This job has no evaluation" in before.content.decode()
    _write_evaluation(storage, finished_training)

    html = owner_client.get(url).content.decode()

    assert "This job has no evaluation" not in html
    assert "square" in html
    assert "0.3125" in html
