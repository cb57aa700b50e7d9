"""The platform as a person uses it, in real Chromium against real processes: sign in,
upload a dataset, train, watch the progress reach the end and the chart draw, have an
administrator promote the model, run an inference on a photo and see the results."""

from __future__ import annotations

import importlib.util
import json
import zipfile
from pathlib import Path

import pytest

from tests.e2e.synthetic_dataset import dataset_zip
from tests.support.accessibility import AxeAudit
from tests.support.stack import Stack

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TRAINING_TIMEOUT_MS = 150_000
INFERENCE_TIMEOUT_MS = 90_000


def _bus_jpg() -> Path:
    # Locate ultralytics' sample image without importing it (and torch) in this process.
    spec = importlib.util.find_spec("ultralytics")
    assert spec is not None
    assert spec.origin is not None
    return Path(spec.origin).parent / "assets" / "bus.jpg"


def _state_in(*states: str) -> str:
    return ", ".join(f"[data-testid=job-state][data-state={state}]" for state in states)


def _sign_in(page, *, stack: Stack, username: str) -> None:
    page.goto(f"{stack.web_url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", stack.password)
    page.click("[data-testid=sign-in]")
    page.wait_for_selector("[data-testid=signed-in-as]")


def test_a_user_uploads_trains_watches_and_infers(
    browser, stack: Stack, artifacts: Path, tmp_path: Path
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    shot = 0
    audit = AxeAudit(artifacts=artifacts, suite="browser-flow")

    def screenshot(name: str) -> None:
        nonlocal shot
        shot += 1
        page.screenshot(path=str(artifacts / f"{shot:02d}-{name}.png"), full_page=True)
        if name != "last":  # each page as the flow leaves it, under axe-core
            audit.check(page, name)

    try:
        # Sign in.
        page.goto(f"{stack.web_url}/")
        assert "/login/" in page.url
        screenshot("sign-in")
        _sign_in(page, stack=stack, username="alice")
        page.wait_for_selector("[data-testid=runtime]", timeout=30_000)
        screenshot("dashboard")

        # Upload a dataset: the progress bar shows, then the validated dataset's page.
        archive = dataset_zip(path=tmp_path / "shapes.zip", images_per_split=4)
        page.click("text=Datasets")
        page.fill("#id_name", "shapes")
        page.set_input_files("#id_file", str(archive))
        page.click("[data-testid=dataset-upload]")
        # The page shows the validation's progress and refreshes until the dataset is ready.
        page.wait_for_selector("[data-testid=dataset-valid]", timeout=60_000)
        assert page.inner_text("[data-testid=dataset-name]") == "shapes"
        assert page.inner_text("[data-testid=dataset-images]") == "8"
        page.wait_for_selector("[data-testid=sample-image].drawn svg rect")
        screenshot("dataset")

        # Start a training: one seed, one epoch, tiny images.
        page.click("[data-testid=train-on-dataset]")
        page.select_option("#id_model", "yolov8n")
        page.fill("#id_epochs", "2")
        page.fill("#id_imgsz", "64")
        page.fill("#id_batch", "4")
        page.fill("#id_seeds", "42")
        page.fill("#id_gpus", "1")
        page.click("[data-testid=train-submit]")
        page.wait_for_selector("[data-testid=job-progress]")
        screenshot("training-started")

        # Watch it: the page polls, then reloads itself once the job is finished. It was
        # rendered while the job was new, so seeing `succeeded` proves the polling works.
        page.wait_for_selector(
            _state_in("running", "succeeded"),
            timeout=TRAINING_TIMEOUT_MS,
        )
        screenshot("training-running")
        page.wait_for_selector(
            _state_in("succeeded", "failed"),
            timeout=TRAINING_TIMEOUT_MS,
        )
        page.wait_for_load_state()
        state = page.get_attribute("[data-testid=job-state]", "data-state")
        assert state == "succeeded", page.inner_text("body") + stack.logs()
        assert page.inner_text("[data-testid=job-percent]") == "100%"
        assert page.get_attribute("[data-testid=job-chart]", "data-points") == "2"
        assert page.locator("[data-testid=job-chart] canvas").count() >= 1
        assert page.locator("[data-testid=best-seed]").count() == 1
        page.wait_for_selector("[data-testid=model-version-link]", timeout=30_000)
        screenshot("training-done")

        # An administrator promotes the new version to serving, with a reason.
        admin = browser.new_context(viewport={"width": 1280, "height": 900})
        admin_page = admin.new_page()
        _sign_in(admin_page, stack=stack, username="ada")
        admin_page.goto(f"{stack.web_url}/models/")
        form = admin_page.locator("[data-testid=stage-form]").first
        form.locator("select[name=stage]").select_option("serving")
        form.locator("input[name=reason]").fill("first model of the e2e run")
        form.locator("button[type=submit]").click()
        admin_page.wait_for_selector("[data-testid=serving-banner]")
        audit.check(admin_page, "models")
        admin_page.screenshot(path=str(artifacts / f"{shot + 1:02d}-models.png"), full_page=True)
        shot += 1
        admin.close()

        # Inference with the serving version on ultralytics' sample photo.
        page.goto(f"{stack.web_url}/infer/")
        page.set_input_files("#id_images", str(_bus_jpg()))
        # The form shows the size the model was trained at, which the job runs at.
        assert page.input_value("#id_imgsz") == "64"
        # A two-epoch model is far from confident; a threshold near zero lets its
        # weakest detections through, so the gallery has boxes to draw.
        page.fill("#id_conf", "0.0001")
        page.click("[data-testid=infer-submit]")
        page.wait_for_selector("[data-testid=job-progress]", timeout=30_000)
        page.wait_for_selector(
            _state_in("succeeded", "failed"),
            timeout=INFERENCE_TIMEOUT_MS,
        )
        page.wait_for_load_state()
        assert page.get_attribute("[data-testid=job-state]", "data-state") == "succeeded", (
            page.inner_text("body") + stack.logs()
        )
        page.wait_for_selector("[data-testid=gallery-image].drawn svg")
        shown = int(page.inner_text("[data-testid=detection-count]"))
        job_id = page.url.rstrip("/").split("/")[-1]
        response = page.request.get(f"{stack.web_url}/api/v1/jobs/{job_id}/detections/")
        assert response.ok, response.text()
        images = json.loads(response.text())["images"]
        assert len(images) == 1
        assert shown > 0, "the inference drew no boxes"
        assert shown == sum(len(image.get("detections") or []) for image in images)
        assert page.locator("[data-testid=detection-row]").count() == shown
        drawn = page.get_attribute("[data-testid=gallery-image] svg", "data-box-count")
        assert int(drawn) == shown
        screenshot("inference")
        assert errors == [], errors
    finally:
        screenshot("last")
        context.close()


def test_a_bad_dataset_is_refused_with_every_problem_listed(
    browser, stack: Stack, artifacts: Path, tmp_path: Path
) -> None:
    good = dataset_zip(path=tmp_path / "good.zip", images_per_split=2)
    archive = tmp_path / "bad.zip"
    with zipfile.ZipFile(good) as source, zipfile.ZipFile(archive, "w") as bad:
        for name in source.namelist():
            data = source.read(name)
            if name == "labels/train/train_0.txt":
                data = b"0 0.5 0.5 0.2 0.2\n7 0.5 0.5 0.2 0.2\n"  # class 7 of 2
            bad.writestr(name, data)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        _sign_in(page, stack=stack, username="alice")
        page.goto(f"{stack.web_url}/datasets/")
        page.fill("#id_name", "broken")
        page.set_input_files("#id_file", str(archive))
        page.click("[data-testid=dataset-upload]")
        page.wait_for_selector("[data-testid=upload-problems]", timeout=60_000)
        problems = page.inner_text("[data-testid=upload-problems]")
        assert "train_0.txt" in problems
        assert "/datasets/" in page.url
        AxeAudit(artifacts=artifacts, suite="bad-dataset").check(page, "upload refused")
        page.screenshot(path=str(artifacts / "20-bad-dataset.png"), full_page=True)
    finally:
        context.close()
