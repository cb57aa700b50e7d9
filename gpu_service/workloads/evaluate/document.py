"""A model's evaluation on one dataset split: ultralytics' validator, written as the
evaluation document of issue 13 (ADR 0042).

Both the `evaluate` job and every finished training (its best seed's weights) call
`write_evaluation`. The numbers are those of ultralytics' own `DetectionValidator`,
run exactly as `YOLO(weights).val(...)` runs it; this module only reads them out of its
metrics object and never recomputes one. What it adds is presentation: the curves
resampled from ultralytics' 1000 points to 101, and a few validation images with their
ground truth and the model's predictions side by side.

Layout in the job's folder (the web app's `jobs.evaluation` describes the document):
`evaluation/evaluation.json`, `evaluation/plots/*` (ultralytics' own images: confusion
matrices, PR/F1/P/R curves, validation batches) and `evaluation/samples/*.jpg`. The
document is written last, through a temporary file and a rename, so a reader sees no
document or a complete one whose files are all in place.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

from gpu_service.contract import EVALUATION_DIR, EVALUATION_DOCUMENT, METRIC_KEYS
from gpu_service.storage import write_json_atomically

log = logging.getLogger(__name__)

DOCUMENT_VERSION = 1
CURVE_POINTS = 101  # ultralytics samples its curves at 1000 points; the page needs fewer
SAMPLE_IMAGES = 8
# Predictions drawn on the samples: at least this confident, as ultralytics' own
# validation-batch plots draw them (an evaluation's conf of 0.001 would bury the image).
SAMPLE_MIN_CONF = 0.25
_PLOT_SUFFIXES = {".png", ".jpg", ".jpeg"}
_WORK = ".ultralytics"  # ultralytics' save_dir, emptied into plots/ at the end
_GAP = 6  # pixels between the ground-truth and the prediction halves of a sample


def write_evaluation(
    *,
    weights_path: Path,
    data_yaml: Path,
    job_dir: Path,
    split: str,
    imgsz: int,
    conf: float,
    iou: float,
    device: str,
    source: str,
    seed: int | None = None,
    workers: int = 2,
) -> dict[str, Any]:
    """Validate `weights_path` on `split` of `data_yaml` with ultralytics' validator and
    write the evaluation document under `job_dir`; returns the document.

    Ultralytics must already be offline (`make_ultralytics_silent`)."""
    from ultralytics import YOLO
    from ultralytics.models.yolo.detect import DetectionValidator

    folder = job_dir / EVALUATION_DIR
    shutil.rmtree(folder, ignore_errors=True)  # a rerun replaces an earlier evaluation whole
    folder.mkdir(parents=True)
    work = folder / _WORK
    validators: list[Any] = []

    class RecordingValidator(DetectionValidator):
        """Ultralytics' validator, kept so the samples can read its dataset afterwards."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            validators.append(self)

    model = YOLO(str(weights_path), task="detect")
    metrics = model.val(
        validator=RecordingValidator,
        data=str(data_yaml),
        split=split,
        imgsz=imgsz,
        conf=conf,
        iou=iou,
        device=device,
        workers=workers,
        plots=True,
        save_dir=str(work),
        verbose=False,
    )
    names = _names(metrics.names)
    document: dict[str, Any] = {
        "version": DOCUMENT_VERSION,
        "source": source,
        "split": split,
        "imgsz": imgsz,
        "conf": conf,
        "iou": iou,
        "seed": seed,
        "metrics": dict(zip(METRIC_KEYS, _floats(metrics.mean_results()), strict=True)),
        "per_class": per_class(metrics=metrics, names=names),
        "confusion_matrix": confusion_matrix(metrics=metrics, names=names),
        "curves": curves(box=metrics.box, names=names),
        "samples": draw_samples(
            model=model,
            dataset=validators[-1].dataloader.dataset,
            names=names,
            folder=folder,
            imgsz=imgsz,
            conf=max(conf, SAMPLE_MIN_CONF),
            iou=iou,
            device=device,
        ),
        "plots": _keep_plots(work=work, folder=folder),
    }
    write_json_atomically(job_dir / EVALUATION_DOCUMENT, document)
    return document


def per_class(*, metrics: Any, names: list[str]) -> list[dict[str, Any]]:
    """One row per class of the model. A class with no ground truth in the split has
    no precision, recall or AP in ultralytics' results: those are null here."""
    rows = []
    positions = {int(c): i for i, c in enumerate(metrics.box.ap_class_index)}
    images = _counts(metrics.nt_per_image, len(names))
    instances = _counts(metrics.nt_per_class, len(names))
    for class_id, name in enumerate(names):
        row: dict[str, Any] = {
            "class_id": class_id,
            "class_name": name,
            "images": images[class_id],
            "instances": instances[class_id],
        }
        at = positions.get(class_id)
        values = _floats(metrics.class_result(at)) if at is not None else [None] * 4
        row.update(zip(METRIC_KEYS, values, strict=True))
        rows.append(row)
    return rows


def confusion_matrix(*, metrics: Any, names: list[str]) -> dict[str, Any]:
    """Ultralytics' matrix as it is: [predicted][true], background last."""
    matrix = metrics.confusion_matrix.matrix
    return {
        "labels": [*names, "background"],
        "counts": [[round(float(v)) for v in row] for row in matrix],
        "rows": "predicted",
        "columns": "true",
    }


def curves(*, box: Any, names: list[str]) -> dict[str, Any]:
    """Ultralytics' per-class curves (classes with ground truth), resampled to 101 points
    at 0, 0.01, ..., 1: precision, recall and F1 against confidence, precision against
    recall at IoU 0.5."""
    import numpy as np

    grid = np.linspace(0.0, 1.0, CURVE_POINTS)
    px = np.asarray(box.px) if len(getattr(box, "px", [])) else grid

    def resample(rows: Any) -> dict[str, list[float]]:
        out = {}
        for i, class_id in enumerate(box.ap_class_index):
            out[names[int(class_id)]] = _rounded(np.interp(grid, px, np.asarray(rows[i])))
        return out

    return {
        "confidence": _rounded(grid),
        "precision": resample(box.p_curve),
        "recall": resample(box.r_curve),
        "f1": resample(box.f1_curve),
        "pr": {"recall": _rounded(grid), "precision": resample(box.prec_values)},
    }


def draw_samples(
    *,
    model: Any,
    dataset: Any,
    names: list[str],
    folder: Path,
    imgsz: int,
    conf: float,
    iou: float,
    device: str,
) -> list[dict[str, Any]]:
    """The split's first images: ground truth on the left, predictions on the right."""
    import cv2
    import numpy as np

    target = folder / "samples"
    target.mkdir(parents=True, exist_ok=True)
    samples: list[dict[str, Any]] = []
    used: set[str] = set()
    for index, (image_file, label) in enumerate(
        zip(dataset.im_files[:SAMPLE_IMAGES], dataset.labels[:SAMPLE_IMAGES], strict=True)
    ):
        image = cv2.imread(image_file)
        if image is None:
            continue
        height, width = image.shape[:2]
        truth = [
            (int(c), _xywhn_to_xyxy(box, width=width, height=height), None)
            for c, box in zip(np.asarray(label["cls"]).reshape(-1), label["bboxes"], strict=True)
        ]
        result = model.predict(
            source=image_file, imgsz=imgsz, conf=conf, iou=iou, device=device, verbose=False
        )[0]
        boxes = result.boxes
        predicted = [
            (int(c), [float(v) for v in xyxy], float(p))
            for c, xyxy, p in zip(
                boxes.cls.tolist(), boxes.xyxy.tolist(), boxes.conf.tolist(), strict=True
            )
        ]
        gap = np.full((height, _GAP, 3), 255, dtype=np.uint8)
        left = _annotated(image, truth, names)
        right = _annotated(image, predicted, names)
        name = _sample_name(Path(image_file), index=index, used=used)
        cv2.imwrite(str(target / name), np.hstack([left, gap, right]))
        samples.append(
            {
                "image": Path(image_file).name,
                "artifact": f"{EVALUATION_DIR}/samples/{name}",
                "ground_truth": len(truth),
                "predictions": len(predicted),
            }
        )
    return samples


def _annotated(image: Any, boxes: list[tuple[int, list[float], float | None]], names: list[str]):
    # cv2 text, not PIL: drawing needs no font file at all.
    from ultralytics.utils.plotting import Annotator, colors

    annotator = Annotator(image.copy(), line_width=max(1, round(sum(image.shape[:2]) / 600)))
    for class_id, xyxy, confidence in boxes:
        name = names[class_id] if 0 <= class_id < len(names) else str(class_id)
        label = name if confidence is None else f"{name} {confidence:.2f}"
        annotator.box_label(xyxy, label, color=colors(class_id, True))
    return annotator.result()


def _keep_plots(*, work: Path, folder: Path) -> list[str]:
    """Ultralytics' own images, moved from its save_dir to `evaluation/plots/`."""
    plots = folder / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    kept = []
    if work.is_dir():
        for path in sorted(work.iterdir()):
            if path.is_file() and path.suffix.lower() in _PLOT_SUFFIXES:
                shutil.move(str(path), plots / path.name)
                kept.append(f"{EVALUATION_DIR}/plots/{path.name}")
        shutil.rmtree(work, ignore_errors=True)
    return kept


def _sample_name(image_file: Path, *, index: int, used: set[str]) -> str:
    name = f"{image_file.stem}.jpg"
    if name in used:  # the same file name in two folders of the split
        name = f"{image_file.stem}-{index}.jpg"
    used.add(name)
    return name


def _xywhn_to_xyxy(box: Any, *, width: int, height: int) -> list[float]:
    x, y, w, h = (float(v) for v in box)
    return [(x - w / 2) * width, (y - h / 2) * height, (x + w / 2) * width, (y + h / 2) * height]


def _names(names: Any) -> list[str]:
    if isinstance(names, dict):
        return [str(names[k]) for k in sorted(names)]
    return [str(n) for n in names]


def _counts(values: Any, size: int) -> list[int]:
    if values is None:  # an empty split: ultralytics computed no statistics
        return [0] * size
    return [int(v) for v in list(values)[:size]] + [0] * max(0, size - len(values))


def _floats(values: Any) -> list[float]:
    return [float(v) for v in values]


def _rounded(values: Any) -> list[float]:
    return [round(float(v), 6) for v in values]
