"""Jobs over the API: start, list, read (never waiting on the GPU service), cancel, logs,
detections and artifacts, each scoped to the job's owner."""

from __future__ import annotations

import io
import json
import uuid

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from jobs.models import Job, JobState
from PIL import Image

from tests.web.factories import DELIVERED, TRAIN_RESULT, dataset_for, model_version


def png_file(name: str = "street.png") -> SimpleUploadedFile:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 32), (10, 200, 10)).save(buffer, format="PNG")
    return SimpleUploadedFile(name, buffer.getvalue(), content_type="image/png")


def train_body(dataset, **overrides):
    body = {
        "dataset": str(dataset.id),
        "model": "yolov8n",
        "epochs": 2,
        "imgsz": 64,
        "batch": 4,
        "seeds": [42, 7],
        "gpus": 1,
    }
    body.update(overrides)
    return body


def test_starting_a_training_answers_202_with_the_job_url(
    owner, owner_api, fake_gpu, run_on_commit
):
    dataset = dataset_for(owner)
    with run_on_commit():
        response = owner_api.post("/api/v1/jobs/train/", train_body(dataset), format="json")
    assert response.status_code == 202
    body = response.json()
    assert body["state"] == "submitted"
    assert body["url"] == f"/api/v1/jobs/{body['id']}/"
    assert Job.objects.get(id=body["id"]).state == JobState.QUEUED


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"model": "resnet50"}, "model"),
        ({"imgsz": 50}, "imgsz"),
        ({"epochs": 0}, "epochs"),
        ({"seeds": [1, 1]}, "seeds"),
        ({"seeds": [1, 2, 3, 4, 5, 6]}, "seeds"),
        ({"gpus": 0}, "gpus"),
    ],
)
def test_it_refuses_a_bad_training_request_naming_the_field(overrides, field, owner, owner_api):
    response = owner_api.post(
        "/api/v1/jobs/train/", train_body(dataset_for(owner), **overrides), format="json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "VALIDATION_ERROR"
    assert field in response.json()["error"]["details"]["fields"]
    assert not Job.objects.exists()


def test_it_refuses_to_train_on_another_users_dataset(owner, other_api):
    response = other_api.post("/api/v1/jobs/train/", train_body(dataset_for(owner)), format="json")
    assert response.status_code == 400
    assert "dataset" in response.json()["error"]["details"]["fields"]


def test_fine_tuning_a_model_version_sends_its_fingerprint(
    owner, owner_api, fake_gpu, run_on_commit
):
    version = model_version()
    with run_on_commit():
        response = owner_api.post(
            "/api/v1/jobs/train/",
            train_body(dataset_for(owner), model=str(version.id)),
            format="json",
        )
    job = Job.objects.get(id=response.json()["id"])
    assert fake_gpu.jobs[str(job.id)]["spec"]["model"] == version.fingerprint


def test_inference_uses_the_serving_version_by_default(owner_api, fake_gpu, run_on_commit, storage):
    serving = model_version(fingerprint="5" * 64, stage="serving")
    with run_on_commit():
        response = owner_api.post(
            "/api/v1/jobs/infer/",
            {"images": [png_file("a.png"), png_file("b.png")], "conf": 0.4},
            format="multipart",
        )
    assert response.status_code == 202, response.json()
    job = Job.objects.get(id=response.json()["id"])
    spec = fake_gpu.jobs[str(job.id)]["spec"]
    assert spec["model"] == serving.fingerprint
    assert spec["conf"] == 0.4
    assert len(spec["images"]) == 2
    assert all(
        path.startswith(str(storage / "uploads" / "infer" / str(job.id))) for path in spec["images"]
    )


def test_inference_without_a_serving_version_answers_no_serving_model(owner_api):
    response = owner_api.post("/api/v1/jobs/infer/", {"images": [png_file()]}, format="multipart")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "NO_SERVING_MODEL"


def test_inference_refuses_a_file_that_is_not_an_image(owner_api, storage):
    model_version(stage="serving")
    bad = SimpleUploadedFile("x.png", b"not an image")
    response = owner_api.post("/api/v1/jobs/infer/", {"images": [bad]}, format="multipart")
    assert response.status_code == 400
    assert not Job.objects.exists()
    assert list((storage / "uploads" / "infer").iterdir()) == []


def test_reading_a_job_answers_from_the_database_without_the_gpu_service(
    owner, owner_api, fake_gpu
):
    job = Job.objects.create(
        owner=owner,
        kind="train",
        state="running",
        dispatched_at=DELIVERED,
        spec={"dataset": "/secret/path", "model": "yolov8n", "epochs": 2},
        progress={
            "seed": 1,
            "seeds": 2,
            "epoch": 1,
            "epochs": 2,
            "batch": 3,
            "batches": 4,
            "fraction": 0.3,
        },
        metrics={"epochs": [{"seed": 42, "epoch": 1, "mAP50": 0.2}]},
    )
    fake_gpu.up = False
    body = owner_api.get(f"/api/v1/jobs/{job.id}/").json()
    assert body["state"] == "running"
    assert body["progress"]["fraction"] == 0.3
    assert body["progress"]["epoch"] == 1
    assert body["metrics"]["epochs"][0]["mAP50"] == 0.2
    assert body["error"] is None
    assert "dataset" not in body["params"]
    assert fake_gpu.requests == []


def test_another_users_job_answers_404_everywhere(owner, other_api):
    job = Job.objects.create(owner=owner, kind="train", state="running", dispatched_at=DELIVERED)
    for suffix in ("", "logs/", "detections/", "artifacts/job.log"):
        assert other_api.get(f"/api/v1/jobs/{job.id}/{suffix}").status_code == 404
    assert other_api.post(f"/api/v1/jobs/{job.id}/cancel/").status_code == 404
    assert Job.objects.get(id=job.id).state == "running"


def test_the_job_list_is_scoped_filtered_and_paginated(owner, other, owner_api, staff_api):
    Job.objects.create(owner=owner, kind="train", state="running")
    Job.objects.create(owner=owner, kind="infer", state="succeeded")
    Job.objects.create(owner=other, kind="train", state="running")
    assert len(owner_api.get("/api/v1/jobs/").json()["results"]) == 2
    assert len(owner_api.get("/api/v1/jobs/?state=running").json()["results"]) == 1
    assert len(owner_api.get("/api/v1/jobs/?kind=infer").json()["results"]) == 1
    assert len(staff_api.get("/api/v1/jobs/").json()["results"]) == 3
    assert owner_api.get("/api/v1/jobs/?state=bogus").status_code == 400


def test_the_job_list_pages_by_cursor_newest_first_without_gaps_or_repeats(owner, owner_api):
    made = [Job.objects.create(owner=owner, kind="train", state="running") for _ in range(5)]
    # Two rows created in the same instant still each appear once.
    Job.objects.filter(id__in=[made[1].id, made[2].id]).update(created_at=made[1].created_at)
    seen, url = [], "/api/v1/jobs/?page_size=2"
    while url:
        page = owner_api.get(url).json()
        assert set(page) == {"next", "previous", "results"}  # keyset pages: no count
        assert "cursor=" in (page["next"] or "cursor=")
        seen += [job["id"] for job in page["results"]]
        url = page["next"]
    assert sorted(seen) == sorted(str(job.id) for job in made)
    assert len(seen) == len(set(seen))
    assert seen[0] == str(made[-1].id)  # newest first


def test_cancelling_a_finished_job_is_a_conflict(owner, owner_api):
    job = Job.objects.create(owner=owner, kind="train", state="succeeded", dispatched_at=DELIVERED)
    response = owner_api.post(f"/api/v1/jobs/{job.id}/cancel/")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "CONFLICT"


def test_cancelling_a_submitted_job_cancels_it(owner, owner_api):
    job = Job.objects.create(owner=owner, kind="train", state="submitted")
    response = owner_api.post(f"/api/v1/jobs/{job.id}/cancel/")
    assert response.status_code == 202
    assert response.json()["state"] == "cancelled"


def test_logs_are_read_from_the_job_folder_in_shared_storage(owner, owner_api, storage):
    job = Job.objects.create(owner=owner, kind="train", state="running", dispatched_at=DELIVERED)
    (storage / "jobs" / str(job.id)).mkdir(parents=True)
    (storage / "jobs" / str(job.id) / "job.log").write_text(
        "".join(f"line {i}\n" for i in range(50))
    )
    body = owner_api.get(f"/api/v1/jobs/{job.id}/logs/?tail=3").json()
    assert body["lines"] == ["line 47", "line 48", "line 49"]


def inference_job(owner, storage):
    job_id = uuid.uuid4()
    folder = storage / "jobs" / str(job_id)
    (folder / "annotated").mkdir(parents=True)
    (folder / "annotated" / "0000_street.jpg").write_bytes(b"\xff\xd8 jpeg")
    (folder / "results.json").write_text("{}")
    return Job.objects.create(
        id=job_id,
        owner=owner,
        kind="infer",
        state="succeeded",
        dispatched_at=DELIVERED,
        result={
            "model": "a" * 64,
            "results_path": str(folder / "results.json"),
            "images": [
                {
                    "source": str(storage / "uploads" / "infer" / "x" / "0000_street.png"),
                    "width": 32,
                    "height": 32,
                    "detections": [
                        {
                            "class_id": 0,
                            "class_name": "square",
                            "confidence": 0.9,
                            "box_xyxy": [1, 2, 3, 4],
                            "box_xywhn": [0.1, 0.1, 0.1, 0.1],
                        }
                    ],
                    "annotated_path": str(folder / "annotated" / "0000_street.jpg"),
                    "timing_ms": 3.0,
                }
            ],
            "images_per_second": 12.5,
        },
    )


def test_detections_give_each_image_with_urls_instead_of_server_paths(owner, owner_api, storage):
    job = inference_job(owner, storage)
    body = owner_api.get(f"/api/v1/jobs/{job.id}/detections/").json()
    image = body["images"][0]
    assert image["name"] == "street.png"
    assert image["detections"][0]["class_name"] == "square"
    assert "annotated_path" not in image
    assert "source" not in image
    annotated = owner_api.get(image["annotated_url"])
    assert annotated.status_code == 200
    assert annotated["Content-Type"] == "image/jpeg"
    assert owner_api.get(body["results_url"]).status_code == 200
    download = owner_api.get(f"/api/v1/jobs/{job.id}/detections/?download=1")
    assert "attachment" in download["Content-Disposition"]
    assert json.loads(download.content)["images"][0]["name"] == "street.png"


def test_artifact_paths_that_leave_the_job_folder_answer_404(owner, owner_api, storage):
    job = inference_job(owner, storage)
    (storage / "jobs" / "secret.txt").write_text("secret")
    for rel in ("../secret.txt", "..%2Fsecret.txt", "annotated/../../secret.txt", "nope.jpg"):
        assert owner_api.get(f"/api/v1/jobs/{job.id}/artifacts/{rel}").status_code == 404, rel


def test_a_training_job_shows_its_registered_model_version(owner, owner_api):
    job = Job.objects.create(
        owner=owner, kind="train", state="succeeded", dispatched_at=DELIVERED, result=TRAIN_RESULT
    )
    version = model_version(fingerprint="b" * 64)
    body = owner_api.get(f"/api/v1/jobs/{job.id}/").json()
    assert body["registered_model_version"] == str(version.id)
    assert body["result"]["best_seed"] == 7
    assert "path" not in body["result"]["weights"]
    assert body["progress"]["fraction"] == 1.0


def test_the_gpus_view_shows_the_cached_picture_with_the_holding_job(
    owner, other, owner_api, other_api, fake_gpu
):
    from jobs.reconciler import reconcile_once

    job = Job.objects.create(owner=owner, kind="train", state="running", dispatched_at=DELIVERED)
    fake_gpu.gpus_answer["gpus"][0]["lane"]["holders"] = [str(job.id), "direct-1"]
    fake_gpu.jobs[str(job.id)] = {"id": str(job.id), "state": "running"}
    reconcile_once(client=fake_gpu.client())
    fake_gpu.up = False
    body = owner_api.get("/api/v1/gpus/").json()
    assert body["available"] is True
    assert body["gpus"][0]["jobs"] == [
        {"id": str(job.id), "kind": "train", "state": "running", "visible": True},
        # A job submitted straight to the GPU service, under an id of its own.
        {"id": None, "kind": None, "state": None, "visible": False},
    ]
    assert other_api.get("/api/v1/gpus/").json()["gpus"][0]["jobs"][0]["visible"] is False


def test_the_gpus_view_says_unavailable_before_the_first_pass(owner_api):
    body = owner_api.get("/api/v1/gpus/").json()
    assert body["available"] is False
    assert body["gpus"] == []


def test_logs_are_served_without_terminal_escape_codes(owner, owner_api, storage):
    job = Job.objects.create(owner=owner, kind="train", state="running", dispatched_at=DELIVERED)
    (storage / "jobs" / str(job.id)).mkdir(parents=True)
    (storage / "jobs" / str(job.id) / "job.log").write_bytes(
        b"\x1b[34m\x1b[1mengine/trainer: \x1b[0mok\n  1/2  50%|##\r  2/2 100%|####\ndone\n"
    )
    body = owner_api.get(f"/api/v1/jobs/{job.id}/logs/").json()
    assert body["lines"] == ["engine/trainer: ok", "  2/2 100%|####", "done"]
