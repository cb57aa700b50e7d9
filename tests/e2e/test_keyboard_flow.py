"""The main flow by keyboard alone, on the whole platform in real Chromium: sign in, upload
a dataset, train, watch the job, promote the model, run an inference and download what it
made; and a training cancelled from its page. No click anywhere: Tab, Shift+Tab, Enter,
Space and typing (a file dialog is the system's, so the test answers the one the keyboard
opens). At every Tab stop the focus ring must show with 3:1 contrast; every page is run
through axe-core in the state the flow leaves it in; the job's state changes and its end
must reach a live region."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.synthetic_dataset import dataset_zip
from tests.support.accessibility import (
    LIVE_RECORDER,
    AxeAudit,
    announcements,
    assert_focus_visible,
    focused,
    tab_to,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TRAINING_TIMEOUT_MS = 150_000
INFERENCE_TIMEOUT_MS = 90_000
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "e2e-keyboard"


def _bus_jpg() -> Path:
    # Locate ultralytics' sample image without importing it (and torch) in this process.
    spec = importlib.util.find_spec("ultralytics")
    assert spec is not None
    assert spec.origin is not None
    return Path(spec.origin).parent / "assets" / "bus.jpg"


class Keyboard:
    """One signed-in tab driven by the keyboard, with its screenshots and axe runs."""

    def __init__(self, page: Any, audit: AxeAudit, prefix: str) -> None:
        self.page = page
        self.audit = audit
        self.prefix = prefix
        self.shots = 0

    def check(self, name: str) -> None:
        self.shots += 1
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{self.prefix}-{self.shots:02d}-{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        self.audit.check(self.page, f"{self.prefix} {name}")

    def tab_to(self, **want: str) -> dict[str, Any]:
        """Tab until the focused element has every given property (see focused())."""
        return tab_to(self.page, lambda f: all(f.get(k) == v for k, v in want.items()))

    def press(self, key: str) -> None:
        self.page.keyboard.press(key)

    def type(self, text: str, *, replace: bool = False) -> None:
        if replace:
            self.press("Control+A")
        self.page.keyboard.type(text)

    def follow(self, **want: str) -> None:
        """Tab to a link or button and press Enter on it; wait for the next page."""
        self.tab_to(**want)
        with self.page.expect_navigation():
            self.press("Enter")

    def nav(self, section: str) -> None:
        self.follow(tag="a", text=section)

    def choose_file(self, path: Path, **want: str) -> None:
        """Tab to a file input and open its dialog with Space, as a keyboard user does."""
        self.tab_to(**want)
        with self.page.expect_file_chooser() as chooser:
            self.press("Space")
        chooser.value.set_files(str(path))

    def download(self, **want: str) -> Path:
        self.tab_to(**want)
        with self.page.expect_download() as download:
            self.press("Enter")
        return Path(download.value.path())

    def said(self, path: str | None = None) -> list[str]:
        """What the page's live region said, on the page at `path` or on any."""
        return [
            a["text"]
            for a in announcements(self.page)
            if a["id"] == "announcer" and path in (None, a["path"])
        ]

    def wait_for_end(self, *, timeout_ms: int) -> str:
        """The job page polls, then reloads once the job is over; the end is announced."""
        self.page.wait_for_selector(
            ", ".join(
                f"[data-testid=job-state][data-state={s}]"
                for s in ("succeeded", "failed", "cancelled", "lost")
            ),
            timeout=timeout_ms,
        )
        self.page.wait_for_function(
            "() => /^Job (succeeded|failed|cancelled|lost)/"
            ".test(document.getElementById('announcer').textContent)",
            timeout=30_000,
        )
        return self.page.get_attribute("[data-testid=job-state]", "data-state")


def _open(browser: Any, audit: AxeAudit, prefix: str) -> Keyboard:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    context.add_init_script(LIVE_RECORDER)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.script_errors = errors
    return Keyboard(page, audit, prefix)


def _sign_in(keys: Keyboard, *, stack: Any, username: str) -> None:
    keys.page.goto(f"{stack.web_url}/")
    assert "/login/" in keys.page.url
    assert focused(keys.page)["id"] == "id_username"  # autofocus: no Tab needed
    assert_focus_visible(keys.page)
    keys.check("sign-in")
    keys.type(username)
    keys.tab_to(id="id_password")
    keys.type(stack.password)
    with keys.page.expect_navigation():
        keys.press("Enter")
    keys.page.wait_for_selector("[data-testid=signed-in-as]")


def _fill_training(keys: Keyboard, *, epochs: int) -> None:
    """On the training form (dataset chosen by the link that led here)."""
    keys.tab_to(id="id_model")
    assert keys.page.eval_on_selector("#id_model", "s => s.value") == "yolov8n"
    for field, value in (("epochs", epochs), ("imgsz", 64), ("batch", 4), ("seeds", "42")):
        keys.tab_to(id=f"id_{field}")
        keys.type(str(value), replace=True)
    keys.tab_to(id="id_gpus")
    keys.type("1", replace=True)
    with keys.page.expect_navigation():
        keys.press("Enter")  # Enter in a field submits its form
    keys.page.wait_for_selector("[data-testid=job-progress]")


def test_the_main_flow_by_keyboard_alone(browser, stack: Any, tmp_path: Path) -> None:
    audit = AxeAudit(artifacts=ARTIFACTS, suite="keyboard-flow")
    keys = _open(browser, audit, "user")
    page = keys.page
    try:
        _sign_in(keys, stack=stack, username="alice")
        page.wait_for_selector("[data-testid=runtime]", timeout=30_000)
        first = tab_to(page, lambda f: True, limit=1)
        assert first["testid"] == "skip-link"
        keys.check("dashboard")

        # Upload a dataset.
        keys.nav("Datasets")
        keys.tab_to(id="id_name")
        keys.type("shapes")
        archive = dataset_zip(path=tmp_path / "shapes.zip", images_per_split=4)
        keys.choose_file(archive, id="id_file")
        keys.check("datasets-filled")
        keys.tab_to(testid="dataset-upload")
        with page.expect_navigation(timeout=60_000):
            keys.press("Enter")
        # Received, then validated in the background (ADR 0025): the dataset's page
        # refreshes until it is ready.
        page.wait_for_selector("[data-testid=dataset-valid]", timeout=60_000)
        assert page.inner_text("[data-testid=dataset-images]") == "8"
        assert keys.said("/datasets/")[0] == "Uploading…", keys.said()
        page.wait_for_selector("[data-testid=sample-image].drawn svg rect")
        keys.check("dataset")

        # Train, and watch: every change of state is announced, and the end after the
        # reload that shows the results.
        keys.follow(testid="train-on-dataset")
        keys.check("train-form")
        _fill_training(keys, epochs=2)
        job_path = page.url.split(stack.web_url, 1)[1]
        rendered = page.get_attribute("[data-testid=job-state]", "data-state")
        page.wait_for_selector(
            "[data-testid=job-state][data-state=running]", timeout=TRAINING_TIMEOUT_MS
        )
        keys.tab_to(id="job-log")
        keys.check("training-running")
        assert keys.wait_for_end(timeout_ms=TRAINING_TIMEOUT_MS) == "succeeded", (
            page.inner_text("body") + stack.logs()
        )
        said = keys.said(job_path)
        if rendered != "running":  # the job may be running by the time its page renders
            assert "Job running." in said, (rendered, said)
        assert said[-1] == "Job succeeded.", said
        # While it ran, the bar's spoken value followed the epochs.
        spoken = [a["text"] for a in announcements(page) if a["id"] == "job-progress"]
        assert any(", epoch " in text for text in spoken), spoken
        bar = page.locator("[data-testid=job-progress]")
        assert bar.get_attribute("aria-valuetext") == "100%, finished"
        page.wait_for_selector("[data-testid=model-version-link]", timeout=30_000)
        keys.check("training-done")

        # The version's own page, and its weights.
        keys.follow(testid="model-version-link")
        keys.check("model-version")
        weights = keys.download(testid="weights-download")
        assert weights.read_bytes()[:2] == b"PK"  # a torch checkpoint is a zip
        version_path = page.url.split(stack.web_url, 1)[1]

        # An administrator promotes it, by keyboard too.
        admin = _open(browser, audit, "admin")
        try:
            _sign_in(admin, stack=stack, username="ada")
            admin.page.goto(f"{stack.web_url}{version_path}")
            admin.tab_to(id="id_version_stage")
            value = admin.page.eval_on_selector("#id_version_stage", "s => s.value")
            assert value == "serving"  # the first choice for a candidate
            admin.tab_to(id="id_version_reason")
            admin.type("first model of the keyboard run")
            with admin.page.expect_navigation():
                admin.press("Enter")
            admin.page.wait_for_selector("[data-testid=serving-banner]")
            assert "is now serving" in admin.page.inner_text("[data-testid=message]")
            admin.check("models-promoted")
            assert admin.page.script_errors == []
        finally:
            admin.page.context.close()

        # Inference with the serving version on ultralytics' sample photo.
        keys.nav("Inference")
        keys.choose_file(_bus_jpg(), id="id_images")
        keys.tab_to(id="id_conf")
        keys.type("0.0001")  # a two-epoch model is unsure: let its weakest boxes through
        keys.tab_to(id="id_imgsz")
        # Pre-filled with the size the model was trained at (ADR 0045).
        assert keys.page.input_value("#id_imgsz") == "64"
        keys.check("infer-form")
        keys.tab_to(testid="infer-submit")
        with page.expect_navigation(timeout=30_000):
            keys.press("Enter")
        assert keys.wait_for_end(timeout_ms=INFERENCE_TIMEOUT_MS) == "succeeded", (
            page.inner_text("body") + stack.logs()
        )
        page.wait_for_selector("[data-testid=gallery-image].drawn svg")
        keys.check("inference")
        detections = json.loads(keys.download(testid="detections-json").read_text())
        shown = int(page.inner_text("[data-testid=detection-count]"))
        assert shown == sum(len(i.get("detections") or []) for i in detections["images"])

        # A training cancelled from its page.
        keys.nav("Datasets")
        keys.follow(tag="a", text="shapes")
        keys.follow(testid="train-on-dataset")
        _fill_training(keys, epochs=200)
        # Running, so the cancel goes to the GPU service and the page sees it through.
        page.wait_for_selector(
            "[data-testid=job-state][data-state=running]", timeout=TRAINING_TIMEOUT_MS
        )
        keys.tab_to(testid="job-cancel")
        with page.expect_navigation():
            keys.press("Enter")
        # Asked first, on a page of its own (works without script too).
        page.wait_for_selector("[data-testid=cancel-confirm]")
        keys.check("cancel-confirmation")
        keys.tab_to(testid="cancel-confirm-button")
        with page.expect_navigation():
            keys.press("Enter")
        assert "Cancel requested" in page.inner_text("[data-testid=message]")
        assert keys.wait_for_end(timeout_ms=60_000) == "cancelled"
        assert keys.said()[-1] == "Job cancelled."
        keys.check("training-cancelled")

        # The job list: the filter moves with arrow keys and submits only on its button.
        keys.nav("Jobs")
        listed = page.url
        keys.tab_to(testid="filter-state")
        options = page.eval_on_selector_all(
            "[data-testid=filter-state] option", "os => os.map(o => o.value)"
        )
        for _ in range(options.index("cancelled")):  # one arrow press per option passed
            keys.press("ArrowDown")
        assert page.url == listed
        assert keys.page.eval_on_selector("[data-testid=filter-state]", "s => s.value") == (
            "cancelled"
        )
        keys.follow(testid="filter-submit")
        assert re.search(r"state=cancelled", page.url)
        assert page.locator("[data-testid=job-list] tbody tr").count() == 1
        keys.check("jobs-filtered")
        assert page.script_errors == []
    finally:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "user-last.png"), full_page=True)
        page.context.close()
