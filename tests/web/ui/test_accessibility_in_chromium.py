"""Every page in every state it has, in real Chromium, under axe-core and the keyboard.

The pages are served by the real web app (pytest-django's live server) from records
written straight into the database, so each state (empty, queued, running, failed,
cancelled, lost, finished, a refused upload) is on screen without training anything; the
whole platform's own flow is tests/e2e/test_keyboard_flow.py. What the job page says while
a job moves is driven here by writing the job's row, exactly what the reconciler does.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from accounts.models import ApiToken
from datasets.models import Dataset
from django.contrib.auth.models import User
from django.db import OperationalError
from django.test import Client
from django.utils import timezone
from jobs.models import Job
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from registry.models import ModelEvent, ModelVersion

from tests.e2e.conftest import browser, chromium_path  # noqa: F401 (fixtures)
from tests.support.accessibility import (
    LIVE_RECORDER,
    AxeAudit,
    announcements,
    assert_focus_visible,
    focused,
    tab_to,
)
from tests.web.dataset_zips import with_label
from tests.web.ui.conftest import training_job

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[3]
ARTIFACTS = ROOT / "test-artifacts" / "accessibility"


@pytest.fixture(scope="module", autouse=True)
def orm_beside_playwright() -> Iterator[None]:
    """Playwright's sync API keeps an event loop running in this thread while the browser
    is open, and Django refuses ORM calls from a thread with a running loop, though these
    calls are plain synchronous ones: this test's own writes and the database flush."""
    before = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "1"
    yield
    if before is None:
        del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = before


@pytest.fixture(scope="module")
def audit() -> AxeAudit:
    return AxeAudit(artifacts=ARTIFACTS, suite="page-states")


@pytest.fixture
def open_page(browser: Any, live_server: Any) -> Iterator[Callable[..., Any]]:  # noqa: F811
    """A fresh tab signed in as `user` (or anonymous), with live regions recorded."""
    contexts = []

    def open_(path: str, *, user: User | None = None) -> Any:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        contexts.append(context)
        if user is not None:
            client = Client()
            client.force_login(user)
            cookie = client.cookies["sessionid"]
            context.add_cookies(
                [{"name": "sessionid", "value": cookie.value, "url": live_server.url}]
            )
        context.add_init_script(LIVE_RECORDER)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.script_errors = errors
        page.goto(live_server.url + path)
        return page

    yield open_
    for context in contexts:
        context.close()  # closing twice is harmless


def _write(action: Callable[[], Any]) -> Any:
    """A write while the live server's threads read: the test database is SQLite with a
    shared cache, whose table locks make a writer meeting a reader fail at once rather
    than wait. The reconciler's writes in production meet no such lock."""
    for _ in range(50):
        try:
            return action()
        except OperationalError as exc:
            if "locked" not in str(exc):
                raise
            time.sleep(0.05)
    return action()


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def _weights(storage: Path, fingerprint: str) -> None:
    (storage / "weights").mkdir(parents=True, exist_ok=True)
    (storage / "weights" / f"{fingerprint}.pt").write_bytes(b"not really a checkpoint")


def _job_log(storage: Path, job: Job, lines: int) -> None:
    folder = storage / "jobs" / str(job.id)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "job.log").write_text("".join(f"epoch line {i}\n" for i in range(lines)))


@pytest.fixture
def everything(
    admin: User,
    dataset: Dataset,
    finished_training: Job,
    finished_inference: Job,
    gpus_seen: Any,
    storage: Path,
) -> dict[str, Any]:
    """One of each: a job in every state, versions at every stage, tokens, a history."""
    dataset.owner = admin
    dataset.save()
    Job.objects.filter(id__in=[finished_training.id, finished_inference.id]).update(owner=admin)
    jobs = {"succeeded": finished_training, "inferred": finished_inference}
    for state, fields in {
        "submitted": {"progress": {}, "dispatched_at": None},
        "queued": {"progress": {}},
        "running": {},
        "cancelling": {},
        "failed": {
            "error_code": "CUDA_OOM",
            "error_message": "The GPU ran out of memory; try a smaller batch size.",
            "finished_at": timezone.now(),
        },
        "cancelled": {"error_code": "CANCELLED", "finished_at": timezone.now()},
        "lost": {"error_code": "LOST", "error_message": "The GPU service lost it."},
    }.items():
        fields.setdefault("dispatched_at", timezone.now())
        jobs[state] = training_job(owner=admin, dataset=dataset, state=state, **fields)
    _job_log(storage, jobs["running"], lines=400)
    trained = ModelVersion.objects.get(source_job=finished_training)
    _weights(storage, trained.fingerprint)
    ModelVersion.objects.filter(fingerprint="a" * 64).update(stage="serving")
    ModelVersion.objects.create(
        name="old-one", fingerprint="b" * 64, source="import", stage="retired"
    )
    ModelEvent.objects.create(
        model_version=trained,
        action="register",
        to_stage="candidate",
        reason=f"best weights of training job {finished_training.id}",
    )
    ModelEvent.objects.create(
        model_version=trained,
        action="promote",
        from_stage="candidate",
        to_stage="serving",
        actor=admin,
        reason="better mAP",
    )
    ApiToken.objects.create(user=admin, name="ci", prefix="cr_abcd", key_hash="0" * 64)
    return {"jobs": jobs, "version": trained}


def test_every_page_is_clean_under_axe_when_there_is_nothing_yet(
    open_page: Callable[..., Any], audit: AxeAudit, owner: User
) -> None:
    page = open_page("/login/")
    audit.check(page, "sign-in")
    page.fill("#id_username", "olivia")
    page.fill("#id_password", "wrong")
    page.press("#id_password", "Enter")
    page.wait_for_selector("[data-testid=login-error]")
    audit.check(page, "sign-in refused")
    for path in (
        "/",
        "/datasets/",
        "/train/",
        "/infer/",
        "/jobs/",
        "/models/",
        "/usage/",
        "/cost/",
        "/account/",
    ):
        page = open_page(path, user=owner)
        audit.check(page, f"empty {path}")
        assert page.script_errors == []
        if path != "/account/":
            page.context.close()
    _shot(page, "empty-account")


def test_every_page_is_clean_under_axe_in_every_state(
    open_page: Callable[..., Any], audit: AxeAudit, admin: User, everything: dict[str, Any]
) -> None:
    jobs = everything["jobs"]
    version = everything["version"]
    dataset = jobs["running"].dataset
    pages = {
        "dashboard": "/",
        "datasets": "/datasets/",
        "dataset": f"/datasets/{dataset.id}/",
        "train": f"/train/?dataset={dataset.id}",
        "infer": "/infer/",
        "jobs": "/jobs/",
        "jobs filtered": "/jobs/?state=failed&kind=train",
        "models": "/models/",
        "model version": f"/models/{version.id}/",
        "account": "/account/",
        "not found": "/jobs/00000000-0000-0000-0000-000000000001/",
        **{f"job {state}": f"/jobs/{job.id}/" for state, job in jobs.items()},
    }
    for name, path in pages.items():
        page = open_page(path, user=admin)
        if name == "dataset":
            page.wait_for_selector("[data-testid=sample-image].drawn svg rect")
        if name == "job inferred":
            page.wait_for_selector("[data-testid=gallery-image].drawn svg")
        audit.check(page, name)
        assert page.script_errors == [], (name, page.script_errors)
        _shot(page, "state-" + name.replace(" ", "-"))
        # Stop its polling: the test database is SQLite shared between the live server's
        # threads, and a dozen pages polling at once can find a table locked.
        page.context.close()

    # A refused training form, and a freshly made token shown once.
    page = open_page(f"/train/?dataset={dataset.id}", user=admin)
    page.fill("#id_seeds", "one, two")
    page.press("#id_seeds", "Enter")
    page.wait_for_selector("[data-testid=form-error]")
    assert focused(page)["testid"] == "form-error"
    assert page.get_attribute("#id_seeds", "aria-invalid") == "true"
    audit.check(page, "train refused")
    page = open_page("/account/", user=admin)
    page.press("#id_token_name", "Enter")
    page.wait_for_selector("[data-testid=new-token]")
    audit.check(page, "account new token")


def test_the_evaluate_form_is_clean_under_axe_and_announces_a_refusal(
    open_page: Callable[..., Any], audit: AxeAudit, admin: User, everything: dict[str, Any]
) -> None:
    page = open_page(f"/models/{everything['version'].id}/evaluate/", user=admin)
    audit.check(page, "evaluate")
    page.fill("#id_imgsz", "100")
    page.press("#id_imgsz", "Enter")
    page.wait_for_selector("[data-testid=form-error]")
    assert focused(page)["testid"] == "form-error"
    assert page.get_attribute("#id_imgsz", "aria-invalid") == "true"
    audit.check(page, "evaluate refused")
    assert page.script_errors == []


def test_the_usage_storage_and_cost_pages_are_clean_under_axe(
    open_page: Callable[..., Any],
    audit: AxeAudit,
    admin: User,
    everything: dict[str, Any],
    settings: Any,
) -> None:
    from usage.models import AttemptUsage

    settings.CARRIL_GPU_PRICES = {"NVIDIA H100 80GB HBM3": 2.5}  # the cost page's model table
    now = timezone.now()
    for n, job in enumerate(everything["jobs"].values(), start=1):
        AttemptUsage.objects.create(
            job=job,
            attempt=1,
            gpus=1 + n % 2,
            held_from=now - timezone.timedelta(hours=n),
            held_until=now,
            gpu_seconds=3600.0 * n,
            energy_wh=300.0 * n,
            energy_source="modelled",
            gpu_model=("NVIDIA H100 80GB HBM3", "NVIDIA A10")[n % 2],
        )
    page = open_page("/usage/", user=admin)
    for chart in ("day", "user", "kind"):
        page.wait_for_selector(f"[data-testid=usage-chart-{chart}] .uplot")
    audit.check(page, "usage")
    assert page.script_errors == []
    _shot(page, "usage")
    page.context.close()
    page = open_page("/usage/?month=not-a-month", user=admin)
    audit.check(page, "usage refused month")
    page.context.close()
    page = open_page("/storage/", user=admin)
    audit.check(page, "storage")
    _shot(page, "storage")
    page.context.close()
    page = open_page("/cost/?gpu_hours_per_month=300", user=admin)
    page.wait_for_selector("[data-testid=cost-chart] .uplot")
    assert page.locator("[data-testid=cost-by-model] tbody tr").count() == 2
    audit.check(page, "cost")
    assert page.script_errors == []
    _shot(page, "cost")


def test_the_job_page_names_its_progress_and_lets_the_keyboard_scroll_its_log(
    open_page: Callable[..., Any], owner: User, running_training: Job, storage: Path
) -> None:
    _job_log(storage, running_training, lines=400)
    page = open_page(f"/jobs/{running_training.id}/", user=owner)
    bar = page.locator("#job-progress")
    assert bar.get_attribute("aria-labelledby") == "progress-heading"
    assert page.inner_text("#progress-heading") == "Progress"
    assert bar.get_attribute("aria-valuetext") == "40.0%, seed 1 of 2, epoch 2 of 2, batch 3 of 4"
    log = page.locator("#job-log")
    assert log.get_attribute("role") == "log"
    tab_to(page, lambda f: f["id"] == "job-log")
    # The page polls and rewrites the log, which follows the tail: wait for it to settle.
    page.wait_for_function(
        "() => { const l = document.getElementById('job-log');"
        " return l.scrollTop + l.clientHeight >= l.scrollHeight - 8; }"
    )
    page.keyboard.press("Home")  # scrolling may be animated: wait for it, do not sample it
    page.wait_for_function("() => document.getElementById('job-log').scrollTop === 0")
    page.keyboard.press("PageDown")
    page.wait_for_function("() => document.getElementById('job-log').scrollTop > 0")
    assert_focus_visible(page)
    _shot(page, "job-log-focused")


@pytest.mark.parametrize(
    ("end", "fields", "heard"),
    [
        ("succeeded", {"progress": {"fraction": 1.0}}, "Job succeeded."),
        (
            "failed",
            {"error_code": "CUDA_OOM", "error_message": "The GPU ran out of memory."},
            "Job failed: The GPU ran out of memory.",
        ),
        ("cancelled", {"error_code": "CANCELLED"}, "Job cancelled."),
    ],
)
def test_a_job_page_announces_each_state_change_and_the_end_of_the_job(
    open_page: Callable[..., Any],
    owner: User,
    dataset: Dataset,
    end: str,
    fields: dict[str, Any],
    heard: str,
) -> None:
    job = training_job(owner=owner, dataset=dataset, state="queued", progress={})
    page = open_page(f"/jobs/{job.id}/", user=owner)
    page.wait_for_timeout(1500)  # at least one poll that finds nothing new
    running = {"seed": 1, "seeds": 1, "epoch": 1, "epochs": 3, "fraction": 0.3}
    _write(lambda: Job.objects.filter(id=job.id).update(state="running", progress=running))
    page.wait_for_function(
        "() => document.getElementById('announcer').textContent === 'Job running.'"
    )
    page.wait_for_function(
        "() => document.getElementById('job-progress').getAttribute('aria-valuetext')"
        " === '30.0%, seed 1 of 1, epoch 1 of 3'"
    )
    _write(
        lambda: Job.objects.filter(id=job.id).update(
            state=end, finished_at=timezone.now(), **fields
        )
    )
    page.wait_for_selector(f"[data-testid=job-state][data-state={end}]")
    page.wait_for_function(
        f"() => document.getElementById('announcer').textContent === {heard!r}", timeout=15_000
    )
    said = [a["text"] for a in announcements(page) if a["id"] == "announcer"]
    assert said == ["Job running.", heard], said
    assert page.script_errors == []


def test_a_refused_upload_is_announced_and_takes_the_focus(
    open_page: Callable[..., Any], audit: AxeAudit, owner: User, tmp_path: Path
) -> None:
    archive = with_label(tmp_path / "bad.zip", "7 0.5 0.5 0.2 0.2")
    page = open_page("/datasets/", user=owner)
    tab_to(page, lambda f: f["id"] == "id_name")
    page.keyboard.type("broken")
    page.set_input_files("#id_file", str(archive))  # a file dialog is the system's, not ours
    tab_to(page, lambda f: f["testid"] == "dataset-upload")
    page.keyboard.press("Enter")
    # Received, then validated in the background (ADR 0025): the dataset's page refreshes
    # until it is invalid, and then its alert takes the focus, so it is read.
    page.wait_for_selector("[data-testid=upload-problems]", timeout=60_000)
    page.wait_for_function("() => document.activeElement.dataset.testid === 'dataset-invalid'")
    assert page.get_attribute("[data-testid=dataset-invalid]", "role") == "alert"
    assert_focus_visible(page)
    assert "train_1.txt" in page.inner_text("[data-testid=upload-problems]")
    audit.check(page, "upload refused")
    _shot(page, "upload-refused")


def test_the_job_filter_waits_for_its_button(
    open_page: Callable[..., Any], owner: User, running_training: Job
) -> None:
    page = open_page("/jobs/", user=owner)
    url = page.url
    tab_to(page, lambda f: f["testid"] == "filter-state")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.wait_for_timeout(300)
    assert page.url == url
    assert focused(page)["testid"] == "filter-state"
    tab_to(page, lambda f: f["testid"] == "filter-submit")
    page.keyboard.press("Enter")
    page.wait_for_url("**/jobs/?state=*")
    assert "state=queued" in page.url


def test_the_skip_link_comes_first_and_lands_on_the_content(
    open_page: Callable[..., Any], owner: User
) -> None:
    page = open_page("/train/", user=owner)
    first = tab_to(page, lambda f: True, limit=1)
    assert first["testid"] == "skip-link"
    _shot(page, "skip-link")
    page.keyboard.press("Enter")
    assert focused(page)["id"] == "content"
    after = tab_to(page, lambda f: True, limit=1)
    assert page.evaluate("() => !!document.activeElement.closest('main')"), after


def test_help_text_is_read_with_its_field(open_page: Callable[..., Any], owner: User) -> None:
    page = open_page("/train/", user=owner)
    for name in ("model", "seeds"):
        described = page.get_attribute(f"#id_{name}", "aria-describedby")
        assert described == f"id_{name}_helptext"
        assert page.locator(f"#{described}").inner_text()


def test_a_model_version_page_offers_its_weights_to_any_user_who_sees_it(
    open_page: Callable[..., Any], other: User, finished_training: Job, storage: Path
) -> None:
    version = ModelVersion.objects.get(source_job=finished_training)
    # Serving, so everyone's (registry/visibility.py); another user's candidate is a 404.
    _write(lambda: ModelVersion.objects.filter(id=version.id).update(stage="serving"))
    _weights(storage, version.fingerprint)
    page = open_page(f"/models/{version.id}/", user=other)
    # Someone else's training: named, not linked (its page would be a 404 for them).
    assert page.locator("[data-testid=version-source]").count() == 0
    with page.expect_download() as download:
        tab_to(page, lambda f: f["testid"] == "weights-download")
        page.keyboard.press("Enter")
    assert download.value.suggested_filename == f"yolov8n-best-{version.fingerprint[:12]}.pt"
    assert Path(download.value.path()).read_bytes() == b"not really a checkpoint"


def test_the_dashboard_keeps_the_keyboard_s_place_when_it_refreshes(
    open_page: Callable[..., Any], owner: User, running_training: Job, dataset: Dataset
) -> None:
    page = open_page("/", user=owner)
    link = f"/jobs/{running_training.id}/"
    tab_to(page, lambda f: f["href"] == link)
    # A new job changes the recent-jobs fragment the dashboard swaps in on its next poll.
    newer = _write(lambda: training_job(owner=owner, dataset=dataset, state="queued", progress={}))
    page.wait_for_selector(f"#dashboard-jobs a[href='/jobs/{newer.id}/']", timeout=15_000)
    assert focused(page)["href"] == link
    assert_focus_visible(page)


def test_a_refused_weights_import_is_announced_and_takes_the_focus(
    open_page: Callable[..., Any], audit: AxeAudit, admin: User, fake_gpu: Any, tmp_path: Path
) -> None:
    fake_gpu.weights_rejected = True  # the GPU service's answer to a file it cannot load
    weights = tmp_path / "not-a-model.pt"
    weights.write_bytes(b"this is no checkpoint")
    page = open_page("/models/", user=admin)
    tab_to(page, lambda f: f["id"] == "id_import_name")
    page.keyboard.type("mystery")
    tab_to(page, lambda f: f["id"] == "id_import_file")
    # Space on the focused file input opens the system's chooser. On a loaded machine
    # Chromium sometimes drops the first key press there; pressing again is what a person
    # would do.
    for attempt in range(3):
        try:
            with page.expect_file_chooser(timeout=10_000) as chooser:
                page.keyboard.press("Space")
            break
        except PlaywrightTimeout:
            assert focused(page)["id"] == "id_import_file"
            if attempt == 2:
                raise
    chooser.value.set_files(str(weights))
    tab_to(page, lambda f: f["text"] == "Import")
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => document.activeElement.matches('[data-upload-errors]')", timeout=30_000
    )
    assert_focus_visible(page)
    heard = [a["text"] for a in announcements(page)]
    assert any("WEIGHTS_REJECTED" in text for text in heard), heard
    assert not ModelVersion.objects.filter(name="mystery").exists()
    audit.check(page, "import refused")
    _shot(page, "import-refused")


def test_an_undecodable_video_sent_from_the_inference_form_is_refused_and_no_job_is_made(
    open_page: Callable[..., Any],
    audit: AxeAudit,
    owner: User,
    storage: Path,
    gpu_service: Callable[..., Any],
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    from tests.web.factories import model_version

    service = gpu_service(storage=storage)  # the real one: it decodes, the web cannot
    settings.CARRIL_GPU_SERVICE_URL = service.url
    monkeypatch.setenv("CARRIL_GPU_SERVICE_TOKEN", service.token)
    _weights(storage, "c" * 64)
    _write(lambda: model_version(fingerprint="c" * 64, stage="serving"))
    video = tmp_path / "holiday.mp4"
    video.write_bytes(b"\x00\x00\x00\x18ftypmp42 not a video at all" * 10)

    page = open_page("/infer/", user=owner)
    page.set_input_files("#id_media", str(video))
    page.click("[data-testid=infer-submit]")
    page.wait_for_function(
        "() => document.activeElement.matches('[data-upload-errors]')", timeout=30_000
    )

    shown = page.inner_text("[data-testid=infer-errors]")
    assert "holiday.mp4: the video cannot be decoded" in shown
    assert "VALIDATION_ERROR" in shown
    heard = [a["text"] for a in announcements(page)]
    assert any("VALIDATION_ERROR" in text for text in heard), heard
    assert not Job.objects.exists()
    assert not any((storage / "uploads" / "infer").iterdir())
    audit.check(page, "video refused")
    assert page.script_errors == []


def test_the_webhooks_page_is_clean_under_axe_empty_with_deliveries_and_refused(
    open_page: Callable[..., Any], audit: AxeAudit, admin: User
) -> None:
    from webhooks.models import Webhook, WebhookDelivery

    page = open_page("/account/webhooks/", user=admin)
    audit.check(page, "webhooks empty")
    page.fill("#id_webhook_url", "ftp://example.org/hook")
    page.evaluate("document.querySelector('#id_webhook_url').type = 'text'")
    page.press("#id_webhook_url", "Enter")
    page.wait_for_selector("[data-testid=webhook-error]")
    audit.check(page, "webhook refused")
    page.context.close()

    hook = Webhook.objects.create(
        owner=admin, url="http://127.0.0.1:9/hook", events=["job.finished"], secret="s"
    )
    for state, code in (("delivered", 200), ("pending", 500), ("failed", None)):
        WebhookDelivery.objects.create(
            webhook=hook,
            event="job.finished",
            event_key=f"job:{state}",
            payload={},
            state=state,
            attempts=1,
            last_status_code=code,
            last_error="" if code == 200 else "HTTP 500",
        )
    page = open_page("/account/webhooks/", user=admin)
    page.wait_for_selector("[data-testid=delivery-log]")
    audit.check(page, "webhooks with deliveries")
    assert page.script_errors == []
    _shot(page, "webhooks")


def test_the_annotated_video_plays_in_the_browser_and_the_timeline_has_a_bar_per_frame(
    open_page: Callable[..., Any], owner: User, storage: Path
) -> None:
    """Chromium plays what the worker writes for the player (VP8 WebM; ADR 0030)."""
    from gpu_service.workloads.infer.media import write_videos

    job = Job.objects.create(
        owner=owner, kind="infer", state="succeeded", dispatched_at=timezone.now()
    )
    folder = storage / "jobs" / str(job.id)
    folder.mkdir(parents=True)
    frames = []
    from PIL import Image

    for i in range(6):
        path = folder / f"frame-{i}.png"
        Image.new("RGB", (96, 64), (40 * i, 80, 120)).save(path)
        frames.append(path)
    mp4, webm = write_videos(images=frames, fps=2.0, target=folder / "annotated")
    _write(
        lambda: Job.objects.filter(id=job.id).update(
            result={
                "model": "a" * 64,
                "images": [],
                "images_per_second": 1.0,
                "format": "pt",
                "export": None,
                "video": {
                    "source": "uploads/clip.mp4",
                    "fps_sampled": 2.0,
                    "frames": [{"index": i, "time_s": i / 2, "count": i % 3} for i in range(6)],
                    "annotated_video": str(mp4),
                    "annotated_webm": str(webm),
                    "detections_path": str(folder / "frames.json"),
                },
            }
        )
    )

    page = open_page(f"/jobs/{job.id}/", user=owner)
    page.wait_for_function(
        "() => { const v = document.querySelector('[data-testid=video-player]');"
        " return v && v.readyState >= 2 && v.videoWidth === 96; }"
    )
    assert page.evaluate("document.querySelector('[data-testid=video-player]').duration") == 3
    assert page.locator("[data-testid=video-timeline] rect").count() == 6
    assert page.script_errors == []
