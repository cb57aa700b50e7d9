"""Exports on a model version's page: listed with parity, downloadable, and the
serving format offered only from exports that passed parity (issue 14)."""

from __future__ import annotations

from pathlib import Path

from django.test import Client
from django.urls import reverse
from jobs.models import Job
from registry.models import ModelVersion

from tests.web.api.test_api_model_exports import store_export
from tests.web.factories import DELIVERED


def test_the_page_lists_exports_with_parity_and_downloads_them(
    owner_client: Client, finished_training: Job, storage: Path
) -> None:
    version = ModelVersion.objects.get(source_job=finished_training)
    good = store_export(storage, version, fmt="onnx", passed=True, content=b"onnx-bytes")
    store_export(storage, version, fmt="openvino", passed=False)
    page = reverse("ui:model_version", kwargs={"version_id": version.id})

    html = owner_client.get(page).content.decode()

    assert html.count('data-testid="export-row"') == 2
    assert "passed" in html
    assert "failed" in html
    assert "0.500 matched" in html
    assert 'data-testid="serving-format-form"' not in html  # not an administrator
    download = owner_client.get(
        reverse("ui:model_download", kwargs={"version_id": version.id}) + "?format=onnx"
    )
    assert b"".join(download.streaming_content) == b"onnx-bytes"
    assert download["X-Carril-Fingerprint"] == good.fingerprint


def test_an_administrator_is_offered_only_formats_that_passed_parity(
    admin_client: Client, finished_training: Job, storage: Path
) -> None:
    version = ModelVersion.objects.get(source_job=finished_training)
    store_export(storage, version, fmt="onnx", passed=True)
    store_export(storage, version, fmt="openvino", passed=False)
    page = reverse("ui:model_version", kwargs={"version_id": version.id})

    html = admin_client.get(page).content.decode()
    form = html.split('data-testid="serving-format-form"')[1].split("</form>")[0]
    assert '<option value="onnx"' in form
    assert '<option value="openvino"' not in form

    admin_client.post(
        reverse("ui:model_serving_format", kwargs={"version_id": version.id}),
        {"format": "openvino"},
    )
    version.refresh_from_db()
    assert version.serving_format == "pt"
    admin_client.post(
        reverse("ui:model_serving_format", kwargs={"version_id": version.id}), {"format": "onnx"}
    )
    version.refresh_from_db()
    assert version.serving_format == "onnx"


def test_the_export_form_starts_an_export_job_and_opens_its_page(
    owner_client: Client, finished_training: Job, storage: Path
) -> None:
    version = ModelVersion.objects.get(source_job=finished_training)
    url = reverse("ui:model_export", kwargs={"version_id": version.id})

    response = owner_client.post(url, {"format": "openvino", "imgsz": "320"})
    refused = owner_client.post(url, {"format": "tflite"})

    job = Job.objects.get(kind="export")
    assert response.status_code == 302
    assert response["Location"] == reverse("ui:job_detail", kwargs={"job_id": job.id})
    assert (job.spec["format"], job.spec["imgsz"], job.model_version) == ("openvino", 320, version)
    assert refused.status_code == 302
    assert Job.objects.filter(kind="export").count() == 1


def test_an_inference_over_a_video_shows_a_player_and_a_per_frame_timeline(
    owner_client: Client, finished_training: Job, storage: Path
) -> None:
    from jobs.selectors import job_dir

    job = Job.objects.create(
        owner=finished_training.owner, kind="infer", state="succeeded", dispatched_at=DELIVERED
    )
    folder = job_dir(job=job)
    (folder / "annotated").mkdir(parents=True)
    (folder / "annotated.webm").write_bytes(b"webm")
    frames = [{"index": i * 5, "time_s": i * 0.5, "count": c} for i, c in enumerate([0, 2, 4])]
    job.result = {
        "model": "a" * 64,
        "images": [],
        "images_per_second": 1.0,
        "format": "pt",
        "export": None,
        "video": {
            "source": "uploads/clip.mp4",
            "fps_sampled": 2.0,
            "frames": frames,
            "annotated_video": str(folder / "annotated.mp4"),
            "annotated_webm": str(folder / "annotated.webm"),
            "detections_path": str(folder / "frames.json"),
        },
    }
    job.save()

    html = owner_client.get(reverse("ui:job_detail", kwargs={"job_id": job.id})).content.decode()

    assert 'data-testid="video-player"' in html
    webm = reverse("ui:job_file", kwargs={"job_id": job.id, "relpath": "annotated.webm"})
    assert f'<source src="{webm}" type="video/webm">' in html
    assert html.count("<rect ") == 3
    assert "1.0 s: 4" in html
    served = owner_client.get(webm)
    assert served["Content-Type"] == "video/webm"
    assert b"".join(served.streaming_content) == b"webm"


def test_an_export_jobs_page_renders_while_running_and_once_done(
    owner_client: Client, finished_training: Job, storage: Path
) -> None:
    version = ModelVersion.objects.get(source_job=finished_training)
    job = Job.objects.create(
        owner=finished_training.owner,
        kind="export",
        state="running",
        model_version=version,
        spec={"model": version.fingerprint, "format": "onnx", "imgsz": 64},
        progress={"stage": "parity", "fraction": 0.6},
        dispatched_at=DELIVERED,
    )
    page = reverse("ui:job_detail", kwargs={"job_id": job.id})

    running = owner_client.get(page)
    job.state = "succeeded"
    job.result = {"export": {"fingerprint": "e" * 64, "format": "onnx"}, "manifest_path": "x"}
    job.save()
    done = owner_client.get(page)
    status = owner_client.get(reverse("ui:job_status", kwargs={"job_id": job.id}))
    listed = owner_client.get(reverse("ui:jobs"))

    assert running.status_code == done.status_code == 200
    assert "parity" in running.content.decode()
    assert status.status_code == 200
    assert listed.status_code == 200
