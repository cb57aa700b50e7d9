"""Datasets that cannot silently be wrong (ADR 0046): labels not where they are looked for
are refused with the files named and the layout shown; a valid dataset that is mostly
background, or shares images between splits, is warned about; counts are given once."""

from __future__ import annotations

import importlib

from datasets.layout import EXPECTED_LAYOUT
from datasets.models import Dataset
from django.apps import apps

from tests.web import dataset_zips as z
from tests.web.datasets.test_dataset_upload import leftovers, upload


def problems_of(body: dict) -> dict[str, dict]:
    return {p["code"]: p for p in body["report"]["problems"]}


def warnings_of(body: dict) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for warning in body["report"]["warnings"]:
        found.setdefault(warning["code"], []).append(warning)
    return found


def test_labels_in_an_annotations_folder_are_refused_naming_the_files(owner_api, tmp_path, storage):
    files = z.labels_moved(z.good_files(), to="annotations")
    body = upload(owner_api, z.write_zip(tmp_path / "annotations.zip", files)).json()
    assert body["state"] == "invalid"
    problem = problems_of(body)["labels_misplaced"]
    assert problem["details"]["files_total"] == 6
    assert "annotations/train/train_0.txt" in problem["details"]["files"]
    assert "annotations/val/val_2.txt" in problem["details"]["files"]
    assert problem["details"]["expected_layout"] == EXPECTED_LAYOUT
    assert "labels/" in problem["details"]["expected_layout"]
    # What was found is kept with the refusal: every image, no label.
    assert body["splits"]["train"] == {
        "images": 3,
        "labels": 0,
        "instances": 0,
        "background_images": 3,
        "per_class": {"square": 0, "disc": 0},
    }
    assert leftovers(storage) == []


def test_labels_beside_their_images_are_refused_naming_them(owner_api, tmp_path):
    files = z.labels_moved(z.good_files(), to="images")
    body = upload(owner_api, z.write_zip(tmp_path / "beside.zip", files)).json()
    assert body["state"] == "invalid"
    problem = problems_of(body)["labels_misplaced"]
    assert problem["details"]["files"][0] == "images/train/train_0.txt"
    assert "6 label files" in problem["message"]


def test_a_refusal_names_at_most_twenty_misplaced_files_and_counts_them_all(owner_api, tmp_path):
    files = z.labels_moved(z.good_files(per_split=15), to="annotations")
    body = upload(owner_api, z.write_zip(tmp_path / "many.zip", files)).json()
    details = problems_of(body)["labels_misplaced"]["details"]
    assert len(details["files"]) == 20
    assert details["files_total"] == 30


def test_a_zip_with_no_label_files_at_all_is_refused(owner_api, tmp_path):
    files = {k: v for k, v in z.good_files().items() if not k.startswith("labels/")}
    body = upload(owner_api, z.write_zip(tmp_path / "bare.zip", files)).json()
    assert body["state"] == "invalid"
    problems = [p for p in body["report"]["problems"] if p["code"] == "no_labels"]
    assert {p["details"]["split"] for p in problems} == {"train", "val"}
    assert problems[0]["details"]["expected_layout"] == EXPECTED_LAYOUT


def test_a_val_split_with_only_empty_label_files_is_refused(owner_api, tmp_path):
    files = z.good_files()
    for i in range(3):
        files[f"labels/val/val_{i}.txt"] = ""
    body = upload(owner_api, z.write_zip(tmp_path / "empty-val.zip", files)).json()
    assert body["state"] == "invalid"
    problem = problems_of(body)["no_labels"]
    assert problem["details"]["split"] == "val"
    assert "3 images, 3 label files" in problem["message"]


def test_a_roboflow_export_with_its_readme_text_files_is_accepted(owner_api, tmp_path):
    files: dict[str, bytes | str] = {
        "data.yaml": "train: ../train/images\nval: ../valid/images\nnc: 2\nnames: [a, b]\n",
        "README.roboflow.txt": "Exported from roboflow.com",
        "README.dataset.txt": "# shapes",
    }
    for n, split in enumerate(("train", "valid", "test")):
        for i in range(2):
            files[f"{split}/images/{i}_jpg.rf.{n}.png"] = z.png(colour=(n * 60, i * 90, 10))
            files[f"{split}/labels/{i}_jpg.rf.{n}.txt"] = "1 0.5 0.5 0.5 0.5\n"
    body = upload(owner_api, z.write_zip(tmp_path / "roboflow.zip", files)).json()
    assert body["state"] == "ready", body["report"]
    assert set(body["splits"]) == {"train", "val", "test"}
    assert body["report"]["warnings"] == []


def test_background_images_are_counted_and_warned_about_above_half_a_split(owner_api, tmp_path):
    files = z.good_files(per_split=4)
    for i in range(3):  # 3 of 4 train images without a label file: 75%
        del files[f"labels/train/train_{i}.txt"]
    files["labels/val/val_0.txt"] = ""  # 1 of 4 val images with an empty one: 25%
    body = upload(owner_api, z.write_zip(tmp_path / "background.zip", files)).json()
    assert body["state"] == "ready", body["report"]
    assert body["splits"]["train"]["background_images"] == 3
    assert body["splits"]["val"]["background_images"] == 1
    assert body["report"]["totals"]["background_images"] == 4
    (warning,) = warnings_of(body)["mostly_background"]
    assert warning["details"] == {
        "split": "train",
        "background_images": 3,
        "images": 4,
        "threshold": 0.5,
    }
    assert "3 of 4 train images (75%)" in warning["message"]


def test_half_a_split_as_background_is_not_warned_about(owner_api, tmp_path):
    files = z.good_files(per_split=4)
    for i in range(2):
        del files[f"labels/train/train_{i}.txt"]
    body = upload(owner_api, z.write_zip(tmp_path / "half.zip", files)).json()
    assert body["state"] == "ready"
    assert "mostly_background" not in warnings_of(body)


def test_the_same_image_in_train_and_val_is_flagged_by_its_content(owner_api, tmp_path):
    files = z.good_files(per_split=4)
    # Two val images are byte-for-byte train images under other names.
    files["images/val/val_1.png"] = files["images/train/train_0.png"]
    files["images/val/val_3.png"] = files["images/train/train_2.png"]
    body = upload(owner_api, z.write_zip(tmp_path / "leak.zip", files)).json()
    assert body["state"] == "ready"
    (warning,) = warnings_of(body)["duplicate_across_splits"]
    assert warning["details"]["splits"] == ["train", "val"]
    assert warning["details"]["count"] == 2
    assert warning["details"]["examples"] == [
        ["images/train/train_0.png", "images/val/val_1.png"],
        ["images/train/train_2.png", "images/val/val_3.png"],
    ]
    assert "2 val images are identical to train images" in warning["message"]


def test_a_good_dataset_has_no_warnings(owner_api, tmp_path):
    body = upload(owner_api, z.good_zip(tmp_path / "good.zip")).json()
    assert body["report"]["warnings"] == []


def test_the_dataset_document_gives_its_per_split_counts_once(owner_api, tmp_path):
    body = upload(owner_api, z.good_zip(tmp_path / "good.zip")).json()
    assert body["splits"]["val"]["per_class"] == {"square": 3, "disc": 3}
    assert body["classes"] == ["square", "disc"]
    assert "splits" not in body["report"]
    assert "classes" not in body["report"]
    assert body["report"]["totals"] == {
        "images": 6,
        "labels": 6,
        "instances": 12,
        "background_images": 0,
    }


def test_the_migration_moves_an_old_reports_counts_to_the_dataset(owner):
    migration = importlib.import_module("datasets.migrations.0003_dataset_warnings")
    counts = {"train": {"images": 2, "labels": 0, "instances": 0, "per_class": {"a": 0}}}
    old = Dataset.objects.create(
        owner=owner,
        name="old refused",
        state="invalid",
        report={"valid": False, "classes": ["a"], "splits": counts, "problems": []},
    )
    migration.report_counts_to_row(apps, None)
    old.refresh_from_db()
    assert old.splits == counts
    assert old.classes == ["a"]
    assert old.report == {"valid": False, "problems": []}
    migration.row_counts_to_report(apps, None)
    old.refresh_from_db()
    assert old.report["splits"] == counts
    assert old.splits == {}
