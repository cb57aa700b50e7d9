"""5. Polling: requests per second for `GET /api/v1/jobs/{id}/` (token auth, database,
the status document) served by gunicorn as the web image runs it, against a bare Django
view in the same process returning the same JSON bytes (bench/web_urls.py). The load
comes from another process (bench/loadgen.py).

The headline polls a RUNNING job: a training whose progress the reconciler rewrites
while the load runs, so its document is built again at least every 0.1 s (an unfinished
job's rendered document is kept that long per process, ADR 0050; the 8 connections on
one job are the many-pollers case it is for). The finished-job case (a finished
inference, the biggest document, kept 5 s) is reported beside it. Both run on SQLite
and, with `--postgres-url`, on a web app with a PostgreSQL database of its own, as
production runs. The training runs on the simulated runtime, so it takes CPU from both
views alike.

Target: at least 0.5x the bare view.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

from bench import prepare
from bench.options import ROOT, Options
from bench.results import outcome
from bench.stack import Platform, WebApp
from tests.e2e.synthetic_dataset import dataset_zip

NAME = "polling"
TITLE = "Polling the job status"
TARGET = ">= 0.5x bare view"


def _load(*, url: str, options: Options, headers: list[str]) -> dict[str, Any]:
    argv = [sys.executable, "-m", "bench.loadgen", "--url", url]
    argv += ["--seconds", str(options.poll_seconds), "--concurrency", str(options.poll_concurrency)]
    for header in headers:
        argv += ["--header", header]
    done = subprocess.run(
        argv,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=options.poll_seconds + 120,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _pair(*, web: WebApp, platform: Platform, options: Options, job_id: str) -> dict[str, Any]:
    """The job view and the bare view serving the job's current bytes, one after the other."""
    path = f"/api/v1/jobs/{job_id}/"
    body = web.client.get(path).content
    bare_file = platform.storage / "bench" / "bare-job.json"
    bare_file.parent.mkdir(parents=True, exist_ok=True)
    bare_file.write_bytes(body)
    if web.client.get("/bench/bare-job/").content != body:
        raise RuntimeError("the bare view does not return the real view's bytes")
    real = _load(
        url=web.url + path, options=options, headers=[f"Authorization: {web.token_header}"]
    )
    bare = _load(url=web.url + "/bench/bare-job/", options=options, headers=[])
    return {"real": real, "bare": bare, "bytes": len(body), "ratio": real["rps"] / bare["rps"]}


def _running_training(*, web: WebApp, platform: Platform) -> str:
    """A long training through the web API, returned once it reports progress."""
    archive = dataset_zip(path=platform.folder("polling") / f"set-{time.time_ns()}.zip", size=32)
    with archive.open("rb") as fh:
        created = web.client.post(
            "/api/v1/datasets/",
            data={"name": "bench polling"},
            files={"file": (archive.name, fh, "application/zip")},
        )
    created.raise_for_status()
    dataset = created.json()
    deadline = time.monotonic() + 120
    while dataset.get("state") == "validating" and time.monotonic() < deadline:
        time.sleep(0.2)  # validated after the upload, on a web process's thread (ADR 0025)
        dataset = web.client.get(f"/api/v1/datasets/{dataset['id']}/").json()
    if dataset.get("state") != "ready":
        raise RuntimeError(f"the polling dataset is not ready: {dataset}")
    body = {"dataset": dataset["id"], "model": "yolov8n", "epochs": 1000}
    response = web.client.post("/api/v1/jobs/train/", json={**body, "imgsz": 32, "batch": 4})
    response.raise_for_status()
    job_id = response.json()["id"]
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        job = web.client.get(f"/api/v1/jobs/{job_id}/").json()
        if job["state"] == "running" and (job.get("progress") or {}).get("epoch"):
            return job_id
        if job["state"] in {"succeeded", "failed", "cancelled", "lost"}:
            raise RuntimeError(f"the polling training ended {job['state']}: {job.get('error')}")
        time.sleep(0.2)
    raise RuntimeError(f"the polling training never reported progress:\n{web.logs()}")


def _one_database(
    *, web: WebApp, engine: str, platform: Platform, options: Options, finished_id: str
) -> dict[str, Any]:
    training = _running_training(web=web, platform=platform)
    try:
        before = web.client.get(f"/api/v1/jobs/{training}/").json()["progress"]
        running = _pair(web=web, platform=platform, options=options, job_id=training)
        after = web.client.get(f"/api/v1/jobs/{training}/").json()
    finally:
        web.client.post(f"/api/v1/jobs/{training}/cancel/")
    web.wait_for_job(training, timeout_s=300, poll_s=0.2)
    prepare.lanes_idle(platform.gpu())
    finished = _pair(web=web, platform=platform, options=options, job_id=finished_id)
    return outcome(
        name=f"{NAME}-{engine}",
        title=f"{TITLE} ({engine})",
        runtime=platform.runtime,
        figure="GET /api/v1/jobs/{id}/ of a running job, requests/s",
        value=running["real"]["rps"],
        unit="req/s",
        baseline_figure="bare Django view, same JSON",
        baseline=running["bare"]["rps"],
        ratio=running["ratio"],
        target=TARGET,
        met=running["ratio"] >= 0.5 and running["real"]["errors"] == 0,
        details={
            "running job: real view": running["real"],
            "running job: bare view": running["bare"],
            "running job: response bytes": running["bytes"],
            "running job: progress while loaded (before -> after)": (
                f"{before} -> {after['progress']} ({after['state']})"
            ),
            "finished job: real view req/s": finished["real"]["rps"],
            "finished job: bare view req/s": finished["bare"]["rps"],
            "finished job: ratio": round(finished["ratio"], 3),
            "finished job: real view": finished["real"],
            "server": f"gunicorn, 1 worker, 8 threads (the web image's settings), {engine}",
            "load": (
                f"{options.poll_concurrency} keep-alive connections for {options.poll_seconds} s"
            ),
        },
    )


def _finished_inference(platform: Platform, web: WebApp) -> str:
    prepare.web_serving_model(platform, web=web)
    images = prepare.infer_images(platform, count=2, size=64)
    job, _ = prepare.web_infer(platform, images=images, imgsz=64, web=web)
    return job["id"]


def run(*, options: Options, platform: Platform) -> list[dict[str, Any]]:
    web = platform.web()
    results = [
        _one_database(
            web=web,
            engine="SQLite",
            platform=platform,
            options=options,
            finished_id=_finished_inference(platform, web),
        )
    ]
    postgres = platform.web_postgres()
    if postgres is not None:
        finished = _finished_inference(platform, postgres)
        results.append(
            _one_database(
                web=postgres,
                engine="PostgreSQL",
                platform=platform,
                options=options,
                finished_id=finished,
            )
        )
    return results
