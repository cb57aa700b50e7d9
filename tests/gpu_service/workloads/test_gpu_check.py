"""`make gpu-check`: refuses clearly without CUDA; passes on a real GPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _gpu_check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpu_service.gpu_check"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def test_it_exits_2_with_a_clear_message_where_there_is_no_cuda() -> None:
    run = _gpu_check({"CUDA_VISIBLE_DEVICES": ""})

    assert run.returncode == 2
    assert "no CUDA GPU" in run.stderr


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.skipif(not _has_cuda(), reason="needs a CUDA GPU")
def test_every_check_passes_on_this_gpu() -> None:
    run = _gpu_check({})

    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert "Overall: PASS" in run.stdout
