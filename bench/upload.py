"""6. Upload: the web process's peak memory while a large dataset zip (1 GiB by default)
uploads through `POST /api/v1/datasets/` and is validated, against its idle memory.

The zip is a valid dataset: stored BMP images of random pixels (incompressible) with
labels, so the whole path runs: streaming to disk, zip checks, extraction, validation.
Memory is the resident set of gunicorn's processes, sampled every 10 ms from a thread
of this process.

Target: peak at most 64 MiB above idle.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

from bench import data
from bench.options import Options
from bench.results import outcome
from bench.stack import Platform
from bench.stats import median

NAME = "upload"
TITLE = "Dataset upload memory"
TARGET = "<= idle + 64 MiB"
MIB = 1024**2


def _rss(pids: list[int]) -> int:
    import psutil

    total = 0
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            total += psutil.Process(pid).memory_info().rss
    return total


def _sampler(*, pids: list[int], stop: threading.Event, out: list[int]) -> None:
    while not stop.is_set():
        out.append(_rss(pids))
        time.sleep(0.01)


def run(*, options: Options, platform: Platform) -> dict[str, Any]:
    web = platform.web()
    assert web.client is not None
    archive = data.big_dataset_zip(
        path=platform.folder("upload") / "big-dataset.zip", total_bytes=options.upload_mib * MIB
    )
    size = archive.stat().st_size
    pids = web.web_pids()
    web.client.get("/api/v1/datasets/")  # the view's code paths are imported before idle
    idle_samples: list[int] = []
    stop = threading.Event()
    sampler = threading.Thread(
        target=_sampler, kwargs={"pids": pids, "stop": stop, "out": idle_samples}
    )
    sampler.start()
    time.sleep(1.0)
    stop.set()
    sampler.join()
    idle = median(idle_samples)

    samples: list[int] = []
    stop = threading.Event()
    sampler = threading.Thread(target=_sampler, kwargs={"pids": pids, "stop": stop, "out": samples})
    sampler.start()
    started = time.perf_counter()
    try:
        with archive.open("rb") as fh:
            response = web.client.post(
                "/api/v1/datasets/",
                data={"name": "bench upload"},
                files={"file": (archive.name, fh, "application/zip")},
            )
        # Validated after it is received (ADR 0025): measure until validation is over too.
        while response.status_code in (200, 202) and response.json().get("state") == "validating":
            time.sleep(0.2)
            response = web.client.get(response.json()["url"])
    finally:
        stop.set()
        sampler.join()
    seconds = time.perf_counter() - started
    archive.unlink(missing_ok=True)
    peak = max(samples)
    above = (peak - idle) / MIB
    accepted = (
        response.status_code in (200, 201) and response.json().get("state", "ready") == "ready"
    )
    return outcome(
        name=NAME,
        title=TITLE,
        runtime=platform.runtime,
        figure=f"peak RSS above idle ({size / MIB:,.0f} MiB zip)",
        value=above,
        unit="MiB",
        baseline_figure="idle RSS",
        baseline=idle / MIB,
        ratio=peak / idle,
        target=TARGET,
        met=above <= 64,
        details={
            "zip bytes": size,
            "status": response.status_code,
            "dataset accepted": accepted,
            "upload + validation s": round(seconds, 2),
            "peak RSS MiB": round(peak / MIB, 1),
            "idle RSS MiB": round(idle / MIB, 1),
            "processes": "gunicorn master + worker",
            "samples": len(samples),
        },
        notes=""
        if accepted
        else f"the upload was answered {response.status_code}: {response.text[:300]}",
    )
