"""The `export` job kind as the API process declares it: its spec, its submit-time
checks and its memory estimate. What runs in the worker is `export/run.py`.

Importing this module must stay cheap (the API process imports it): no torch here.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpu_service import errors
from gpu_service.workloads import datasets, weights
from gpu_service.workloads.base import ImageSize, Kind, WeightsFingerprint

# The packages each format needs, all pinned in requirements/gpu.txt (ultralytics would
# otherwise try to pip-install them at run time; YOLO_AUTOINSTALL is off).
REQUIRED_PACKAGES: dict[str, tuple[str, ...]] = {
    "onnx": ("onnx", "onnxslim", "onnxruntime"),
    "openvino": ("openvino",),
    "torchscript": (),
    "engine": ("tensorrt", "onnx"),
}


class ExportSpec(BaseModel):
    """Which registered model to export, to what, and which images check parity."""

    model_config = ConfigDict(extra="forbid")

    model: WeightsFingerprint
    format: Literal["onnx", "openvino", "torchscript", "engine"]
    imgsz: ImageSize = 640
    half: bool = Field(False, description="FP16 weights (OpenVINO; GPU only for the others)")
    dynamic: bool = Field(False, description="dynamic input size and batch")
    int8: bool = Field(False, description="INT8 quantisation, calibrated on `dataset`")
    dataset: str | None = Field(
        None, max_length=1000, description="dataset folder: parity and INT8 calibration images"
    )
    parity_images: list[str] = Field(
        default_factory=list, max_length=50, description="images in storage for parity"
    )

    @model_validator(mode="after")
    def _int8_needs_calibration(self) -> ExportSpec:
        if self.int8 and self.format not in ("openvino", "engine"):
            raise ValueError(
                "int8 is available for openvino and engine exports only "
                "(ultralytics does not quantise onnx or torchscript)"
            )
        if self.int8 and not self.dataset:
            raise ValueError("int8 needs a dataset to calibrate on: name `dataset`")
        return self


def check_export(spec: BaseModel, storage: Path) -> None:
    """Submit-time: the weights are registered, the images and dataset exist, and every
    package the format needs is installed (nothing is installed at run time)."""
    assert isinstance(spec, ExportSpec)
    weights.verified_path(fingerprint=spec.model, storage=storage, verify_hash=False)
    if spec.dataset:
        datasets.dataset_yaml(dataset=spec.dataset, storage=storage)
    datasets.image_paths(images=spec.parity_images, storage=storage)
    calibration = ("nncf",) if spec.int8 and spec.format == "openvino" else ()
    needed = REQUIRED_PACKAGES[spec.format] + calibration
    missing = [name for name in needed if importlib.util.find_spec(name) is None]
    if missing:
        raise errors.ValidationFailed(
            f"{spec.format} export needs {', '.join(missing)}, not installed on this service",
            details={"field": "format", "missing": missing},
        )


def needs_cuda(spec: BaseModel) -> str | None:
    assert isinstance(spec, ExportSpec)
    if spec.format == "engine":
        return "a TensorRT engine is built for, and on, a CUDA GPU"
    return None


def memory_estimate(spec: BaseModel) -> int:
    """MiB on the GPU: the model, a trace at batch 1 and the parity predictions."""
    assert isinstance(spec, ExportSpec)
    engine = 2048 if spec.format == "engine" else 0  # TensorRT's builder workspace
    return int(768 + engine + 60 * (spec.imgsz / 640) ** 2)


EXPORT = Kind(
    name="export",
    spec_model=ExportSpec,
    worker="fresh",
    resumable=False,
    default_gpus=1,
    memory_estimate_mib=memory_estimate,
    check=check_export,
    needs_cuda=needs_cuda,
)
