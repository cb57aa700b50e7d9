"""carril_gpu_seconds_total{user,kind}: GPU-seconds held by finished attempts; a
per-user series, so only a scraper with the metrics token gets it (observability.metrics).

Read from the database at scrape time (like the web's other job metrics): the
reconciler, in another process, writes the rows, and every web worker must report the
same, monotonic, numbers."""

from __future__ import annotations

from observability.metrics import PER_USER
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

HELP = "GPU-seconds held by jobs' attempts (GPUs x lane-holding time), by user and kind."


class GpuSecondsCollector(Collector):
    def describe(self):
        yield CounterMetricFamily("carril_gpu_seconds", HELP, labels=["user", "kind"])

    def collect(self):
        from usage.selectors import gpu_seconds_by_user_and_kind

        family = CounterMetricFamily("carril_gpu_seconds", HELP, labels=["user", "kind"])
        for user, kind, seconds in gpu_seconds_by_user_and_kind():
            family.add_metric([user, kind], seconds)
        yield family


_collector: GpuSecondsCollector | None = None


def register_gpu_seconds_collector() -> None:
    global _collector
    if _collector is None:
        _collector = GpuSecondsCollector()
        PER_USER.register(_collector)
