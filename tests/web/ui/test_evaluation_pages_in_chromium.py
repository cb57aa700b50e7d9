"""The evaluation page, the compare page and a two-seed job page in real Chromium: clean
under axe, curves drawn from the JSON, the per-class table sorted from the keyboard, each
seed its own series; screenshots under test-artifacts/accessibility/ (issue 13)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from tests.support.accessibility import AxeAudit, tab_to
from tests.web.evaluation_documents import write_evaluation
from tests.web.ui.test_accessibility_in_chromium import (  # noqa: F401 (fixtures)
    _shot,
    browser,
    chromium_path,
    open_page,
    orm_beside_playwright,
)
from tests.web.ui.test_evaluation_and_compare_pages import succeeded

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def audit() -> AxeAudit:
    return AxeAudit(artifacts=ROOT / "test-artifacts" / "accessibility", suite="evaluation")


def _column(page: Any, index: int) -> list[str]:
    return page.eval_on_selector_all(
        "[data-testid=per-class-row]",
        f"rows => rows.map(r => r.children[{index}].textContent.trim())",
    )


def test_the_evaluation_page_is_clean_draws_its_curves_and_sorts_by_keyboard(
    open_page: Callable[..., Any],  # noqa: F811
    audit: AxeAudit,
    owner: User,
    dataset: Any,
    storage: Path,
) -> None:
    job = succeeded(owner, dataset, best=0.2)
    write_evaluation(job_folder=storage / "jobs" / str(job.id))
    page = open_page(f"/jobs/{job.id}/evaluation/", user=owner)
    for chart in ("pr", "f1", "precision", "recall"):
        box = page.locator(f"[data-curve={chart}]")
        assert box.get_attribute("data-series-count") == "3"
        assert box.locator("polyline").count() == 3
        assert box.locator("svg[role=img]").get_attribute("aria-labelledby")
    assert not page.script_errors
    audit.check(page, "evaluation")
    _shot(page, "evaluation")

    # mAP50 by keyboard: the first press sorts highest first, the next lowest first.
    state = tab_to(page, lambda f: f["tag"] == "button" and f["text"] == "mAP50")
    assert state["focusVisible"]
    page.keyboard.press("Enter")
    heading = page.locator("[data-testid=per-class-table] thead th").nth(6)
    assert heading.get_attribute("aria-sort") == "descending"
    assert _column(page, 1) == ["square", "disc", "triangle"]
    page.keyboard.press("Space")
    assert heading.get_attribute("aria-sort") == "ascending"
    assert _column(page, 1) == ["triangle", "disc", "square"]
    assert page.locator("[data-testid=per-class-table] thead th[aria-sort]").count() == 1
    page.wait_for_function(
        "() => document.getElementById('announcer').textContent.includes('Sorted by mAP50')"
    )

    # The matrix in shares, from the keyboard as well.
    page.locator("[data-testid=confusion-normalised]").focus()
    page.keyboard.press("Space")
    assert page.locator(".confusion .cm-share").first.is_visible()
    assert not page.locator(".confusion .cm-count").first.is_visible()
    audit.check(page, "evaluation-normalised")
    _shot(page, "evaluation-normalised")


def test_the_compare_page_is_clean_and_overlays_every_run_and_seed(
    open_page: Callable[..., Any],  # noqa: F811
    audit: AxeAudit,
    owner: User,
    dataset: Any,
    storage: Path,
) -> None:
    first = succeeded(owner, dataset, best=0.2, name="baseline")
    second = succeeded(owner, dataset, best=0.35, name="bigger", tags=",night,")
    for job in (first, second):
        write_evaluation(job_folder=storage / "jobs" / str(job.id))
    # Chosen from the job list with the keyboard.
    page = open_page("/jobs/?kind=train", user=owner)
    for name in ("baseline", "bigger"):
        tab_to(page, lambda f, name=name: f["label"] == f"Compare {name}")
        page.keyboard.press("Space")
    tab_to(page, lambda f: f["testid"] == "compare-submit")
    page.keyboard.press("Enter")
    page.wait_for_url("**/jobs/compare/**")
    # The list is newest first: the later run is the base.
    assert page.locator("[data-testid=compare-runs] li").first.inner_text().startswith("bigger")
    box = page.locator("[data-curve=mAP50_95]")
    assert box.get_attribute("data-series-count") == "4"  # two runs, two seeds each
    assert not page.script_errors
    audit.check(page, "compare")
    _shot(page, "compare")


def test_a_job_page_with_two_seeds_draws_each_seed_as_its_own_series(
    open_page: Callable[..., Any],  # noqa: F811
    audit: AxeAudit,
    owner: User,
    dataset: Any,
) -> None:
    job = succeeded(owner, dataset, best=0.2)
    page = open_page(f"/jobs/{job.id}/", user=owner)
    chart = page.locator("[data-testid=job-chart]")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=job-chart]').dataset.seeds === '2'"
    )
    assert chart.get_attribute("data-series") == "10"
    legend = page.locator("[data-testid=job-chart] .u-legend").text_content() or ""
    assert "mAP50 (seed 42)" in legend
    assert "mAP50 (seed 7)" in legend
    assert not page.script_errors
    audit.check(page, "job-two-seeds")
    _shot(page, "job-two-seeds")
