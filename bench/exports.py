"""9. Exported models and sliced inference.

Throughput: the same untrained yolov8n exported by Carril's `export` jobs (ONNX and
OpenVINO, through the GPU service API), then timed in this process, one image at a time
(the exports are static, batch 1), on the same images at the same size, against
PyTorch on the CPU. Target: at least one exported runtime >= 1.2x PyTorch; both are
reported.

Sliced inference: the time and memory per image of SAHI tiles (slice = the model's
image size, overlap 0.2) against one full-frame predict, on images four times the
model's size. Memory is the peak resident set of this process during each kind of
run, sampled every 10 ms (the process also holds the other models): approximate, and
reported, not targeted.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from bench import data, prepare
from bench.options import Options
from bench.results import outcome
from bench.stack import Platform
from bench.stats import median

NAME = "exports"
TITLE = "Exported models"
TARGET = ">= 1.2x PyTorch CPU for one"
CONF = 0.25


def _ips(model: Any, images: list[Path], imgsz: int) -> float:
    started = time.perf_counter()
    for image in images:
        model.predict(source=str(image), imgsz=imgsz, conf=CONF, device="cpu", verbose=False)
    return len(images) / (time.perf_counter() - started)


def _export(platform: Platform, *, fingerprint: str, fmt: str, imgsz: int) -> dict[str, Any]:
    body = {"kind": "export", "spec": {"model": fingerprint, "format": fmt, "imgsz": imgsz}}
    job, _ = prepare.job_run(platform.gpu(), body=body)
    return job["result"]["export"]


class _PeakRss:
    """The largest resident set seen while the block runs, sampled on a thread."""

    def __enter__(self) -> _PeakRss:
        import psutil

        self.process = psutil.Process()
        self.base = self.peak = self.process.memory_info().rss
        self.running = True
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self) -> None:
        while self.running:
            self.peak = max(self.peak, self.process.memory_info().rss)
            time.sleep(0.01)

    def __exit__(self, *exc: object) -> None:
        self.running = False
        self.thread.join()

    @property
    def peak_mib(self) -> float:
        return self.peak / 2**20


def run(*, options: Options, platform: Platform) -> list[dict[str, Any]]:
    from ultralytics import YOLO

    fingerprint, checkpoint = prepare.registered_model(platform)
    images = prepare.infer_images(platform, count=options.images, size=options.imgsz)
    prepare.lanes_idle(platform.gpu())
    manifests = {
        fmt: _export(platform, fingerprint=fingerprint, fmt=fmt, imgsz=options.imgsz)
        for fmt in ("onnx", "openvino")
    }
    models = {"pt": YOLO(str(checkpoint))} | {
        fmt: YOLO(str(platform.storage / m["artifact"]), task="detect")
        for fmt, m in manifests.items()
    }
    for model in models.values():
        _ips(model, images[:2], options.imgsz)  # warm
    rates: dict[str, list[float]] = {fmt: [] for fmt in models}
    for _ in range(options.repeats):  # interleaved: load changes hit every runtime alike
        for fmt, model in models.items():
            rates[fmt].append(_ips(model, images, options.imgsz))
    pt = median(rates["pt"])
    best = max(median(rates["onnx"]), median(rates["openvino"]))
    common = {
        "images": len(images),
        "imgsz": options.imgsz,
        "batch": 1,
        "repeats": options.repeats,
        "model": "yolov8n, untrained (built from its yaml)",
        "parity passed": {fmt: m["parity"]["passed"] for fmt, m in manifests.items()},
    }
    results = [
        outcome(
            name=f"{NAME}.{fmt}",
            title=f"{TITLE}: {label} on the CPU",
            runtime=platform.runtime,
            figure="images/s",
            value=median(rates[fmt]),
            unit="img/s",
            baseline_figure="PyTorch (.pt) on the CPU",
            baseline=pt,
            ratio=median(rates[fmt]) / pt,
            target=TARGET,
            met=best / pt >= 1.2,
            details={**common, "export fingerprint": manifests[fmt]["fingerprint"]},
        )
        for fmt, label in (("onnx", "ONNX Runtime"), ("openvino", "OpenVINO"))
    ]
    results.append(_sliced(platform=platform, options=options, model=models["pt"]))
    return results


def _sliced(*, platform: Platform, options: Options, model: Any) -> dict[str, Any]:
    from sahi import AutoDetectionModel
    from sahi.predict import get_sliced_prediction

    size = options.imgsz * 4
    large = data.images_write(
        folder=platform.storage / "uploads" / "bench" / f"large-{size}", count=2, size=size
    )
    detector = AutoDetectionModel.from_pretrained(
        model_type="ultralytics",
        model=model,
        confidence_threshold=CONF,
        device="cpu",
        image_size=options.imgsz,
    )
    full, sliced, full_rss, sliced_rss = [], [], [], []
    for _ in range(options.repeats):
        for image in large:
            with _PeakRss() as rss:
                started = time.perf_counter()
                model.predict(source=str(image), imgsz=options.imgsz, conf=CONF, verbose=False)
                full.append(time.perf_counter() - started)
            full_rss.append(rss.peak_mib)
            with _PeakRss() as rss:
                started = time.perf_counter()
                get_sliced_prediction(
                    str(image),
                    detector,
                    slice_height=options.imgsz,
                    slice_width=options.imgsz,
                    overlap_height_ratio=0.2,
                    overlap_width_ratio=0.2,
                    verbose=0,
                )
                sliced.append(time.perf_counter() - started)
            sliced_rss.append(rss.peak_mib)
    return outcome(
        name=f"{NAME}.sliced",
        title="Sliced inference (SAHI): cost per image",
        runtime=platform.runtime,
        figure="ms per image, sliced",
        value=median(sliced) * 1000,
        unit="ms",
        baseline_figure="ms per image, full frame",
        baseline=median(full) * 1000,
        ratio=median(sliced) / median(full),
        target="reported",
        met=None,
        details={
            "image px": size,
            "slice px": options.imgsz,
            "overlap": 0.2,
            "peak RSS MiB, full frame (median)": round(median(full_rss), 1),
            "peak RSS MiB, sliced (median)": round(median(sliced_rss), 1),
            "tiles per image": _tiles(size, options.imgsz, 0.2),
        },
        notes="Tiles plus one full-frame pass (SAHI's default), merged with greedy NMM.",
    )


def _tiles(size: int, slice_size: int, overlap: float) -> int:
    step = int(slice_size * (1 - overlap))
    per_side = max(1, -(-(size - slice_size) // step) + 1)
    return per_side * per_side
