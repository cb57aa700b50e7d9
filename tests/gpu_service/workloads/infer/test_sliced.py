"""Sliced inference finds small objects that full-frame inference misses.

A yolov8n is trained here on 64 px tiles of small squares, then run on a 512 px scene
of the same squares at its own size: over the full frame the scene shrinks eight times
and the squares with it, so they are lost; over 64 px slices they are the size the
model learnt. Recall is measured against the scene's known boxes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_service.workloads import weights
from gpu_service.workloads.export.parity import iou
from gpu_service.workloads.infer.run import infer_job
from gpu_service.workloads.infer.spec import InferSpec
from tests.gpu_service.workloads.infer.small_objects import make_scene, make_tiles_dataset


@pytest.fixture(scope="module")
def tile_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ultralytics import YOLO

    root = tmp_path_factory.mktemp("tiles")
    dataset = make_tiles_dataset(root / "tiles")
    YOLO("yolov8n.yaml").train(
        data=str(dataset / "data.yaml"),
        epochs=30,
        imgsz=64,
        batch=16,
        workers=0,
        device="cpu",
        project=str(root / "runs"),
        name="tiles",
        exist_ok=True,
        plots=False,
        verbose=False,
        seed=1,
        deterministic=True,
        mosaic=0.0,
        amp=False,
    )
    return root / "runs" / "tiles" / "weights" / "best.pt"


def _recall(truth: list[tuple], detections: list[dict]) -> float:
    boxes = [(0, 1.0, *d["box_xyxy"]) for d in detections]
    found = sum(any(iou((0, 1.0, *t), b) >= 0.5 for b in boxes) for t in truth)
    return found / len(truth)


@pytest.mark.slow
def test_sliced_inference_finds_clearly_more_small_objects_than_the_full_frame(
    make_context, storage: Path, tile_model: Path
) -> None:
    fingerprint = weights.import_weights(src=tile_model, storage=storage)["fingerprint"]
    truth = make_scene(storage / "uploads" / "scene.png", size=512, count=16)
    base = {"model": fingerprint, "images": ["uploads/scene.png"], "imgsz": 64, "conf": 0.25}
    sliced_spec = {**base, "slice": {"slice_size": 64, "overlap": 0.2, "merge": "greedy_nmm"}}

    full = infer_job(ctx=make_context(kind="infer", job_id="full", spec=base))
    sliced = infer_job(
        ctx=make_context(
            kind="infer", job_id="sliced", spec=InferSpec.model_validate(sliced_spec).model_dump()
        )
    )

    full_recall = _recall(truth, full["images"][0]["detections"])
    sliced_recall = _recall(truth, sliced["images"][0]["detections"])
    print(f"recall: full frame {full_recall:.2f}, sliced {sliced_recall:.2f}")
    assert sliced_recall >= 0.75
    assert sliced_recall >= full_recall + 0.5
    # The same documents as full-frame results, annotated copy included.
    image = sliced["images"][0]
    assert set(image) == set(full["images"][0])
    assert (image["width"], image["height"]) == (512, 512)
    assert Path(image["annotated_path"]).is_file()
    assert all(0 <= v <= 1 for d in image["detections"] for v in d["box_xywhn"])
    assert "sliced_total" in image["timing_ms"]
