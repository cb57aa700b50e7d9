"""What the pages' markup promises assistive technology, checked without a browser (the
Chromium checks in test_accessibility_in_chromium.py see the same pages rendered)."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse
from jobs.models import Job


def _html(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_the_sign_in_page_has_a_main_landmark_and_a_skip_link(db: None) -> None:
    html = _html(Client(), reverse("ui:login"))
    assert '<main id="content"' in html
    assert 'href="#content" data-testid="skip-link"' in html


@pytest.mark.parametrize("name", ["ui:dashboard", "ui:jobs", "ui:models", "ui:train_new"])
def test_every_page_starts_with_a_skip_link_and_has_one_announcer(
    name: str, owner_client: Client
) -> None:
    html = _html(owner_client, reverse(name))
    assert html.index('data-testid="skip-link"') < html.index("<header")
    assert html.count(' id="announcer"') == 1
    assert '<main id="content" tabindex="-1">' in html


def test_every_help_text_has_the_id_its_field_points_at(owner_client: Client, dataset) -> None:
    html = _html(owner_client, reverse("ui:train_new"))
    pointed = set(re.findall(r'aria-describedby="([^"]+)"', html))
    assert pointed >= {"id_model_helptext", "id_seeds_helptext"}
    for target in pointed:
        assert f'id="{target}"' in html, target


def test_a_refused_training_form_points_its_fields_at_their_errors(
    owner_client: Client, dataset
) -> None:
    response = owner_client.post(
        reverse("ui:train_new"),
        {"dataset": str(dataset.id), "model": "yolov8n", "epochs": 1, "imgsz": 64,
         "batch": 2, "seeds": "x", "gpus": 1},
    )  # fmt: skip
    html = response.content.decode()
    assert response.status_code == 400
    assert 'role="alert" tabindex="-1" autofocus data-testid="form-error"' in html
    assert 'aria-describedby="id_seeds_helptext id_seeds_error"' in html
    assert 'id="id_seeds_error"' in html
    assert '<a href="#id_seeds">' in html


def test_the_job_list_filters_on_a_button_not_on_change(owner_client: Client) -> None:
    html = _html(owner_client, reverse("ui:jobs"))
    assert "onchange" not in html
    assert 'data-testid="filter-submit"' in html


def test_the_job_page_names_its_progress_bar_and_its_log(
    owner_client: Client, running_training: Job
) -> None:
    html = _html(owner_client, reverse("ui:job_detail", kwargs={"job_id": running_training.id}))
    assert '<h2 id="progress-heading">Progress</h2>' in html
    assert 'aria-labelledby="progress-heading"' in html
    assert 'aria-valuetext="40.0%, seed 1 of 2, epoch 2 of 2, batch 3 of 4"' in html
    assert (
        'tabindex="0" role="log" aria-live="off" aria-labelledby="log-heading" '
        'data-testid="job-log"' in html
    )


def test_no_table_header_is_empty(owner_client: Client, finished_training: Job) -> None:
    html = _html(owner_client, reverse("ui:job_detail", kwargs={"job_id": finished_training.id}))
    assert 'data-testid="best-seed"' in html
    assert not re.search(r"<th[^>]*>\s*</th>", html)


def test_a_dataset_s_class_badges_do_not_put_white_on_the_class_colour(
    owner_client: Client, dataset
) -> None:
    html = _html(owner_client, reverse("ui:dataset_detail", kwargs={"dataset_id": dataset.id}))
    assert html.count('data-testid="class-badge"') == 2
    assert "color:#fff" not in html
