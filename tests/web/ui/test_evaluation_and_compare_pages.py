"""The evaluation page, the compare page, the job list's new filters and the name, tags
and note form, rendered by the real views from records and files written here (issue 13)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from jobs.models import Job

from tests.web.evaluation_documents import write_evaluation
from tests.web.ui.conftest import training_job

TWO_SEEDS = [
    {"seed": 42, "epoch": 1, "box_loss": 2.0, "mAP50": 0.1, "mAP50-95": 0.05},
    {"seed": 42, "epoch": 2, "box_loss": 1.7, "mAP50": 0.2, "mAP50-95": 0.1},
    {"seed": 7, "epoch": 1, "box_loss": 1.9, "mAP50": 0.15, "mAP50-95": 0.07},
    {"seed": 7, "epoch": 2, "box_loss": 1.5, "mAP50": 0.3, "mAP50-95": 0.2},
]


def succeeded(owner: User, dataset: Any, *, best: float, **fields: Any) -> Job:
    return training_job(
        owner=owner,
        dataset=dataset,
        state="succeeded",
        finished_at=timezone.now(),
        metrics={
            # A better run learns faster: its curves differ from the others'.
            "epochs": [
                {**row, "mAP50-95": round(row["mAP50-95"] * best / 0.2, 6)} for row in TWO_SEEDS
            ],
            "best_seed": 7,
            "seeds": [
                {"seed": 42, "metrics": {"mAP50": 0.2, "mAP50-95": 0.1}},
                {"seed": 7, "metrics": {"mAP50": 0.3, "mAP50-95": best}},
            ],
        },
        **fields,
    )


def test_the_evaluation_page_draws_every_part_of_the_document(
    owner_client: Client, owner: User, dataset: Any, storage: Path
) -> None:
    job = succeeded(owner, dataset, best=0.2)
    write_evaluation(job_folder=storage / "jobs" / str(job.id))
    response = owner_client.get(f"/jobs/{job.id}/evaluation/")
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count('data-testid="per-class-row"') == 3
    assert 'aria-sort="ascending"' in html
    assert html.count('<button type="button" class="sort"') == 8  # every column
    # The confusion matrix: counts, and each true class's share beside them.
    assert 'data-testid="confusion-table"' in html
    assert ">background</th>" in html
    assert 'class="cm-share" hidden>0.' in html
    # Every curve, with its text alternative and its numbers for the script.
    for chart in ("pr", "f1", "precision", "recall"):
        assert f'data-testid="curve-{chart}"' in html
    assert "highest F1" in html
    assert 'id="evaluation-curves"' in html
    # Sample images and ultralytics' plots come from the job-file route, as images.
    urls = re.findall(r'src="(/jobs/[^"]+/files/evaluation/samples/[^"]+)"', html)
    assert len(urls) == 2
    image = owner_client.get(urls[0])
    assert image.status_code == 200
    assert image["Content-Type"] == "image/jpeg"
    plot = owner_client.get(f"/jobs/{job.id}/files/evaluation/plots/PR_curve.png")
    assert plot["Content-Type"] == "image/png"
    assert "PR_curve.png</a>" in html


def test_a_job_without_an_evaluation_says_so(owner_client: Client, running_training: Job) -> None:
    response = owner_client.get(f"/jobs/{running_training.id}/evaluation/")
    assert response.status_code == 200
    assert 'data-testid="evaluation-missing"' in response.content.decode()


def test_another_users_evaluation_is_a_404(
    other_client: Client, owner: User, dataset: Any, storage: Path
) -> None:
    job = succeeded(owner, dataset, best=0.2)
    write_evaluation(job_folder=storage / "jobs" / str(job.id))
    assert other_client.get(f"/jobs/{job.id}/evaluation/").status_code == 404


def test_the_compare_page_overlays_each_run_and_seed_and_shows_differences(
    owner_client: Client, owner: User, dataset: Any, storage: Path
) -> None:
    first = succeeded(owner, dataset, best=0.2, name="baseline")
    second = succeeded(owner, dataset, best=0.35, name="bigger")
    write_evaluation(job_folder=storage / "jobs" / str(first.id))
    response = owner_client.get(f"/jobs/compare/?ids={first.id}&ids={second.id}")
    assert response.status_code == 200
    html = response.content.decode()
    assert "baseline · seed 42" in html
    assert "bigger · seed 7" in html
    assert "(+0.150, better)" in html
    assert 'data-testid="compare-per-class"' in html


def test_the_compare_page_explains_a_bad_selection(
    owner_client: Client, owner: User, dataset: Any
) -> None:
    only = succeeded(owner, dataset, best=0.2)
    response = owner_client.get(f"/jobs/compare/?ids={only.id}")
    assert response.status_code == 400
    assert "Compare 2 to 10 trainings; 1 given." in response.content.decode()


def test_the_job_list_filters_by_tag_sorts_by_a_metric_and_offers_compare_boxes(
    owner_client: Client, owner: User, dataset: Any
) -> None:
    low = succeeded(owner, dataset, best=0.1, name="low", tags=",night,")
    high = succeeded(owner, dataset, best=0.4, name="high", tags=",night,")
    succeeded(owner, dataset, best=0.9, name="untagged")
    html = owner_client.get("/jobs/?tag=night&sort=-mAP50-95").content.decode()
    assert html.index(">high<") < html.index(">low<")
    assert "untagged" not in html
    assert f'value="{high.id}"' in html
    assert f'value="{low.id}"' in html
    assert 'aria-label="Compare high"' in html
    refused = owner_client.get("/jobs/?sort=-nonsense")
    assert refused.status_code == 400
    assert 'data-testid="filter-problem"' in refused.content.decode()


def test_the_owner_relabels_a_training_from_its_page(
    owner_client: Client, owner: User, dataset: Any
) -> None:
    job = succeeded(owner, dataset, best=0.2)
    page = owner_client.get(f"/jobs/{job.id}/").content.decode()
    # The evaluation link waits for the document (tests/web/ui/test_evaluation_form.py).
    assert f'action="/jobs/{job.id}/labels/"' in page
    response = owner_client.post(
        f"/jobs/{job.id}/labels/", {"name": "kept", "tags": "a, B", "note": "why"}
    )
    assert response.status_code == 302
    job.refresh_from_db()
    assert (job.name, job.tag_list, job.note) == ("kept", ["a", "b"], "why")
    owner_client.post(f"/jobs/{job.id}/labels/", {"name": "x", "tags": "bad tag!"})
    job.refresh_from_db()
    assert job.name == "kept"  # refused as a whole
    page = owner_client.get(f"/jobs/{job.id}/").content.decode()
    assert "is not a tag" in page


def test_the_training_form_takes_a_name_tags_and_a_note(
    owner_client: Client, owner: User, dataset: Any, fake_gpu: Any
) -> None:
    response = owner_client.post(
        "/train/",
        {
            "dataset": str(dataset.id),
            "model": "yolov8n",
            "epochs": 2,
            "imgsz": 64,
            "batch": 4,
            "seeds": "42",
            "gpus": 1,
            "name": "first",
            "tags": "demo, shapes",
            "note": "a note",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    job = Job.objects.get(kind="train", name="first")
    assert (job.tag_list, job.note) == (["demo", "shapes"], "a note")
