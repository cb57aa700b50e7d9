"""GPU usage on the web side (issue 16): copied from the job status record by the
reconciler, summed by user, kind, day and month, visible to its owner (administrators:
everyone's), and exported as carril_gpu_seconds_total{user,kind} to a scraper with the
metrics token."""

from __future__ import annotations

from jobs.reconciler import reconcile_once
from usage.models import AttemptUsage

from tests.web.jobs.test_reconciler import delivered_job


def attempt(n: int, *, gpus: int, start: str, end: str, seconds: float) -> dict:
    return {
        "attempt": n,
        "gpus": gpus,
        "held_from": start,
        "held_until": end,
        "gpu_seconds": seconds,
        "energy_wh": seconds * 300 / 3600,
        "energy_source": "modelled",
    }


def finished(owner, fake_gpu, run_on_commit, usage: list[dict], state: str = "succeeded"):
    job = delivered_job(owner, fake_gpu, run_on_commit)
    fake_gpu.set_state(
        job.id,
        state,
        started_at="2026-03-01T10:00:00Z",
        finished_at=usage[-1]["held_until"] if usage else "2026-03-01T11:00:00Z",
        usage=usage,
        result=None,
    )
    reconcile_once(client=fake_gpu.client())
    return job


def one_hour(user, fake_gpu, run_on_commit, *, day: str, gpus: int, seconds: float):
    """A finished job with one attempt that ended at 11:00 on `day`."""
    usage = [
        attempt(1, gpus=gpus, start=f"{day}T10:00:00Z", end=f"{day}T11:00:00Z", seconds=seconds)
    ]
    return finished(user, fake_gpu, run_on_commit, usage)


def test_the_reconciler_copies_each_attempt_once(owner, fake_gpu, run_on_commit):
    usage = [
        attempt(1, gpus=2, start="2026-03-01T10:00:00Z", end="2026-03-01T10:30:00Z", seconds=3600),
        attempt(2, gpus=2, start="2026-03-01T10:31:00Z", end="2026-03-01T11:01:00Z", seconds=3600),
    ]
    job = finished(owner, fake_gpu, run_on_commit, usage, state="failed")
    reconcile_once(client=fake_gpu.client())
    rows = AttemptUsage.objects.filter(job=job).order_by("attempt")
    assert [(r.attempt, r.gpus, r.gpu_seconds) for r in rows] == [(1, 2, 3600.0), (2, 2, 3600.0)]


def test_a_user_sees_their_own_months_sums_by_day_and_kind(
    owner, other, owner_api, fake_gpu, run_on_commit
):
    one_hour(owner, fake_gpu, run_on_commit, day="2026-03-02", gpus=2, seconds=7200)
    one_hour(owner, fake_gpu, run_on_commit, day="2026-04-01", gpus=1, seconds=3600)
    one_hour(other, fake_gpu, run_on_commit, day="2026-03-02", gpus=1, seconds=3600)
    body = owner_api.get("/api/v1/usage/?month=2026-03").json()
    assert body["month"] == "2026-03"
    assert body["user"] == "olivia"
    assert body["totals"]["gpu_hours"] == 2.0
    assert body["totals"]["energy_kwh"] == 0.6  # 7200 GPU-s x 300 W
    assert body["energy_sources"] == ["modelled"]
    assert [r["user"] for r in body["by_user"]] == ["olivia"]
    assert body["by_kind"] == [
        {"kind": "train", "gpu_seconds": 7200.0, "gpu_hours": 2.0, "energy_kwh": 0.6, "attempts": 1}
    ]
    assert len(body["by_day"]) == 31
    assert [d["gpu_hours"] for d in body["by_day"] if d["gpu_hours"]] == [2.0]
    assert body["by_day"][1]["day"] == "2026-03-02"


def test_administrators_see_everyone_and_may_pick_one_user(
    owner, other, admin_api, other_api, fake_gpu, run_on_commit
):
    for user, seconds in ((owner, 7200), (other, 3600)):
        one_hour(user, fake_gpu, run_on_commit, day="2026-03-02", gpus=1, seconds=seconds)
    everyone = admin_api.get("/api/v1/usage/?month=2026-03").json()
    assert everyone["totals"]["gpu_hours"] == 3.0
    assert [(r["user"], r["gpu_hours"]) for r in everyone["by_user"]] == [
        ("olivia", 2.0),
        ("oscar", 1.0),
    ]
    one = admin_api.get("/api/v1/usage/?month=2026-03&user=oscar").json()
    assert one["totals"]["gpu_hours"] == 1.0
    refused = other_api.get("/api/v1/usage/?month=2026-03&user=olivia")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "FORBIDDEN"


def test_a_malformed_month_is_a_validation_error(owner_api):
    response = owner_api.get("/api/v1/usage/?month=2026-13")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "VALIDATION_ERROR"


METRICS_TOKEN = "metrics-token-for-the-usage-tests-4f1c9a"


def test_the_gpu_seconds_counter_sums_by_user_and_kind_for_the_metrics_token(
    owner, fake_gpu, run_on_commit, client, settings
):
    settings.CARRIL_METRICS_TOKEN = METRICS_TOKEN
    one_hour(owner, fake_gpu, run_on_commit, day="2026-03-02", gpus=2, seconds=7200)
    text = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {METRICS_TOKEN}").content.decode()
    assert 'carril_gpu_seconds_total{kind="train",user="olivia"} 7200.0' in text


def test_open_development_metrics_show_nobodys_gpu_usage(
    owner, fake_gpu, run_on_commit, client, settings
):
    # No token configured: /metrics is open to every local user, who may not see another
    # user's usage through the API either.
    settings.CARRIL_METRICS_TOKEN = ""
    one_hour(owner, fake_gpu, run_on_commit, day="2026-03-02", gpus=2, seconds=7200)
    response = client.get("/metrics")
    assert response.status_code == 200
    text = response.content.decode()
    assert "carril_web_jobs" in text  # the other metrics are there
    assert "olivia" not in text
    assert "carril_gpu_seconds" not in text


def test_the_usage_page_shows_the_months_gpu_hours(owner, client, fake_gpu, run_on_commit):
    one_hour(owner, fake_gpu, run_on_commit, day="2026-03-02", gpus=2, seconds=7200)
    client.force_login(owner)
    page = client.get("/usage/?month=2026-03")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-testid="usage-gpu-hours">2.0000<' in html
    assert 'id="usage-data"' in html
    assert client.get("/usage/?month=March").status_code == 400
