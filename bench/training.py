"""7. Training overhead: Carril's training against the same trainer in a plain process.

Both sides run the same trainer class (`make_trainer`: ultralytics' DetectionTrainer)
with the same arguments (data, epochs, seed, image size, batch, optimizer, patience,
no dataloader workers, CPU) and build the model once from its yaml. Both are timed
from the trainer's construction to its weights on disk (the mtime of `best.pt`, which
the trainer's final step rewrites): Carril's start is the worker's log line written just
before it builds the trainer; the raw start is printed by `bench.raw_train` after its
imports (a warm Carril worker has done them before its line too), at the niceness of
Carril's workers (`CARRIL_WORKER_NICE`, 10), so both get the same share of a busy CPU.
So the figure is
what Carril adds to training itself (its callbacks, progress and metrics reports, the
journal), not process start-up. End-to-end times (Carril: submit to the
journal's `finished_at`; raw: process start to exit) are in the details.

One warm-up pair is run first and discarded (label caches, cold page cache); then the
order alternates (raw first, then Carril first) for `--train-repeats` pairs; medians,
and the spread (min-max) of each side.

Target: at most 1.05x.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bench import prepare
from bench.options import ROOT, Options
from bench.results import outcome
from bench.stack import Platform
from bench.stats import median

NAME = "training"
TITLE = "Training overhead"
TARGET = "<= 1.05x raw"


def _raw(*, platform: Platform, options: Options, data_yaml: str, attempt: int) -> dict:
    argv = [
        sys.executable, "-m", "bench.raw_train", "--data", data_yaml,
        "--epochs", str(options.epochs), "--imgsz", str(options.train_imgsz),
        "--batch", str(options.train_batch), "--seed", str(options.seed),
        "--project", str(platform.folder(f"raw-train-{attempt}")),
        "--storage", str(platform.storage),
        # Carril's workers lower their priority (CARRIL_WORKER_NICE); so does the baseline.
        "--nice", os.environ.get("CARRIL_WORKER_NICE", "10"),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": ""}
    started = time.time()
    done = subprocess.run(
        argv, cwd=ROOT, env=env, check=True, capture_output=True, text=True, timeout=3600
    )
    ended = time.time()
    said = json.loads(done.stdout.strip().splitlines()[-1])
    trained = Path(said["weights"]).stat().st_mtime
    return {"trainer": trained - said["constructed"], "end_to_end": ended - started}


def _carril(*, platform: Platform, body: dict, seed: int) -> dict:
    service = platform.gpu()
    job, end_to_end = prepare.job_run(service, body=body, poll_s=0.5, timeout_s=3600)
    job_dir = platform.storage / "jobs" / job["id"]
    constructed = prepare.log_line_time(job_dir / "job.log", f"seed {seed}: trainer starting")
    trained = (job_dir / f"seed-{seed}" / "weights" / "best.pt").stat().st_mtime
    submitted = datetime.fromisoformat(job["submitted_at"]).timestamp()
    return {
        "trainer": trained - constructed,
        "end_to_end": end_to_end,
        "submit_to_trainer": constructed - submitted,
    }


def _spread(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}"


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
    data_yaml = str(root / "data.yaml")
    prepare.lanes_idle(service)
    carril, raw = [], []
    for attempt in range(options.train_repeats + 1):  # attempt 0 warms up, discarded
        pair: dict[str, dict] = {}
        order = ("raw", "carril") if attempt % 2 == 0 else ("carril", "raw")
        for side in order:
            if side == "raw":
                pair[side] = _raw(
                    platform=platform, options=options, data_yaml=data_yaml, attempt=attempt
                )
            else:
                pair[side] = _carril(platform=platform, body=body, seed=options.seed)
        if attempt:
            carril.append(pair["carril"])
            raw.append(pair["raw"])
    trainer_carril = [r["trainer"] for r in carril]
    trainer_raw = [r["trainer"] for r in raw]
    ratio = median(trainer_carril) / median(trainer_raw)
    return outcome(
        name=NAME,
        title=TITLE,
        runtime=platform.runtime,
        figure="trainer construction to weights on disk",
        value=median(trainer_carril),
        unit="s",
        baseline_figure="the same trainer and arguments in a plain process",
        baseline=median(trainer_raw),
        ratio=ratio,
        target=TARGET,
        met=ratio <= 1.05,
        details={
            "Carril trainer runs s": [round(x, 2) for x in trainer_carril],
            "raw trainer runs s": [round(x, 2) for x in trainer_raw],
            "spread (min-max) s, Carril / raw": (
                f"{_spread(trainer_carril)} / {_spread(trainer_raw)}"
            ),
            "end to end p50 s, Carril (submit to finished_at) / raw (process start to exit)": (
                f"{median([r['end_to_end'] for r in carril]):.2f} / "
                f"{median([r['end_to_end'] for r in raw]):.2f}"
            ),
            "Carril submit to trainer construction p50 s": round(
                median([r["submit_to_trainer"] for r in carril]), 2
            ),
            "repeats (after one discarded warm-up pair, order alternating)": len(carril),
            "data": f"{options.train_images} train images, {options.train_imgsz} px",
            "epochs / imgsz / batch / seed": (
                f"{options.epochs} / {options.train_imgsz} / {options.train_batch} / {options.seed}"
            ),
            "device": "CPU (simulated runtime: the worker sees no CUDA device)",
        },
    )
