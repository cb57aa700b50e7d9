"""The `train` job kind as the API process declares it: its spec, its submit-time
checks and its memory estimate. What runs in the worker is `train/run.py`.

Importing this module must stay cheap (the API process imports it): no torch here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gpu_service.contract import (
    ARCHITECTURES,
    AUGMENTATIONS,
    FINGERPRINT,
    LR0_MAX,
    OPTIMIZERS,
    PATIENCE_DEFAULT,
)
from gpu_service.workloads import datasets, weights
from gpu_service.workloads.base import ImageSize, Kind

# Rough activation memory per image at 640 px by model scale, MiB; see memory_estimate.
_MIB_PER_IMAGE = {"n": 180, "s": 300, "m": 550, "l": 800, "x": 1100}


def _augmentation(name: str, description: str) -> Any:
    low, high, default = AUGMENTATIONS[name]
    return Field(default, ge=low, le=high, allow_inf_nan=False, description=description)


class TrainSpec(BaseModel):
    """What to train. The GPUs come from the submit request, not from here."""

    model_config = ConfigDict(extra="forbid")

    dataset: str = Field(
        min_length=1, max_length=1000, description="dataset folder with data.yaml, in storage"
    )
    model: str = Field(
        "yolov8n",
        description="architecture (yolov8n, yolo11s, ...) or fingerprint of weights to fine-tune",
    )
    epochs: int = Field(100, ge=1, le=1000)
    imgsz: ImageSize = 640
    batch: int = Field(16, ge=1, le=1024, description="images per step, over all the job's GPUs")
    lr0: float | None = Field(
        None, gt=0, le=LR0_MAX, description="initial learning rate; unset: ultralytics chooses"
    )
    optimizer: Literal[OPTIMIZERS] = Field(
        "auto", description="auto picks the optimizer and its learning rate; lr0 then means SGD"
    )
    patience: int = Field(
        PATIENCE_DEFAULT, ge=0, le=1000, description="epochs without improvement; 0 = off"
    )
    # The augmentations (contract.AUGMENTATIONS: bounds and ultralytics' defaults).
    mosaic: float = _augmentation("mosaic", "probability of a 4-image mosaic")
    fliplr: float = _augmentation("fliplr", "probability of a left-right flip")
    hsv_h: float = _augmentation("hsv_h", "hue jitter, a fraction")
    hsv_s: float = _augmentation("hsv_s", "saturation jitter, a fraction")
    hsv_v: float = _augmentation("hsv_v", "brightness jitter, a fraction")
    scale: float = _augmentation("scale", "scale jitter, +/- gain")
    degrees: float = _augmentation("degrees", "rotation, +/- degrees")
    seeds: list[int] = Field(default_factory=lambda: [42], min_length=1, max_length=5)
    workers: int = Field(2, ge=0, le=16, description="dataloader processes")

    @field_validator("model")
    @classmethod
    def _architecture_or_fingerprint(cls, value: str) -> str:
        if not (value in ARCHITECTURES or FINGERPRINT.match(value)):
            raise ValueError(
                "must be an architecture such as yolov8n, yolo11n, yolo11s or yolo26n, "
                "or the sha256 fingerprint of registered weights"
            )
        return value

    @field_validator("seeds")
    @classmethod
    def _distinct_seeds(cls, value: list[int]) -> list[int]:
        if len(set(value)) != len(value):
            raise ValueError("seeds must not repeat")
        if any(not 0 <= seed < 2**31 for seed in value):
            raise ValueError("each seed must be between 0 and 2**31 - 1")
        return value


def optimizer_and_lr(spec: TrainSpec) -> tuple[str, float | None]:
    """Ultralytics' `auto` optimizer ignores lr0, so a given lr0 selects SGD instead."""
    if spec.lr0 is not None and spec.optimizer == "auto":
        return "SGD", spec.lr0
    return spec.optimizer, spec.lr0


def hyperparameter_overrides(spec: TrainSpec) -> dict[str, Any]:
    """What ultralytics' trainer is given of the spec's hyperparameters."""
    optimizer, lr0 = optimizer_and_lr(spec)
    return {
        "optimizer": optimizer,
        **({"lr0": lr0} if lr0 is not None else {}),
        "patience": spec.patience or 10**6,  # 0 means off; ultralytics reads 0 as "stop now"
        **{name: getattr(spec, name) for name in AUGMENTATIONS},
    }


def check_train(spec: BaseModel, storage: Path) -> None:
    """Submit-time: the dataset and the base weights exist on shared storage."""
    assert isinstance(spec, TrainSpec)
    datasets.dataset_yaml(dataset=spec.dataset, storage=storage)
    if FINGERPRINT.match(spec.model):
        weights.verified_path(fingerprint=spec.model, storage=storage, verify_hash=False)


def memory_estimate(spec: BaseModel) -> int:
    """MiB per GPU: the model and optimizer plus activations for the whole batch.

    Deliberately rough and on the high side (the batch is counted whole on each GPU);
    a request can give its own figure.
    """
    assert isinstance(spec, TrainSpec)
    scale = spec.model[-1] if spec.model in ARCHITECTURES else "s"
    per_image = _MIB_PER_IMAGE.get(scale, 300) * (spec.imgsz / 640) ** 2
    return int(1024 + per_image * spec.batch)


TRAIN = Kind(
    name="train",
    spec_model=TrainSpec,
    worker="fresh",
    resumable=True,
    default_gpus=1,
    memory_estimate_mib=memory_estimate,
    check=check_train,
)
