"""Bad input gets a 4xx with a code and a message, and leaves nothing behind anywhere.

The dataset corpus itself (each kind of bad zip and its report code) is in
tests/web/datasets/test_dataset_upload.py; here the same corpus is checked for what the
web suite does not look at: no file written anywhere on disk, in storage or outside it.
"""

from __future__ import annotations

import os
import pickle
import zipfile
from pathlib import Path

import pytest
from datasets.models import Dataset
from django.core.files.uploadedfile import SimpleUploadedFile
from jobs.models import Job
from registry.models import ModelVersion

from tests.web import dataset_zips as z
from tests.web.datasets.test_dataset_upload import BAD_CASES, upload
from tests.web.factories import dataset_for, model_version


def _tree(root: Path) -> set[Path]:
    """Everything under root, except the empty top-level folders storage keeps anyway."""
    return {p for p in root.rglob("*") if not (p.is_dir() and p.name == "datasets")}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_a_refused_upload_writes_nothing_anywhere(case, owner_api, tmp_path, settings) -> None:
    settings.CARRIL_DATASET_MAX_FILES = 30
    build, _ = BAD_CASES[case]
    archive = build(tmp_path / f"{case}.zip")
    outside = Path("/tmp/evil.txt")  # where the absolute-path member would land
    outside_before = outside.stat().st_mtime_ns if outside.exists() else None
    before = _tree(tmp_path)

    response = upload(owner_api, archive)

    assert response.json()["state"] == "invalid"
    assert response.json()["report"]["problems"]
    assert _tree(tmp_path) == before  # zip slip lands in tmp_path/storage/..: nothing there
    assert (outside.stat().st_mtime_ns if outside.exists() else None) == outside_before
    assert Dataset.objects.get().state == "invalid"


def test_a_zip_of_a_hundred_thousand_tiny_files_is_refused_before_extraction(
    owner_api, tmp_path, settings, storage
) -> None:
    # The default cap (200,000) leaves room for a 100,000-image dataset and its labels;
    # a deployment that expects smaller ones lowers it, and the refusal is then cheap.
    settings.CARRIL_DATASET_MAX_FILES = 50_000
    archive = tmp_path / "many.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        for name, data in z.good_files().items():
            handle.writestr(name, data)
        for i in range(100_000):
            handle.writestr(f"images/train/{i}.txt", "")
    before = _tree(storage)

    response = upload(owner_api, archive)

    assert response.json()["state"] == "invalid"
    codes = {p["code"] for p in response.json()["report"]["problems"]}
    assert "too_many_files" in codes
    assert _tree(storage) == before
    assert Dataset.objects.get().state == "invalid"


def test_a_python_tag_in_data_yaml_is_refused_and_never_runs(owner_api, tmp_path) -> None:
    marker = tmp_path / "yaml-ran"
    files = {
        **z.good_files(),
        "data.yaml": f"names: !!python/object/apply:os.system ['touch {marker}']\n",
    }
    response = upload(owner_api, z.write_zip(tmp_path / "tag.zip", files))
    assert response.json()["state"] == "invalid"
    assert not marker.exists()


def test_an_oversized_json_body_is_refused_with_413(owner, owner_api) -> None:
    dataset = dataset_for(owner)
    body = {"dataset": str(dataset.id), "model": "yolov8n", "padding": "x" * (3 * 1024 * 1024)}
    response = owner_api.post("/api/v1/jobs/train/", body, format="json")
    assert response.status_code == 413
    assert response.json()["error"]["code"]
    assert not Job.objects.exists()


TRAIN_BAD = [
    ({"epochs": "ten"}, "epochs"),
    ({"epochs": 1.5}, "epochs"),
    ({"epochs": 100_000}, "epochs"),
    ({"imgsz": 33}, "imgsz"),
    ({"imgsz": 4096}, "imgsz"),
    ({"batch": -1}, "batch"),
    ({"batch": None}, "batch"),
    ({"seeds": "42"}, "seeds"),
    ({"seeds": []}, "seeds"),
    ({"seeds": [-1]}, "seeds"),
    ({"seeds": [2**40]}, "seeds"),
    ({"gpus": 65}, "gpus"),
    ({"lr0": "NaN"}, "lr0"),
    ({"lr0": 2}, "lr0"),
    ({"patience": -5}, "patience"),
    ({"dataset": "../../etc"}, "dataset"),
    ({"dataset": 7}, "dataset"),
    ({"model": "../../weights/x.pt"}, "model"),
    ({"model": "yolov99z"}, "model"),
    ({"model": ["yolov8n"]}, "model"),
]


@pytest.mark.parametrize(("overrides", "field"), TRAIN_BAD, ids=[str(o) for o, _ in TRAIN_BAD])
def test_a_training_spec_with_a_wrong_type_or_range_is_refused_naming_the_field(
    overrides, field, owner, owner_api
) -> None:
    body = {"dataset": str(dataset_for(owner).id), "model": "yolov8n", "epochs": 1, "imgsz": 64}
    response = owner_api.post("/api/v1/jobs/train/", {**body, **overrides}, format="json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert field in error["details"]["fields"]
    assert not Job.objects.exists()


INFER_BAD = [
    ({"conf": "high"}, "conf"),
    ({"conf": 1.5}, "conf"),
    ({"iou": -0.1}, "iou"),
    ({"imgsz": 31}, "imgsz"),
    ({"imgsz": "big"}, "imgsz"),
    ({"model_version": "not-a-uuid"}, "model_version"),
]


@pytest.mark.parametrize(("overrides", "field"), INFER_BAD, ids=[str(o) for o, _ in INFER_BAD])
def test_an_inference_spec_with_a_wrong_type_or_range_is_refused_and_stores_no_image(
    overrides, field, owner_api, storage
) -> None:
    model_version(stage="serving")
    image = SimpleUploadedFile("a.png", z.png())
    response = owner_api.post(
        "/api/v1/jobs/infer/", {"images": [image], **overrides}, format="multipart"
    )
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["details"]["fields"]
    assert not Job.objects.exists()
    infer_uploads = storage / "uploads" / "infer"
    assert not infer_uploads.exists() or not any(infer_uploads.iterdir())


class _ShellOnLoad:
    """Unpickling this runs a shell command: what a hostile checkpoint does."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.slow
def test_weights_that_would_run_code_are_refused_through_the_web_and_never_run(
    admin_api, gpu_service, storage, settings, monkeypatch, tmp_path
) -> None:
    service = gpu_service(storage=storage, gpus="1x24GiB")
    settings.CARRIL_GPU_SERVICE_URL = service.url
    monkeypatch.setenv("CARRIL_GPU_SERVICE_TOKEN", service.token)
    marker = tmp_path / "pickle-ran"
    evil = pickle.dumps({"model": _ShellOnLoad(marker), "train_args": {}})

    response = admin_api.post(
        "/api/v1/models/import/",
        {"name": "evil", "file": SimpleUploadedFile("best.pt", evil)},
        format="multipart",
    )

    assert response.status_code == 422, response.content
    assert response.json()["error"]["code"] == "WEIGHTS_REJECTED"
    assert response.json()["error"]["message"]
    assert not marker.exists()
    assert not ModelVersion.objects.exists()
    assert not list((storage / "weights").glob("*.pt"))
    assert not any((storage / "uploads" / "weights").iterdir())
