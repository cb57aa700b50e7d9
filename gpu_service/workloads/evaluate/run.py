"""An evaluate job: ultralytics' validator on a registered model and one dataset split.

Runs in a fresh worker. The weights are loaded by fingerprint, checked like every
checkpoint before ultralytics sees them, and the whole evaluation is written by
`evaluate.document` to `jobs/<id>/evaluation/` (ADR 0042).
"""

from __future__ import annotations

from typing import Any

from gpu_service import errors
from gpu_service.contract import EVALUATION_DOCUMENT, EvaluationResult
from gpu_service.workloads import datasets, weights
from gpu_service.workloads.base import JobContext
from gpu_service.workloads.evaluate.document import write_evaluation
from gpu_service.workloads.evaluate.spec import EvaluateSpec
from gpu_service.workloads.offline import make_ultralytics_silent

DEFAULT_IMGSZ = 640  # for imported weights that do not say what size they were trained at


def evaluate_job(*, ctx: JobContext) -> dict[str, Any]:
    spec = EvaluateSpec.model_validate(ctx.spec)
    make_ultralytics_silent(storage=ctx.storage)
    path = weights.verified_path(fingerprint=spec.model, storage=ctx.storage)
    weights.read_checkpoint(path=path)  # refuses unsafe content before ultralytics sees it
    data_yaml = datasets.dataset_yaml(dataset=spec.dataset, storage=ctx.storage)
    imgsz = spec.imgsz or _trained_imgsz(fingerprint=spec.model, ctx=ctx)
    ctx.progress(stage="validating", fraction=0.1)
    ctx.fault_point(1)
    ctx.logger.info("evaluating %s on the %s split at %s px", spec.model, spec.split, imgsz)
    try:
        document = write_evaluation(
            weights_path=path,
            data_yaml=data_yaml,
            job_dir=ctx.job_dir,
            split=spec.split,
            imgsz=imgsz,
            conf=spec.conf,
            iou=spec.iou,
            device="0" if ctx.devices else "cpu",
            source="evaluate",
        )
    except RuntimeError as exc:
        if "out of memory" in str(exc).lower():
            raise errors.CudaOOM(details={"imgsz": imgsz}) from exc
        raise
    if ctx.should_stop():
        raise errors.Cancelled()
    ctx.set_metrics(**document["metrics"])
    ctx.progress(stage="done", fraction=1.0)
    result: EvaluationResult = {
        "model": spec.model,
        "split": spec.split,
        "imgsz": imgsz,
        "metrics": document["metrics"],
        "evaluation_path": EVALUATION_DOCUMENT,
    }
    return dict(result)


def _trained_imgsz(*, fingerprint: str, ctx: JobContext) -> int:
    described = weights.describe_weights(fingerprint=fingerprint, storage=ctx.storage)
    return int(described.get("imgsz") or DEFAULT_IMGSZ)
