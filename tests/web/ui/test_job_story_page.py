"""The job page tells the job's story: waiting for the GPU service, attempts and resumes,
a cancel confirmed first and shown as a cancel (not an error), and an ended job that can
run again or be cloned into its form."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from jobs.models import Job
from usage.models import AttemptUsage


def page(client: Client, job: Job) -> str:
    response = client.get(reverse("ui:job_detail", kwargs={"job_id": job.id}))
    assert response.status_code == 200
    return response.content.decode()


def status(client: Client, job: Job) -> dict:
    return client.get(reverse("ui:job_status", kwargs={"job_id": job.id})).json()


def visible(html: str, testid: str) -> bool:
    tag = re.search(rf'<[^>]*data-testid="{testid}"[^>]*>', html)
    assert tag is not None, testid
    return " hidden" not in tag.group(0)


# ---- waiting for the GPU service ----


def test_a_job_waiting_for_an_unreachable_gpu_service_says_since_when_and_which_attempt(
    make_training_job, owner_client, owner, dataset
):
    job = make_training_job(
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
    since = timezone.localtime(job.created_at).strftime("%Y-%m-%d %H:%M:%S")
    html = page(owner_client, job)
    assert visible(html, "job-waiting")
    assert f"Waiting for the GPU service since {since}, attempt 4" in html
    assert "The next attempt is at" in html
    assert "cannot be reached right now" in html
    # The live region the page's script keeps current reads the same from the status JSON.
    assert 'id="job-story" aria-live="polite"' in html
    story = status(owner_client, job)["story"]
    assert story["waiting"].startswith(f"Waiting for the GPU service since {since}, attempt 4")


def test_a_job_delivered_at_the_first_try_says_nothing_about_waiting(
    owner_client, running_training
):
    html = page(owner_client, running_training)
    assert not visible(html, "job-waiting")
    assert status(owner_client, running_training)["story"]["waiting"] is None


# ---- attempts and resumes ----


@pytest.fixture
def resumed_training(make_training_job, owner, dataset) -> Job:
    """Attempt 1 ran epochs 1-6 of seed 42 and was interrupted; attempt 2 resumed."""
    first_start = timezone.now() - timedelta(minutes=30)
    interrupted = first_start + timedelta(minutes=12)
    epochs = [{"seed": 42, "epoch": e, "mAP50": 0.1 * e, "attempt": 1} for e in range(1, 7)]
    epochs.append({"seed": 42, "epoch": 7, "mAP50": 0.7, "attempt": 2})
    job = make_training_job(
        owner=owner,
        dataset=dataset,
        started_at=interrupted + timedelta(minutes=1),
        metrics={"epochs": epochs},
    )
    AttemptUsage.objects.create(
        job=job,
        attempt=1,
        gpus=1,
        held_from=first_start,
        held_until=interrupted,
        gpu_seconds=720.0,
        energy_wh=1.0,
        energy_source="modelled",
    )
    return job


def at(value) -> str:
    return timezone.localtime(value).strftime("%Y-%m-%d %H:%M:%S")


def test_a_resumed_training_says_where_it_was_interrupted_and_that_it_resumed(
    owner_client, resumed_training
):
    usage = resumed_training.usage.get()
    html = page(owner_client, resumed_training)
    assert visible(html, "job-attempts")
    assert (
        f"Attempt 1 started {at(usage.held_from)} and was interrupted at "
        f"{at(usage.held_until)}, after epoch 6 of seed 42."
    ) in html
    assert f"Attempt 2 resumed from its checkpoint at {at(resumed_training.started_at)}." in html
    # The start time does not silently change: the first start and the latest, both.
    first = re.search(r'data-testid="job-first-started">([^<]+)<', html).group(1)
    latest = re.search(r'data-testid="job-latest-started">([^<]+)<', html).group(1)
    assert first == at(usage.held_from)
    assert latest == at(resumed_training.started_at)
    assert status(owner_client, resumed_training)["story"]["attempts"][0].startswith(
        "Attempt 1 started"
    )


def test_a_training_queued_again_after_an_interruption_waits_to_resume(
    owner_client, resumed_training
):
    Job.objects.filter(id=resumed_training.id).update(state="queued")
    html = page(owner_client, resumed_training)
    assert "Attempt 2 waits for its GPUs to resume from its checkpoint." in html


def test_a_job_that_ran_once_has_no_attempt_story(owner_client, finished_training):
    html = page(owner_client, finished_training)
    assert not visible(html, "job-attempts")
    assert 'data-testid="job-first-started"' not in html


# ---- cancel: confirmed first, then shown as a cancel ----


def test_cancel_on_the_job_page_leads_to_a_confirmation_that_works_without_script(
    owner_client, running_training
):
    html = page(owner_client, running_training)
    cancel_url = reverse("ui:job_cancel", kwargs={"job_id": running_training.id})
    assert re.search(rf'<a [^>]*href="{cancel_url}"[^>]*data-testid="job-cancel"', html)
    confirm = owner_client.get(cancel_url)
    assert confirm.status_code == 200
    text = confirm.content.decode()
    assert "<h1>Cancel this job?</h1>" in text
    assert re.search(rf'<form method="post" action="{cancel_url}">', text)
    assert 'data-testid="cancel-keep"' in text
    running_training.refresh_from_db()
    assert running_training.state == "running"  # asking is not cancelling


def test_the_confirmation_of_an_ended_job_says_why_it_cannot_be_cancelled(
    owner_client, finished_training
):
    response = owner_client.get(
        reverse("ui:job_cancel", kwargs={"job_id": finished_training.id}), follow=True
    )
    assert b"The job has already succeeded; it cannot be cancelled." in response.content


def test_another_users_job_has_no_confirmation_page(other_client, running_training):
    url = reverse("ui:job_cancel", kwargs={"job_id": running_training.id})
    assert other_client.get(url).status_code == 404


@pytest.fixture
def cancelled_training(make_training_job, owner, dataset, storage) -> Job:
    job = make_training_job(
        owner=owner,
        dataset=dataset,
        state="cancelled",
        finished_at=timezone.now(),
        error_code="CANCELLED",
        error_message="The job was cancelled.",
    )
    folder = storage / "jobs" / str(job.id)
    folder.mkdir(parents=True)
    (folder / "job.log").write_text(
        "epoch 2 done\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 3, in <module>\n'
        "    trainer.train()\n"
        "KeyboardInterrupt\n"
        "worker stopped\n"
    )
    return job


def test_a_cancelled_job_looks_cancelled_not_failed(owner_client, cancelled_training):
    html = page(owner_client, cancelled_training)
    assert not visible(html, "job-error")
    assert 'class="badge badge-cancelled"' in html
    assert "Cancelled at " in html
    assert "progressbar" in html
    assert ' bad"' not in html  # the bar is not drawn as a failure


def test_a_cancelled_jobs_log_does_not_end_on_the_stops_traceback(owner_client, cancelled_training):
    html = page(owner_client, cancelled_training)
    log = re.search(r'<pre id="job-log"[^>]*>(.*?)</pre>', html, re.S).group(1)
    assert "Traceback" not in log
    assert "KeyboardInterrupt" not in log
    assert log.strip().splitlines()[-1] == "worker stopped"
    assert "folded below" in log
    assert visible(html, "job-log-folded")  # still there for whoever wants it


def test_a_failed_jobs_traceback_stays_in_its_log(
    make_training_job, owner_client, owner, dataset, storage
):
    job = make_training_job(
        owner=owner,
        dataset=dataset,
        state="failed",
        finished_at=timezone.now(),
        error_code="JOB_FAILED",
        error_message="The job failed.",
    )
    folder = storage / "jobs" / str(job.id)
    folder.mkdir(parents=True)
    (folder / "job.log").write_text("Traceback (most recent call last):\nValueError: bad\n")
    html = page(owner_client, job)
    assert visible(html, "job-error")
    assert "ValueError: bad" in re.search(r'<pre id="job-log"[^>]*>(.*?)</pre>', html, re.S).group(
        1
    )


# ---- ended jobs: run again, clone with changes, no placeholders for running jobs ----


@pytest.fixture
def failed_training(make_training_job, owner, dataset) -> Job:
    return make_training_job(
        owner=owner,
        dataset=dataset,
        state="failed",
        finished_at=timezone.now(),
        progress={},
        metrics={},
        error_code="CUDA_OOM",
        error_message="The GPU ran out of memory; try a smaller batch size or image size.",
        spec={
            "model": "yolov8s",
            "epochs": 7,
            "imgsz": 96,
            "batch": 8,
            "seeds": [3, 5],
            "lr0": 0.02,
        },
        gpus=2,
    )


def test_a_failed_job_offers_run_again_and_clone_and_no_running_placeholders(
    owner_client, failed_training
):
    html = page(owner_client, failed_training)
    assert 'data-testid="job-run-again"' in html
    assert f'href="/train/?from={failed_training.id}"' in html
    assert "The chart appears after the first epoch" not in html
    assert "(no output yet)" not in html
    assert "No epoch finished, so there is no chart." in html
    assert "(the job wrote no output)" in html
    assert 'data-testid="job-cancel"' not in html


def test_a_running_job_keeps_its_placeholders_and_offers_no_rerun(
    make_training_job, owner_client, owner, dataset
):
    job = make_training_job(owner=owner, dataset=dataset, metrics={})
    html = page(owner_client, job)
    assert "The chart appears after the first epoch." in html
    assert "(no output yet)" in html
    assert 'data-testid="job-run-again"' not in html


def test_run_again_starts_a_new_job_with_the_same_spec(
    owner_client, failed_training, run_on_commit, fake_gpu
):
    response = owner_client.post(reverse("ui:job_run_again", kwargs={"job_id": failed_training.id}))
    again = Job.objects.exclude(id=failed_training.id).get()
    assert response.status_code == 302
    assert response["Location"] == reverse("ui:job_detail", kwargs={"job_id": again.id})
    assert again.spec == failed_training.spec
    assert (again.kind, again.gpus, again.dataset_id) == ("train", 2, failed_training.dataset_id)
    assert again.owner == failed_training.owner
    failed_training.refresh_from_db()
    assert failed_training.state == "failed"  # the first job is left as it was


def test_a_running_job_does_not_run_again(owner_client, running_training):
    response = owner_client.post(
        reverse("ui:job_run_again", kwargs={"job_id": running_training.id}), follow=True
    )
    assert b"The job is running; run it again once it has ended." in response.content
    assert Job.objects.count() == 1


def test_run_again_refuses_when_the_dataset_is_gone(owner_client, failed_training):
    failed_training.dataset.delete()
    response = owner_client.post(
        reverse("ui:job_run_again", kwargs={"job_id": failed_training.id}), follow=True
    )
    assert b"dataset no longer exists" in response.content
    assert Job.objects.count() == 1


def test_run_again_of_an_inference_copies_its_images_for_the_new_job(
    owner_client, finished_inference, storage, run_on_commit, fake_gpu
):
    # The fixture's images live in uploads/infer/x; a real job's folder is named by its id.
    source = storage / "uploads" / "infer" / str(finished_inference.id)
    (storage / "uploads" / "infer" / "x").rename(source)
    spec = dict(finished_inference.spec)
    spec["images"] = [
        p.replace("/infer/x/", f"/infer/{finished_inference.id}/") for p in spec["images"]
    ]
    Job.objects.filter(id=finished_inference.id).update(spec=spec)
    owner_client.post(reverse("ui:job_run_again", kwargs={"job_id": finished_inference.id}))
    again = Job.objects.exclude(id=finished_inference.id).get()
    copies = list(again.spec["images"])
    assert all(f"/uploads/infer/{again.id}/" in p for p in copies)
    assert [p.rsplit("/", 1)[-1] for p in copies] == ["0000_a.png", "0001_b.png"]
    for copy, original in zip(copies, spec["images"], strict=True):
        assert Path(copy).read_bytes() == Path(original).read_bytes()
    assert again.spec["conf"] == 0.25


def test_clone_with_changes_opens_the_training_form_filled_from_the_spec(
    owner_client, failed_training
):
    html = owner_client.get(f"/train/?from={failed_training.id}").content.decode()
    assert re.search(r'name="epochs" value="7"', html)
    assert re.search(r'name="imgsz" value="96"', html)
    assert re.search(r'name="batch" value="8"', html)
    assert re.search(r'name="seeds" value="3, 5"', html)
    assert re.search(r'name="gpus" value="2"', html)
    assert re.search(rf'<option value="{failed_training.dataset_id}" selected>', html)
    assert re.search(r'<option value="yolov8s" selected>', html)
    assert "Pre-filled from job" in html


def test_clone_of_another_users_job_is_not_found(other_client, failed_training):
    assert other_client.get(f"/train/?from={failed_training.id}").status_code == 404


def test_clone_with_changes_of_an_inference_fills_its_settings(owner_client, finished_inference):
    html = page(owner_client, finished_inference)
    assert f'href="/infer/?from={finished_inference.id}"' in html
    form = owner_client.get(f"/infer/?from={finished_inference.id}").content.decode()
    assert 'name="conf" min="0" max="1" step="any" placeholder="0.25" value="0.25"' in form
    assert re.search(rf'<option value="{finished_inference.model_version_id}"[^>]* selected>', form)
    assert "choose the images again" in form


# ---- links ----


def test_every_page_links_to_the_api_documentation(owner_client, running_training):
    html = page(owner_client, running_training)
    assert re.search(r'<a href="/api/docs/" data-testid="api-docs-link">', html)
    assert owner_client.get("/api/docs/").status_code == 200
