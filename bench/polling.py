"""5. Polling: requests per second for `GET /api/v1/jobs/{id}/` (token auth, database,
DRF serializer) served by gunicorn as the web image runs it, against a bare Django view
in the same process returning the same JSON bytes (bench/web_urls.py). The load comes
from another process (bench/loadgen.py).

Target: at least 0.5x the bare view.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from bench import prepare
from bench.options import ROOT, Options
from bench.results import outcome
from bench.stack import Platform

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


def run(*, options: Options, platform: Platform) -> dict[str, Any]:
    web = platform.web()
    assert web.client is not None
    # A finished inference: its status document is the biggest a poller reads.
    prepare.web_serving_model(platform)
    images = prepare.infer_images(platform, count=2, size=64)
    job, _ = prepare.web_infer(platform, images=images, imgsz=64)
    path = f"/api/v1/jobs/{job['id']}/"
    real_body = web.client.get(path).content
    bare_file = platform.storage / "bench" / "bare-job.json"
    bare_file.parent.mkdir(parents=True, exist_ok=True)
    bare_file.write_bytes(real_body)
    bare_body = web.client.get("/bench/bare-job/").content
    if bare_body != real_body:
        raise RuntimeError("the bare view does not return the real view's bytes")

    real = _load(
        url=web.url + path, options=options, headers=[f"Authorization: {web.token_header}"]
    )
    bare = _load(url=web.url + "/bench/bare-job/", options=options, headers=[])
    ratio = real["rps"] / bare["rps"]
    return outcome(
        name=NAME,
        title=TITLE,
        runtime=platform.runtime,
        figure="GET /api/v1/jobs/{id}/ requests/s",
        value=real["rps"],
        unit="req/s",
        baseline_figure="bare Django view, same JSON",
        baseline=bare["rps"],
        ratio=ratio,
        target=TARGET,
        met=ratio >= 0.5 and real["errors"] == 0,
        details={
            "real view": real,
            "bare view": bare,
            "response bytes": len(real_body),
            "server": "gunicorn, 1 worker, 8 threads (the web image's settings), "
            + web.database_engine,
            "load": (
                f"{options.poll_concurrency} keep-alive connections for {options.poll_seconds} s"
            ),
        },
    )
