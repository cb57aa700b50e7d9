"""Export jobs and inference on exports through the API (issue 14)."""

from __future__ import annotations

from jobs.models import Job
from jobs.reconciler import reconcile_once
from registry.models import ModelExport

from tests.web.api.test_api_jobs import png_file
from tests.web.api.test_api_model_exports import store_export, store_weights
from tests.web.factories import DELIVERED, dataset_for, model_version


def test_an_export_is_a_job_of_kind_export_on_the_gpu_service(
    owner_api, fake_gpu, run_on_commit, storage
):
    version = model_version(fingerprint=store_weights(storage))
    with run_on_commit():
        response = owner_api.post(
            f"/api/v1/models/{version.id}/export/",
            {"format": "onnx", "imgsz": 320, "dynamic": True},
            format="json",
        )

    assert response.status_code == 202, response.json()
    job = Job.objects.get(id=response.json()["id"])
    assert job.kind == "export"
    assert job.model_version == version
    sent = fake_gpu.jobs[str(job.id)]
    assert sent["kind"] == "export"
    assert sent["spec"] == {
        "model": version.fingerprint,
        "format": "onnx",
        "imgsz": 320,
        "half": False,
        "dynamic": True,
        "int8": False,
    }


def test_an_unknown_export_format_is_refused_with_no_job(owner_api, storage):
    version = model_version(fingerprint=store_weights(storage))

    response = owner_api.post(
        f"/api/v1/models/{version.id}/export/", {"format": "tflite"}, format="json"
    )

    assert response.status_code == 400
    assert not Job.objects.exists()


def test_a_finished_export_job_registers_its_export(owner_api, fake_gpu, run_on_commit, storage):
    version = model_version(fingerprint=store_weights(storage))
    with run_on_commit():
        job_id = owner_api.post(
            f"/api/v1/models/{version.id}/export/", {"format": "openvino"}, format="json"
        ).json()["id"]
    manifest = {
        "fingerprint": "c" * 64,
        "format": "openvino",
        "artifact": f"exports/{'c' * 64}/model_openvino_model",
        "parity": {"passed": True, "matched_fraction": 1.0, "max_conf_diff": 0.001},
    }
    fake_gpu.set_state(job_id, "succeeded", result={"export": manifest, "manifest_path": "x"})

    reconcile_once(client=fake_gpu.client())

    export = ModelExport.objects.get()
    assert (export.model_version, export.format) == (version, "openvino")
    assert export.parity_passed is True
    listed = owner_api.get(f"/api/v1/models/{version.id}/exports/").json()
    assert [e["fingerprint"] for e in listed] == ["c" * 64]
    detail = owner_api.get(f"/api/v1/jobs/{job_id}/")
    assert detail.status_code == 200
    assert detail.json()["kind"] == "export"
    assert detail.json()["result"]["export"]["fingerprint"] == "c" * 64


def test_inference_runs_on_the_serving_format_or_the_one_asked_for(
    owner_api, fake_gpu, run_on_commit, storage
):
    version = model_version(fingerprint=store_weights(storage), stage="serving")
    store_export(storage, version, fmt="onnx", passed=True)
    store_export(storage, version, fmt="openvino", passed=False)
    version.serving_format = "onnx"
    version.save()

    with run_on_commit():
        default = owner_api.post(
            "/api/v1/jobs/infer/", {"images": [png_file()]}, format="multipart"
        )
        sliced = owner_api.post(
            "/api/v1/jobs/infer/",
            {"images": [png_file()], "format": "pt", "slice_size": 256, "merge": "nms"},
            format="multipart",
        )
    refused = owner_api.post(
        "/api/v1/jobs/infer/", {"images": [png_file()], "format": "openvino"}, format="multipart"
    )

    assert fake_gpu.jobs[default.json()["id"]]["spec"]["format"] == "onnx"
    sliced_spec = fake_gpu.jobs[sliced.json()["id"]]["spec"]
    assert "format" not in sliced_spec
    assert sliced_spec["slice"] == {"slice_size": 256, "overlap": 0.2, "merge": "nms"}
    assert refused.status_code == 400
    assert "parity" in refused.json()["error"]["message"]


def _zip(members: dict[str, bytes]) -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def test_a_video_or_a_zip_of_images_becomes_the_inference_input(
    owner_api, fake_gpu, run_on_commit, storage
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    model_version(fingerprint=store_weights(storage), stage="serving")
    png = png_file().read()
    with run_on_commit():
        video = owner_api.post(
            "/api/v1/jobs/infer/",
            {"media": SimpleUploadedFile("clip.webm", b"webm"), "fps": 5, "max_frames": 50},
            format="multipart",
        )
        archive = owner_api.post(
            "/api/v1/jobs/infer/",
            {"media": SimpleUploadedFile("imgs.zip", _zip({"a/one.png": png}))},
            format="multipart",
        )

    video_spec = fake_gpu.jobs[video.json()["id"]]["spec"]
    assert video_spec["images"] == []
    assert video_spec["video"]["path"].endswith("/media.webm")
    assert (video_spec["video"]["fps"], video_spec["video"]["max_frames"]) == (5.0, 50)
    assert fake_gpu.jobs[archive.json()["id"]]["spec"]["archive"].endswith("/media.zip")


def test_a_zip_with_unsafe_names_or_non_images_is_refused_with_no_job(owner_api, storage):
    from django.core.files.uploadedfile import SimpleUploadedFile

    model_version(fingerprint=store_weights(storage), stage="serving")
    png = png_file().read()
    for members, problem in (
        ({"../escape.png": png}, "unsafe name"),
        ({"/abs.png": png}, "unsafe name"),
        ({"ok.png": png, "notes.txt": b"x"}, "not an image"),
    ):
        response = owner_api.post(
            "/api/v1/jobs/infer/",
            {"media": SimpleUploadedFile("bad.zip", _zip(members))},
            format="multipart",
        )
        assert response.status_code == 400, response.json()
        assert problem in response.json()["error"]["message"]
    assert not Job.objects.exists()
    assert not any((storage / "uploads" / "infer").iterdir())


def test_a_video_results_files_are_urls_never_server_paths(owner_api, owner, storage):
    job = Job.objects.create(owner=owner, kind="infer", state="succeeded", dispatched_at=DELIVERED)
    folder = storage / "jobs" / str(job.id)
    job.result = {
        "model": "a" * 64,
        "results_path": str(folder / "results.json"),
        "images": [],
        "images_per_second": 1.0,
        "format": "pt",
        "export": None,
        "video": {
            "source": "uploads/clip.mp4",
            "fps_sampled": 2.0,
            "frames": [{"index": 0, "time_s": 0.0, "count": 1}],
            "annotated_video": str(folder / "annotated.mp4"),
            "annotated_webm": str(folder / "annotated.webm"),
            "detections_path": str(folder / "frames.json"),
        },
    }
    job.save()

    body = owner_api.get(f"/api/v1/jobs/{job.id}/").json()

    video = body["result"]["video"]
    assert video["annotated_webm_url"] == f"/api/v1/jobs/{job.id}/artifacts/annotated.webm"
    assert video["annotated_video_url"].endswith("/artifacts/annotated.mp4")
    assert video["detections_url"].endswith("/artifacts/frames.json")
    assert str(storage) not in str(body)


def test_an_int8_export_of_a_trained_version_calibrates_on_its_training_dataset(
    owner, owner_api, fake_gpu, run_on_commit, storage
):
    dataset = dataset_for(owner)
    version = model_version(fingerprint=store_weights(storage))
    version.source_job = Job.objects.create(
        owner=owner, kind="train", state="succeeded", dataset=dataset
    )
    version.save()
    with run_on_commit():
        response = owner_api.post(
            f"/api/v1/models/{version.id}/export/",
            {"format": "openvino", "int8": True},
            format="json",
        )

    assert response.status_code == 202, response.json()
    sent = fake_gpu.jobs[response.json()["id"]]["spec"]
    assert (sent["format"], sent["int8"], sent["dataset"]) == ("openvino", True, str(dataset.path))


def test_an_int8_export_calibrates_on_the_dataset_the_request_names(
    owner, owner_api, fake_gpu, run_on_commit, storage
):
    dataset = dataset_for(owner, name="calibration")
    version = model_version(fingerprint=store_weights(storage))
    with run_on_commit():
        response = owner_api.post(
            f"/api/v1/models/{version.id}/export/",
            {"format": "openvino", "int8": True, "dataset": str(dataset.id)},
            format="json",
        )

    assert response.status_code == 202, response.json()
    assert fake_gpu.jobs[response.json()["id"]]["spec"]["dataset"] == str(dataset.path)


def test_an_int8_export_of_imported_weights_with_no_dataset_is_refused_with_the_reason(
    owner_api, storage
):
    version = model_version(fingerprint=store_weights(storage))

    response = owner_api.post(
        f"/api/v1/models/{version.id}/export/", {"format": "openvino", "int8": True}, format="json"
    )

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert "calibrate" in error["details"]["fields"]["dataset"][0]
    assert not Job.objects.exists()


def test_int8_for_a_format_ultralytics_does_not_quantise_is_refused_with_the_reason(
    owner, owner_api, storage
):
    dataset = dataset_for(owner)
    version = model_version(fingerprint=store_weights(storage))
    for fmt in ("onnx", "torchscript"):
        response = owner_api.post(
            f"/api/v1/models/{version.id}/export/",
            {"format": fmt, "int8": True, "dataset": str(dataset.id)},
            format="json",
        )

        assert response.status_code == 400
        error = response.json()["error"]
        assert error["code"] == "VALIDATION_ERROR"
        assert "does not quantise" in error["details"]["fields"]["int8"][0]
    assert not Job.objects.exists()
