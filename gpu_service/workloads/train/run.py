"""A training job: its seeds one after another, resume, the best seed, the manifest.

Runs in the worker process. Layout in the job directory:
`seed-<seed>/` (ultralytics' run folder: `weights/last.pt`, `weights/best.pt`),
`seed-<seed>/done.json` once a seed has finished (a resumed job skips it), and
`manifest.json`. A seed with a `last.pt` and no `done.json` was interrupted: it
resumes from that checkpoint, at the epoch after the last one saved.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from gpu_service import errors
from gpu_service.contract import FINGERPRINT
from gpu_service.storage import write_json_atomically
from gpu_service.workloads import datasets, weights
from gpu_service.workloads.base import JobContext
from gpu_service.workloads.evaluate.training import evaluate_training
from gpu_service.workloads.offline import make_ultralytics_silent
from gpu_service.workloads.train.manifest import build_manifest, write_manifest
from gpu_service.workloads.train.spec import TrainSpec, hyperparameter_overrides
from gpu_service.workloads.train.trainer import SeedReporter, make_trainer

log = logging.getLogger(__name__)

# Validation fitness that picks the best seed: ultralytics' own detection fitness,
# which in 8.4 is mAP50-95 alone (DetMetrics.fitness weights [0, 0, 0, 1]). ADR 0010.
FITNESS_METRIC = "mAP50-95"


def train_job(*, ctx: JobContext) -> dict[str, Any]:
    spec = TrainSpec.model_validate(ctx.spec)
    make_ultralytics_silent(storage=ctx.storage)
    data_yaml = datasets.dataset_yaml(dataset=spec.dataset, storage=ctx.storage)
    base_model = _base_model(spec=spec, storage=ctx.storage)
    # Ultralytics logs to stdout, which the worker sends to the job's log file.
    outcomes = []
    for index, seed in enumerate(spec.seeds):
        if ctx.should_stop():
            raise errors.Cancelled(details={"seed": seed})
        outcomes.append(
            _run_seed(
                ctx=ctx,
                spec=spec,
                seed=seed,
                index=index,
                data_yaml=data_yaml,
                base_model=base_model,
            )
        )
    return _finish(ctx=ctx, spec=spec, outcomes=outcomes, data_yaml=data_yaml)


def best_seed(outcomes: list[dict[str, Any]]) -> dict[str, Any]:
    """Highest validation fitness; ties go to higher mAP50, then to the earlier seed."""
    ranked = sorted(
        enumerate(outcomes),
        key=lambda pair: (
            -(pair[1]["fitness"] if pair[1]["fitness"] is not None else float("-inf")),
            -pair[1]["metrics"].get("mAP50", 0.0),
            pair[0],
        ),
    )
    return ranked[0][1]


def _base_model(*, spec: TrainSpec, storage: Path) -> str:
    """What ultralytics builds from: an architecture's yaml, or verified stored weights."""
    if FINGERPRINT.match(spec.model):
        path = weights.verified_path(fingerprint=spec.model, storage=storage)
        weights.read_checkpoint(path=path)  # refuses unsafe content before the trainer loads it
        return str(path)
    return f"{spec.model}.yaml"


def _device(devices: list[int]) -> str:
    return str(devices[0]) if devices else "cpu"


def _run_seed(
    *,
    ctx: JobContext,
    spec: TrainSpec,
    seed: int,
    index: int,
    data_yaml: Path,
    base_model: str,
) -> dict[str, Any]:
    seed_dir = ctx.job_dir / f"seed-{seed}"
    done = seed_dir / "done.json"
    if done.is_file():
        ctx.logger.info("seed %s already finished; not training it again", seed)
        return json.loads(done.read_text())
    last = seed_dir / "weights" / "last.pt"
    overrides: dict[str, Any] = {
        "model": base_model,
        "data": str(data_yaml),
        "epochs": spec.epochs,
        "imgsz": spec.imgsz,
        "batch": spec.batch,
        **hyperparameter_overrides(spec),
        "seed": seed,
        "device": _device(ctx.devices),
        "workers": spec.workers,
        "project": str(ctx.job_dir),
        "name": seed_dir.name,
        "exist_ok": True,
        "plots": False,  # plotting fetches a font from the internet
        "verbose": False,
        "amp": bool(ctx.devices),
    }
    if last.is_file() and _resumable(last, epochs=spec.epochs):
        overrides["resume"] = str(last)
        overrides["save_dir"] = str(seed_dir)
    reporter = SeedReporter(
        ctx=ctx,
        seed=seed,
        seed_index=index,
        seeds=len(spec.seeds),
        epochs=spec.epochs,
        batch_requested=spec.batch,
    )
    ctx.logger.info("seed %s: trainer starting", seed)  # the training benchmark's start
    trainer = make_trainer(overrides=overrides, devices=ctx.devices)
    reporter.attach(trainer)
    try:
        trainer.train()
    except errors.CudaOOM as exc:
        exc.details.update(batch=trainer.batch_size, batch_requested=spec.batch, seed=seed)
        raise
    except errors.CarrilError:
        raise
    except RuntimeError as exc:
        if "out of memory" in str(exc).lower():
            raise errors.CudaOOM(
                details={"batch": trainer.batch_size, "batch_requested": spec.batch, "seed": seed}
            ) from exc
        raise
    outcome = _seed_outcome(seed=seed, seed_dir=seed_dir, reporter=reporter, trainer=trainer)
    write_json_atomically(done, outcome)
    return outcome


def _resumable(last: Path, *, epochs: int) -> bool:
    """A checkpoint ultralytics can resume from: mid-run, optimizer state kept.

    Ultralytics rewrites `last.pt` in place every epoch, not atomically, so a stop in the
    middle of that write leaves it truncated. Such a file is no reason to fail the job:
    the seed starts over, as if it had never saved a checkpoint."""
    try:
        ckpt = weights.read_checkpoint(path=last)
    except errors.WeightsRejected as exc:
        log.warning("%s cannot be resumed (%s); the seed starts over", last, exc.message)
        return False
    epoch = ckpt.get("epoch", -1)
    return ckpt.get("optimizer") is not None and 0 <= epoch < epochs - 1


def _seed_outcome(
    *, seed: int, seed_dir: Path, reporter: SeedReporter, trainer: Any
) -> dict[str, Any]:
    best = seed_dir / "weights" / "best.pt"
    if not best.is_file():
        best = seed_dir / "weights" / "last.pt"
    metrics = dict(reporter.final_metrics)
    fitness = metrics.get(FITNESS_METRIC)
    if fitness is None and trainer.best_fitness is not None:
        fitness = float(trainer.best_fitness)
    return {
        "seed": seed,
        "fitness": fitness,
        "metrics": metrics,
        "fingerprint": weights.fingerprint_file(path=best),
        "weights_path": str(best),
        "epochs_run": reporter.epochs_run or trainer.epoch + 1,
        "batch_effective": reporter.batch_effective or trainer.batch_size,
    }


def _finish(
    *, ctx: JobContext, spec: TrainSpec, outcomes: list[dict[str, Any]], data_yaml: Path
) -> dict[str, Any]:
    best = best_seed(outcomes)
    registered = weights.import_weights(src=Path(best["weights_path"]), storage=ctx.storage)
    stored = weights.stored_path(fingerprint=registered["fingerprint"], storage=ctx.storage)
    ctx.set_metrics(
        best_seed=best["seed"],
        best_fitness=best["fitness"],
        fitness_metric=FITNESS_METRIC,
        seeds=[{k: o[k] for k in ("seed", "fitness", "metrics", "epochs_run")} for o in outcomes],
    )
    batch_effective = min(o["batch_effective"] for o in outcomes)
    manifest = build_manifest(
        ctx=ctx,
        spec=spec.model_dump(),
        data_yaml=data_yaml,
        outcomes=outcomes,
        best_seed=best["seed"],
        fitness_metric=FITNESS_METRIC,
        weights=registered,
        weights_path=stored,
    )
    manifest_path = write_manifest(job_dir=ctx.job_dir, manifest=manifest)
    ctx.progress(stage="evaluating", fraction=1.0)
    evaluate_training(
        ctx=ctx, weights_path=stored, data_yaml=data_yaml, imgsz=spec.imgsz, seed=best["seed"]
    )
    ctx.progress(stage="done", fraction=1.0)
    return {
        "weights": {"fingerprint": registered["fingerprint"], "path": str(stored)},
        "best_seed": best["seed"],
        "fitness_metric": FITNESS_METRIC,
        "seeds": [
            {k: o[k] for k in ("seed", "fitness", "metrics", "fingerprint", "epochs_run")}
            for o in outcomes
        ],
        "manifest_path": str(manifest_path),
        "architecture": registered["architecture"],
        "class_names": registered["class_names"],
        "imgsz": spec.imgsz,
        "task": registered["task"],
        "batch": spec.batch,
        "batch_effective": batch_effective,
    }
