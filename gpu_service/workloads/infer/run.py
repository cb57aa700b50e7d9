"""An inference job in the GPU's resident worker: cached models, batches of images.

The worker process lives across jobs, so models stay loaded between requests: a small
LRU cache keyed by fingerprint (CARRIL_INFER_CACHE_SIZE models, default 2). Weights
are loaded only through `weights.load_model`, by fingerprint, hash checked.
"""

from __future__ import annotations

import contextlib
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from gpu_service import errors
from gpu_service.storage import write_json_atomically
from gpu_service.workloads import datasets, exports, weights
from gpu_service.workloads.base import JobContext
from gpu_service.workloads.infer import media, pixels
from gpu_service.workloads.infer.annotate import draw_detections
from gpu_service.workloads.infer.sliced import sliced_record
from gpu_service.workloads.infer.spec import InferSpec
from gpu_service.workloads.offline import make_ultralytics_silent
from gpu_service.workloads.simulated_oom import faults_in_forward
from gpu_service.workloads.worker_env import int_setting

_MODELS: OrderedDict[str, Any] = OrderedDict()


def cache_size() -> int:
    return int_setting("CARRIL_INFER_CACHE_SIZE", default=2)


def cached_model(*, fingerprint: str, storage: Path, export: str | None = None) -> Any:
    """The loaded model for a fingerprint (or one of its exports, by the export's own
    fingerprint), loading it (and evicting the oldest) if needed."""
    key = export or fingerprint
    if key in _MODELS:
        _MODELS.move_to_end(key)
        return _MODELS[key]
    if export is None:
        model = weights.load_model(fingerprint=fingerprint, storage=storage)
    else:
        model = _load_export(fingerprint=export, storage=storage)
    _MODELS[key] = model
    while len(_MODELS) > cache_size():
        _MODELS.popitem(last=False)
    return model


def cached_fingerprints() -> list[str]:
    return list(_MODELS)


def infer_job(*, ctx: JobContext) -> dict[str, Any]:
    spec = InferSpec.model_validate(ctx.spec)
    make_ultralytics_silent(storage=ctx.storage)
    frames = _video_frames(spec=spec, ctx=ctx)
    paths = _input_paths(spec=spec, ctx=ctx, frames=frames)
    # Every header is checked before the model loads or any pixel is decoded: an image
    # over the cap fails the job at once, with nothing written (defence in depth behind
    # the submit-time check; the file may have changed since).
    budget = pixels.max_pixels()
    names = spec.images if spec.images and not frames and spec.archive is None else None
    sized = pixels.sized_images(paths=paths, limit=budget, names=names)
    ctx.progress(stage="loading model", fraction=0.0)
    export = None
    if spec.format != "pt":
        export = exports.serving_export(
            source=spec.model, fmt=spec.format, storage=ctx.storage, fingerprint=spec.export
        )
        # A static export runs at the size and batch it was exported with.
        if not export["dynamic"]:
            spec = spec.model_copy(update={"imgsz": export["imgsz"], "batch": 1})
    model = cached_model(
        fingerprint=spec.model,
        storage=ctx.storage,
        export=export["fingerprint"] if export else None,
    )
    device = f"cuda:{ctx.devices[0]}" if ctx.devices else "cpu"
    ctx.logger.info("inference at %s px", spec.imgsz)
    annotated_dir = ctx.job_dir / "annotated"
    images: list[dict[str, Any]] = []
    predict_seconds = 0.0
    # A static export runs at batch 1, so the batches are cut once the model is known.
    batches = pixels.pixel_batches(sized, max_images=spec.batch, max_pixels=budget)
    current = {"batch": 0}
    faults = (
        faults_in_forward(
            model.model, fault_point=ctx.fault_point, step=lambda: current["batch"] or None
        )
        # A real GPU raises its own out-of-memory; an export's runtime has no torch forward.
        if ctx.runtime == "simulated" and export is None
        else contextlib.nullcontext()
    )
    with faults:
        for number, chunk in enumerate(batches, start=1):
            if ctx.should_stop():
                raise errors.Cancelled(details={"images_done": len(images)})
            current["batch"] = number
            if export is not None:
                ctx.fault_point(number)
            decoded = [pixels.decode(image) for image in chunk]
            started = time.perf_counter()
            if spec.slice is not None:
                records = [
                    sliced_record(model=model, source=image.path, spec=spec, device=device)
                    for image in chunk
                ]
            else:
                results = _predict(model=model, decoded=decoded, spec=spec, device=device)
                records = [
                    image_record(source=image.path, result=result)
                    for image, result in zip(chunk, results, strict=True)
                ]
                del results
            predict_seconds += time.perf_counter() - started
            for image, array, record in zip(chunk, decoded, records, strict=True):
                target = annotated_dir / f"{len(images):04d}-{image.path.name}"
                record["annotated_path"] = str(
                    draw_detections(image=array, detections=record["detections"], target=target)
                )
                images.append(record)
            # This batch's pixels go before the next batch decodes (ultralytics' predictor
            # keeps its last inputs until the next call).
            del decoded
            _release_inputs(model)
            ctx.progress(
                stage="inference",
                batch=number,
                batches=len(batches),
                fraction=len(images) / len(paths),
            )
    results_path = ctx.job_dir / "results.json"
    summary = {
        "model": spec.model,
        "images": images,
        "images_per_second": round(len(images) / predict_seconds, 3) if predict_seconds else 0.0,
        "format": spec.format,
        "export": export["fingerprint"] if export else None,
        "imgsz": size_used(model=model, spec=spec),
        "video": _video_result(spec=spec, ctx=ctx, frames=frames, images=images),
    }
    write_json_atomically(results_path, summary)
    ctx.set_metrics(images=len(images), images_per_second=summary["images_per_second"])
    return {"model": spec.model, "results_path": str(results_path), **summary}


def size_used(*, model: Any, spec: InferSpec) -> int:
    """The image size ultralytics' predictor actually ran at (it rounds to the model's
    stride), so the result says what happened, not only what was asked (issue 13)."""
    predictor = getattr(model, "predictor", None)
    ran = getattr(predictor, "imgsz", None) if spec.slice is None else None
    if isinstance(ran, (list, tuple)) and ran:
        return int(max(ran))
    if isinstance(ran, int):
        return ran
    return spec.imgsz


def _release_inputs(model: Any) -> None:
    predictor = getattr(model, "predictor", None)
    if predictor is not None:
        predictor.batch = None
        predictor.dataset = None


def _predict(*, model: Any, decoded: list[Any], spec: InferSpec, device: str) -> list[Any]:
    """Ultralytics' predict on images already decoded (BGR arrays): it reads no file."""
    try:
        return model.predict(
            source=decoded,
            conf=spec.conf,
            iou=spec.iou,
            imgsz=spec.imgsz,
            max_det=spec.max_det,
            batch=spec.batch,
            device=device,
            verbose=False,
            save=False,
        )
    except RuntimeError as exc:
        if "out of memory" in str(exc).lower():
            raise errors.CudaOOM(
                details={"batch": len(decoded), "batch_requested": spec.batch, "imgsz": spec.imgsz}
            ) from exc
        raise


def image_record(*, source: Path, result: Any) -> dict[str, Any]:
    """One image's detections in pixels and normalised, with its size and timings."""
    height, width = result.orig_shape[:2]
    names = result.names
    boxes = result.boxes
    detections = []
    if boxes is not None and len(boxes):
        for xyxy, xywhn, confidence, cls in zip(
            boxes.xyxy.tolist(),
            boxes.xywhn.tolist(),
            boxes.conf.tolist(),
            boxes.cls.tolist(),
            strict=True,
        ):
            class_id = int(cls)
            detections.append(
                {
                    "class_id": class_id,
                    "class_name": str(names.get(class_id, class_id)),
                    "confidence": round(float(confidence), 5),
                    "box_xyxy": [round(float(v), 2) for v in xyxy],
                    "box_xywhn": [round(float(v), 6) for v in xywhn],
                }
            )
    return {
        "source": str(source),
        "width": int(width),
        "height": int(height),
        "detections": detections,
        "timing_ms": {k: round(float(v), 3) for k, v in (result.speed or {}).items()},
    }


def _load_export(*, fingerprint: str, storage: Path) -> Any:
    """An ultralytics model over a stored export (ONNX Runtime, OpenVINO), hash checked."""
    path, _ = exports.verified_artifact(fingerprint=fingerprint, storage=storage)
    from ultralytics import YOLO

    make_ultralytics_silent(storage=storage)
    return YOLO(str(path), task="detect")


def _video_frames(*, spec: InferSpec, ctx: JobContext) -> list[media.Frame]:
    if spec.video is None:
        return []
    ctx.progress(stage="decoding video", fraction=0.0)
    return media.sample_frames(
        path=spec.video.path, options=spec.video, storage=ctx.storage, target=ctx.job_dir / "frames"
    )


def _input_paths(*, spec: InferSpec, ctx: JobContext, frames: list[media.Frame]) -> list[Path]:
    if frames:
        return [frame.path for frame in frames]
    if spec.archive is not None:
        return media.unpack_archive(
            path=spec.archive, storage=ctx.storage, target=ctx.job_dir / "inputs"
        )
    return datasets.image_paths(images=spec.images, storage=ctx.storage)


def _video_result(
    *, spec: InferSpec, ctx: JobContext, frames: list[media.Frame], images: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """The annotated video (mp4 and webm) and the per-frame detections JSON."""
    if spec.video is None:
        return None
    ctx.progress(stage="writing video", fraction=1.0)
    mp4, webm = media.write_videos(
        images=[Path(image["annotated_path"]) for image in images],
        fps=spec.video.fps,
        target=ctx.job_dir / "annotated",
    )
    per_frame = [
        {"index": frame.index, "time_s": frame.time_s, "detections": image["detections"]}
        for frame, image in zip(frames, images, strict=True)
    ]
    detections_path = ctx.job_dir / "frames.json"
    write_json_atomically(detections_path, per_frame)
    return {
        "source": spec.video.path,
        "fps_sampled": spec.video.fps,
        "frames": [
            {"index": f["index"], "time_s": f["time_s"], "count": len(f["detections"])}
            for f in per_frame
        ],
        "annotated_video": str(mp4),
        "annotated_webm": str(webm),
        "detections_path": str(detections_path),
    }
