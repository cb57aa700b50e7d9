"""Evaluations on the CPU with real ultralytics (issue 13, ADR 0042): an evaluate job's
numbers are ultralytics' validator's, and a finished training writes a complete
evaluation document."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from PIL import Image

from gpu_service import errors
from gpu_service.contract import METRIC_KEYS
from gpu_service.workloads import weights
from gpu_service.workloads.evaluate.document import CURVE_POINTS, SAMPLE_IMAGES
from gpu_service.workloads.evaluate.run import evaluate_job
from gpu_service.workloads.evaluate.spec import EVALUATE
from gpu_service.workloads.offline import make_ultralytics_silent
from gpu_service.workloads.synthetic import make_shapes_dataset
from gpu_service.workloads.train.run import train_job
from gpu_service.workloads.train.spec import TRAIN

pytestmark = pytest.mark.slow

# Every key of the document, as `web/jobs/evaluation.py` gives its shape.
DOCUMENT_KEYS = {
    "version",
    "source",
    "split",
    "imgsz",
    "conf",
    "iou",
    "seed",
    "metrics",
    "per_class",
    "confusion_matrix",
    "curves",
    "samples",
    "plots",
}
PER_CLASS_KEYS = {"class_id", "class_name", "images", "instances", *METRIC_KEYS}


def _big_shapes(root: Path, *, train: int = 16, val: int = 8) -> Path:
    """Large shapes on black, two classes: a model learns them in a few dozen steps, so
    the evaluation has AP that is not zero to compare."""
    import random

    from PIL import ImageDraw

    rng = random.Random(3)
    for split, count in (("train", train), ("val", val)):
        (root / "images" / split).mkdir(parents=True)
        (root / "labels" / split).mkdir(parents=True)
        for i in range(count):
            image = Image.new("RGB", (64, 64))
            draw = ImageDraw.Draw(image)
            cls = i % 2
            x0, y0 = rng.randint(2, 12), rng.randint(2, 12)
            x1, y1 = rng.randint(48, 62), rng.randint(48, 62)
            if cls == 0:
                draw.rectangle((x0, y0, x1, y1), fill=(255, 255, 255))
            else:
                draw.ellipse((x0, y0, x1, y1), fill=(255, 0, 0))
            image.save(root / "images" / split / f"{i:03d}.jpg")
            box = ((x0 + x1) / 128, (y0 + y1) / 128, (x1 - x0) / 64, (y1 - y0) / 64)
            (root / "labels" / split / f"{i:03d}.txt").write_text(
                f"{cls} " + " ".join(f"{v:.6f}" for v in box) + "\n"
            )
    (root / "data.yaml").write_text(
        f"path: {root}\ntrain: images/train\nval: images/val\nnames:\n  0: box\n  1: disc\n"
    )
    return root


@pytest.fixture(scope="module")
def learned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(data.yaml, weights) of a model trained directly with ultralytics until it detects
    something: one optimizer step per batch (nbs = batch), so 20 epochs are 80 steps."""
    root = tmp_path_factory.mktemp("learned")
    dataset = _big_shapes(root / "dataset")
    make_ultralytics_silent(storage=root)
    from ultralytics import YOLO

    YOLO("yolov8n.yaml").train(
        data=str(dataset / "data.yaml"),
        epochs=20,
        imgsz=64,
        batch=4,
        nbs=4,
        workers=0,
        device="cpu",
        mosaic=0.0,
        warmup_epochs=0,
        optimizer="SGD",
        lr0=0.01,
        seed=1,
        val=False,
        plots=False,
        amp=False,
        verbose=False,
        project=str(root / "runs"),
        name="learned",
        exist_ok=True,
    )
    return dataset / "data.yaml", root / "runs" / "learned" / "weights" / "last.pt"


def _registered(storage: Path, learned: tuple[Path, Path]) -> tuple[str, str]:
    """The learned weights registered in `storage`, and its dataset copied there."""
    data_yaml, weights_file = learned
    target = storage / "datasets" / "big"
    shutil.copytree(data_yaml.parent, target)
    text = (target / "data.yaml").read_text().replace(str(data_yaml.parent), str(target))
    (target / "data.yaml").write_text(text)
    for cache in target.glob("labels/*.cache"):
        cache.unlink()
    fingerprint = weights.import_weights(src=weights_file, storage=storage)["fingerprint"]
    return fingerprint, "datasets/big"


def test_an_evaluate_jobs_per_class_ap_equals_ultralytics_own_validation(
    make_context, storage: Path, learned: tuple[Path, Path]
) -> None:
    fingerprint, dataset = _registered(storage, learned)
    ctx = make_context(
        kind="evaluate", job_id="eval-1", spec={"model": fingerprint, "dataset": dataset}
    )

    result = evaluate_job(ctx=ctx)

    document = json.loads((ctx.job_dir / result["evaluation_path"]).read_text())
    from ultralytics import YOLO

    stored = weights.stored_path(fingerprint=fingerprint, storage=storage)
    direct = YOLO(str(stored)).val(
        data=str(storage / dataset / "data.yaml"),
        split="val",
        imgsz=64,
        conf=0.001,
        iou=0.7,
        device="cpu",
        plots=False,
        verbose=False,
        project=str(storage / "direct"),
    )
    rows = {row["class_id"]: row for row in document["per_class"]}
    assert list(direct.box.ap_class_index) == [0, 1]
    assert max(direct.box.ap50) > 0.1  # a model that detects: the comparison means something
    for i, class_id in enumerate(direct.box.ap_class_index):
        row = rows[int(class_id)]
        assert row["mAP50"] == pytest.approx(float(direct.box.ap50[i]), abs=1e-6)
        assert row["mAP50-95"] == pytest.approx(float(direct.box.ap[i]), abs=1e-6)
        assert row["precision"] == pytest.approx(float(direct.box.p[i]), abs=1e-6)
        assert row["recall"] == pytest.approx(float(direct.box.r[i]), abs=1e-6)
        assert row["instances"] == int(direct.nt_per_class[class_id])
    for key, value in zip(METRIC_KEYS, direct.mean_results(), strict=True):
        assert document["metrics"][key] == pytest.approx(float(value), abs=1e-6)
    assert result["metrics"] == document["metrics"]
    assert (result["imgsz"], document["imgsz"]) == (64, 64)  # the size it was trained at
    assert (document["source"], document["seed"], document["split"]) == ("evaluate", None, "val")


def test_a_finished_trainings_evaluation_document_is_complete(
    make_context, shapes_dataset: Path, storage: Path
) -> None:
    spec = {"dataset": str(shapes_dataset), "epochs": 1, "imgsz": 64, "batch": 4}
    spec.update(seeds=[3, 4], workers=0)
    ctx = make_context(spec=TRAIN.spec_model.model_validate(spec).model_dump())

    result = train_job(ctx=ctx)

    document = json.loads((ctx.job_dir / "evaluation" / "evaluation.json").read_text())
    assert set(document) == DOCUMENT_KEYS
    assert document["source"] == "training"
    assert document["seed"] == result["best_seed"]
    assert (document["split"], document["imgsz"], document["conf"]) == ("val", 64, 0.001)
    assert set(document["metrics"]) == set(METRIC_KEYS)
    assert [row["class_name"] for row in document["per_class"]] == ["rectangle", "circle"]
    assert all(set(row) == PER_CLASS_KEYS for row in document["per_class"])
    assert sum(row["instances"] for row in document["per_class"]) == 4  # one shape an image
    matrix = document["confusion_matrix"]
    assert matrix["labels"] == ["rectangle", "circle", "background"]
    assert [len(row) for row in matrix["counts"]] == [3, 3, 3]
    assert (matrix["rows"], matrix["columns"]) == ("predicted", "true")
    curves = document["curves"]
    assert set(curves) == {"confidence", "precision", "recall", "f1", "pr"}
    assert len(curves["confidence"]) == CURVE_POINTS
    assert curves["confidence"][0] == 0.0
    assert curves["confidence"][-1] == 1.0
    for name in ("precision", "recall", "f1"):
        assert set(curves[name]) == {"rectangle", "circle"}
        assert all(len(points) == CURVE_POINTS for points in curves[name].values())
    assert len(curves["pr"]["recall"]) == CURVE_POINTS
    assert set(curves["pr"]["precision"]) == {"rectangle", "circle"}
    assert 1 <= len(document["samples"]) <= SAMPLE_IMAGES
    for sample in document["samples"]:
        with Image.open(ctx.job_dir / sample["artifact"]) as drawn:
            assert drawn.width > 2 * drawn.height  # ground truth | predictions
        assert sample["ground_truth"] == 1
    names = {Path(plot).name for plot in document["plots"]}
    assert {"confusion_matrix.png", "confusion_matrix_normalized.png", "BoxPR_curve.png"} <= names
    assert all((ctx.job_dir / plot).is_file() for plot in document["plots"])
    assert not (ctx.job_dir / "evaluation" / ".ultralytics").exists()


def test_an_evaluation_of_a_split_the_dataset_lacks_is_refused_at_submit(
    storage: Path, learned: tuple[Path, Path]
) -> None:
    fingerprint, dataset = _registered(storage, learned)
    spec = EVALUATE.spec_model.model_validate(
        {"model": fingerprint, "dataset": dataset, "split": "test"}
    )

    with pytest.raises(errors.ValidationFailed) as refused:
        EVALUATE.check(spec, storage)

    assert refused.value.details == {"field": "split", "split": "test"}


def test_an_evaluation_of_weights_that_are_not_registered_is_refused_at_submit(
    storage: Path,
) -> None:
    make_shapes_dataset(storage / "datasets" / "shapes")
    spec = EVALUATE.spec_model.model_validate({"model": "f" * 64, "dataset": "datasets/shapes"})

    with pytest.raises(errors.NotFound):
        EVALUATE.check(spec, storage)
