"""Every benchmark runs at its tiniest size against the real services (simulated runtime)
and reports a well-formed result. Speed is never asserted here."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bench import (
    admission,
    dataparallel,
    exports,
    health,
    inference,
    polling,
    scaling,
    scheduling,
    training,
    upload,
)
from bench.options import ROOT, Options
from bench.stack import Platform

KEYS = {
    "name", "title", "runtime", "skipped", "figure", "value", "unit", "baseline_figure",
    "baseline", "ratio", "target", "met", "details", "notes",
}  # fmt: skip


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    from gpu_service.workloads.offline import make_ultralytics_silent

    options = replace(
        Options().tiny(),
        workdir=tmp_path_factory.mktemp("bench"),
        postgres_url=os.environ.get("DATABASE_URL", ""),  # PostgreSQL when the run has one
    )
    with Platform(options=options) as started:
        make_ultralytics_silent(storage=started.storage)
        yield started


def _well_formed(result: dict[str, Any]) -> None:
    assert set(result) >= KEYS
    assert result["runtime"] in ("simulated", "real")
    assert result["target"]
    json.dumps(result)  # JSON as is
    if result["skipped"]:
        assert result["value"] is None
        assert result["ratio"] is None
        return
    for key in ("value", "baseline", "ratio"):
        assert isinstance(result[key], float), key
        assert math.isfinite(result[key]), key
    assert result["met"] in (True, False, None)
    json.dumps(result)  # JSON as is


def _run(module: Any, platform: Platform) -> list[dict[str, Any]]:
    result = module.run(options=platform.options, platform=platform)
    return result if isinstance(result, list) else [result]


def test_exports_report_both_runtimes_against_pytorch_and_the_sliced_cost(
    platform: Platform,
) -> None:
    results = _run(exports, platform)

    assert [r["name"] for r in results] == ["exports.onnx", "exports.openvino", "exports.sliced"]
    for result in results:
        _well_formed(result)
    assert all(
        r["details"]["parity passed"] == {"onnx": True, "openvino": True} for r in results[:2]
    )
    assert results[2]["details"]["tiles per image"] > 1


def test_admission_times_work_starting_with_and_without_a_spare(platform: Platform) -> None:
    (result,) = _run(admission, platform)

    _well_formed(result)
    assert result["value"] > 0
    assert result["baseline"] > 0
    assert "warm: POST round trip ms" in result["details"]
    assert result["details"]["samples (after one discarded warm-up)"] == 3


def test_scheduling_compares_the_trace_with_fifo(platform: Platform) -> None:
    (result,) = _run(scheduling, platform)

    _well_formed(result)
    assert result["value"] >= 1.0  # nothing beats the lower bound
    assert (
        "FIFO (simulated) makespan s / ratio / busy / longest two-GPU wait s" in result["details"]
    )


def test_polling_compares_the_job_view_with_the_bare_view(platform: Platform) -> None:
    results = _run(polling, platform)

    assert results[0]["name"] == "polling-SQLite"
    for result in results:
        _well_formed(result)
        assert result["details"]["running job: real view"]["errors"] == 0
        assert result["details"]["running job: real view"]["requests"] > 0
        assert result["details"]["running job: bare view"]["requests"] > 0
        assert result["details"]["finished job: real view"]["errors"] == 0


def test_scaling_reports_the_queue_and_job_list_curves(platform: Platform) -> None:
    results = _run(scaling, platform)

    assert [r["name"] for r in results] == [
        "scaling.submit",
        "scaling.gpus",
        "scaling.tiny",
        "scaling.joblist",
    ]
    for result in results:
        _well_formed(result)
    curve = results[0]["details"]["queue curve"]
    assert [row["queued"] for row in curve] == platform.options.queue_sizes()
    queued = curve[-1]["queued"] + platform.options.scaling_samples
    assert curve[-1]["queue listed / counted"] == f"{queued} / {queued}"
    assert [row["job rows"] for row in results[3]["details"]["web job list curve"]][:2] == [
        50,
        200,
    ]
    tiny = results[2]["details"]
    rates = [tiny[f"jobs/s, {how}"] for how in ("resident", "fresh, spares", "fresh, no spares")]
    assert all(rate > 0 for rate in rates)
    assert results[2]["value"] == pytest.approx(rates[0], rel=0.01)


def test_upload_measures_a_dataset_the_web_app_accepts(platform: Platform) -> None:
    (result,) = _run(upload, platform)

    _well_formed(result)
    assert result["details"]["dataset accepted"] is True
    assert result["details"]["peak RSS MiB"] >= result["details"]["idle RSS MiB"]


def test_dataparallel_times_the_step_or_says_why_it_cannot(platform: Platform) -> None:
    import torch

    (result,) = _run(dataparallel, platform)

    _well_formed(result)
    if not torch.cuda.is_available():
        assert "CUDA" in result["skipped"]
        return
    assert result["skipped"] is None
    assert result["runtime"] == "real"
    assert result["value"] > 0
    assert result["baseline"] > 0
    assert result["details"]["steps"] == platform.options.dp_steps
    assert result["details"]["speed-up"] > 0


@pytest.mark.slow
def test_inference_reports_both_paths_and_the_one_image_latency(platform: Platform) -> None:
    results = _run(inference, platform)

    assert [r["name"] for r in results] == [
        "inference.web",
        "inference.service",
        "inference.single",
    ]
    for result in results:
        _well_formed(result)
    assert results[0]["value"] > 0
    assert results[1]["value"] > 0


@pytest.mark.slow
def test_health_samples_healthz_idle_and_under_a_training(platform: Platform) -> None:
    (result,) = _run(health, platform)

    _well_formed(result)
    assert result["details"]["samples per series"] == platform.options.health_samples


@pytest.mark.slow
def test_training_compares_a_carril_training_with_raw_ultralytics(platform: Platform) -> None:
    (result,) = _run(training, platform)

    _well_formed(result)
    assert len(result["details"]["Carril trainer runs s"]) == platform.options.train_repeats
    assert len(result["details"]["raw trainer runs s"]) == platform.options.train_repeats


def test_the_command_line_writes_json_and_markdown_results(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable, "-m", "bench", "--tiny", "--only", "dataparallel",
            "--out", str(tmp_path), "--workdir", str(tmp_path / "work"),
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    document = json.loads((tmp_path / "latest.json").read_text())
    assert [r["name"] for r in document["results"]] == ["dataparallel"]
    assert document["machine"]["gpu_service_runtime"] == "simulated"
    assert "| 1 | DataParallel" in (tmp_path / "latest.md").read_text()


def test_an_unknown_benchmark_name_is_refused() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--only", "nope"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip

    assert done.returncode == 2
    assert "unknown benchmark" in done.stderr
