"""The `infer` job kind as the API process declares it: its spec, its submit-time
checks and its memory estimate. What runs in the worker is `infer/run.py`.

Importing this module must stay cheap (the API process imports it): no torch here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gpu_service.workloads import datasets, exports, weights
from gpu_service.workloads.base import ImageSize, Kind, WeightsFingerprint
from gpu_service.workloads.infer import media, pixels


class SliceOptions(BaseModel):
    """Sliced inference (SAHI): the model runs over overlapping tiles, boxes are merged."""

    model_config = ConfigDict(extra="forbid")

    slice_size: int = Field(640, ge=32, le=4096, description="tile width and height, pixels")
    overlap: float = Field(0.2, ge=0, le=0.8, description="overlap of neighbouring tiles")
    merge: Literal["greedy_nmm", "nmm", "nms"] = Field(
        "greedy_nmm", description="how boxes of neighbouring tiles are merged"
    )
    match_threshold: float = Field(0.5, gt=0, le=1, description="overlap that merges boxes")
    full_frame: bool = Field(True, description="also run the whole image and merge it in")


class VideoOptions(BaseModel):
    """A video on storage, sampled at `fps`, within duration and frame limits."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, max_length=1000, description="mp4, webm or avi in storage")
    fps: float = Field(2.0, gt=0, le=60, description="frames sampled per second of video")
    max_seconds: float = Field(600, gt=0, le=7200, description="longest video accepted")
    max_frames: int = Field(600, ge=1, le=10000, description="most frames sampled")


class InferSpec(BaseModel):
    """Which registered model to run on which images on shared storage."""

    model_config = ConfigDict(extra="forbid")

    model: WeightsFingerprint
    images: list[str] = Field(default_factory=list, max_length=1000, description="paths in storage")
    video: VideoOptions | None = None
    archive: str | None = Field(
        None, min_length=1, max_length=1000, description="a zip of images in storage"
    )
    format: Literal["pt", "onnx", "openvino"] = Field(
        "pt", description="run the .pt weights or one of their exports"
    )
    export: str | None = Field(
        None, description="fingerprint of the export to run; default: newest that passed parity"
    )
    slice: SliceOptions | None = None
    conf: float = Field(0.25, ge=0, le=1, description="minimum confidence")
    iou: float = Field(0.7, ge=0, le=1, description="NMS IoU threshold")
    imgsz: ImageSize = 640
    max_det: int = Field(300, ge=1, le=1000)
    batch: int = Field(16, ge=1, le=256)

    @field_validator("images")
    @classmethod
    def _non_empty_paths(cls, value: list[str]) -> list[str]:
        if any(not image or len(image) > 1000 for image in value):
            raise ValueError("each image must be a path of 1 to 1000 characters")
        return value

    @model_validator(mode="after")
    def _one_source(self) -> InferSpec:
        sources = [bool(self.images), self.video is not None, self.archive is not None]
        if sum(sources) != 1:
            raise ValueError("give exactly one of images, video or archive")
        if self.export is not None and self.format == "pt":
            raise ValueError("export names an export; give its format too")
        return self


def check_infer(spec: BaseModel, storage: Path) -> None:
    """Submit-time: the weights are registered and every image is in storage."""
    assert isinstance(spec, InferSpec)
    weights.verified_path(fingerprint=spec.model, storage=storage, verify_hash=False)
    paths = datasets.image_paths(images=spec.images, storage=storage)
    # From the headers alone: refuses a decode bomb before any worker decodes it.
    pixels.sized_images(paths=paths, limit=pixels.max_pixels(), names=spec.images)
    if spec.format != "pt":
        exports.serving_export(
            source=spec.model, fmt=spec.format, storage=storage, fingerprint=spec.export
        )
    if spec.video is not None:
        media.check_video(path=spec.video.path, max_seconds=spec.video.max_seconds, storage=storage)
    if spec.archive is not None:
        media.check_archive(path=spec.archive, storage=storage)


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
