"""`make gpu-check`: prove the real GPU path on this machine in a few minutes.

CI has no GPU, so this is what validates it. Checks, on every visible GPU:
1. the DataParallel split/merge on CUDA tensors against each part's own loss,
2. a 1-epoch training through the train kind's entry point (what the worker runs),
3. a batch of warm inferences (images per second),
4. the NVML telemetry the real runtime reads.
Prints a Markdown report to paste into docs/gpu-validation.md; exits 0 when every check
passes, 1 when one fails, 2 when there is no CUDA GPU at all.
"""

from __future__ import annotations

import argparse
import logging
import platform
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NO_GPU = 2


@dataclass
class CheckResult:
    name: str
    ok: bool
    figures: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


@dataclass
class CheckContext:
    """The JobContext the worker would give a job, minus the journal."""

    storage: Path
    job_id: str
    kind: str
    spec: dict[str, Any]
    devices: list[int]
    runtime: str = "real"
    attempt: int = 1
    epochs: list[dict[str, Any]] = field(default_factory=list)
    last_progress: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.job_dir = self.storage / "jobs" / self.job_id
        self.job_dir.mkdir(parents=True, exist_ok=True)
        self.logger = logging.getLogger(f"gpu_check.{self.job_id}")

    def progress(self, **fields: Any) -> None:
        self.last_progress.update(fields)

    def epoch_metrics(self, record: dict[str, Any]) -> None:
        self.epochs.append(record)

    def set_metrics(self, **fields: Any) -> None:
        pass

    def should_stop(self) -> bool:
        return False

    def fault_point(self, step: int, *, batch: int | None = None) -> None:
        pass


def check_dataparallel(
    *, storage: Path, devices: list[str], force_parallel: bool = False
) -> dict[str, Any]:
    from ultralytics.cfg import get_cfg
    from ultralytics.data import build_dataloader, build_yolo_dataset
    from ultralytics.data.utils import check_det_dataset
    from ultralytics.nn.tasks import DetectionModel

    from gpu_service.workloads.synthetic import make_shapes_dataset
    from gpu_service.workloads.train import dataparallel

    root = make_shapes_dataset(storage / "datasets" / "dp", train=16, val=2, size=128)
    cfg = get_cfg(overrides={"imgsz": 128, "mosaic": 0.0})
    data = check_det_dataset(str(root / "data.yaml"))
    dataset = build_yolo_dataset(cfg, data["train"], batch=16, data=data, mode="train", stride=32)
    batch = next(iter(build_dataloader(dataset, batch=16, workers=0, shuffle=False, rank=-1)))
    batch["img"] = batch["img"].float() / 255
    model = DetectionModel("yolov8n.yaml", nc=2, verbose=False).to(devices[0])
    model.args = cfg
    model.train()
    loss, _ = dataparallel.parallel_loss(
        model, batch, devices=devices, force_parallel=force_parallel
    )
    loss.sum().backward()
    grads = sum(1 for p in model.parameters() if p.grad is not None)
    model.zero_grad()
    parts = dataparallel.split_batch(batch, len(devices))
    expected = 0.0
    for part in parts:  # each part alone, on the first GPU
        part = dataparallel.move_batch(part, devices[0])
        expected += float(model.criterion(model(part["img"]), part)[0].detach().sum())
    got = float(loss.detach().sum())
    relative = abs(got - expected) / max(abs(expected), 1e-9)
    if relative > 1e-3 or grads == 0:
        raise AssertionError(f"parts {expected:.6f} vs parallel {got:.6f} (rel {relative:.2e})")
    return {
        "devices": ", ".join(devices),
        "branch": "replicate/parallel_apply"
        if force_parallel or len(set(devices)) > 1
        else "sequential parts",
        "parallel loss": round(got, 5),
        "sum of parts": round(expected, 5),
        "relative difference": f"{relative:.2e}",
        "parameters with gradients": grads,
    }


def check_training(*, storage: Path, gpus: list[int]) -> dict[str, Any]:
    from gpu_service.workloads.synthetic import make_shapes_dataset
    from gpu_service.workloads.train.run import train_job
    from gpu_service.workloads.train.spec import TRAIN

    make_shapes_dataset(storage / "datasets" / "train", train=64, val=16, size=128)
    spec = TRAIN.spec_model.model_validate(
        {
            "dataset": "datasets/train",
            "model": "yolov8n",
            "epochs": 1,
            "imgsz": 128,
            "batch": 16 * max(len(gpus), 1),
            "seeds": [42],
            "workers": 2,
        }
    ).model_dump()
    ctx = CheckContext(storage=storage, job_id="check-train", kind="train", spec=spec, devices=gpus)
    started = time.perf_counter()
    result = train_job(ctx=ctx)
    seconds = time.perf_counter() - started
    if len(ctx.epochs) != 1 or not Path(result["weights"]["path"]).is_file():
        raise AssertionError(f"expected one epoch and registered weights, got {ctx.epochs}")
    return {
        "gpus": len(gpus),
        "data parallel": len(gpus) > 1,
        "batch (effective)": f"{result['batch']} ({result['batch_effective']})",
        "seconds": round(seconds, 1),
        "epoch record": ctx.epochs[0],
        "weights": result["weights"]["fingerprint"][:16],
    }


def check_inference(*, storage: Path, gpus: list[int], fingerprint: str) -> dict[str, Any]:
    from ultralytics.utils import ASSETS

    from gpu_service.workloads.infer.run import infer_job

    folder = storage / "uploads" / "infer" / "check"
    folder.mkdir(parents=True, exist_ok=True)
    images = []
    for i in range(64):
        name = ("bus.jpg", "zidane.jpg")[i % 2]
        shutil.copyfile(ASSETS / name, folder / f"{i:03d}-{name}")  # not the package's mode
        images.append(f"uploads/infer/check/{i:03d}-{name}")
    spec = {"model": fingerprint, "images": images, "imgsz": 640, "batch": 16, "conf": 0.001}
    figures: dict[str, Any] = {}
    for run in ("cold", "warm"):
        ctx = CheckContext(
            storage=storage, job_id=f"check-infer-{run}", kind="infer", spec=spec, devices=gpus[:1]
        )
        result = infer_job(ctx=ctx)
        if len(result["images"]) != len(images):
            raise AssertionError("not every image came back")
        figures[f"{run} images/s"] = result["images_per_second"]
    figures["images"] = len(images)
    figures["imgsz / batch"] = "640 / 16"
    return figures


def check_telemetry(*, expected: int) -> dict[str, Any]:
    from gpu_service.runtime.nvml import NvmlRuntime

    inventory = NvmlRuntime().inventory()
    if len(inventory) != expected:
        raise AssertionError(f"NVML sees {len(inventory)} GPUs, CUDA sees {expected}")
    return {
        f"GPU {g.index}": (
            f"{g.name}, {g.memory_used_mib}/{g.memory_total_mib} MiB used, "
            f"{g.utilization_pct:.0f}% util, {g.temperature_c} °C, {g.power_w} W"
        )
        for g in inventory
    }


def environment() -> dict[str, Any]:
    import torch
    import ultralytics

    try:
        import pynvml

        pynvml.nvmlInit()
        driver = pynvml.nvmlSystemGetDriverVersion()
        driver = driver.decode() if isinstance(driver, bytes) else driver
    except Exception as exc:  # NVML missing is itself worth reporting
        driver = f"unavailable ({exc})"
    return {
        "GPUs": ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())),
        "driver": driver,
        "CUDA (torch build)": torch.version.cuda,
        "cuDNN": torch.backends.cudnn.version(),
        "torch": torch.__version__,
        "ultralytics": ultralytics.__version__,
        "python": platform.python_version(),
        "host": platform.node(),
    }


def _run(name: str, fn: Callable[[], dict[str, Any]]) -> CheckResult:
    started = time.perf_counter()
    try:
        figures = fn()
        figures["check seconds"] = round(time.perf_counter() - started, 1)
        return CheckResult(name=name, ok=True, figures=figures)
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        return CheckResult(name=name, ok=False, error=f"{type(exc).__name__}: {exc}"[:500])


def report(*, env: dict[str, Any], results: list[CheckResult]) -> str:
    lines = [f"### GPU check, {time.strftime('%Y-%m-%d %H:%M %Z')}", ""]
    lines += [f"- {key}: {value}" for key, value in env.items()]
    lines += ["", "| check | result | figures |", "| --- | --- | --- |"]
    for result in results:
        figures = "; ".join(f"{k}: {v}" for k, v in result.figures.items()) or result.error
        lines.append(f"| {result.name} | {'pass' if result.ok else 'FAIL'} | {figures} |")
    passed = all(r.ok for r in results)
    lines += ["", f"Overall: {'PASS' if passed else 'FAIL'}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpu_service.gpu_check", description=__doc__)
    parser.add_argument("--keep", action="store_true", help="keep the scratch storage folder")
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print(
            "gpu-check: no CUDA GPU is visible to torch (torch.cuda.is_available() is False); "
            "nothing to check. Run it on a machine with an NVIDIA GPU and driver.",
            file=sys.stderr,
        )
        return NO_GPU
    scratch = Path(tempfile.mkdtemp(prefix="carril-gpu-check-"))
    storage = scratch / "storage"
    (storage / "jobs").mkdir(parents=True)
    from gpu_service.workloads.offline import make_ultralytics_silent

    make_ultralytics_silent(storage=storage)
    gpus = list(range(torch.cuda.device_count()))
    # With one GPU, name it twice: the split/merge still runs on CUDA tensors.
    dp_devices = [f"cuda:{g}" for g in gpus] if len(gpus) > 1 else ["cuda:0", "cuda:0"]
    results = [
        _run(
            "DataParallel split/merge",
            lambda: check_dataparallel(storage=storage, devices=dp_devices),
        )
    ]
    if len(gpus) == 1:
        # The branch above ran the parts one after another; force replicate and
        # parallel_apply onto the one GPU named twice, so the wrapper's CUDA code runs.
        results.append(
            _run(
                "DataParallel replicate/parallel_apply (one GPU named twice)",
                lambda: check_dataparallel(
                    storage=storage, devices=dp_devices, force_parallel=True
                ),
            )
        )
    training = _run("1-epoch training", lambda: check_training(storage=storage, gpus=gpus))
    results.append(training)
    if training.ok:
        fingerprint = next(iter((storage / "weights").glob("*.pt"))).stem
        results.append(
            _run(
                "warm inference",
                lambda: check_inference(storage=storage, gpus=gpus, fingerprint=fingerprint),
            )
        )
    else:
        results.append(CheckResult(name="warm inference", ok=False, error="skipped: no weights"))
    results.append(_run("NVML telemetry", lambda: check_telemetry(expected=len(gpus))))
    print(report(env=environment(), results=results))
    if args.keep:
        print(f"\nscratch storage kept at {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
