"""3. Admission: from a submit to the worker's first report, with and without a spare.

Work has really started when the worker runs the job: its first line in the job's log
(`jobs/<id>/job.log`, "... starting in pid ..."), written before the kind's code runs.
The figure is that line's time minus the time just before the POST (same machine, same
clock; the log has millisecond resolution). Each sample is a diagnostic job for a free
lane. Before each warm sample the suite waits until the service has logged that the
replacement spare is ready (its imports take seconds, longer on a loaded machine), as
it would be between jobs that are not back to back; the cold side pauses
`--admission-pause-s` between samples. How long spares took to be ready is reported.
Baseline: the same on a GPU service started with `CARRIL_WARM_WORKERS=false` (every job
spawns its worker). Details keep the POST's round trip and the journal's own
`started_at - submitted_at` (a state change, not work starting).

Target: p50 at most 100 ms with a warm worker.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bench import prepare
from bench.options import Options
from bench.results import outcome
from bench.stack import Platform
from bench.stats import median, ms, percentile
from tests.support.gpu_service import GpuServiceProcess

NAME = "admission"
TITLE = "Admission: submit to work started"
TARGET = "p50 <= 100 ms (warm worker)"
BODY = {"kind": "diagnostic", "gpu_ids": [0], "spec": {"seconds": 0, "step_s": 0.05}}


def _seconds(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


READY = "spare worker pid "


def _spares_ready(service: GpuServiceProcess) -> int:
    text = service.log_path.read_text(errors="replace")
    return sum(1 for line in text.splitlines() if READY in line and " ready on GPUs " in line)


def _samples(
    service: GpuServiceProcess, *, storage: Path, samples: int, pause_s: float, warm: bool
) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"start": [], "post": [], "journal": [], "ready": []}
    prepare.lanes_idle(service)
    service.client.get("/healthz")
    base = _spares_ready(service)
    for index in range(samples + 1):  # the first one warms up (no spare yet): discarded
        if warm and index:
            waited = time.monotonic()
            service.wait_until(
                lambda index=index: _spares_ready(service) >= base + index,
                timeout_s=300,
                what="the replacement spare to be ready",
            )
            out["ready"].append(time.monotonic() - waited)
        else:
            time.sleep(pause_s)
        before, started = time.time(), time.perf_counter()
        response = service.client.post("/v1/jobs", json=BODY)
        post = time.perf_counter() - started
        response.raise_for_status()
        job_id = response.json()["id"]
        first = prepare.log_line_time(storage / "jobs" / job_id / "job.log", " starting in pid ")
        job = service.wait_for(job_id, timeout_s=120)
        if index == 0:
            continue
        out["start"].append(first - before)
        out["post"].append(post)
        out["journal"].append(_seconds(job["started_at"]) - _seconds(job["submitted_at"]))
    return out


def run(*, options: Options, platform: Platform) -> dict[str, Any]:
    warm = _samples(
        platform.gpu(),
        storage=platform.storage,
        samples=options.admission_samples,
        pause_s=options.admission_pause_s,
        warm=True,
    )
    cold_service = platform.gpu_service_apart(
        name="admission-cold", gpus="2x24GiB", env={"CARRIL_WARM_WORKERS": "false"}
    )
    cold = _samples(
        cold_service,
        storage=platform.root / "admission-cold",
        samples=options.admission_samples,
        pause_s=options.admission_pause_s,
        warm=False,
    )
    cold_service.stop()
    p50, cold_p50 = median(warm["start"]), median(cold["start"])

    def summary(values: list[float]) -> str:
        return (
            f"p50 {ms(median(values))} / p90 {ms(percentile(values, 90))} / "
            f"min {ms(min(values))} / max {ms(max(values))}"
        )

    return outcome(
        name=NAME,
        title=TITLE,
        runtime=platform.runtime,
        figure="submit to the worker's first line p50 (warm spare)",
        value=ms(p50),
        unit="ms",
        baseline_figure="the same without spares (CARRIL_WARM_WORKERS=false)",
        baseline=ms(cold_p50),
        ratio=p50 / cold_p50,
        target=TARGET,
        met=p50 <= 0.100,
        details={
            "warm: submit to work started ms": summary(warm["start"]),
            "cold: submit to work started ms": summary(cold["start"]),
            "warm: POST round trip ms": summary(warm["post"]),
            "cold: POST round trip ms": summary(cold["post"]),
            "journal started_at - submitted_at p50 ms (warm / cold)": (
                f"{ms(median(warm['journal']))} / {ms(median(cold['journal']))}"
            ),
            "samples (after one discarded warm-up)": options.admission_samples,
            "warm: waited for the replacement spare after each job s (median / max)": (
                f"{median(warm['ready']):.2f} / {max(warm['ready']):.2f}"
            ),
            "cold: pause between samples s": options.admission_pause_s,
        },
    )
