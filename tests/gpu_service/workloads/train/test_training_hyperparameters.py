"""The hyperparameters of a train spec reach ultralytics' trainer: what it wrote to its
run folder's args.yaml is what the spec said (real ultralytics on the CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpu_service.workloads.train.run import train_job
from gpu_service.workloads.train.spec import TRAIN

pytestmark = pytest.mark.slow

CHOSEN = {
    "optimizer": "AdamW",
    "lr0": 0.002,
    "patience": 7,
    "mosaic": 0.0,
    "fliplr": 0.25,
    "hsv_h": 0.02,
    "hsv_s": 0.6,
    "hsv_v": 0.3,
    "scale": 0.4,
    "degrees": 12.5,
}


def test_a_training_runs_with_the_hyperparameters_its_spec_gives(
    make_context, shapes_dataset: Path
) -> None:
    spec = {
        "dataset": str(shapes_dataset),
        "model": "yolov8n",
        "epochs": 1,
        "imgsz": 64,
        "batch": 4,
        "seeds": [3],
        "workers": 0,
        **CHOSEN,
    }
    ctx = make_context(spec=TRAIN.spec_model.model_validate(spec).model_dump())

    train_job(ctx=ctx)

    args = yaml.safe_load((ctx.job_dir / "seed-3" / "args.yaml").read_text())
    assert {name: args[name] for name in CHOSEN} == CHOSEN
