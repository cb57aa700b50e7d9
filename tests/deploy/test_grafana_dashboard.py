"""The provisioned Grafana dashboard: the panels the issue asks for, queries on contract
metrics only, wired to the provisioned data source and to the mounted folder."""

from __future__ import annotations

import json
import re

import yaml

from tests.deploy.deploy_files import (
    ROOT,
    compose,
    contract_name,
    metrics_contract,
    promql_metric_names,
)

GRAFANA = ROOT / "deploy" / "grafana"


def dashboard() -> dict:
    return json.loads((GRAFANA / "dashboards" / "carril.json").read_text())


def panels() -> list[dict]:
    return [panel for panel in dashboard()["panels"] if panel["type"] != "row"]


def expressions() -> list[str]:
    return [target["expr"] for panel in panels() for target in panel["targets"]]


def test_every_query_uses_only_metrics_from_the_contract():
    contract = metrics_contract()
    for expr in expressions():
        for series in promql_metric_names(expr):
            assert contract_name(series=series, contract=contract), f"{series} in {expr}"
    for variable in dashboard()["templating"]["list"]:
        metric = re.match(r"label_values\((\w+),", variable["definition"]).group(1)
        assert metric in contract


def test_the_dashboard_shows_gpus_lanes_queue_and_job_durations_and_outcomes():
    used = {series for expr in expressions() for series in promql_metric_names(expr)}
    required = {
        "DCGM_FI_DEV_GPU_UTIL",  # GPU utilization
        "DCGM_FI_DEV_FB_USED",  # GPU memory
        "DCGM_FI_DEV_FB_FREE",
        "carril_lane_held",  # lanes
        "carril_queue_depth",  # queue depth
        "carril_job_run_seconds_bucket",  # job durations
        "carril_jobs_total",  # outcomes
    }
    assert required <= used, sorted(required - used)


def test_every_panel_reads_the_provisioned_prometheus_data_source():
    datasources = yaml.safe_load(
        (GRAFANA / "provisioning" / "datasources" / "prometheus.yml").read_text()
    )["datasources"]
    (prometheus,) = datasources
    assert prometheus["url"] == "http://prometheus:9090"
    for panel in panels():
        assert panel["datasource"]["uid"] == prometheus["uid"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == prometheus["uid"], panel["title"]


def test_panels_have_unique_ids_and_do_not_overlap():
    ids = [panel["id"] for panel in dashboard()["panels"]]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for panel in dashboard()["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        mine = {
            (x, y)
            for x in range(grid["x"], grid["x"] + grid["w"])
            for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not cells & mine, panel["title"]
        cells |= mine


def test_the_provider_reads_the_folder_compose_mounts_the_dashboard_into():
    provider = yaml.safe_load((GRAFANA / "provisioning" / "dashboards" / "carril.yml").read_text())
    (source,) = provider["providers"]
    mounts = compose()["services"]["grafana"]["volumes"]
    assert f"./deploy/grafana/dashboards:{source['options']['path']}:ro" in mounts
    assert "./deploy/grafana/provisioning:/etc/grafana/provisioning:ro" in mounts
