"""8. DataParallel: time of one training step (forward, loss, backward) of yolov8n with
Carril's DataParallel (gpu_service.workloads.train.dataparallel: the batch split by image
over the GPUs) against the same step on one GPU. With one CUDA device, the GPU is named
twice with the replicate/parallel_apply branch forced (the wrapper's CUDA code runs; no
speed-up is possible). Skipped without a CUDA device.

No target in the issue: the figure is reported.
"""

from __future__ import annotations

import time
from typing import Any

from bench.options import Options
from bench.results import outcome, skipped
from bench.stack import Platform
from bench.stats import median, ms

NAME = "dataparallel"
TITLE = "DataParallel step time"


def _batch(*, size: int, imgsz: int, device: Any) -> dict[str, Any]:
    import torch

    generator = torch.Generator().manual_seed(0)
    return {
        "img": torch.rand(size, 3, imgsz, imgsz, generator=generator).to(device),
        "batch_idx": torch.arange(size, dtype=torch.float32).to(device),
        "cls": torch.randint(0, 2, (size, 1), generator=generator).float().to(device),
        "bboxes": (torch.rand(size, 4, generator=generator) * 0.5 + 0.25).to(device),
    }


def _step_times(
    *, devices: list[str], options: Options, force_parallel: bool = False
) -> list[float]:
    import torch
    from ultralytics.cfg import get_cfg
    from ultralytics.nn.tasks import DetectionModel

    from gpu_service.workloads.train.dataparallel import parallel_loss

    model = DetectionModel("yolov8n.yaml", nc=2, verbose=False).to(devices[0])
    model.args = get_cfg(overrides={"imgsz": options.dp_imgsz})
    model.train()
    batch = _batch(size=options.dp_batch, imgsz=options.dp_imgsz, device="cpu")
    times = []
    for step in range(options.dp_steps + 2):  # two warm-up steps
        torch.cuda.synchronize()
        started = time.perf_counter()
        loss, _ = parallel_loss(model, batch, devices=devices, force_parallel=force_parallel)
        loss.sum().backward()
        model.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if step >= 2:
            times.append(time.perf_counter() - started)
    return times


def run(*, options: Options, platform: Platform) -> dict[str, Any]:
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count < 1:
        return skipped(
            name=NAME,
            title=TITLE,
            runtime=platform.runtime,
            reason=f"needs a CUDA GPU; this machine has {count}",
            target="reported",
        )
    devices = [f"cuda:{i}" for i in range(count)] if count > 1 else ["cuda:0", "cuda:0"]
    one = median(_step_times(devices=devices[:1], options=options))
    many = median(_step_times(devices=devices, options=options, force_parallel=count == 1))
    return outcome(
        name=NAME,
        title=TITLE,
        runtime="real",
        figure=f"step time on {count} GPUs" if count > 1 else "step time, one GPU named twice",
        value=ms(many),
        unit="ms",
        baseline_figure="one GPU",
        baseline=ms(one),
        ratio=many / one,
        target="reported",
        met=None,
        details={
            "batch": options.dp_batch,
            "imgsz": options.dp_imgsz,
            "steps": options.dp_steps,
            "speed-up": round(one / many, 3),
            "GPUs": ", ".join(torch.cuda.get_device_name(i) for i in range(count)),
        },
    )
