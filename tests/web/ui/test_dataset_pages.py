"""What the dataset pages tell a user: the accepted layouts on the upload page, and on a
dataset's page its warnings, a refusal's misplaced files with the expected layout, an
automatic val split and the class balance chart (datasets built by the real upload)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from carril_web.errors import DatasetInvalid
from datasets.layout import AUTO_SPLIT_RULE, EXPECTED_LAYOUT, ROBOFLOW_LAYOUT
from datasets.models import Dataset
from datasets.services import dataset_create_from_upload
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from tests.web import dataset_zips as z


def uploaded(owner: User, files: dict, folder: Path) -> Dataset:
    folder.mkdir(parents=True, exist_ok=True)
    data = z.write_zip(folder / "d.zip", files).read_bytes()
    try:
        return dataset_create_from_upload(
            owner=owner, name="shapes", upload=SimpleUploadedFile("d.zip", data)
        )
    except DatasetInvalid:
        return Dataset.objects.get(state="invalid")


def page(client: Client, dataset: Dataset) -> str:
    url = reverse("ui:dataset_detail", kwargs={"dataset_id": dataset.id})
    return client.get(url).content.decode()


def test_the_upload_page_shows_every_accepted_layout_and_the_split_rule(
    owner_client: Client,
) -> None:
    html = owner_client.get(reverse("ui:datasets")).content.decode()
    assert escape(EXPECTED_LAYOUT) in html
    assert escape(ROBOFLOW_LAYOUT) in html
    assert "One split, divided automatically" in html
    assert escape(AUTO_SPLIT_RULE) in html


def test_a_refused_dataset_page_names_the_misplaced_labels_under_the_expected_layout(
    owner_client: Client, owner: User, storage: Path, tmp_path: Path
) -> None:
    files = z.labels_moved(z.good_files(per_split=12), to="annotations")
    html = page(owner_client, uploaded(owner, files, tmp_path))
    assert 'data-testid="dataset-invalid"' in html
    named = re.search(r'data-testid="misplaced-labels">(.*?)</ul>', html, flags=re.S)
    assert named is not None
    assert named.group(1).count("<li>") == 20
    assert "annotations/train/train_0.txt" in named.group(1)
    assert "The first 20 of 24 are named." in html
    assert escape(EXPECTED_LAYOUT) in html
    assert "1 problem listed below" in html
    assert "class-balance-chart" not in html  # no labelled object: nothing to balance


def test_a_dataset_page_shows_its_warnings_and_background_images(
    owner_client: Client, owner: User, storage: Path, tmp_path: Path
) -> None:
    files = z.good_files(per_split=4)
    for i in range(3):
        del files[f"labels/train/train_{i}.txt"]
    files["images/val/val_1.png"] = files["images/train/train_3.png"]
    html = page(owner_client, uploaded(owner, files, tmp_path))
    assert 'data-testid="dataset-valid"' in html
    assert 'data-code="mostly_background"' in html
    assert "3 of 4 train images (75%) have no labelled object" in html
    assert 'data-code="duplicate_across_splits"' in html
    assert "images/train/train_3.png = images/val/val_1.png" in html
    assert 'data-testid="dataset-background">3<' in html


def test_a_dataset_page_says_when_val_was_split_off_automatically(
    owner_client: Client, owner: User, storage: Path, tmp_path: Path
) -> None:
    files = z.good_files(splits=("train",), per_split=10)
    html = page(owner_client, uploaded(owner, files, tmp_path))
    notice = re.search(r'data-testid="dataset-auto-split">(.*?)</div>', html, flags=re.S)
    assert notice is not None
    assert "2 of its 10 train images (20%) were picked for val with seed 0" in notice.group(1)


def test_a_dataset_with_its_own_val_split_says_nothing_of_an_automatic_one(
    owner_client: Client, owner: User, storage: Path, tmp_path: Path
) -> None:
    html = page(owner_client, uploaded(owner, z.good_files(), tmp_path))
    assert "dataset-auto-split" not in html
    assert "dataset-warnings" not in html


def test_the_class_balance_chart_draws_a_bar_per_class_and_split_with_a_table(
    owner_client: Client, owner: User, storage: Path, tmp_path: Path
) -> None:
    files = z.good_files()
    files["labels/train/train_0.txt"] = "0 0.5 0.5 0.2 0.2\n" * 5  # square: 5 + 1 + 1 in train
    html = page(owner_client, uploaded(owner, files, tmp_path))
    bars = re.findall(
        r'<rect [^>]*width="([\d.]+)"[^>]*data-split="(\w+)" data-count="(\d+)"', html
    )
    assert [(split, int(count)) for _, split, count in bars] == [
        ("train", 7),
        ("val", 3),
        ("train", 2),
        ("val", 3),
    ]
    widths = [float(w) for w, _, _ in bars]
    assert widths[0] == max(widths)
    assert widths[2] < widths[1]
    assert 'role="img"' in html
    assert "most instances: square (10), fewest: disc (5)" in html
    table = re.search(r'data-testid="class-balance-table">(.*?)</table>', html, flags=re.S)
    assert table is not None
    cells = re.findall(r'<td class="num">(\d+)</td>', table.group(1))
    assert cells == ["7", "3", "2", "3"]


@pytest.mark.parametrize(
    ("classes", "instances", "drawn"),
    [([], 0, False), (["only"], 0, False), (["only"], 4, True)],
)
def test_the_chart_is_drawn_only_when_there_are_labelled_objects(
    owner_client: Client,
    owner: User,
    storage: Path,
    classes: list[str],
    instances: int,
    drawn: bool,
) -> None:
    per_class = {name: instances for name in classes}
    dataset = Dataset.objects.create(
        owner=owner,
        name="bare",
        classes=classes,
        splits={"train": {"images": 1, "instances": instances, "per_class": per_class}},
        report={"valid": True, "problems": [], "warnings": []},
    )
    html = page(owner_client, dataset)
    assert ("class-balance-chart" in html) is drawn
