"""9. Cost that grows with the work: the same requests at growing queue and table sizes.

GPU service (a service of its own, 2 simulated GPUs, both lanes held by a long two-GPU
job): tiny diagnostic jobs are submitted one after another until `--scaling-queued`
(100, 1,000, 10,000) are queued; at each size, the round trip of `--scaling-samples`
more submits and of `GET /v1/gpus` (lanes and the queue view). Tiny jobs per second: a
fresh service with both lanes free runs `--scaling-tiny-jobs` zero-second diagnostic
jobs submitted at once: in the GPUs' resident workers (reused job after job, as
inference is), in a fresh process each with warm spares, and (baseline) in a fresh
process each without spares; the rate is jobs over the first submit to the last
`finished_at`.
Web: `--scaling-web-rows` finished job rows are written into the web app's database
(SQLite, and PostgreSQL with `--postgres-url`) in steps; at each size, `GET
/api/v1/jobs/` on its first page and on a page 90% deep (a cursor built for that row).

Targets: submit p50 at 10,000 queued <= 2x at 100; `GET /v1/gpus` <= 10 ms at every
size; >= 50 tiny jobs/s on 2 lanes in reused workers; the deep page <= 2x the first.
"""

from __future__ import annotations

import base64
import json
import time
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from bench.options import Options
from bench.results import outcome
from bench.stack import Platform, WebApp
from bench.stats import median, ms
from tests.support.gpu_service import GpuServiceProcess

NAME = "scaling"
TINY = {"kind": "diagnostic", "gpus": 1, "spec": {"seconds": 0, "step_s": 0.05}}


def _timed(call: Any, samples: int) -> list[float]:
    out = []
    for _ in range(samples):
        started = time.perf_counter()
        response = call()
        out.append(time.perf_counter() - started)
        response.raise_for_status()
    return out


def _queue_curve(service: GpuServiceProcess, *, options: Options) -> list[dict[str, Any]]:
    client = service.client
    holder = service.submit(kind="diagnostic", gpus=2, spec={"seconds": 86_400, "step_s": 1})
    service.wait_for(holder["id"], states={"running"})
    queued, rows = 0, []
    for size in options.queue_sizes():
        while queued < size:
            client.post("/v1/jobs", json=TINY).raise_for_status()
            queued += 1
        submits = _timed(lambda: client.post("/v1/jobs", json=TINY), options.scaling_samples)
        queued += options.scaling_samples
        gpus = _timed(lambda: client.get("/v1/gpus"), 20)
        seen = client.get("/v1/gpus").json()
        rows.append(
            {
                "queued": size,
                "submit p50 ms": ms(median(submits)),
                "GET /v1/gpus p50 ms": ms(median(gpus)),
                "GET /v1/gpus max ms": ms(max(gpus)),
                "queue listed / counted": f"{len(seen['queue'])} / {seen.get('queued')}",
            }
        )
    return rows


def _tiny_jobs_rate(service: GpuServiceProcess, *, jobs: int, worker: str) -> float:
    tiny = {**TINY, "spec": {**TINY["spec"], "worker": worker}}
    ids = [service.submit(**tiny)["id"] for _ in range(jobs)]
    done = [service.wait_for(job_id, timeout_s=600) for job_id in ids]
    if any(job["state"] != "succeeded" for job in done):
        raise RuntimeError("a tiny job did not succeed")
    first = min(datetime.fromisoformat(j["submitted_at"]).timestamp() for j in done)
    last = max(datetime.fromisoformat(j["finished_at"]).timestamp() for j in done)
    return jobs / (last - first)


ROWS_SCRIPT = """
from django.contrib.auth.models import User
from jobs.models import Job
owner = User.objects.get(username={user!r})
have = Job.objects.count()
for start in range(have, {rows}, 5000):
    Job.objects.bulk_create(
        Job(owner=owner, kind="train", state="succeeded")
        for _ in range(min(5000, {rows} - start))
    )
deep = Job.objects.order_by("-created_at").values_list("created_at", flat=True)[{deep}]
print(json.dumps({{"rows": Job.objects.count(), "deep": str(deep)}}))
"""


def _web_curve(web: WebApp, *, options: Options, engine: str) -> list[dict[str, Any]]:
    rows = []
    for size in options.web_row_sizes():
        done = web.stack.script(
            ROWS_SCRIPT.format(user="bench", rows=size, deep=int(size * 0.9)), timeout_s=1800
        )
        if done.returncode != 0:
            raise RuntimeError(f"could not write web rows: {done.stderr[-2000:]}")
        said = json.loads(done.stdout.strip().splitlines()[-1])
        # A DRF cursor is base64 of its query string; p is the position (created_at).
        cursor = base64.b64encode(urlencode({"p": said["deep"]}).encode()).decode()
        first = _timed(lambda: web.client.get("/api/v1/jobs/"), 20)
        deep = _timed(
            lambda cursor=cursor: web.client.get("/api/v1/jobs/", params={"cursor": cursor}), 20
        )
        if not web.client.get("/api/v1/jobs/", params={"cursor": cursor}).json()["results"]:
            raise RuntimeError("the deep cursor found no rows")
        rows.append(
            {
                "database": engine,
                "job rows": said["rows"],
                "first page p50 ms": ms(median(first)),
                "page at 90% depth p50 ms": ms(median(deep)),
            }
        )
    return rows


def run(*, options: Options, platform: Platform) -> list[dict[str, Any]]:
    queue_service = platform.gpu_service_apart(name="scaling-queue", gpus="2x24GiB", env={})
    curve = _queue_curve(queue_service, options=options)
    queue_service.stop()
    # Resident: the GPU's long-lived worker, reused job after job (the warm pool of
    # kinds that need no clean process). Fresh with spares: a clean process per job, a
    # warm spare taking it when one is ready. Fresh without spares: the baseline.
    rates = {}
    for label, worker, warm in (
        ("resident", "resident", "true"),
        ("fresh, spares", "fresh", "true"),
        ("fresh, no spares", "fresh", "false"),
    ):
        service = platform.gpu_service_apart(
            name=f"scaling-tiny-{worker}-{warm}", gpus="2x24GiB", env={"CARRIL_WARM_WORKERS": warm}
        )
        # Warm-up: the first jobs start the resident workers or the spares.
        _tiny_jobs_rate(service, jobs=4, worker=worker)
        time.sleep(3)
        rates[label] = _tiny_jobs_rate(service, jobs=options.scaling_tiny_jobs, worker=worker)
        service.stop()
    web_rows = _web_curve(platform.web(), options=options, engine="SQLite")
    postgres = platform.web_postgres()
    if postgres is not None:
        web_rows += _web_curve(postgres, options=options, engine="PostgreSQL")

    small, large = curve[0], curve[-1]
    submit_ratio = large["submit p50 ms"] / small["submit p50 ms"]
    worst_gpus = max(row["GET /v1/gpus p50 ms"] for row in curve)
    deepest = [row for row in web_rows if row["job rows"] == max(r["job rows"] for r in web_rows)]
    depth_ratio = max(row["page at 90% depth p50 ms"] / row["first page p50 ms"] for row in deepest)
    common = {"queue curve": curve, "web job list curve": web_rows}
    return [
        outcome(
            name=f"{NAME}.submit",
            title="Submit cost against queue length",
            runtime=platform.runtime,
            figure=f"submit p50 with {large['queued']:,} queued",
            value=large["submit p50 ms"],
            unit="ms",
            baseline_figure=f"submit p50 with {small['queued']:,} queued",
            baseline=small["submit p50 ms"],
            ratio=submit_ratio,
            target="<= 2x",
            met=submit_ratio <= 2,
            details={**common, "GET /v1/gpus worst p50 ms": worst_gpus},
            notes=f"GET /v1/gpus target <= 10 ms at every size: worst p50 {worst_gpus} ms",
        ),
        outcome(
            name=f"{NAME}.gpus",
            title="GET /v1/gpus against queue length",
            runtime=platform.runtime,
            figure=f"worst p50 over {len(curve)} queue sizes",
            value=worst_gpus,
            unit="ms",
            baseline_figure=f"p50 with {small['queued']:,} queued",
            baseline=small["GET /v1/gpus p50 ms"],
            ratio=worst_gpus / small["GET /v1/gpus p50 ms"],
            target="<= 10 ms at any queue length",
            met=worst_gpus <= 10,
            details={"queue curve": curve},
        ),
        outcome(
            name=f"{NAME}.tiny",
            title="Tiny jobs on 2 lanes",
            runtime=platform.runtime,
            figure="jobs/s in the GPUs' resident (reused) workers",
            value=rates["resident"],
            unit="jobs/s",
            baseline_figure="a fresh process per job, no spares (CARRIL_WARM_WORKERS=false)",
            baseline=rates["fresh, no spares"],
            ratio=rates["resident"] / rates["fresh, no spares"],
            target=">= 50 jobs/s",
            met=rates["resident"] >= 50,
            details={
                "jobs": options.scaling_tiny_jobs,
                "job": "diagnostic, 0 s, 1 GPU",
                **{f"jobs/s, {label}": round(rate, 2) for label, rate in rates.items()},
            },
            notes=(
                "A job that needs a clean process (a training) cannot be reused: its rate "
                f"is the fresh one with spares, {rates['fresh, spares']:.2f} jobs/s."
            ),
        ),
        outcome(
            name=f"{NAME}.joblist",
            title="Web job list against depth",
            runtime=platform.runtime,
            figure=f"page at 90% depth of {max(r['job rows'] for r in web_rows):,} rows, p50",
            value=max(row["page at 90% depth p50 ms"] for row in deepest),
            unit="ms",
            baseline_figure="first page p50",
            baseline=max(row["first page p50 ms"] for row in deepest),
            ratio=depth_ratio,
            target="deep page <= 2x the first",
            met=depth_ratio <= 2,
            details={"web job list curve": web_rows},
        ),
    ]
