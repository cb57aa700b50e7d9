"""Trainings' name, tags and note over the API; the job list filtered by tag and dataset
and sorted by a final metric, paged by keyset without a duplicate or a gap; and the
comparison of runs (issue 13)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.utils import timezone
from jobs.evaluation import EVALUATION_RELPATH
from jobs.models import Job

from tests.web.api.test_api_token_scopes import bearer
from tests.web.factories import DELIVERED, dataset_for


def train_body(dataset: Any, **overrides: Any) -> dict[str, Any]:
    body = {"dataset": str(dataset.id), "model": "yolov8n", "epochs": 2, "imgsz": 64}
    body.update(overrides)
    return body


def finished(owner: Any, dataset: Any, *, map5095: float | None, **fields: Any) -> Job:
    seeds = [{"seed": 1, "fitness": 0.1, "metrics": {"mAP50": 0.5}}]
    if map5095 is not None:
        seeds[0]["metrics"]["mAP50-95"] = map5095
    defaults: dict[str, Any] = {
        "owner": owner,
        "kind": "train",
        "state": "succeeded",
        "dataset": dataset,
        "spec": {"model": "yolov8n", "epochs": 2, "imgsz": 64, "seeds": [1, 2]},
        "dispatched_at": DELIVERED,
        "finished_at": timezone.now(),
        "metrics": {
            "epochs": [
                {"seed": 1, "epoch": 1, "mAP50": 0.1, "box_loss": 2.0},
                {"seed": 1, "epoch": 2, "mAP50": 0.2, "box_loss": 1.5},
                {"seed": 2, "epoch": 1, "mAP50": 0.15, "box_loss": 1.9},
            ],
            "best_seed": 1,
            "seeds": seeds,
        },
    }
    defaults.update(fields)
    return Job.objects.create(**defaults)


def test_a_training_is_submitted_with_a_name_tags_and_a_note(
    owner, owner_api, fake_gpu, run_on_commit
):
    dataset = dataset_for(owner)
    body = train_body(dataset, name="baseline", tags=["Night", "v2", "night"], note="first try")
    with run_on_commit():
        response = owner_api.post("/api/v1/jobs/train/", body, format="json")
    assert response.status_code == 202, response.json()
    document = owner_api.get(response.json()["url"]).json()
    assert (document["name"], document["tags"], document["note"]) == (
        "baseline",
        ["night", "v2"],
        "first try",
    )


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"name": "n" * 101}, "name"),
        ({"note": "x" * 2001}, "note"),
        ({"tags": ["has space"]}, "tags"),
        ({"tags": ["t" * 33]}, "tags"),
        ({"tags": [f"t{i}" for i in range(21)]}, "tags"),
    ],
)
def test_a_bad_name_tag_or_note_is_refused_with_the_field_named(
    owner, owner_api, fake_gpu, overrides, field
):
    dataset = dataset_for(owner)
    response = owner_api.post(
        "/api/v1/jobs/train/", train_body(dataset, **overrides), format="json"
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert field in error["details"]["fields"]
    assert not Job.objects.exists()


def test_the_owner_renames_retags_and_annotates_a_finished_training(owner, owner_api):
    job = finished(owner, dataset_for(owner), map5095=0.3)
    owner_api.get(f"/api/v1/jobs/{job.id}/")  # now cached as a finished document
    response = owner_api.patch(
        f"/api/v1/jobs/{job.id}/", {"name": "best so far", "tags": ["keep"]}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert response.json()["name"] == "best so far"
    again = owner_api.get(f"/api/v1/jobs/{job.id}/").json()
    assert (again["name"], again["tags"], again["note"]) == ("best so far", ["keep"], "")
    assert again["state"] == "succeeded"


def test_patching_anything_but_name_tags_or_note_is_refused_and_changes_nothing(owner, owner_api):
    job = finished(owner, dataset_for(owner), map5095=0.3)
    response = owner_api.patch(
        f"/api/v1/jobs/{job.id}/", {"name": "x", "state": "failed"}, format="json"
    )
    assert response.status_code == 400
    assert "state" in response.json()["error"]["details"]["fields"]
    job.refresh_from_db()
    assert (job.name, job.state) == ("", "succeeded")


def test_only_the_owner_may_relabel_a_job(owner, staff_api, other_api):
    job = finished(owner, dataset_for(owner), map5095=0.3)
    assert (
        other_api.patch(f"/api/v1/jobs/{job.id}/", {"name": "x"}, format="json").status_code == 404
    )
    refused = staff_api.patch(f"/api/v1/jobs/{job.id}/", {"name": "x"}, format="json")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "FORBIDDEN"


def test_the_job_list_filters_by_tag_and_by_dataset(owner, owner_api):
    first, second = dataset_for(owner, name="a"), dataset_for(owner, name="b")
    tagged = finished(owner, first, map5095=0.2, tags=",night,v2,")
    finished(owner, first, map5095=0.2, tags=",nightly,")
    on_second = finished(owner, second, map5095=0.2)
    by_tag = owner_api.get("/api/v1/jobs/?tag=night").json()["results"]
    assert [j["id"] for j in by_tag] == [str(tagged.id)]
    by_dataset = owner_api.get(f"/api/v1/jobs/?dataset={second.id}").json()["results"]
    assert [j["id"] for j in by_dataset] == [str(on_second.id)]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("sort=-accuracy", "sort"),
        ("tag=a%20b", "tag"),
        ("dataset=nope", "dataset"),
        ("sort=-mAP50&cursor=garbage", "cursor"),
    ],
)
def test_an_unknown_sort_tag_dataset_or_cursor_is_a_400_naming_it(owner_api, query, field):
    response = owner_api.get(f"/api/v1/jobs/?{query}")
    assert response.status_code == 400
    assert field in response.json()["error"]["details"]["fields"]


def _walk(api, url: str, direction: str) -> list[list[str]]:
    pages = []
    while url:
        body = api.get(url).json()
        pages.append([j["id"] for j in body["results"]])
        url = body[direction]
    return pages


def test_paging_a_list_sorted_by_a_metric_gives_every_job_once_in_order_both_ways(owner, owner_api):
    dataset = dataset_for(owner)
    # Ties, and jobs without the metric, are where a keyset on the metric alone breaks.
    values = [0.5, 0.3, 0.3, 0.3, 0.9, None, 0.1, 0.3, None, 0.7, 0.5]
    jobs = [finished(owner, dataset, map5095=v) for v in values]
    pages = _walk(owner_api, "/api/v1/jobs/?sort=-mAP50-95&page_size=3", "next")
    seen = [job_id for page in pages for job_id in page]
    assert len(seen) == len(jobs) == len(set(seen))
    value_of = {str(j.id): j.final_metrics.get("mAP50-95") for j in jobs}
    ordered = [value_of[i] for i in seen]
    present = [v for v in ordered if v is not None]
    assert present == sorted(present, reverse=True)
    assert ordered[-2:] == [None, None]  # without the metric: last
    # Back from the last page with the `previous` links: the same pages, reversed.
    last = owner_api.get("/api/v1/jobs/?sort=-mAP50-95&page_size=3")
    url = last.json()["next"]
    while True:
        body = owner_api.get(url).json()
        if not body["next"]:
            break
        url = body["next"]
    backwards = _walk(owner_api, url, "previous")
    assert backwards == list(reversed(pages))
    ascending = _walk(owner_api, "/api/v1/jobs/?sort=mAP50-95&page_size=4", "next")
    up = [value_of[i] for page in ascending for i in page]
    assert [v for v in up if v is not None] == sorted(present)
    assert up[-2:] == [None, None]


def _evaluation(storage, job: Job, per_class: list[dict[str, Any]]) -> None:
    path = storage / "jobs" / str(job.id) / EVALUATION_RELPATH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": 1, "per_class": per_class}))


def test_comparing_two_runs_gives_their_curves_per_seed_and_differences_from_the_first(
    owner, owner_api, storage
):
    dataset = dataset_for(owner)
    first = finished(owner, dataset, map5095=0.3, name="baseline")
    second = finished(owner, dataset, map5095=0.45)
    _evaluation(storage, first, [{"class_name": "cat", "mAP50": 0.5}])
    _evaluation(storage, second, [{"class_name": "cat", "mAP50": 0.75}])
    response = owner_api.get(f"/api/v1/jobs/compare/?ids={first.id},{second.id}")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert [r["id"] for r in body["runs"]] == [str(first.id), str(second.id)]
    assert [s["seed"] for s in body["runs"][0]["series"]] == [1, 2]
    assert [len(s["epochs"]) for s in body["runs"][0]["series"]] == [2, 1]
    row = next(m for m in body["final_metrics"] if m["metric"] == "mAP50-95")
    assert row["values"] == [0.3, 0.45]
    assert row["differences"] == [0.0, 0.15]
    cat = next(r for r in body["per_class"] if r["class_name"] == "cat" and r["metric"] == "mAP50")
    assert cat["differences"] == [0.0, 0.25]


@pytest.mark.parametrize("ids", ["", "one", "{a}", "{a},not-a-uuid"])
def test_a_comparison_needs_two_or_more_valid_ids(owner, owner_api, ids):
    job = finished(owner, dataset_for(owner), map5095=0.3)
    response = owner_api.get("/api/v1/jobs/compare/?ids=" + ids.replace("{a}", str(job.id)))
    assert response.status_code == 400
    assert "ids" in response.json()["error"]["details"]["fields"]


def test_a_comparison_of_someone_else_s_run_is_a_404(owner, other, owner_api):
    mine = finished(owner, dataset_for(owner), map5095=0.3)
    theirs = finished(other, dataset_for(other, name="theirs"), map5095=0.3)
    response = owner_api.get(f"/api/v1/jobs/compare/?ids={mine.id},{theirs.id}")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "NOT_FOUND"
    assert uuid.UUID(str(theirs.id))


def test_a_scoped_token_relabels_with_the_train_scope_and_not_with_read_alone(admin_api, admin):
    job = finished(admin, dataset_for(admin), map5095=0.3)

    def token(scopes: list[str]) -> Any:
        made = admin_api.post(
            "/api/v1/auth/tokens/", {"name": "-".join(scopes), "scopes": scopes}, format="json"
        )
        return bearer(made.json()["token"])

    reader = token(["read"]).patch(f"/api/v1/jobs/{job.id}/", {"name": "x"}, format="json")
    assert reader.status_code == 403
    assert reader.json()["error"]["details"]["scope"] == "train"
    trainer = token(["read", "train"])
    assert trainer.patch(f"/api/v1/jobs/{job.id}/", {"name": "x"}, format="json").status_code == 200
