"""Prometheus metrics of the GPU service. The names are a contract: alert rules and the
Grafana dashboard use them, and the GPU ones are the DCGM exporter's, so dashboards built
for DCGM work unchanged.

Counters and histograms are updated as things happen; GPU telemetry, lanes and the queue
are read at scrape time (a custom collector), so they are never stale.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gpu_service.admission import Admission
from gpu_service.runtime.base import GpuInfo

_WAIT_BUCKETS = (0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 4 * 3600)
_RUN_BUCKETS = (1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 48 * 3600)


class _LiveCollector(Collector):
    def __init__(
        self,
        *,
        inventory: Callable[[], list[GpuInfo]],
        runtime: str,
        admission: Admission,
        queued_kinds: Callable[[], list[str]],
        kinds: list[str],
    ) -> None:
        self._inventory = inventory
        self._runtime = runtime
        self._admission = admission
        self._queued_kinds = queued_kinds
        self._kinds = kinds

    def collect(self) -> Iterator[Metric]:
        labels = ["gpu", "UUID", "modelName"]
        families = {
            "DCGM_FI_DEV_GPU_UTIL": ("GPU utilization (%)", "utilization_pct"),
            "DCGM_FI_DEV_FB_USED": ("Framebuffer memory used (MiB)", "memory_used_mib"),
            "DCGM_FI_DEV_FB_FREE": ("Framebuffer memory free (MiB)", "memory_free_mib"),
            "DCGM_FI_DEV_GPU_TEMP": ("GPU temperature (C)", "temperature_c"),
            "DCGM_FI_DEV_POWER_USAGE": ("Power draw (W)", "power_w"),
        }
        gpus = self._inventory()
        for name, (doc, attribute) in families.items():
            family = GaugeMetricFamily(name, doc, labels=labels)
            for gpu in gpus:
                value = getattr(gpu, attribute)
                if value is not None:
                    family.add_metric([str(gpu.index), gpu.uuid, gpu.name], float(value))
            yield family
        held = GaugeMetricFamily("carril_lane_held", "1 while a job holds the lane", labels=["gpu"])
        capacity = GaugeMetricFamily(
            "carril_lane_capacity", "Jobs a lane admits at once", labels=["gpu"]
        )
        for lane in self._admission.lanes.values():
            held.add_metric([str(lane.gpu)], 1.0 if lane.holders else 0.0)
            capacity.add_metric([str(lane.gpu)], float(lane.capacity))
        yield held
        yield capacity
        depth = GaugeMetricFamily("carril_queue_depth", "Queued jobs", labels=["kind"])
        tally = Tally(self._queued_kinds())
        for kind in sorted(set(self._kinds) | set(tally)):
            depth.add_metric([kind], float(tally.get(kind, 0)))
        yield depth
        info = GaugeMetricFamily("carril_runtime_info", "Active GPU runtime", labels=["runtime"])
        info.add_metric([self._runtime], 1.0)
        yield info


class ServiceMetrics:
    """One registry per app instance, so tests can build several apps in one process."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.admission_wait = Histogram(
            "carril_admission_wait_seconds",
            "Time from submission to admission",
            ["kind"],
            buckets=_WAIT_BUCKETS,
            registry=self.registry,
        )
        self.job_run = Histogram(
            "carril_job_run_seconds",
            "Time a job held its lanes",
            ["kind", "outcome"],
            buckets=_RUN_BUCKETS,
            registry=self.registry,
        )
        self.jobs = Counter(
            "carril_jobs", "Jobs that ended", ["kind", "outcome"], registry=self.registry
        )
        self.worker_restarts = Counter(
            "carril_worker_restarts",
            "Resident workers restarted after dying",
            ["gpu"],
            registry=self.registry,
        )

    def watch(
        self,
        *,
        inventory: Callable[[], list[GpuInfo]],
        runtime: str,
        admission: Admission,
        queued_kinds: Callable[[], list[str]],
        kinds: list[str],
    ) -> None:
        self.registry.register(
            _LiveCollector(
                inventory=inventory,
                runtime=runtime,
                admission=admission,
                queued_kinds=queued_kinds,
                kinds=kinds,
            )
        )

    def job_ended(self, *, kind: str, outcome: str, run_seconds: float | None) -> None:
        self.jobs.labels(kind=kind, outcome=outcome).inc()
        if run_seconds is not None:
            self.job_run.labels(kind=kind, outcome=outcome).observe(max(0.0, run_seconds))

    def render(self) -> bytes:
        return generate_latest(self.registry)
