"""Inputs several benchmarks share, made once per run on the platform's storage."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bench import data
from bench.stack import Platform, WebApp
from tests.support.gpu_service import GpuServiceProcess

_cache: dict[tuple[int, str], Any] = {}


def registered_model(platform: Platform) -> tuple[str, Path]:
    """An untrained yolov8n registered with the GPU service: (fingerprint, .pt path)."""
    key = (id(platform), "model")
    if key not in _cache:
        path = data.checkpoint_write(path=platform.storage / "bench" / "yolov8n-untrained.pt")
        response = platform.gpu().client.post("/v1/weights", json={"path": str(path)})
        response.raise_for_status()
        _cache[key] = (response.json()["fingerprint"], path)
    return _cache[key]


def infer_images(platform: Platform, *, count: int, size: int) -> list[Path]:
    key = (id(platform), f"images-{count}-{size}")
    if key not in _cache:
        folder = platform.storage / "uploads" / "bench" / f"images-{count}-{size}"
        _cache[key] = data.images_write(folder=folder, count=count, size=size)
    return _cache[key]


def dataset(platform: Platform, *, train: int, val: int, size: int) -> Path:
    key = (id(platform), f"dataset-{train}-{val}-{size}")
    if key not in _cache:
        root = platform.storage / "datasets" / f"bench-{train}-{val}-{size}"
        _cache[key] = data.dataset_write(root=root, train=train, val=val, size=size)
    return _cache[key]


def job_run(
    service: GpuServiceProcess,
    *,
    body: dict[str, Any],
    poll_s: float = 0.1,
    timeout_s: float = 900,
) -> tuple[dict[str, Any], float]:
    """Submit a job and poll it to its end; (the finished job, seconds from just before
    the submit to the journal's `finished_at`).

    The end comes from the service's own clock (same machine), so the figure does not
    depend on how often this side polls, and polling can stay slow enough not to take
    CPU from the job being measured.
    """
    started = time.time()
    response = service.client.post("/v1/jobs", json=body)
    response.raise_for_status()
    job_id = response.json()["id"]
    deadline = time.monotonic() + timeout_s
    while True:
        job = service.client.get(f"/v1/jobs/{job_id}").json()
        if job["state"] in {"succeeded", "failed", "cancelled"}:
            if job["state"] != "succeeded":
                raise RuntimeError(f"job {job_id} {job['state']}: {job['error']}")
            finished = datetime.fromisoformat(job["finished_at"]).timestamp()
            return job, finished - started
        if time.monotonic() > deadline:
            raise RuntimeError(f"job {job_id} stuck in {job['state']}:\n{service.log_tail()}")
        time.sleep(poll_s)


def log_line_time(log: Path, marker: str, *, timeout_s: float = 120) -> float:
    """When a job's worker wrote the first line containing `marker` to its log
    (`jobs/<id>/job.log`; epoch seconds, millisecond resolution)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if log.is_file():
            for line in log.read_text(errors="replace").splitlines():
                if marker in line:
                    stamp, _, millis = line[:23].partition(",")
                    parsed = time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S"))
                    return parsed + int(millis) / 1000
        time.sleep(0.01)
    raise RuntimeError(f"no line with {marker!r} in {log}")


def lanes_idle(service: GpuServiceProcess, *, timeout_s: float = 300) -> None:
    """Wait until no job is queued or running, so the next measurement starts clean."""
    service.wait_until(
        lambda: (
            not any(
                job["state"] in {"queued", "running", "cancelling"}
                for job in service.client.get("/v1/jobs", params={"limit": 1000}).json()["jobs"]
            )
        ),
        timeout_s=timeout_s,
        what="idle lanes",
    )


def web_serving_model(platform: Platform, *, web: WebApp | None = None) -> str:
    """The registered checkpoint imported through the web API and promoted to serving
    (on the platform's SQLite web app unless another is given)."""
    web = web or platform.web()
    key = (id(web), "web-model")
    if key not in _cache:
        assert web.client is not None
        _, path = registered_model(platform)
        with path.open("rb") as fh:
            imported = web.client.post(
                "/api/v1/models/import/",
                data={"name": "bench yolov8n (untrained)"},
                files={"file": (path.name, fh, "application/octet-stream")},
            )
        imported.raise_for_status()
        version = imported.json()["id"]
        promoted = web.client.post(
            f"/api/v1/models/{version}/stage/",
            json={"stage": "serving", "reason": "benchmark"},
        )
        promoted.raise_for_status()
        _cache[key] = version
    return _cache[key]


def web_infer(
    platform: Platform,
    *,
    images: list[Path],
    imgsz: int,
    web: WebApp | None = None,
    conf: float = 0.25,
) -> tuple[dict, float]:
    """One inference through the web API: upload, then poll until it ends."""
    web = web or platform.web()
    assert web.client is not None
    started = time.perf_counter()
    handles = [p.open("rb") for p in images]
    try:
        response = web.client.post(
            "/api/v1/jobs/infer/",
            data={"imgsz": str(imgsz), "conf": str(conf)},
            files=[
                ("images", (p.name, fh, "image/jpeg"))
                for p, fh in zip(images, handles, strict=True)
            ],
        )
    finally:
        for fh in handles:
            fh.close()
    response.raise_for_status()
    job = web.wait_for_job(response.json()["id"], poll_s=0.1)
    wall = time.perf_counter() - started
    if job["state"] != "succeeded":
        raise RuntimeError(f"web inference {job['id']} {job['state']}: {job.get('error')}")
    return job, wall
