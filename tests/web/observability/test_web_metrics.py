"""The web app's /metrics speaks the names the alert rules and dashboard use."""

from __future__ import annotations

from django.utils import timezone
from jobs.models import Job, ReconcilerStatus
from prometheus_client.parser import text_string_to_metric_families


def scrape(client) -> dict[str, list]:
    text = client.get("/metrics").content.decode()
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def test_it_counts_requests_by_route_pattern_not_by_id(owner, owner_api, anon_api):
    job = Job.objects.create(owner=owner, kind="train", state="running")
    owner_api.get(f"/api/v1/jobs/{job.id}/")
    samples = scrape(anon_api)["carril_web_http_requests"]
    routes = {s.labels["route"] for s in samples if s.name.endswith("_total")}
    assert "/api/v1/jobs/<uuid:job_id>/" in routes
    assert not any(str(job.id) in route for route in routes)
    assert "carril_web_http_request_duration_seconds" in scrape(anon_api)


def test_it_reports_jobs_by_state_dispatch_failures_and_reconciler_lag(owner, anon_api):
    Job.objects.create(owner=owner, kind="train", state="running")
    Job.objects.create(owner=owner, kind="infer", state="running")
    ReconcilerStatus.objects.create(id=1, last_pass_at=timezone.now(), dispatch_failures=3)
    metrics = scrape(anon_api)
    running = next(s for s in metrics["carril_web_jobs"] if s.labels["state"] == "running")
    assert running.value == 2
    failures = metrics["carril_web_dispatch_failures"]
    assert next(s for s in failures if s.name == "carril_web_dispatch_failures_total").value == 3
    lag = metrics["carril_web_reconciler_lag_seconds"][0].value
    assert 0 <= lag < 60


def test_the_lag_is_infinite_before_the_reconciler_ever_ran(anon_api):
    lag = scrape(anon_api)["carril_web_reconciler_lag_seconds"][0].value
    assert lag == float("inf")


def test_every_response_carries_a_request_id_and_keeps_a_sane_one_from_the_caller(anon_api):
    assert len(anon_api.get("/healthz")["X-Request-ID"]) == 32
    assert anon_api.get("/healthz", HTTP_X_REQUEST_ID="abc-123")["X-Request-ID"] == "abc-123"
    assert anon_api.get("/healthz", HTTP_X_REQUEST_ID="bad id\n")["X-Request-ID"] != "bad id\n"
