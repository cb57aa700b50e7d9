"""Test helpers for the workloads: a synthetic shapes dataset and an in-process job context.

The context is a small stand-in for the worker's real one (unit level only); the
end-to-end tests go through the real service with real child processes.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpu_service import errors

SHAPES = ("rectangle", "circle")


def make_shapes_dataset(root: Path, *, train: int = 8, val: int = 4, size: int = 64) -> Path:
    """Images of one coloured rectangle or circle each, with YOLO labels."""
    from PIL import Image, ImageDraw

    rng = random.Random(7)
    for split, count in (("train", train), ("val", val)):
        (root / "images" / split).mkdir(parents=True, exist_ok=True)
        (root / "labels" / split).mkdir(parents=True, exist_ok=True)
        for i in range(count):
            image = Image.new("RGB", (size, size), (rng.randint(0, 60),) * 3)
            draw = ImageDraw.Draw(image)
            cls = i % 2
            w, h = rng.randint(size // 4, size // 2), rng.randint(size // 4, size // 2)
            x0, y0 = rng.randint(0, size - w - 1), rng.randint(0, size - h - 1)
            colour = (rng.randint(150, 255), rng.randint(0, 255), rng.randint(0, 255))
            if cls == 0:
                draw.rectangle((x0, y0, x0 + w, y0 + h), fill=colour)
            else:
                draw.ellipse((x0, y0, x0 + w, y0 + h), fill=colour)
            image.save(root / "images" / split / f"{i:03d}.jpg")
            cx, cy = (x0 + w / 2) / size, (y0 + h / 2) / size
            (root / "labels" / split / f"{i:03d}.txt").write_text(
                f"{cls} {cx:.6f} {cy:.6f} {w / size:.6f} {h / size:.6f}\n"
            )
    names = "\n".join(f"  {i}: {name}" for i, name in enumerate(SHAPES))
    (root / "data.yaml").write_text(
        f"path: {root}\ntrain: images/train\nval: images/val\nnames:\n{names}\n"
    )
    return root


@dataclass
class FakeJobContext:
    """Records what a workload reports; can stop or fail at a given step."""

    storage: Path
    spec: dict[str, Any]
    kind: str = "train"
    job_id: str = "job-1"
    attempt: int = 1
    devices: list[int] = field(default_factory=list)
    runtime: str = "simulated"
    stop_at_step: int | None = None
    oom_at_step: int | None = None
    crash_at_step: int | None = None
    progress_log: list[dict[str, Any]] = field(default_factory=list)
    epochs: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    steps: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.job_dir = self.storage / "jobs" / self.job_id
        self.job_dir.mkdir(parents=True, exist_ok=True)
        self.logger = logging.getLogger(f"test.job.{self.job_id}")

    def progress(self, **fields: Any) -> None:
        self.progress_log.append(fields)

    def epoch_metrics(self, record: dict[str, Any]) -> None:
        self.epochs.append(record)

    def set_metrics(self, **fields: Any) -> None:
        self.summary.update(fields)

    def should_stop(self) -> bool:
        return (
            self.stop_at_step is not None
            and bool(self.steps)
            and (self.steps[-1] >= self.stop_at_step)
        )

    def fault_point(self, step: int) -> None:
        self.steps.append(step)
        if self.oom_at_step is not None and step == self.oom_at_step:
            raise errors.CudaOOM("simulated CUDA out of memory")
        if self.crash_at_step is not None and step == self.crash_at_step:
            raise SimulatedCrash(step)


class SimulatedCrash(BaseException):
    """Stands in for a killed worker: nothing in the workload may catch it."""
