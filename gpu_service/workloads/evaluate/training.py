"""A finished training's evaluation: its best seed's weights on the validation split.

Called once the weights are registered. The training itself has succeeded by then, so
an evaluation that fails is logged and left out (the job page then has no evaluation
link) rather than failing hours of training; a cancel still stops the job.
"""

from __future__ import annotations

from pathlib import Path

from gpu_service import errors
from gpu_service.workloads.base import JobContext
from gpu_service.workloads.evaluate.document import write_evaluation
from gpu_service.workloads.evaluate.spec import DEFAULT_CONF, DEFAULT_IOU


def evaluate_training(
    *, ctx: JobContext, weights_path: Path, data_yaml: Path, imgsz: int, seed: int
) -> None:
    try:
        write_evaluation(
            weights_path=weights_path,
            data_yaml=data_yaml,
            job_dir=ctx.job_dir,
            split="val",
            imgsz=imgsz,
            conf=DEFAULT_CONF,
            iou=DEFAULT_IOU,
            device=str(ctx.devices[0]) if ctx.devices else "cpu",
            source="training",
            seed=seed,
        )
    except errors.Cancelled:
        raise
    except Exception:  # any failure of the extra step: logged with its traceback, kept out
        ctx.logger.exception("the evaluation of seed %s's weights failed; no evaluation", seed)
