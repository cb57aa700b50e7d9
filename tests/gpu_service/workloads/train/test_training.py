"""Training on the CPU with real ultralytics, through a small in-process job context."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from gpu_service import errors
from gpu_service.contract import METRIC_KEYS, TrainingResult
from gpu_service.workloads.train.run import train_job
from gpu_service.workloads.train.spec import TRAIN
from tests.gpu_service.workloads.support import SimulatedCrash

pytestmark = pytest.mark.slow


def _spec(dataset: Path, **overrides) -> dict:
    spec = {
        "dataset": str(dataset),
        "model": "yolov8n",
        "epochs": 2,
        "imgsz": 64,
        "batch": 4,
        "seeds": [1, 2],
        "workers": 0,
    }
    spec.update(overrides)
    return TRAIN.spec_model.model_validate(spec).model_dump()


def test_two_seeds_train_report_every_epoch_and_register_the_best(
    make_context, shapes_dataset: Path, storage: Path
) -> None:
    ctx = make_context(spec=_spec(shapes_dataset))

    result = train_job(ctx=ctx)

    TypeAdapter(TrainingResult).validate_python(result)
    assert set(result) == set(TrainingResult.__annotations__)
    assert all(set(s["metrics"]) == set(METRIC_KEYS) for s in result["seeds"])
    assert [(r["seed"], r["epoch"]) for r in ctx.epochs] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    for record in ctx.epochs:
        assert {
            "box_loss",
            "cls_loss",
            "dfl_loss",
            "precision",
            "recall",
            "mAP50",
            "mAP50-95",
        } <= set(record)
    seen = {(p.get("seed"), p.get("epoch")) for p in ctx.progress_log}
    assert {(1, 1), (1, 2), (2, 1), (2, 2)} <= seen
    fractions = [p["fraction"] for p in ctx.progress_log]
    assert fractions == sorted(fractions)
    assert fractions[-1] == 1.0
    assert {p.get("batches") for p in ctx.progress_log if p.get("stage") == "training"} == {2}

    seeds = {s["seed"]: s for s in result["seeds"]}
    best = max(seeds.values(), key=lambda s: (s["fitness"], s["metrics"]["mAP50"]))
    assert result["best_seed"] == best["seed"]
    assert result["fitness_metric"] == "mAP50-95"
    assert result["weights"]["fingerprint"] == best["fingerprint"]
    stored = Path(result["weights"]["path"])
    assert stored == storage / "weights" / f"{best['fingerprint']}.pt"
    assert stored.is_file()
    assert result["class_names"] == ["rectangle", "circle"]
    assert result["architecture"] == "yolov8n"
    assert all(s["epochs_run"] == 2 for s in result["seeds"])

    manifest = json.loads(Path(result["manifest_path"]).read_text())
    assert manifest["schema_version"] == 1
    assert manifest["runtime"]["runtime"] == "simulated"
    assert manifest["runtime"]["ultralytics"]
    assert manifest["best_seed"] == result["best_seed"]
    assert [s["seed"] for s in manifest["seeds"]] == [1, 2]
    assert manifest["outputs"]["weights"]["fingerprint"] == best["fingerprint"]
    # Users read the manifest: paths relative to storage, never the server's own.
    assert manifest["outputs"]["weights"]["path"] == f"weights/{best['fingerprint']}.pt"
    assert manifest["inputs"]["data_yaml"] == "datasets/shapes/data.yaml"
    assert str(storage) not in json.dumps(manifest)
    assert ctx.summary["best_seed"] == result["best_seed"]


def test_a_cancel_stops_training_within_one_batch_and_registers_nothing(
    make_context, shapes_dataset: Path, storage: Path
) -> None:
    ctx = make_context(spec=_spec(shapes_dataset, seeds=[1]), stop_at_step=1)

    with pytest.raises(errors.Cancelled):
        train_job(ctx=ctx)

    assert ctx.steps == [1]
    assert ctx.epochs == []
    assert not (ctx.job_dir / "seed-1" / "done.json").exists()
    assert not list((storage / "weights").glob("*.pt"))


def test_out_of_memory_fails_the_job_with_the_batch_size_in_the_details(
    make_context, shapes_dataset: Path
) -> None:
    # 8 images at batch 4: step 3 is the first of epoch 2, past ultralytics' first-epoch
    # retry (an out-of-memory at step 2 would be retried with batch 2 and go on).
    ctx = make_context(spec=_spec(shapes_dataset, seeds=[1]), oom_at_step=3)

    with pytest.raises(errors.CudaOOM) as failed:
        train_job(ctx=ctx)

    assert failed.value.code == "CUDA_OOM"
    assert failed.value.details["batch"] == 4
    assert failed.value.details["batch_requested"] == 4


def test_an_interrupted_training_resumes_at_the_next_epoch_and_skips_finished_seeds(
    make_context, shapes_dataset: Path
) -> None:
    # 8 images at batch 4: 2 steps an epoch, 4 a seed. Step 7 is seed 2, epoch 2.
    spec = _spec(shapes_dataset, seeds=[1, 2])
    first = make_context(spec=spec, crash_at_step=7)
    with pytest.raises(SimulatedCrash):
        train_job(ctx=first)
    assert [(r["seed"], r["epoch"]) for r in first.epochs] == [(1, 1), (1, 2), (2, 1)]
    assert (first.job_dir / "seed-1" / "done.json").is_file()
    assert (first.job_dir / "seed-2" / "weights" / "last.pt").is_file()

    second = make_context(spec=spec, attempt=2)
    result = train_job(ctx=second)

    assert [(r["seed"], r["epoch"]) for r in second.epochs] == [(2, 2)]
    assert second.steps == [7, 8]
    assert {s["seed"]: s["epochs_run"] for s in result["seeds"]} == {1: 2, 2: 2}
    assert Path(result["weights"]["path"]).is_file()


def test_a_checkpoint_truncated_by_a_stop_mid_write_starts_its_seed_over_instead_of_failing(
    make_context, shapes_dataset: Path
) -> None:
    # Ultralytics rewrites last.pt in place each epoch; a stop during that write leaves
    # a truncated file behind (seen in the Compose smoke test's restart).
    spec = _spec(shapes_dataset, seeds=[1, 2])
    first = make_context(spec=spec, crash_at_step=7)
    with pytest.raises(SimulatedCrash):
        train_job(ctx=first)
    last = first.job_dir / "seed-2" / "weights" / "last.pt"
    last.write_bytes(last.read_bytes()[: last.stat().st_size // 2])

    second = make_context(spec=spec, attempt=2)
    result = train_job(ctx=second)

    assert [(r["seed"], r["epoch"]) for r in second.epochs] == [(2, 1), (2, 2)]
    assert {s["seed"]: s["epochs_run"] for s in result["seeds"]} == {1: 2, 2: 2}
    assert Path(result["weights"]["path"]).is_file()


def test_checkpoints_are_written_beside_and_renamed_so_a_stop_never_leaves_half_a_file(
    make_context, shapes_dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from gpu_service.workloads.train import trainer

    renamed: list[tuple[str, str]] = []
    real_replace = os.replace

    def replace(source: Path, target: Path) -> None:
        renamed.append((Path(source).name, Path(target).name))
        real_replace(source, target)

    monkeypatch.setattr(trainer.os, "replace", replace)
    ctx = make_context(spec=_spec(shapes_dataset, seeds=[1]))

    train_job(ctx=ctx)

    # Every epoch's last.pt arrived whole, by a rename of a finished file.
    assert renamed.count(("last.pt.partial", "last.pt")) >= 2
    weights_dir = ctx.job_dir / "seed-1" / "weights"
    assert sorted(p.name for p in weights_dir.iterdir()) == ["best.pt", "last.pt"]
