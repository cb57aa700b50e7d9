"""The alert rules: the five situations the issue names, every rule on contract metrics
with a severity and a runbook section that exists, the scrape config matching Compose,
and promtool's own unit tests passing."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from tests.deploy.deploy_files import (
    ROOT,
    contract_name,
    markdown_anchors,
    metrics_contract,
    promql_metric_names,
)


def rules() -> dict[str, dict]:
    groups = yaml.safe_load((ROOT / "deploy" / "prometheus" / "alerts.yml").read_text())
    return {rule["alert"]: rule for group in groups["groups"] for rule in group["rules"]}


def seconds(duration: str) -> int:
    units = {"s": 1, "m": 60, "h": 3600}
    return int(duration[:-1]) * units[duration[-1]]


def test_every_alert_uses_only_metrics_from_the_contract():
    contract = metrics_contract()
    for name, rule in rules().items():
        for series in promql_metric_names(rule["expr"]):
            assert contract_name(series=series, contract=contract), f"{name}: {series}"


def test_every_alert_has_a_severity_a_delay_and_a_runbook_that_exists():
    anchors = markdown_anchors(name="docs/operations.md")
    for name, rule in rules().items():
        assert rule["labels"]["severity"] in {"warning", "critical"}, name
        assert seconds(rule["for"]) >= 60, name
        assert rule["annotations"]["summary"], name
        assert rule["annotations"]["description"], name
        page, _, anchor = rule["annotations"]["runbook_url"].partition("#")
        assert page == "docs/operations.md", name
        assert anchor == name.lower(), name
        assert anchor in anchors, name


def test_it_alerts_on_a_gpu_above_85_degrees_for_5_minutes():
    rule = rules()["CarrilGpuTooHot"]
    assert "DCGM_FI_DEV_GPU_TEMP" in rule["expr"]
    assert rule["expr"].endswith("> 85")
    assert rule["for"] == "5m"


def test_it_alerts_on_a_gpu_under_20_percent_for_30_minutes_while_jobs_wait():
    rule = rules()["CarrilGpuIdleWhileJobsWait"]
    assert "DCGM_FI_DEV_GPU_UTIL" in rule["expr"]
    assert "< 20" in rule["expr"]
    assert "sum(carril_queue_depth) > 0" in rule["expr"]
    assert rule["for"] == "30m"


def test_it_alerts_when_the_gpu_service_is_down_or_never_scraped():
    rule = rules()["CarrilGpuServiceDown"]
    assert 'up{job="carril-gpu"} == 0' in rule["expr"]
    assert 'absent(up{job="carril-gpu"})' in rule["expr"]
    assert rule["labels"]["severity"] == "critical"


def test_it_alerts_when_dispatch_keeps_failing():
    assert "carril_web_dispatch_failures_total" in rules()["CarrilDispatchFailing"]["expr"]


def test_it_alerts_when_jobs_wait_longer_than_a_bound_even_if_none_is_ever_admitted():
    assert "carril_admission_wait_seconds_bucket" in rules()["CarrilAdmissionWaitHigh"]["expr"]
    stalled = rules()["CarrilQueueStalled"]["expr"]
    assert "carril_queue_depth" in stalled
    assert "carril_admission_wait_seconds_count" in stalled


def test_prometheus_scrapes_both_services_at_their_compose_addresses_and_loads_the_rules():
    config = yaml.safe_load((ROOT / "deploy" / "prometheus" / "prometheus.yml").read_text())
    targets = {
        job["job_name"]: [t for c in job["static_configs"] for t in c["targets"]]
        for job in config["scrape_configs"]
    }
    assert targets["carril-gpu"] == ["gpu:8001"]
    assert targets["carril-web"] == ["web:8000"]
    assert config["rule_files"] == ["alerts.yml"]


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian: prometheus)")
def test_promtool_unit_tests_show_each_alert_firing_and_staying_quiet():
    done = subprocess.run(
        ["promtool", "test", "rules", "alerts.test.yml"],
        cwd=ROOT / "deploy" / "prometheus",
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_alert_has_a_promtool_unit_test():
    tests = yaml.safe_load((ROOT / "deploy" / "prometheus" / "alerts.test.yml").read_text())
    tested = {
        case["alertname"]
        for test in tests["tests"]
        for case in test["alert_rule_test"]
        if case.get("exp_alerts")
    }
    assert tested == set(rules())
