"""The suite's entry point: parse options, run the chosen benchmarks, write the results."""

from __future__ import annotations

import importlib
import logging
import shlex
import sys
import time
import traceback
from typing import Any

from bench.machine import load_average, machine_describe
from bench.options import Options, options_parse
from bench.results import docs_update, failed, results_write
from bench.stack import Platform

log = logging.getLogger("bench")

TITLES = {
    "health": "Health under load",
    "inference": "Inference throughput",
    "admission": "Admission overhead",
    "scheduling": "Scheduling",
    "polling": "Polling",
    "upload": "Upload",
    "training": "Training overhead",
    "dataparallel": "DataParallel",
    "ray_cluster": "Ray executor",
    "exports": "Exported models and sliced inference",
    "scaling": "Scaling",
}


def benchmarks_run(*, options: Options) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every benchmark in `options.only`, in order; one that raises is recorded as such."""
    from gpu_service.workloads.offline import make_ultralytics_silent

    results: list[dict[str, Any]] = []
    load_at_start = load_average()
    with Platform(options=options) as platform:
        # This process runs the raw-ultralytics baselines: offline, like the workers.
        make_ultralytics_silent(storage=platform.storage)
        for name in options.only:
            started = time.monotonic()
            log.info("running %s", name)
            try:
                module = importlib.import_module(f"bench.{name}")
                outcome = module.run(options=options, platform=platform)
            except Exception as exc:
                log.error("%s failed:\n%s", name, traceback.format_exc())
                outcome = failed(
                    name=name, title=TITLES[name], error=f"{type(exc).__name__}: {exc}"
                )
            batch = outcome if isinstance(outcome, list) else [outcome]
            for result in batch:
                result["seconds"] = round(time.monotonic() - started, 1)
                log.info(
                    "%s: %s %s (baseline %s, ratio %s, target %s, met %s)",
                    result["name"],
                    result["value"],
                    result["unit"],
                    result["baseline"],
                    result["ratio"],
                    result["target"],
                    result["met"] if not result["skipped"] else f"skipped: {result['skipped']}",
                )
            results.extend(batch)
        machine = machine_describe(runtime=platform.runtime, load_at_start=load_at_start)
    return results, machine


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s bench %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    argv = sys.argv[1:] if argv is None else argv
    options = options_parse(argv)
    results, machine = benchmarks_run(options=options)
    command = shlex.join(["python", "-m", "bench", *argv])
    json_path, md_path = results_write(
        out=options.out, results=results, machine=machine, argv=command
    )
    log.info("wrote %s and %s", json_path, md_path)
    if options.docs is not None:
        if docs_update(docs=options.docs, results=results, machine=machine, argv=command):
            log.info("updated the table in %s", options.docs)
        else:
            log.warning("%s has no bench table markers; not updated", options.docs)
    return 1 if any(result.get("error") for result in results) else 0
