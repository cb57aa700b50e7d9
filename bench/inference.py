"""2. Inference throughput: images per second through the full path (web API: upload,
dispatch, poll, results) and through the GPU service API alone, against ultralytics
`predict` in this process with the same weights, images, image size, batch and
confidence; plus the latency a one-image request adds on a warm model.

The model is yolov8n built from its yaml (untrained: nothing is downloaded). At the
usual 0.25 it detects nothing, which would leave NMS, the annotated copies and the
per-detection JSON off the clock; so every path runs at `--infer-conf` (default 1e-4,
where this model gives about 20 boxes per image), and the boxes per image are reported.

Target: each path at least 0.85x the raw throughput. Every path is warmed first (the
resident worker keeps the model loaded), then timed `repeats` times; medians are used.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bench import prepare
from bench.options import Options
from bench.results import outcome
from bench.stack import Platform
from bench.stats import median, ms

NAME = "inference"
TITLE = "Inference throughput"
TARGET = ">= 0.85x raw"
WEB_BATCH = 16  # the web API does not pass a batch, so the infer spec's default applies


class RawPredictor:
    """ultralytics `predict` in this process on one loaded model, the baseline."""

    def __init__(self, *, checkpoint: Path, options: Options) -> None:
        from ultralytics import YOLO

        self.model = YOLO(str(checkpoint))
        self.options = options
        self.boxes: list[int] = []  # per image, of the last call

    def seconds(self, *, images: list[Path], batch: int) -> float:
        started = time.perf_counter()
        results = self.model.predict(
            source=[str(p) for p in images],
            imgsz=self.options.imgsz,
            batch=batch,
            conf=self.options.infer_conf,
            device="cpu",
            verbose=False,
            save=False,
        )
        elapsed = time.perf_counter() - started
        self.boxes = [len(result.boxes) for result in results]
        return elapsed


def _service_body(*, fingerprint: str, images: list[Path], options: Options, batch: int) -> dict:
    return {
        "kind": "infer",
        "gpu_ids": [0],  # one resident worker, so the warm-up warms the one that is timed
        "spec": {
            "model": fingerprint,
            "images": [str(p) for p in images],
            "imgsz": options.imgsz,
            "batch": batch,
            "conf": options.infer_conf,
        },
    }


def run(*, options: Options, platform: Platform) -> list[dict[str, Any]]:
    service = platform.gpu()
    fingerprint, checkpoint = prepare.registered_model(platform)
    images = prepare.infer_images(platform, count=options.images, size=options.imgsz)
    prepare.lanes_idle(service)
    body = _service_body(
        fingerprint=fingerprint, images=images, options=options, batch=options.batch
    )
    single = _service_body(fingerprint=fingerprint, images=images[:1], options=options, batch=1)
    raw = RawPredictor(checkpoint=checkpoint, options=options)
    prepare.web_serving_model(platform)
    # Warm every path first: the resident worker loads the model, predictors set up.
    prepare.job_run(service, body=body)
    prepare.web_infer(platform, images=images, imgsz=options.imgsz, conf=options.infer_conf)
    raw.seconds(images=images, batch=options.batch)
    raw.seconds(images=images[:1], batch=1)

    # Interleaved, so a change in the machine's load hits every path alike.
    raw_walls, raw_web_batch, service_walls, web_walls = [], [], [], []
    worker_ips = []  # the worker's own figure: images over its predict calls alone
    for _ in range(options.repeats):
        raw_walls.append(raw.seconds(images=images, batch=options.batch))
        job, wall = prepare.job_run(service, body=body)
        service_walls.append(wall)
        service_boxes = [len(image["detections"]) for image in job["result"]["images"]]
        worker_ips.append(job["result"]["images_per_second"])
        if options.batch != WEB_BATCH:
            raw_web_batch.append(raw.seconds(images=images, batch=WEB_BATCH))
        _, web_wall = prepare.web_infer(
            platform, images=images, imgsz=options.imgsz, conf=options.infer_conf
        )
        web_walls.append(web_wall)
    raw_web_batch = raw_web_batch or raw_walls
    raw_single, single_walls = [], []
    for _ in range(options.single_repeats):
        raw_single.append(raw.seconds(images=images[:1], batch=1))
        single_walls.append(prepare.job_run(service, body=single)[1])
    prepare.lanes_idle(service)

    n = len(images)
    raw_ips = n / median(raw_walls)
    raw_web_ips = n / median(raw_web_batch)
    service_ips = n / median(service_walls)
    web_ips = n / median(web_walls)
    added = median(single_walls) - median(raw_single)
    common = {
        "images": n,
        "imgsz": options.imgsz,
        "batch (service API, raw)": options.batch,
        "batch (full path)": WEB_BATCH,
        "repeats": options.repeats,
        "model": "yolov8n, untrained (built from its yaml)",
        "conf": options.infer_conf,
        "boxes per image (raw predict)": round(sum(raw.boxes) / max(1, len(raw.boxes)), 1),
        "boxes per image (service job)": round(sum(service_boxes) / max(1, n), 1),
        "reconciler interval s": options.reconcile_interval_s,
    }
    return [
        outcome(
            name=f"{NAME}.web",
            title=f"{TITLE} (full path, web API)",
            runtime=platform.runtime,
            figure="images/s",
            value=web_ips,
            unit="img/s",
            baseline_figure="ultralytics predict in one process",
            baseline=raw_web_ips,
            ratio=web_ips / raw_web_ips,
            target=TARGET,
            met=web_ips / raw_web_ips >= 0.85,
            details={**common, "full path wall s (median)": round(median(web_walls), 3)},
            notes=(
                "Wall time from the upload request to the client seeing `succeeded` (polling "
                "every 100 ms): upload, dispatch, the GPU service job, the reconciler's next "
                "pass, the client's poll."
            ),
        ),
        outcome(
            name=f"{NAME}.service",
            title=f"{TITLE} (GPU service API)",
            runtime=platform.runtime,
            figure="images/s",
            value=service_ips,
            unit="img/s",
            baseline_figure="ultralytics predict in one process",
            baseline=raw_ips,
            ratio=service_ips / raw_ips,
            target=TARGET,
            met=service_ips / raw_ips >= 0.85,
            details={
                **common,
                "service wall s (median)": round(median(service_walls), 3),
                "raw wall s (median)": round(median(raw_walls), 3),
                "worker's predict-only images/s (median)": round(median(worker_ips), 3),
            },
            notes=(
                "Wall time from just before the submit to the journal's `finished_at`. "
                "The worker's predict-only rate shows how much of the gap is predict itself "
                "and how much the job around it (annotated copies, results.json, progress, "
                "IPC, HTTP)."
            ),
        ),
        outcome(
            name=f"{NAME}.single",
            title="One-image request on a warm model (GPU service API)",
            runtime=platform.runtime,
            figure="added latency p50",
            value=ms(added),
            unit="ms",
            baseline_figure="raw predict of one image",
            baseline=ms(median(raw_single)),
            ratio=median(single_walls) / median(raw_single),
            target="reported",
            met=None,
            details={
                "one-image job wall p50 ms": ms(median(single_walls)),
                "raw one-image predict p50 ms": ms(median(raw_single)),
                "samples": options.single_repeats,
            },
        ),
    ]
