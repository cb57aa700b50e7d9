"""4. Scheduling: a seeded mixed trace (two-GPU "trainings", one-GPU "inferences", as
diagnostic jobs of known durations) on 2 simulated GPUs through the real service. Each
runs in the worker its kind gets: a "training" in a fresh process of its own (a warm
spare when one is ready), an "inference" in the GPU's resident worker.

Figures: makespan over its lower bound (max(total GPU-seconds / GPUs, longest job)),
the fraction of lane-time held by jobs, the longest wait of a two-GPU job. The same
trace under strict first-in-first-out is (a) run through a second real service with
`CARRIL_STARVATION_BOUND_S=0` (any job that cannot start drains the lanes it needs, so
nothing overtakes it: FIFO), and (b) simulated with the admission module in a
discrete-event simulation, as is Carril's own policy, with the per-job overhead the
real run measured.

Target: at most 1.05x the lower bound (issue 18, with warm spares), and a shorter makespan
than FIFO.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from bench.options import Options
from bench.results import outcome
from bench.stack import Platform
from bench.stats import median
from bench.trace import TraceJob, schedule_figures, simulate, trace_make
from tests.support.gpu_service import GpuServiceProcess

NAME = "scheduling"
TITLE = "Scheduling (2 GPUs, mixed trace)"
TARGET = "<= 1.05x lower bound and < FIFO"
GPUS = 2


def _ts(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


def run_trace(
    service: GpuServiceProcess, trace: list[TraceJob], *, gpus: int = GPUS
) -> dict[str, Any]:
    ids = {}
    for job in trace:
        accepted = service.submit(
            kind="diagnostic",
            gpus=job.gpus,
            spec={
                "seconds": job.seconds,
                "step_s": min(1.0, max(0.05, job.seconds / 4)),
                # As the kinds they stand for run: an inference in the GPU's resident
                # worker, a training in a fresh process (a warm spare when one is ready).
                "worker": "resident" if job.gpus == 1 else "fresh",
            },
        )
        ids[job.index] = accepted["id"]
    timeout = sum(job.seconds for job in trace) * 3 + 120
    deadline = time.monotonic() + timeout
    while True:
        response = service.client.post("/v1/jobs/status", json={"ids": list(ids.values())})
        jobs = {job["id"]: job for job in response.json()["jobs"]}
        if all(job["state"] in {"succeeded", "failed", "cancelled"} for job in jobs.values()):
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"trace did not finish in {timeout:.0f} s:\n{service.log_tail()}")
        time.sleep(0.2)
    failed = [j["id"] for j in jobs.values() if j["state"] != "succeeded"]
    if failed:
        raise RuntimeError(f"trace jobs did not succeed: {failed}")
    origin = min(_ts(jobs[i]["submitted_at"]) for i in ids.values())
    starts = {index: _ts(jobs[i]["started_at"]) - origin for index, i in ids.items()}
    ends = {index: _ts(jobs[i]["finished_at"]) - origin for index, i in ids.items()}
    overheads = [ends[j.index] - starts[j.index] - j.seconds for j in trace]
    return {
        **schedule_figures(trace=trace, starts=starts, ends=ends, gpus=gpus),
        "median_job_overhead_s": median(overheads),
    }


def run(*, options: Options, platform: Platform) -> dict[str, Any]:
    trace = trace_make(jobs=options.trace_jobs, seed=options.trace_seed, unit_s=options.time_unit_s)
    carril_service = platform.gpu_service_apart(name="sched-carril", gpus="2x24GiB", env={})
    carril = run_trace(carril_service, trace)
    carril_service.stop()
    overhead = carril["median_job_overhead_s"]
    fifo = None
    if options.fifo_real:
        fifo_service = platform.gpu_service_apart(
            name="sched-fifo", gpus="2x24GiB", env={"CARRIL_STARVATION_BOUND_S": "0"}
        )
        fifo = run_trace(fifo_service, trace)
        fifo_service.stop()
    sim_carril = simulate(trace=trace, policy="carril", overhead_s=overhead)
    sim_fifo = simulate(trace=trace, policy="fifo", overhead_s=overhead)
    fifo_makespan = fifo["makespan_s"] if fifo else sim_fifo["makespan_s"]
    met = carril["ratio"] <= 1.05 and carril["makespan_s"] < fifo_makespan

    def r(x: float) -> float:
        return round(x, 3)

    details: dict[str, Any] = {
        "trace": f"{len(trace)} jobs, seed {options.trace_seed}, {options.time_unit_s} s per unit: "
        + ", ".join(f"{j.gpus}x{j.seconds:g}s" for j in trace),
        "lower bound s": r(carril["lower_bound_s"]),
        "Carril (real) makespan s": r(carril["makespan_s"]),
        "Carril (real) busy fraction": r(carril["busy_fraction"]),
        "Carril (real) longest two-GPU wait s": r(carril["longest_two_gpu_wait_s"]),
        "median per-job overhead s (worker start, end)": r(overhead),
    }
    if fifo:
        details.update(
            {
                "FIFO (real, CARRIL_STARVATION_BOUND_S=0) makespan s": r(fifo["makespan_s"]),
                "FIFO (real) ratio": r(fifo["ratio"]),
                "FIFO (real) busy fraction": r(fifo["busy_fraction"]),
                "FIFO (real) longest two-GPU wait s": r(fifo["longest_two_gpu_wait_s"]),
            }
        )
    ideal = simulate(trace=trace, policy="carril", overhead_s=0.0)
    sims = (
        ("Carril (simulated)", sim_carril),
        ("FIFO (simulated)", sim_fifo),
        ("Carril (simulated, no per-job overhead)", ideal),
    )
    for label, sim in sims:
        details[f"{label} makespan s / ratio / busy / longest two-GPU wait s"] = (
            f"{r(sim['makespan_s'])} / {r(sim['ratio'])} / {r(sim['busy_fraction'])} / "
            f"{r(sim['longest_two_gpu_wait_s'])}"
        )
    return outcome(
        name=NAME,
        title=TITLE,
        runtime=platform.runtime,
        figure="makespan / lower bound",
        value=carril["ratio"],
        baseline_figure="FIFO " + ("real" if fifo else "simulated"),
        baseline=fifo["ratio"] if fifo else sim_fifo["ratio"],
        ratio=carril["makespan_s"] / fifo_makespan,
        target=TARGET,
        met=met,
        details=details,
        notes=(
            "Ratio column: Carril's makespan over FIFO's. FIFO in the real service is "
            "CARRIL_STARVATION_BOUND_S=0 (the core has no separate FIFO switch); the "
            "simulations drive gpu_service.admission.Admission (Carril) and a strict "
            "head-of-line queue (FIFO) with the measured per-job overhead."
        ),
    )
