"""1. Health under load: GPU service `/healthz` p50/p99 while idle, and while a training
holds GPU 0 and a stream of inference jobs runs on GPU 1.

Target: p99 under load at most 2x idle. Both series are sampled at the same pace by
the same client; the load runs in worker processes, as it does in production.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx

from bench import prepare
from bench.options import Options
from bench.results import outcome
from bench.stack import Platform
from bench.stats import ms, percentile

NAME = "health"
TITLE = "Health under load"
TARGET = "p99 loaded <= 2x idle"


def _sample(*, url: str, samples: int, spacing_s: float) -> list[float]:
    latencies = []
    with httpx.Client(base_url=url, timeout=30) as client:
        client.get("/healthz")  # connection set up outside the measurement
        for _ in range(samples):
            started = time.perf_counter()
            response = client.get("/healthz")
            latencies.append(time.perf_counter() - started)
            response.raise_for_status()
            time.sleep(spacing_s)
    return latencies


def _inference_stream(
    *, platform: Platform, body: dict[str, Any], stop: threading.Event, done: list[Any]
) -> None:
    try:
        while not stop.is_set():
            prepare.job_run(platform.gpu(), body=body, poll_s=0.05)
            done.append(1)
    except Exception as exc:  # reported in the result, not lost with the thread
        done.append(exc)


def run(*, options: Options, platform: Platform) -> dict[str, Any]:
    service = platform.gpu()
    spacing = options.health_load_s / options.health_samples
    idle = _sample(url=service.url, samples=options.health_samples, spacing_s=spacing)

    root = prepare.dataset(platform, train=8, val=4, size=options.train_imgsz)
    training = service.submit(
        kind="train",
        gpu_ids=[0],
        spec={
            "dataset": str(root),
            "model": "yolov8n",
            "epochs": 1000,  # cancelled once the sampling is over
            "imgsz": options.train_imgsz,
            "batch": 4,
            "workers": 0,
            "patience": 0,
        },
    )
    fingerprint, _ = prepare.registered_model(platform)
    images = prepare.infer_images(platform, count=max(2, options.images // 2), size=options.imgsz)
    body = {
        "kind": "infer",
        "gpu_ids": [1],
        "spec": {
            "model": fingerprint,
            "images": [str(p) for p in images],
            "imgsz": options.imgsz,
            "batch": options.batch,
        },
    }
    stop = threading.Event()
    inferences: list[Any] = []
    stream = threading.Thread(
        target=_inference_stream,
        kwargs={"platform": platform, "body": body, "stop": stop, "done": inferences},
        daemon=True,
    )
    stream.start()
    # Sample only once the trainer is really stepping, not while it imports torch.
    service.wait_until(
        lambda: (service.job(training["id"])["progress"].get("batch") or 0) >= 1,
        timeout_s=300,
        what="the training's first batch",
    )
    loaded = _sample(url=service.url, samples=options.health_samples, spacing_s=spacing)
    stop.set()
    service.client.post(f"/v1/jobs/{training['id']}/cancel")
    stream.join(timeout=300)
    prepare.lanes_idle(service)
    errors = [item for item in inferences if isinstance(item, Exception)]
    if errors:
        raise RuntimeError(f"the inference stream failed: {errors[0]}")

    idle_p50, idle_p99 = percentile(idle, 50), percentile(idle, 99)
    load_p50, load_p99 = percentile(loaded, 50), percentile(loaded, 99)
    ratio = load_p99 / idle_p99
    return outcome(
        name=NAME,
        title=TITLE,
        runtime=platform.runtime,
        figure="/healthz p99 under load",
        value=ms(load_p99),
        unit="ms",
        baseline_figure="p99 idle",
        baseline=ms(idle_p99),
        ratio=ratio,
        target=TARGET,
        met=ratio <= 2.0,
        details={
            "idle p50 ms": ms(idle_p50),
            "idle p99 ms": ms(idle_p99),
            "loaded p50 ms": ms(load_p50),
            "loaded p99 ms": ms(load_p99),
            "loaded max ms": ms(max(loaded)),
            "samples per series": options.health_samples,
            "load": "1 training (GPU 0) + a stream of inference jobs (GPU 1)",
            "inference jobs completed during the load": len(inferences),
        },
    )
