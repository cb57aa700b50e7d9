"""7. Training overhead: wall time of a training through the GPU service (from just
before the submit to the journal's `finished_at`: worker start, training, best-seed
weights import, manifest) against ultralytics training in one fresh process (start to exit) on the
same data, epochs, seed, image size and batch. Runs alternate to share the noise.

Target: at most 1.05x.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

from bench import prepare
from bench.options import ROOT, Options
from bench.results import outcome
from bench.stack import Platform
from bench.stats import median

NAME = "training"
TITLE = "Training overhead"
TARGET = "<= 1.05x raw"


def _raw(*, platform: Platform, options: Options, data_yaml: str, attempt: int) -> float:
    argv = [
        sys.executable, "-m", "bench.raw_train", "--data", data_yaml,
        "--epochs", str(options.epochs), "--imgsz", str(options.train_imgsz),
        "--batch", str(options.train_batch), "--seed", str(options.seed),
        "--project", str(platform.folder(f"raw-train-{attempt}")),
        "--storage", str(platform.storage),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": ""}
    started = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, env=env, check=True, capture_output=True, timeout=3600)
    return time.perf_counter() - started


def run(*, options: Options, platform: Platform) -> dict[str, Any]:
    service = platform.gpu()
    root = prepare.dataset(
        platform,
        train=options.train_images,
        val=max(2, options.train_images // 4),
        size=options.train_imgsz,
    )
    body = {
        "kind": "train",
        "gpu_ids": [0],
        "spec": {
            "dataset": str(root),
            "model": "yolov8n",
            "epochs": options.epochs,
            "imgsz": options.train_imgsz,
            "batch": options.train_batch,
            "seeds": [options.seed],
            "workers": 0,
        },
    }
    prepare.lanes_idle(service)
    carril, raw = [], []
    for attempt in range(options.train_repeats):
        raw.append(
            _raw(
                platform=platform,
                options=options,
                data_yaml=str(root / "data.yaml"),
                attempt=attempt,
            )
        )
        carril.append(prepare.job_run(service, body=body, poll_s=0.5, timeout_s=3600)[1])
    ratio = median(carril) / median(raw)
    return outcome(
        name=NAME,
        title=TITLE,
        runtime=platform.runtime,
        figure="training wall time",
        value=median(carril),
        unit="s",
        baseline_figure="ultralytics train, one process",
        baseline=median(raw),
        ratio=ratio,
        target=TARGET,
        met=ratio <= 1.05,
        details={
            "Carril runs s": [round(x, 2) for x in carril],
            "raw runs s": [round(x, 2) for x in raw],
            "data": f"{options.train_images} train images, {options.train_imgsz} px",
            "epochs / imgsz / batch / seed": (
                f"{options.epochs} / {options.train_imgsz} / {options.train_batch} / {options.seed}"
            ),
            "device": "CPU (simulated runtime: the worker sees no CUDA device)",
        },
    )
