"""An export job in a fresh worker: export, fingerprint, store, then check parity.

Ultralytics writes an export next to its source file, so the job exports a copy of the
registered weights in its own folder (never into the weights store), then moves the
artifact to `storage/exports/<fingerprint>/`. The parity check runs right after, on
the same worker, and its result is part of the manifest: an export that fails it is
kept (it can be downloaded and inspected) but cannot serve.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpu_service import errors
from gpu_service.contract import (
    PARITY_CONF_TOLERANCE,
    PARITY_INT8_CONF_TOLERANCE,
    ExportManifest,
    ExportResult,
)
from gpu_service.storage import write_json_atomically
from gpu_service.workloads import datasets, exports, weights
from gpu_service.workloads.base import JobContext
from gpu_service.workloads.export import parity
from gpu_service.workloads.export.spec import ExportSpec
from gpu_service.workloads.offline import make_ultralytics_silent

_TOOLS = (
    "ultralytics",
    "torch",
    "onnx",
    "onnxslim",
    "onnxruntime",
    "openvino",
    "nncf",
    "tensorrt",
)
_PARITY_SAMPLE = 8
_IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".webp"}


def export_job(*, ctx: JobContext) -> dict[str, Any]:
    spec = ExportSpec.model_validate(ctx.spec)
    make_ultralytics_silent(storage=ctx.storage)
    source = weights.verified_path(fingerprint=spec.model, storage=ctx.storage)
    weights.read_checkpoint(path=source)  # refuses unsafe content before ultralytics sees it
    work = ctx.job_dir / "export"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    copy = work / "model.pt"
    shutil.copyfile(source, copy)

    from ultralytics import YOLO

    ctx.progress(stage="exporting", fraction=0.1)
    ctx.fault_point(1)
    device = "0" if ctx.devices else "cpu"
    data_yaml = (
        datasets.dataset_yaml(dataset=spec.dataset, storage=ctx.storage) if spec.dataset else None
    )
    ctx.logger.info("exporting %s to %s at %s px", spec.model, spec.format, spec.imgsz)
    try:
        produced = YOLO(str(copy), task="detect").export(
            format=spec.format,
            imgsz=spec.imgsz,
            half=spec.half,
            dynamic=spec.dynamic,
            int8=spec.int8,
            data=str(data_yaml) if data_yaml else None,
            simplify=True,
            batch=1,
            device=device,
            verbose=False,
        )
    except RuntimeError as exc:
        if "out of memory" in str(exc).lower():
            raise errors.CudaOOM(details={"imgsz": spec.imgsz}) from exc
        raise
    if ctx.should_stop():
        raise errors.Cancelled()
    manifest = _store(spec=spec, produced=Path(produced), storage=ctx.storage, ctx=ctx)

    ctx.progress(stage="parity", fraction=0.6)
    ctx.fault_point(2)
    images = _parity_images(spec=spec, storage=ctx.storage, data_yaml=data_yaml)
    artifact = exports.artifact_path(manifest=manifest, storage=ctx.storage)
    manifest["parity"] = check_parity(
        reference=YOLO(str(copy), task="detect"),
        exported=YOLO(str(artifact), task="detect"),
        images=images,
        imgsz=spec.imgsz,
        device=device,
        tolerance=PARITY_INT8_CONF_TOLERANCE if spec.int8 else PARITY_CONF_TOLERANCE,
    )
    ctx.logger.info("parity of %s: %s", manifest["fingerprint"], manifest["parity"])
    manifest_path = artifact.parent / "manifest.json"
    write_json_atomically(manifest_path, manifest, sort_keys=True)
    shutil.rmtree(work, ignore_errors=True)
    ctx.set_metrics(
        parity_passed=manifest["parity"]["passed"],
        matched_fraction=manifest["parity"]["matched_fraction"],
        max_conf_diff=manifest["parity"]["max_conf_diff"],
    )
    ctx.progress(stage="done", fraction=1.0)
    result: ExportResult = {
        "export": manifest,
        "manifest_path": manifest_path.relative_to(ctx.storage).as_posix(),
    }
    return dict(result)


def _store(*, spec: ExportSpec, produced: Path, storage: Path, ctx: JobContext) -> ExportManifest:
    """Move the artifact to `exports/<fingerprint>/model<suffix>` and describe it."""
    fingerprint = exports.fingerprint_artifact(path=produced)
    target_dir = exports.export_dir(fingerprint=fingerprint, storage=storage)
    target = target_dir / produced.name
    if not target.exists():
        staging = target_dir.with_name(f".{fingerprint}-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        shutil.move(str(produced), staging / produced.name)
        shutil.rmtree(target_dir, ignore_errors=True)
        os.replace(staging, target_dir)
    description = weights.describe_weights(fingerprint=spec.model, storage=storage)
    return {
        "fingerprint": fingerprint,
        "format": spec.format,
        "artifact": target.relative_to(storage).as_posix(),
        "size_bytes": _size(target),
        "source_fingerprint": spec.model,
        "imgsz": spec.imgsz,
        "half": spec.half,
        "dynamic": spec.dynamic,
        "int8": spec.int8,
        "opset": _opset(target) if spec.format == "onnx" else None,
        "simplified": spec.format == "onnx",
        "class_names": list(description.get("class_names") or []),
        "tool_versions": _tool_versions(),
        "parity": parity.compare([], []),  # replaced once parity has run
        "created_at": datetime.now(UTC).isoformat(),
        "job_id": ctx.job_id,
    }


def check_parity(
    *,
    reference: Any,
    exported: Any,
    images: list[Path],
    imgsz: int,
    device: str,
    conf: float = parity.PARITY_CONF,
    tolerance: float = PARITY_CONF_TOLERANCE,
) -> Any:
    """Both models on the same images; see `parity` for the rule. An INT8 export is
    held to the looser `PARITY_INT8_CONF_TOLERANCE`, recorded in its manifest."""
    floor = max(conf - tolerance, 0.0)
    options = {"imgsz": imgsz, "conf": floor, "device": device, "verbose": False, "save": False}
    ref_boxes, exp_boxes = [], []
    for image in images:
        ref_boxes.append(parity.boxes_of(reference.predict(source=str(image), **options)[0]))
        exp_boxes.append(parity.boxes_of(exported.predict(source=str(image), **options)[0]))
    return parity.compare(ref_boxes, exp_boxes, conf=conf, tolerance=tolerance)


def _parity_images(*, spec: ExportSpec, storage: Path, data_yaml: Path | None) -> list[Path]:
    """The images named, else a sample of the dataset's validation images, else the
    two sample images that ship inside ultralytics (no download)."""
    if spec.parity_images:
        return datasets.image_paths(images=spec.parity_images, storage=storage)
    if data_yaml is not None and (found := _validation_images(data_yaml)):
        return found[:_PARITY_SAMPLE]
    from ultralytics.utils import ASSETS

    return [Path(ASSETS) / "bus.jpg", Path(ASSETS) / "zidane.jpg"]


def _validation_images(data_yaml: Path) -> list[Path]:
    import yaml

    data = yaml.safe_load(data_yaml.read_text()) or {}
    root = Path(data.get("path") or data_yaml.parent)
    if not root.is_absolute():
        root = data_yaml.parent / root
    val = data.get("val") or []
    found: list[Path] = []
    for entry in [val] if isinstance(val, str) else list(val):
        folder = root / entry
        if folder.is_dir():
            found += sorted(p for p in folder.rglob("*") if p.suffix.lower() in _IMAGE_SUFFIXES)
    return found


def _opset(path: Path) -> int | None:
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    return next((int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")), None)


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _tool_versions() -> dict[str, str]:
    versions = {}
    for name in _TOOLS:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions
