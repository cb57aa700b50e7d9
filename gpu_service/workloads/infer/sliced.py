"""Sliced inference (SAHI) for small objects: tiles, then merged boxes.

`sahi` wraps the model the worker already holds (a `.pt` model or an ONNX/OpenVINO
export loaded by ultralytics), so it never resolves a model name or downloads
anything; its dependency checks only import. The detections come back in the same
shape as full-frame ones (`contract.Detection`), so annotation and results are shared.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from gpu_service.workloads.infer.spec import InferSpec, SliceOptions

_MERGE = {"greedy_nmm": "GREEDYNMM", "nmm": "NMM", "nms": "NMS"}


def sliced_record(*, model: Any, source: Path, spec: InferSpec, device: str) -> dict[str, Any]:
    """One image's `contract.ImageResult` fields (but `annotated_path`), from tiles."""
    from PIL import Image, ImageOps
    from sahi import AutoDetectionModel
    from sahi.predict import get_sliced_prediction

    options: SliceOptions = spec.slice  # type: ignore[assignment]
    detector = AutoDetectionModel.from_pretrained(
        model_type="ultralytics",
        model=model,
        confidence_threshold=spec.conf,
        device=device,
        image_size=spec.imgsz,
    )
    with Image.open(source) as opened:
        image = ImageOps.exif_transpose(opened).convert("RGB")
    started = time.perf_counter()
    prediction = get_sliced_prediction(
        image,
        detector,
        slice_height=options.slice_size,
        slice_width=options.slice_size,
        overlap_height_ratio=options.overlap,
        overlap_width_ratio=options.overlap,
        perform_standard_pred=options.full_frame,
        postprocess_type=_MERGE[options.merge],
        postprocess_match_threshold=options.match_threshold,
        verbose=0,
    )
    elapsed_ms = (time.perf_counter() - started) * 1000
    width, height = image.size
    found = sorted(prediction.object_prediction_list, key=lambda p: -p.score.value)
    detections = []
    for item in found[: spec.max_det]:
        x0, y0, x1, y1 = (float(v) for v in item.bbox.to_xyxy())
        detections.append(
            {
                "class_id": int(item.category.id),
                "class_name": str(item.category.name),
                "confidence": round(float(item.score.value), 5),
                "box_xyxy": [round(v, 2) for v in (x0, y0, x1, y1)],
                "box_xywhn": [
                    round((x0 + x1) / 2 / width, 6),
                    round((y0 + y1) / 2 / height, 6),
                    round((x1 - x0) / width, 6),
                    round((y1 - y0) / height, 6),
                ],
            }
        )
    timing = {
        k: round(float(v) * 1000, 3) for k, v in (prediction.durations_in_seconds or {}).items()
    }
    timing["sliced_total"] = round(elapsed_ms, 3)
    return {
        "source": str(source),
        "width": int(width),
        "height": int(height),
        "detections": detections,
        "timing_ms": timing,
    }
