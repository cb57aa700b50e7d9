"""The `evaluate` job kind as the API process declares it: its spec, its submit-time
checks and its memory estimate. What runs in the worker is `evaluate/run.py`.

Importing this module must stay cheap (the API process imports it): no torch here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gpu_service import errors
from gpu_service.workloads import datasets, weights
from gpu_service.workloads.base import ImageSize, Kind, WeightsFingerprint

# Ultralytics' own validation defaults (its cfg/default.yaml): what a training validates with.
DEFAULT_CONF = 0.001
DEFAULT_IOU = 0.7


class EvaluateSpec(BaseModel):
    """Which registered model to validate on which split of which dataset."""

    model_config = ConfigDict(extra="forbid")

    model: WeightsFingerprint
    dataset: str = Field(
        min_length=1, max_length=1000, description="dataset folder with data.yaml, in storage"
    )
    split: Literal["train", "val", "test"] = Field("val", description="the split validated")
    imgsz: ImageSize | None = Field(
        None, description="image size; unset: the size the model was trained at (else 640)"
    )
    conf: float = Field(DEFAULT_CONF, ge=0, le=1, description="minimum confidence")
    iou: float = Field(DEFAULT_IOU, ge=0, le=1, description="NMS IoU threshold")


def check_evaluate(spec: BaseModel, storage: Path) -> None:
    """Submit-time: the weights are registered and the dataset has the split asked for."""
    assert isinstance(spec, EvaluateSpec)
    weights.verified_path(fingerprint=spec.model, storage=storage, verify_hash=False)
    data_yaml = datasets.dataset_yaml(dataset=spec.dataset, storage=storage)
    if spec.split not in datasets.splits(data_yaml=data_yaml):
        raise errors.ValidationFailed(
            f"dataset: data.yaml has no {spec.split} split",
            details={"field": "split", "split": spec.split},
        )


def memory_estimate(spec: BaseModel) -> int:
    """MiB on the GPU: weights, CUDA context and one validation batch (rough)."""
    assert isinstance(spec, EvaluateSpec)
    imgsz = spec.imgsz or 640
    return int(768 + 40 * 16 * (imgsz / 640) ** 2)


EVALUATE = Kind(
    name="evaluate",
    spec_model=EvaluateSpec,
    worker="fresh",
    resumable=False,
    default_gpus=1,
    memory_estimate_mib=memory_estimate,
    check=check_evaluate,
)
