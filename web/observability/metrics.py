"""The web app's Prometheus metrics (names are a contract with alerts and dashboards).

Request metrics live in this process. Job counts, dispatch failures and the reconciler's
lag are read from the database at scrape time, because the reconciler runs in another
process and every web worker must report the same numbers.
"""

from __future__ import annotations

import time

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

# Series labelled by user (GPU usage by username): served only to a scraper with
# CARRIL_METRICS_TOKEN, never on the open development /metrics, where any local user could
# read what `usage?user=` refuses them (observability.views).
PER_USER = CollectorRegistry(auto_describe=True)

HTTP_REQUESTS = Counter(
    "carril_web_http_requests",
    "HTTP requests served by the web app.",
    ["method", "route", "status"],
)
HTTP_REQUEST_DURATION = Histogram(
    "carril_web_http_request_duration_seconds",
    "Time to serve an HTTP request.",
    ["method", "route"],
)


class DatabaseCollector(Collector):
    def describe(self):
        yield GaugeMetricFamily("carril_web_jobs", "Jobs by state.", labels=["state"])
        yield CounterMetricFamily(
            "carril_web_dispatch_failures", "Failed deliveries of jobs to the GPU service."
        )
        yield GaugeMetricFamily("carril_web_reconciler_lag_seconds", "Reconciler lag.")

    def collect(self):
        from jobs.selectors import job_counts_by_state, reconciler_status

        jobs = GaugeMetricFamily("carril_web_jobs", "Jobs by state.", labels=["state"])
        for state, count in job_counts_by_state().items():
            jobs.add_metric([state], count)
        yield jobs
        status = reconciler_status()
        failures = CounterMetricFamily(
            "carril_web_dispatch_failures", "Failed deliveries of jobs to the GPU service."
        )
        failures.add_metric([], status.dispatch_failures)
        yield failures
        lag = GaugeMetricFamily(
            "carril_web_reconciler_lag_seconds",
            "Seconds since the reconciler's last completed pass (+Inf if never).",
        )
        last = status.last_pass_at
        lag.add_metric([], (time.time() - last.timestamp()) if last else float("inf"))
        yield lag


_collector: DatabaseCollector | None = None


def register_db_collector() -> None:
    global _collector
    if _collector is None:
        _collector = DatabaseCollector()
        REGISTRY.register(_collector)
