"""3. Admission overhead: how long a job for a free lane takes from submit to running.

The submit route records the job and runs admission before it answers, so a job that
gets a free lane comes back already `running`: the client-side figure is the POST's
round trip. The server-side figure is the journal's `started_at - submitted_at`.
Baselines (for scale; the target is absolute): the same POST for a job that queues
(both lanes held, so no worker starts) and a `/healthz` round trip. The gap between
the POSTs is what starting the worker inside the request costs.

Target: p50 at most 10 ms.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from bench import prepare
from bench.options import Options
from bench.results import outcome
from bench.stack import Platform
from bench.stats import median, ms, percentile
from tests.support.gpu_service import GpuServiceProcess

NAME = "admission"
TITLE = "Admission overhead"
TARGET = "p50 <= 10 ms"


def _seconds(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


def _queued_submits(service: GpuServiceProcess, *, samples: int) -> list[float]:
    """Round trips of submits that queue: a long two-GPU job holds both lanes meanwhile."""
    holder = service.submit(kind="diagnostic", gpus=2, spec={"seconds": 600, "step_s": 0.2})
    service.wait_for(holder["id"], states={"running"})
    latencies, queued_ids = [], []
    for _ in range(samples):
        started = time.perf_counter()
        response = service.client.post(
            "/v1/jobs", json={"kind": "diagnostic", "spec": {"seconds": 0, "step_s": 0.05}}
        )
        latencies.append(time.perf_counter() - started)
        response.raise_for_status()
        queued_ids.append(response.json()["id"])
    for job_id in [*queued_ids, holder["id"]]:
        service.client.post(f"/v1/jobs/{job_id}/cancel")
    prepare.lanes_idle(service)
    return latencies


def run(*, options: Options, platform: Platform) -> dict[str, Any]:
    service = platform.gpu()
    prepare.lanes_idle(service)
    client = service.client
    client.get("/healthz")
    client_latency, server_latency, health = [], [], []
    not_running = 0
    for _ in range(options.admission_samples):
        started = time.perf_counter()
        client.get("/healthz")
        health.append(time.perf_counter() - started)
        started = time.perf_counter()
        response = client.post(
            "/v1/jobs", json={"kind": "diagnostic", "spec": {"seconds": 0, "step_s": 0.05}}
        )
        elapsed = time.perf_counter() - started
        response.raise_for_status()
        accepted = response.json()
        if accepted["state"] != "running":
            not_running += 1
        client_latency.append(elapsed)
        job = service.wait_for(accepted["id"], timeout_s=120)
        if job["started_at"]:
            server_latency.append(_seconds(job["started_at"]) - _seconds(job["submitted_at"]))
    queued = _queued_submits(service, samples=options.admission_samples)
    p50, p99 = percentile(client_latency, 50), percentile(client_latency, 99)
    return outcome(
        name=NAME,
        title=TITLE,
        runtime=platform.runtime,
        figure="submit-to-running p50 (client)",
        value=ms(p50),
        unit="ms",
        baseline_figure="submit p50 of a job that queues",
        baseline=ms(median(queued)),
        ratio=p50 / median(queued),
        target=TARGET,
        met=p50 <= 0.010 and not_running == 0,
        details={
            "client p50 ms": ms(p50),
            "client p99 ms": ms(p99),
            "server (journal) p50 ms": ms(percentile(server_latency, 50)),
            "server (journal) p99 ms": ms(percentile(server_latency, 99)),
            "queued-job submit p50 ms (no worker start)": ms(median(queued)),
            "/healthz round trip p50 ms": ms(median(health)),
            "samples": options.admission_samples,
            "answers not yet running": not_running,
        },
    )
