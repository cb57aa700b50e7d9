"""The dataset pages in real Chromium under axe-core: the upload page with the accepted
layouts, a dataset with warnings, an automatic val split and its class balance chart, and
a refusal naming misplaced labels (datasets built by the real upload service)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from tests.support.accessibility import AxeAudit, assert_focus_visible, tab_to
from tests.web import dataset_zips as z
from tests.web.ui.test_accessibility_in_chromium import (  # noqa: F401 (fixtures)
    ARTIFACTS,
    browser,
    chromium_path,
    open_page,
    orm_beside_playwright,
)
from tests.web.ui.test_dataset_pages import uploaded

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def audit() -> AxeAudit:
    return AxeAudit(artifacts=ARTIFACTS, suite="dataset-pages")


def test_the_dataset_pages_with_warnings_a_chart_and_a_refusal_are_clean_under_axe(
    open_page: Callable[..., Any],  # noqa: F811
    audit: AxeAudit,
    owner: User,
    storage: Path,
    tmp_path: Path,
) -> None:
    one_split = z.good_files(splits=("train",), per_split=10)
    for i in range(7):  # 7 of 10 without labels: mostly background, before and after the split
        del one_split[f"labels/train/train_{i}.txt"]
    one_split["images/train/train_9.png"] = one_split["images/train/train_8.png"]
    warned = uploaded(owner, one_split, tmp_path / "warned")
    refused = uploaded(
        owner, z.labels_moved(z.good_files(), to="annotations"), tmp_path / "refused"
    )

    page = open_page("/datasets/", user=owner)
    assert page.locator("[data-testid=dataset-format] pre.tree").count() == 3
    audit.check(page, "datasets with the accepted layouts")
    page.screenshot(path=str(ARTIFACTS / "datasets-format.png"), full_page=True)

    page = open_page(f"/datasets/{warned.id}/", user=owner)
    page.wait_for_selector("[data-testid=class-balance-chart] rect")
    assert "split off automatically" in page.inner_text("[data-testid=dataset-auto-split]")
    assert page.locator("[data-testid=dataset-warning]").count() >= 1
    # The chart's own name and description, as a screen reader gets them.
    label = page.evaluate(
        "() => [...document.querySelector('[data-testid=class-balance-chart]')"
        ".getAttribute('aria-labelledby').split(' ')].map(id =>"
        " document.getElementById(id).textContent).join(' ')"
    )
    assert "Class balance" in label
    assert "most instances" in label
    # The table's scrolling region is reached by the keyboard, and shows it has the focus.
    tab_to(page, lambda f: f["text"].startswith("Instances per class and split"))
    assert_focus_visible(page)
    audit.check(page, "dataset with warnings, an automatic split and the chart")
    page.screenshot(path=str(ARTIFACTS / "dataset-warnings-chart.png"), full_page=True)

    page = open_page(f"/datasets/{refused.id}/", user=owner)
    page.wait_for_function("() => document.activeElement.dataset.testid === 'dataset-invalid'")
    assert "annotations/train/train_0.txt" in page.inner_text("[data-testid=misplaced-labels]")
    assert "labels/" in page.inner_text("[data-testid=layout-help] pre.tree")
    audit.check(page, "dataset refused for misplaced labels")
    page.screenshot(path=str(ARTIFACTS / "dataset-misplaced-labels.png"), full_page=True)
