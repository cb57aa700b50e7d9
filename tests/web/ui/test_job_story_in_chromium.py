"""The job page's story in real Chromium under axe-core: waiting for the GPU service (kept
current in its live region), the cancel confirmation reached and used by keyboard alone,
and the cancelled, failed and resumed pages."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from datasets.models import Dataset
from django.contrib.auth.models import User
from django.utils import timezone
from jobs.models import Job
from usage.models import AttemptUsage

from tests.e2e.conftest import browser, chromium_path  # noqa: F401 (fixtures)
from tests.support.accessibility import AxeAudit, announcements, tab_to
from tests.web.ui.conftest import training_job
from tests.web.ui.test_accessibility_in_chromium import (  # noqa: F401 (fixtures)
    ARTIFACTS,
    _write,
    open_page,
    orm_beside_playwright,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def audit() -> AxeAudit:
    return AxeAudit(artifacts=ARTIFACTS, suite="job-story")


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_a_waiting_job_says_so_and_its_live_region_follows_each_attempt(
    open_page: Callable[..., Any],  # noqa: F811 (the fixture)
    audit: AxeAudit,
    owner: User,
    dataset: Dataset,
) -> None:
    job = training_job(
        owner=owner,
        dataset=dataset,
        state="submitted",
        dispatched_at=None,
        progress={},
        metrics={},
        dispatch_attempts=4,
        next_attempt_at=timezone.now() + timedelta(seconds=16),
        last_dispatch_error="The GPU service cannot be reached right now; try again shortly.",
    )
    page = open_page(f"/jobs/{job.id}/", user=owner)
    assert "attempt 4" in page.inner_text("[data-testid=job-waiting]")
    audit.check(page, "job waiting")
    _shot(page, "job-story-waiting")
    _write(lambda: Job.objects.filter(id=job.id).update(dispatch_attempts=5))
    page.wait_for_function(
        "() => document.getElementById('job-waiting').textContent.includes('attempt 5')"
    )
    heard = [a["text"] for a in announcements(page) if a["id"] == "job-story"]
    assert any("attempt 5" in text for text in heard), heard
    assert page.script_errors == []
    page.context.close()


def test_cancel_is_confirmed_by_keyboard_and_the_cancelled_page_is_neutral(
    open_page: Callable[..., Any],  # noqa: F811 (the fixture)
    audit: AxeAudit,
    owner: User,
    dataset: Dataset,
) -> None:
    job = training_job(
        owner=owner, dataset=dataset, state="submitted", dispatched_at=None, progress={}
    )
    page = open_page(f"/jobs/{job.id}/", user=owner)
    tab_to(page, lambda f: f and f["testid"] == "job-cancel")
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-testid=cancel-confirm]")
    audit.check(page, "cancel confirmation")
    _shot(page, "job-story-cancel-confirm")
    assert Job.objects.get(id=job.id).state == "submitted"
    tab_to(page, lambda f: f and f["testid"] == "cancel-confirm-button")
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-testid=job-state][data-state=cancelled]")
    assert page.is_hidden("[data-testid=job-error]")
    assert page.is_visible("[data-testid=job-ended-note]")
    assert page.is_visible("[data-testid=job-run-again]")
    audit.check(page, "job cancelled")
    _shot(page, "job-story-cancelled")
    assert page.script_errors == []
    page.context.close()


def test_the_failed_and_resumed_job_pages_are_clean_under_axe(
    open_page: Callable[..., Any],  # noqa: F811 (the fixture)
    audit: AxeAudit,
    owner: User,
    dataset: Dataset,
    storage: Path,
) -> None:
    failed = training_job(
        owner=owner,
        dataset=dataset,
        state="failed",
        progress={},
        metrics={},
        finished_at=timezone.now(),
        error_code="CUDA_OOM",
        error_message="The GPU ran out of memory; try a smaller batch size or image size.",
    )
    page = open_page(f"/jobs/{failed.id}/", user=owner)
    assert page.is_visible("[data-testid=job-error]")
    assert page.is_visible("[data-testid=job-clone]")
    audit.check(page, "job failed with run again")
    _shot(page, "job-story-failed")
    page.context.close()

    start = timezone.now() - timedelta(minutes=20)
    epochs = [{"seed": 42, "epoch": e, "mAP50": 0.1 * e, "attempt": 1} for e in range(1, 7)]
    resumed = training_job(
        owner=owner,
        dataset=dataset,
        started_at=start + timedelta(minutes=10),
        metrics={"epochs": epochs},
    )
    AttemptUsage.objects.create(
        job=resumed,
        attempt=1,
        gpus=1,
        held_from=start,
        held_until=start + timedelta(minutes=9),
        gpu_seconds=540.0,
        energy_wh=1.0,
        energy_source="modelled",
    )
    page = open_page(f"/jobs/{resumed.id}/", user=owner)
    assert "after epoch 6" in page.inner_text("[data-testid=job-attempts]")
    audit.check(page, "job resumed")
    _shot(page, "job-story-resumed")
    assert page.script_errors == []
