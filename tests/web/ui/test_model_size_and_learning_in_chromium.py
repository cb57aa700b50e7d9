"""In real Chromium, under axe-core: the inference form's image size follows the chosen
version, and the training form's hyperparameters, a job's notes and a did-not-learn
version's marks are clean pages (ADR 0045)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from jobs.models import Job
from registry.models import ModelVersion

from tests.e2e.conftest import browser, chromium_path  # noqa: F401 (fixtures)
from tests.support.accessibility import AxeAudit
from tests.web.ui.test_accessibility_in_chromium import (  # noqa: F401 (fixtures)
    open_page,
    orm_beside_playwright,
)
from tests.web.ui.test_model_size_and_learning_pages import did_not_learn

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts" / "accessibility"


@pytest.fixture(scope="module")
def audit() -> AxeAudit:
    return AxeAudit(artifacts=ARTIFACTS, suite="model-size-and-learning")


def test_the_inference_form_s_size_follows_the_chosen_version_until_the_user_types_one(
    open_page: Callable[..., Any],  # noqa: F811
    audit: AxeAudit,
    owner: User,
) -> None:
    ModelVersion.objects.create(
        name="at-96", fingerprint="1" * 64, source="import", imgsz=96, stage="serving"
    )
    other = ModelVersion.objects.create(name="at-320", fingerprint="2" * 64, source="import")
    ModelVersion.objects.filter(id=other.id).update(imgsz=320, created_by=owner)
    page = open_page("/infer/", user=owner)
    assert page.input_value("#id_imgsz") == "96"
    audit.check(page, "infer form")
    page.select_option("#id_model_version", str(other.id))
    assert page.input_value("#id_imgsz") == "320"
    assert "trained at 320" in page.inner_text("#id_imgsz_help")
    page.fill("#id_imgsz", "640")
    page.select_option("#id_model_version", "")
    assert page.input_value("#id_imgsz") == "640"  # the user's own choice is kept
    assert "trained at 96" in page.inner_text("#id_imgsz_help")
    assert page.script_errors == []


def test_the_hyperparameters_notes_and_did_not_learn_marks_are_clean_under_axe(
    open_page: Callable[..., Any],  # noqa: F811
    audit: AxeAudit,
    owner: User,
    dataset: Any,
    finished_training: Job,
    finished_inference: Job,
    version: ModelVersion,
) -> None:
    trained = did_not_learn(finished_training)
    ModelVersion.objects.filter(id=version.id).update(imgsz=96)
    Job.objects.filter(id=finished_inference.id).update(
        spec={**finished_inference.spec, "imgsz": 640}
    )
    pages = {
        "train form": (f"/train/?dataset={dataset.id}", "train-augmentations"),
        "training that did not learn": (f"/jobs/{finished_training.id}/", "did-not-learn"),
        "inference at another size": (f"/jobs/{finished_inference.id}/", "job-notes"),
        "version that did not learn": (f"/models/{trained.id}/", "version-did-not-learn"),
        "models": ("/models/", "model-did-not-learn"),
    }
    for name, (path, testid) in pages.items():
        page = open_page(path, user=owner)
        page.wait_for_selector(f"[data-testid={testid}]")
        audit.check(page, name)
        assert page.script_errors == [], (name, page.script_errors)
        page.context.close()
