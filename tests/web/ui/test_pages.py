"""The UI's page views: sign-in, scoping, CSRF, and what each page shows its owner."""

from __future__ import annotations

import json
import re

import pytest
from datasets.models import Dataset, DatasetState
from django.test import Client
from django.urls import reverse
from django.utils.html import escape
from jobs.models import Job
from registry.models import ModelVersion

PASSWORD = "a-long-test-password-81"  # as in conftest.py

PAGES = [
    "ui:dashboard",
    "ui:datasets",
    "ui:train_new",
    "ui:infer_new",
    "ui:jobs",
    "ui:models",
    "ui:account",
]


def _csrf_in_every_post_form(html: str) -> bool:
    forms = re.findall(r"<form[^>]*method=\"post\"[^>]*>(.*?)</form>", html, flags=re.S)
    return bool(forms) and all("csrfmiddlewaretoken" in body for body in forms)


@pytest.mark.django_db
@pytest.mark.parametrize("name", PAGES)
def test_it_sends_an_anonymous_visitor_to_sign_in(name: str) -> None:
    response = Client().get(reverse(name))
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


@pytest.mark.django_db
def test_it_sends_an_anonymous_status_poll_to_sign_in(running_training: Job) -> None:
    response = Client().get(reverse("ui:job_status", kwargs={"job_id": running_training.id}))
    assert response.status_code == 302


def test_it_shows_the_sign_in_form_with_a_csrf_token(db: None) -> None:
    response = Client(enforce_csrf_checks=True).get(reverse("ui:login"))
    assert response.status_code == 200
    assert _csrf_in_every_post_form(response.content.decode())


def test_it_signs_a_user_in_and_lands_on_the_dashboard(owner) -> None:
    client = Client()
    response = client.post(
        reverse("ui:login"), {"username": "olivia", "password": PASSWORD}, follow=True
    )
    assert response.redirect_chain[-1][0] == "/"
    assert b'data-testid="signed-in-as"' in response.content


def test_it_refuses_a_wrong_password(owner) -> None:
    response = Client().post(reverse("ui:login"), {"username": "olivia", "password": "nope"})
    assert response.status_code == 200
    assert b'data-testid="login-error"' in response.content


def test_it_signs_out_only_by_post(owner_client: Client) -> None:
    assert owner_client.get(reverse("ui:logout")).status_code == 405
    response = owner_client.post(reverse("ui:logout"))
    assert response.status_code == 302
    assert owner_client.get(reverse("ui:dashboard")).status_code == 302


@pytest.mark.parametrize("name", PAGES)
def test_it_renders_every_page_with_csrf_on_its_forms(name: str, admin_client_: Client) -> None:
    response = admin_client_.get(reverse(name))
    assert response.status_code == 200
    assert _csrf_in_every_post_form(response.content.decode())


def test_the_dashboard_shows_each_gpu_its_lane_holder_and_the_runtime(
    owner_client: Client, running_training: Job, gpus_seen
) -> None:
    html = owner_client.get(reverse("ui:dashboard")).content.decode()
    assert html.count('data-testid="gpu-card"') == 2
    assert 'data-testid="simulated-banner"' in html
    # The lane holder is the owner's job: linked to its page.
    assert reverse("ui:job_detail", kwargs={"job_id": running_training.id}) in html
    assert "lane free" in html
    assert 'style="width: 25%"' in html  # 4000 of 16000 MiB


def test_the_dashboard_names_the_host_of_each_gpu_on_a_cluster(
    owner_client: Client, gpus_seen
) -> None:
    gpus = gpus_seen.gpus
    for gpu, host in zip(gpus["gpus"], ("gpu-a", "gpu-b"), strict=True):
        gpu["host"] = host
    gpus_seen.save(update_fields=["gpus"])
    html = owner_client.get(reverse("ui:dashboard")).content.decode()
    hosts = re.findall(r'data-testid="gpu-host">on ([\w-]+)<', html)
    assert hosts == ["gpu-a", "gpu-b"]


def test_the_dashboard_does_not_link_another_users_job(
    other_client: Client, running_training, gpus_seen
) -> None:
    html = other_client.get(reverse("ui:dashboard")).content.decode()
    assert reverse("ui:job_detail", kwargs={"job_id": running_training.id}) not in html
    assert str(running_training.id)[:8] not in html  # nor its id: only that the lane is busy
    assert "busy (another user&#x27;s job)" in html


def test_the_dashboard_says_when_the_gpu_service_has_not_answered(owner_client: Client) -> None:
    html = owner_client.get(reverse("ui:dashboard")).content.decode()
    assert 'data-testid="gpu-service-unreachable"' in html


def test_the_dashboard_status_view_renders_its_fragments(owner_client: Client, gpus_seen) -> None:
    data = owner_client.get(reverse("ui:dashboard_status")).json()
    assert data["runtime"] == "simulated"
    assert data["gpus_html"].count('data-testid="gpu-card"') == 2
    # A queued job the web app does not know: shown as busy, without its GPU service id.
    assert "busy" in data["queue_html"]
    assert "gpu-job-9" not in data["queue_html"]


def test_a_dataset_page_shows_the_report_and_samples_with_boxes(
    owner_client: Client, dataset
) -> None:
    html = owner_client.get(
        reverse("ui:dataset_detail", kwargs={"dataset_id": dataset.id})
    ).content.decode()
    assert html.count('data-testid="sample-image"') == 2
    boxes = re.findall(r'data-boxes="([^"]*)"', html)
    counts = sorted(len(json.loads(b.replace("&quot;", '"'))["boxes"]) for b in boxes)
    assert counts == [1, 2]
    assert 'data-testid="dataset-images">2<' in html


def test_a_dataset_page_read_while_its_files_move_into_place_shows_no_samples_yet(
    owner_client: Client, dataset
) -> None:
    # The files are in place; the row does not say `ready` nor name the classes yet.
    Dataset.objects.filter(id=dataset.id).update(state=DatasetState.VALIDATING, classes=[])
    response = owner_client.get(reverse("ui:dataset_detail", kwargs={"dataset_id": dataset.id}))
    assert response.status_code == 200
    assert 'data-testid="sample-image"' not in response.content.decode()


def test_a_dataset_image_is_served_to_its_owner_only(
    owner_client: Client, other_client: Client, dataset
) -> None:
    url = reverse(
        "ui:dataset_image",
        kwargs={"dataset_id": dataset.id, "split": "train", "name": "train_0.png"},
    )
    response = owner_client.get(url)
    assert response.status_code == 200
    assert b"".join(response.streaming_content).startswith(b"\x89PNG")
    assert other_client.get(url).status_code == 404


def test_a_dataset_image_refuses_a_path_outside_its_split(owner_client: Client, dataset) -> None:
    url = reverse(
        "ui:dataset_image",
        kwargs={"dataset_id": dataset.id, "split": "train", "name": "..data.yaml"},
    )
    assert owner_client.get(url).status_code == 404


def test_another_users_dataset_answers_404(other_client: Client, dataset) -> None:
    assert (
        other_client.get(
            reverse("ui:dataset_detail", kwargs={"dataset_id": dataset.id})
        ).status_code
        == 404
    )


def test_the_owner_deletes_a_dataset_with_a_post(owner_client: Client, dataset) -> None:
    response = owner_client.post(reverse("ui:dataset_delete", kwargs={"dataset_id": dataset.id}))
    assert response.status_code == 302
    assert not dataset.path.exists()


@pytest.mark.parametrize("name", ["ui:job_detail", "ui:job_status", "ui:job_detections"])
def test_another_users_job_answers_404(
    name: str, other_client: Client, running_training: Job
) -> None:
    assert (
        other_client.get(reverse(name, kwargs={"job_id": running_training.id})).status_code == 404
    )


def test_staff_see_another_users_job(running_training: Job, db: None) -> None:
    from django.contrib.auth.models import User

    staff = User.objects.create_user("sam", password=PASSWORD, is_staff=True)
    client = Client()
    client.force_login(staff)
    assert (
        client.get(reverse("ui:job_detail", kwargs={"job_id": running_training.id})).status_code
        == 200
    )


def test_a_running_job_page_polls_and_shows_progress(
    owner_client: Client, running_training: Job
) -> None:
    html = owner_client.get(
        reverse("ui:job_detail", kwargs={"job_id": running_training.id})
    ).content.decode()
    config = json.loads(
        re.search(r'<script id="job-config" type="application/json">(.*?)</script>', html).group(1)
    )
    assert config["state"] == "running"
    # The page's script learns which states end a job from the server, not a list of its own.
    assert config["states"] == {
        "terminal": ["cancelled", "failed", "lost", "succeeded"],
        "cancellable": ["queued", "running", "submitted"],
        "failure": ["failed", "lost"],
        "success": ["succeeded"],
    }
    assert config["status_url"] == reverse("ui:job_status", kwargs={"job_id": running_training.id})
    assert len(config["epochs"]) == 2
    assert 'data-testid="job-cancel"' in html
    assert "40.0%" in html
    assert 'id="fig-epoch" data-testid="fig-epoch">2 / 2<' in html


def test_the_job_page_script_lists_no_job_state_of_its_own() -> None:
    from pathlib import Path

    from jobs.models import JobState

    script = (Path(__file__).resolve().parents[3] / "web/ui/static/ui/js/job.js").read_text()
    for state in JobState.values:
        assert f'"{state}"' not in script, state


def test_the_status_view_reports_state_progress_epochs_and_log(
    owner_client: Client, running_training: Job, storage
) -> None:
    folder = storage / "jobs" / str(running_training.id)
    folder.mkdir(parents=True)
    (folder / "job.log").write_text("epoch 1 done\nepoch 2 done\n")
    data = owner_client.get(reverse("ui:job_status", kwargs={"job_id": running_training.id})).json()
    assert data["job"]["state"] == "running"
    assert "running" not in data["states"]["terminal"]
    assert data["job"]["progress"]["fraction"] == 0.4
    assert len(data["job"]["metrics"]["epochs"]) == 2
    assert data["log"] == ["epoch 1 done", "epoch 2 done"]


def test_a_finished_training_marks_the_best_seed_and_links_its_model_version(
    owner_client: Client, finished_training: Job
) -> None:
    html = owner_client.get(
        reverse("ui:job_detail", kwargs={"job_id": finished_training.id})
    ).content.decode()
    config = json.loads(
        re.search(r'<script id="job-config" type="application/json">(.*?)</script>', html).group(1)
    )
    assert config["state"] in config["states"]["terminal"]
    best = re.search(
        r'<tr class="best" data-testid="best-seed">\s*<td class="mono">(\d+)</td>', html
    )
    assert best is not None
    assert best.group(1) == "7"
    assert 'data-testid="model-version-link"' in html
    assert "best by validation mAP50-95" in html
    assert 'data-testid="job-cancel"' not in html


def test_the_owner_cancels_a_job_that_was_not_delivered_yet(
    make_training_job, owner_client: Client, owner, dataset
) -> None:
    job = make_training_job(owner=owner, dataset=dataset, state="submitted", dispatched_at=None)
    response = owner_client.post(reverse("ui:job_cancel", kwargs={"job_id": job.id}))
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.state == "cancelled"


def test_cancelling_a_finished_job_says_why_not(
    owner_client: Client, finished_training: Job
) -> None:
    response = owner_client.post(
        reverse("ui:job_cancel", kwargs={"job_id": finished_training.id}), follow=True
    )
    assert b"cannot be cancelled" in response.content


def test_another_user_cannot_cancel_a_job(other_client: Client, running_training: Job) -> None:
    response = other_client.post(reverse("ui:job_cancel", kwargs={"job_id": running_training.id}))
    assert response.status_code == 404
    running_training.refresh_from_db()
    assert running_training.state == "running"


def test_the_training_form_creates_a_job_and_opens_its_page(owner_client: Client, dataset) -> None:
    response = owner_client.post(
        reverse("ui:train_new"),
        {
            "dataset": str(dataset.id),
            "model": "yolov8n",
            "epochs": 1,
            "imgsz": 64,
            "batch": 2,
            "seeds": "42, 7",
            "gpus": 1,
        },
    )
    job = Job.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("ui:job_detail", kwargs={"job_id": job.id})
    assert job.state == "submitted"
    assert job.spec["seeds"] == [42, 7]
    assert job.spec["dataset"] == str(dataset.path)


def test_the_training_form_refuses_another_users_dataset(other_client: Client, dataset) -> None:
    response = other_client.post(
        reverse("ui:train_new"),
        {
            "dataset": str(dataset.id),
            "model": "yolov8n",
            "epochs": 1,
            "imgsz": 64,
            "batch": 2,
            "seeds": "42",
            "gpus": 1,
        },
    )
    assert response.status_code == 400
    assert not Job.objects.exists()


def test_the_training_form_refuses_bad_seeds(owner_client: Client, dataset) -> None:
    response = owner_client.post(
        reverse("ui:train_new"),
        {
            "dataset": str(dataset.id),
            "model": "yolov8n",
            "epochs": 1,
            "imgsz": 64,
            "batch": 2,
            "seeds": "1,1",
            "gpus": 1,
        },
    )
    assert response.status_code == 400
    assert b"Seeds must not repeat." in response.content
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    ("field", "form_value", "api_value"),
    [("imgsz", "100", 100), ("seeds", "1, 1", [1, 1]), ("epochs", "0", 0)],
)
def test_the_training_form_and_the_api_refuse_alike_with_the_same_message(
    owner_client: Client, owner_api, dataset, field, form_value, api_value
) -> None:
    form = {
        "dataset": str(dataset.id),
        "model": "yolov8n",
        "epochs": 1,
        "imgsz": 64,
        "batch": 2,
        "seeds": "1",
        "gpus": 1,
    }
    body = {key: value for key, value in form.items() if key != "seeds"} | {"seeds": [1]}
    api = owner_api.post("/api/v1/jobs/train/", body | {field: api_value}, format="json")
    assert api.status_code == 400
    [message] = api.json()["error"]["details"]["fields"][field]
    page = owner_client.post(reverse("ui:train_new"), form | {field: form_value})
    assert page.status_code == 400
    assert escape(message) in page.content.decode()
    assert not Job.objects.exists()


def test_an_inference_page_shows_the_gallery_and_a_count_matching_its_json(
    owner_client: Client, finished_inference: Job
) -> None:
    html = owner_client.get(
        reverse("ui:job_detail", kwargs={"job_id": finished_inference.id})
    ).content.decode()
    assert html.count('data-testid="gallery-image"') == 2
    assert html.count('data-testid="detection-row"') == 2
    shown = int(re.search(r'data-testid="detection-count">(\d+)<', html).group(1))
    data = owner_client.get(
        reverse("ui:job_detections", kwargs={"job_id": finished_inference.id})
    ).json()
    assert shown == sum(len(image["detections"]) for image in data["images"]) == 2
    image_url = reverse(
        "ui:job_image", kwargs={"job_id": finished_inference.id, "name": "0000_a.png"}
    )
    assert image_url in html
    assert owner_client.get(image_url).status_code == 200


def test_an_inference_image_not_given_to_the_job_answers_404(
    owner_client: Client, finished_inference: Job
) -> None:
    url = reverse("ui:job_image", kwargs={"job_id": finished_inference.id, "name": "..%2Fx.png"})
    assert owner_client.get(url).status_code == 404


def test_the_inference_page_offers_the_serving_version_by_default(
    owner_client: Client, version: ModelVersion
) -> None:
    ModelVersion.objects.filter(id=version.id).update(stage="serving")
    html = owner_client.get(reverse("ui:infer_new")).content.decode()
    assert '<option value="" data-imgsz="">Serving: imported-1</option>' in html


def test_an_ordinary_user_sees_no_stage_forms_and_cannot_change_a_stage(
    owner_client: Client, version: ModelVersion
) -> None:
    html = owner_client.get(reverse("ui:models")).content.decode()
    assert 'data-testid="stage-form"' not in html
    response = owner_client.post(
        reverse("ui:model_stage", kwargs={"version_id": version.id}),
        {"stage": "serving", "reason": "x"},
        follow=True,
    )
    assert b"Only administrators" in response.content
    version.refresh_from_db()
    assert version.stage == "candidate"


def test_an_administrator_promotes_a_version_with_a_reason(
    admin_client_: Client, version: ModelVersion
) -> None:
    response = admin_client_.post(
        reverse("ui:model_stage", kwargs={"version_id": version.id}),
        {"stage": "serving", "reason": "best mAP so far"},
        follow=True,
    )
    version.refresh_from_db()
    assert version.stage == "serving"
    assert b"best mAP so far" in response.content  # in the history table


def test_a_stage_change_without_a_reason_is_refused(
    admin_client_: Client, version: ModelVersion
) -> None:
    admin_client_.post(
        reverse("ui:model_stage", kwargs={"version_id": version.id}),
        {"stage": "serving", "reason": " "},
    )
    version.refresh_from_db()
    assert version.stage == "candidate"


def test_a_missing_page_answers_404_with_the_sites_layout(owner_client: Client) -> None:
    response = owner_client.get("/no-such-page/")
    assert response.status_code == 404
    assert b"Back to the dashboard" in response.content


def test_the_status_view_strips_terminal_colour_codes_from_the_log(
    owner_client: Client, running_training: Job, storage
) -> None:
    (storage / "jobs" / str(running_training.id)).mkdir(parents=True)
    (storage / "jobs" / str(running_training.id) / "job.log").write_text(
        "\x1b[34m\x1b[1mengine/trainer: \x1b[0mok\n"
    )
    data = owner_client.get(reverse("ui:job_status", kwargs={"job_id": running_training.id})).json()
    assert data["log"] == ["engine/trainer: ok"]


def test_the_gallery_shows_the_name_the_user_uploaded(
    owner_client: Client, finished_inference: Job
) -> None:
    html = owner_client.get(
        reverse("ui:job_detail", kwargs={"job_id": finished_inference.id})
    ).content.decode()
    assert '<span class="name">a.png</span>' in html


def test_a_dataset_a_running_job_uses_is_not_deleted(
    owner_client: Client, dataset, running_training: Job
) -> None:
    url = reverse("ui:dataset_delete", kwargs={"dataset_id": dataset.id})
    response = owner_client.post(url, follow=True)
    assert b"A job still uses this dataset" in response.content
    assert dataset.path.exists()


def test_a_new_api_token_is_shown_once_and_works(owner_client: Client) -> None:
    html = owner_client.post(reverse("ui:token_create"), {"name": "ci"}).content.decode()
    secret = re.search(r'data-testid="new-token-secret">([^<]+)<', html).group(1)
    assert Client().get("/api/v1/jobs/", HTTP_AUTHORIZATION=f"Token {secret}").status_code == 200
    again = owner_client.get(reverse("ui:account")).content.decode()
    assert secret not in again
    assert secret[:12] in again  # its prefix, to tell tokens apart


def test_a_revoked_token_stops_working(owner_client: Client) -> None:
    html = owner_client.post(reverse("ui:token_create"), {"name": "ci"}).content.decode()
    secret = re.search(r'data-testid="new-token-secret">([^<]+)<', html).group(1)
    token_id = int(re.search(r"/account/tokens/(\d+)/revoke/", html).group(1))
    owner_client.post(reverse("ui:token_revoke", kwargs={"token_id": token_id}))
    assert Client().get("/api/v1/jobs/", HTTP_AUTHORIZATION=f"Token {secret}").status_code == 401


def test_another_users_token_cannot_be_revoked(owner_client: Client, other_client: Client) -> None:
    html = owner_client.post(reverse("ui:token_create"), {"name": "ci"}).content.decode()
    token_id = int(re.search(r"/account/tokens/(\d+)/revoke/", html).group(1))
    response = other_client.post(reverse("ui:token_revoke", kwargs={"token_id": token_id}))
    assert response.status_code == 404


def test_the_job_list_pages_older_and_newer_by_cursor(owner, owner_client: Client) -> None:
    made = [Job.objects.create(owner=owner, kind="train", state="running") for _ in range(30)]
    first = owner_client.get(reverse("ui:jobs"))
    older = re.search(r'href="([^"]*cursor=[^"]*)">Older</a>', first.content.decode())
    assert older is not None
    assert "Newer</a>" not in first.content.decode()
    second = owner_client.get(older.group(1).replace("&amp;", "&"))
    html = second.content.decode()
    assert second.status_code == 200
    assert "Newer</a>" in html
    assert "Older</a>" not in html  # 30 jobs: 25, then the 5 oldest
    assert all(str(job.id) in html for job in made[:5])
    assert not any(str(job.id) in html for job in made[5:])
