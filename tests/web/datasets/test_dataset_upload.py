"""The upload corpus: a good dataset, a single split, and each kind of bad one."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from datasets.models import Dataset
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.web import dataset_zips as z

URL = "/api/v1/datasets/"


def upload(client, path: Path, *, name: str = "shapes"):
    """Upload, then validate as the background thread would, then read the dataset back.

    Returns the upload's own answer if it was refused outright (413, a missing name),
    else the dataset as a poll reads it once validation is over."""
    from datasets.services import dataset_validate

    with open(path, "rb") as handle:
        received = client.post(URL, {"name": name, "file": handle}, format="multipart")
    if received.status_code != 202:
        return received
    assert received.json()["state"] == "validating"
    dataset_validate(dataset_id=received.json()["id"])
    return client.get(received.json()["url"])


def leftovers(storage: Path) -> list[Path]:
    """Everything under datasets/ and the upload temp folder after a request."""
    found = []
    for folder in (storage / "datasets", storage / "uploads" / "tmp"):
        if folder.exists():
            found += list(folder.iterdir())
    return found


def test_it_stores_a_good_dataset_with_two_splits(owner_api, tmp_path, storage):
    response = upload(owner_api, z.good_zip(tmp_path / "good.zip"))
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["state"] == "ready"
    assert body["classes"] == ["square", "disc"]
    assert body["splits"]["train"]["images"] == 3
    assert body["splits"]["val"]["instances"] == 6
    assert body["report"]["per_class"]["disc"]["instances"] == 6
    dataset = Dataset.objects.get(id=body["id"])
    data = yaml.safe_load(dataset.data_yaml.read_text())
    assert data["path"] == str(dataset.path)
    assert data["names"] == {0: "square", 1: "disc"}
    assert sorted(p.name for p in (dataset.path / "images" / "val").iterdir()) == [
        "val_0.png",
        "val_1.png",
        "val_2.png",
    ]
    assert (dataset.path / "labels" / "val" / "val_0.txt").is_file()
    assert [p.name for p in (storage / "datasets").iterdir()] == [str(dataset.id)]


def test_it_splits_a_single_split_into_train_and_val_the_same_way_every_time(owner_api, tmp_path):
    path = z.good_zip(tmp_path / "one.zip", splits=("train",), per_split=10)
    first = upload(owner_api, path).json()
    second = upload(owner_api, path).json()
    assert first["splits"]["train"]["images"] == 8
    assert first["splits"]["val"]["images"] == 2
    assert first["report"]["auto_split"]["seed"] == 0
    val = {
        sorted(
            p.name for p in (Dataset.objects.get(id=d["id"]).path / "images" / "val").iterdir()
        ).__str__()
        for d in (first, second)
    }
    assert len(val) == 1


def test_it_accepts_the_split_folder_layout_inside_a_top_folder(owner_api, tmp_path):
    files = {"shapes/data.yaml": "names: [square, disc]\n"}
    for alias in ("train", "valid"):
        for i in range(2):
            files[f"shapes/{alias}/images/{i}.png"] = z.png()
            files[f"shapes/{alias}/labels/{i}.txt"] = "1 0.5 0.5 0.5 0.5\n"
    response = upload(owner_api, z.write_zip(tmp_path / "layout.zip", files))
    assert response.json()["state"] == "ready", response.json()
    assert response.json()["splits"]["val"]["instances"] == 2


BAD_CASES = {
    "zip_slip": (
        lambda p: z.write_zip(p, {**z.good_files(), "../evil.txt": "x"}),
        "path_traversal",
    ),
    "absolute_path": (lambda p: z.write_zip(p, {**z.good_files(), "/tmp/evil.txt": "x"}), None),
    "symlink": (z.symlink_zip, "symlink"),
    "special_file": (z.special_file_zip, "special_file"),
    "bomb_ratio": (z.bomb_zip, "compression_ratio"),
    "too_many_files": (lambda p: z.too_many_files_zip(p, extra=40), "too_many_files"),
    "not_a_zip": (lambda p: (p.write_bytes(b"hello, not a zip"), p)[1], "not_a_zip"),
    "truncated_zip": (z.truncated_zip, "not_a_zip"),
    "undecodable_image": (
        lambda p: z.write_zip(p, {**z.good_files(), "images/train/train_0.png": b"\x89PNG broken"}),
        "image_undecodable",
    ),
    "decompression_bomb_image": (
        lambda p: z.write_zip(p, {**z.good_files(), "images/train/train_0.png": z.png_bomb()}),
        "image_too_large",
    ),
    "forged_header_past_pillows_bound": (
        lambda p: z.write_zip(
            p,
            {
                **z.good_files(),
                "images/train/train_0.png": z.png_header_only(width=100_000, height=100_000),
            },
        ),
        "image_too_large",
    ),
    "class_out_of_range": (lambda p: z.with_label(p, "5 0.5 0.5 0.1 0.1"), "class_out_of_range"),
    "nan_coordinate": (lambda p: z.with_label(p, "0 nan 0.5 0.1 0.1"), "label_coordinates"),
    "negative_coordinate": (lambda p: z.with_label(p, "0 -0.1 0.5 0.1 0.1"), "label_coordinates"),
    "coordinate_above_one": (lambda p: z.with_label(p, "0 0.5 1.5 0.1 0.1"), "label_coordinates"),
    "wrong_field_count": (lambda p: z.with_label(p, "0 0.5 0.5 0.1"), "label_fields"),
    "yaml_python_tag": (
        lambda p: z.write_zip(
            p, {**z.good_files(), "data.yaml": "names: !!python/object/apply:os.system ['id']\n"}
        ),
        "yaml_invalid",
    ),
    "huge_yaml": (
        lambda p: z.write_zip(
            p, {**z.good_files(), "data.yaml": z.NAMES_YAML + z.noise_comment(300_000)}
        ),
        "yaml_too_large",
    ),
    "no_data_yaml": (
        lambda p: z.write_zip(p, {k: v for k, v in z.good_files().items() if k != "data.yaml"}),
        "no_data_yaml",
    ),
    "no_val_images": (lambda p: z.write_zip(p, {"data.yaml": z.NAMES_YAML}), "no_images"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_it_refuses_a_bad_upload_with_its_report_and_leaves_no_files(
    case, owner_api, tmp_path, storage, settings
):
    settings.CARRIL_DATASET_MAX_FILES = 30
    build, expected_code = BAD_CASES[case]
    response = upload(owner_api, build(tmp_path / f"{case}.zip"))
    assert response.status_code == 200, response.content
    assert response.json()["state"] == "invalid"
    report = response.json()["report"]
    assert report["valid"] is False
    codes = {problem["code"] for problem in report["problems"]}
    if expected_code is not None:
        assert expected_code in codes, report["problems"]
    else:
        assert codes & {"absolute_path", "path_traversal"}
    assert leftovers(storage) == []
    assert Dataset.objects.get().state == "invalid"  # kept with its report, no files


def test_the_report_names_the_file_and_line_of_a_bad_label(owner_api, tmp_path):
    response = upload(owner_api, z.with_label(tmp_path / "bad.zip", "7 0.5 0.5 0.1 0.1"))
    problem = response.json()["report"]["problems"][0]
    assert problem["file"] == "labels/train/train_1.txt"
    assert problem["line"] == 2


def test_it_refuses_more_uncompressed_bytes_than_the_cap(owner_api, tmp_path, settings, storage):
    settings.CARRIL_DATASET_MAX_UNCOMPRESSED_BYTES = 100
    response = upload(owner_api, z.good_zip(tmp_path / "big.zip"))
    codes = {p["code"] for p in response.json()["report"]["problems"]}
    assert "too_large_uncompressed" in codes
    assert leftovers(storage) == []


def test_it_answers_413_for_an_upload_over_the_byte_cap(owner_api, tmp_path, settings, storage):
    settings.CARRIL_UPLOAD_MAX_BYTES = 2000
    response = upload(owner_api, z.good_zip(tmp_path / "good.zip"))
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"
    assert leftovers(storage) == []


def test_uploads_stream_to_a_file_on_disk_not_to_memory(settings):
    assert settings.FILE_UPLOAD_HANDLERS == ["datasets.uploads.CappedTemporaryFileUploadHandler"]


def test_it_requires_a_name(owner_api, tmp_path):
    with open(z.good_zip(tmp_path / "good.zip"), "rb") as handle:
        response = owner_api.post(URL, {"file": handle}, format="multipart")
    assert response.status_code == 400
    assert "name" in response.json()["error"]["details"]["fields"]


def test_a_dataset_service_also_takes_an_in_memory_upload(owner, tmp_path):
    from datasets.services import dataset_create_from_upload

    data = z.good_zip(tmp_path / "good.zip").read_bytes()
    dataset = dataset_create_from_upload(
        owner=owner, name="mem", upload=SimpleUploadedFile("d.zip", data)
    )
    assert dataset.report["totals"]["images"] == 6
