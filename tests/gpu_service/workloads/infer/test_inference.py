"""Inference on the CPU with real ultralytics on its own sample images."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from gpu_service import errors
from gpu_service.contract import Detection, ImageResult, InferenceResult
from gpu_service.workloads import weights
from gpu_service.workloads.infer import run as inference
from gpu_service.workloads.infer.run import infer_job
from gpu_service.workloads.infer.spec import INFER, InferSpec


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ultralytics import YOLO

    path = tmp_path_factory.mktemp("infer-ckpt") / "shapes.pt"
    model = YOLO("yolov8n.yaml")
    model.model.names = {i: f"class-{i}" for i in range(80)}
    model.save(str(path))
    return path


@pytest.fixture
def sample_images(storage: Path) -> list[str]:
    from ultralytics.utils import ASSETS

    folder = storage / "uploads" / "infer" / "batch-1"
    folder.mkdir(parents=True)
    names = []
    for name in ("bus.jpg", "zidane.jpg"):
        shutil.copy(ASSETS / name, folder / name)
        names.append(f"uploads/infer/batch-1/{name}")
    return names


@pytest.fixture
def fingerprint(storage: Path, checkpoint: Path) -> str:
    return weights.import_weights(src=checkpoint, storage=storage)["fingerprint"]


def _spec(fingerprint: str, images: list[str], **overrides) -> dict:
    # An untrained network scores every box near zero: conf 0 keeps max_det of them.
    spec = {"model": fingerprint, "images": images, "conf": 0.0, "imgsz": 64, "max_det": 5}
    spec.update(overrides)
    return InferSpec.model_validate(spec).model_dump()


def test_it_returns_well_formed_detections_and_annotated_copies(
    make_context, storage: Path, fingerprint: str, sample_images: list[str]
) -> None:
    from PIL import Image

    ctx = make_context(kind="infer", spec=_spec(fingerprint, sample_images, batch=1))

    result = infer_job(ctx=ctx)

    TypeAdapter(InferenceResult).validate_python(result)
    assert set(result) == set(InferenceResult.__annotations__)
    for image in result["images"]:
        assert set(image) == set(ImageResult.__annotations__)
        assert all(set(d) == set(Detection.__annotations__) for d in image["detections"])

    assert result["model"] == fingerprint
    assert [Path(i["source"]).name for i in result["images"]] == ["bus.jpg", "zidane.jpg"]
    bus = result["images"][0]
    assert (bus["width"], bus["height"]) == Image.open(storage / sample_images[0]).size
    assert 0 < len(bus["detections"]) <= 5
    for image in result["images"]:
        for det in image["detections"]:
            assert set(det) == {"class_id", "class_name", "confidence", "box_xyxy", "box_xywhn"}
            assert det["class_name"] == f"class-{det['class_id']}"
            assert 0.0 <= det["confidence"] <= 1.0
            x0, y0, x1, y1 = det["box_xyxy"]
            assert 0 <= x0 <= x1 <= image["width"]
            assert 0 <= y0 <= y1 <= image["height"]
            assert all(0.0 <= v <= 1.0 for v in det["box_xywhn"])
        annotated = Path(image["annotated_path"])
        assert annotated.parent == ctx.job_dir / "annotated"
        assert Image.open(annotated).size == (image["width"], image["height"])
        assert {"preprocess", "inference", "postprocess"} <= set(image["timing_ms"])
    assert result["images_per_second"] > 0
    assert json.loads(Path(result["results_path"]).read_text())["images"] == result["images"]
    assert [p["batch"] for p in ctx.progress_log if p.get("stage") == "inference"] == [1, 2]


def test_the_model_is_loaded_once_and_kept_between_jobs(
    make_context, fingerprint: str, sample_images: list[str], monkeypatch
) -> None:
    inference._MODELS.clear()
    loads = []
    real_load = weights.load_model
    monkeypatch.setattr(
        weights, "load_model", lambda **kw: loads.append(kw["fingerprint"]) or real_load(**kw)
    )

    for job in ("a", "b"):
        infer_job(
            ctx=make_context(kind="infer", job_id=job, spec=_spec(fingerprint, sample_images))
        )

    assert loads == [fingerprint]
    assert inference.cached_fingerprints() == [fingerprint]


def test_the_cache_keeps_at_most_the_configured_number_of_models(
    storage: Path, checkpoint: Path, monkeypatch
) -> None:
    monkeypatch.setenv("CARRIL_INFER_CACHE_SIZE", "1")
    inference._MODELS.clear()
    first = weights.import_weights(src=checkpoint, storage=storage)["fingerprint"]
    other = storage / "other.pt"
    other.write_bytes(checkpoint.read_bytes())
    import torch

    ckpt = torch.load(other, weights_only=False)
    ckpt["date"] = "another day"
    torch.save(ckpt, other)
    second = weights.import_weights(src=other, storage=storage)["fingerprint"]

    inference.cached_model(fingerprint=first, storage=storage)
    inference.cached_model(fingerprint=second, storage=storage)

    assert first != second
    assert inference.cached_fingerprints() == [second]


def test_the_check_refuses_images_outside_storage_or_missing(
    storage: Path, fingerprint: str, sample_images: list[str]
) -> None:
    INFER.check(InferSpec(model=fingerprint, images=sample_images), storage)

    with pytest.raises(errors.ValidationFailed, match=r"images\[1\]"):
        INFER.check(InferSpec(model=fingerprint, images=[sample_images[0], "/etc/hosts"]), storage)
    with pytest.raises(errors.FileMissing) as missing:
        INFER.check(InferSpec(model=fingerprint, images=["uploads/nope.jpg"]), storage)
    assert missing.value.details["field"] == "images[0]"
    with pytest.raises(errors.NotFound):
        INFER.check(InferSpec(model="b" * 64, images=sample_images), storage)
