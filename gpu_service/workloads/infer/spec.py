"""The `infer` job kind as the API process declares it: its spec, its submit-time
checks and its memory estimate. What runs in the worker is `infer/run.py`.

Importing this module must stay cheap (the API process imports it): no torch here.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gpu_service.contract import FINGERPRINT
from gpu_service.workloads import datasets, weights
from gpu_service.workloads.base import ImageSize, Kind


class InferSpec(BaseModel):
    """Which registered model to run on which images on shared storage."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(description="sha256 fingerprint of a registered model version")
    images: list[str] = Field(min_length=1, max_length=1000, description="paths in storage")
    conf: float = Field(0.25, ge=0, le=1, description="minimum confidence")
    iou: float = Field(0.7, ge=0, le=1, description="NMS IoU threshold")
    imgsz: ImageSize = 640
    max_det: int = Field(300, ge=1, le=1000)
    batch: int = Field(16, ge=1, le=256)

    @field_validator("model")
    @classmethod
    def _fingerprint(cls, value: str) -> str:
        if not FINGERPRINT.match(value):
            raise ValueError("must be the sha256 fingerprint of registered weights")
        return value

    @field_validator("images")
    @classmethod
    def _non_empty_paths(cls, value: list[str]) -> list[str]:
        if any(not image or len(image) > 1000 for image in value):
            raise ValueError("each image must be a path of 1 to 1000 characters")
        return value


def check_infer(spec: BaseModel, storage: Path) -> None:
    """Submit-time: the weights are registered and every image is in storage."""
    assert isinstance(spec, InferSpec)
    weights.verified_path(fingerprint=spec.model, storage=storage, verify_hash=False)
    datasets.image_paths(images=spec.images, storage=storage)


def memory_estimate(spec: BaseModel) -> int:
    """MiB on the GPU: weights, CUDA context and one batch of activations (rough)."""
    assert isinstance(spec, InferSpec)
    return int(768 + 40 * spec.batch * (spec.imgsz / 640) ** 2)


INFER = Kind(
    name="infer",
    spec_model=InferSpec,
    worker="resident",
    resumable=False,
    default_gpus=1,
    memory_estimate_mib=memory_estimate,
    check=check_infer,
)
