"""Each service's dependencies are pinned exactly, and the web app's set has no torch."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENT = re.compile(r"^([A-Za-z0-9_.\[\]-]+)==[0-9][^\s;]*$")


def requirement_lines(name: str) -> list[str]:
    lines = (ROOT / "requirements" / name).read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize("name", ["web.txt", "gpu.txt", "dev.txt", "cli.txt"])
def test_every_requirement_is_pinned_exactly(name):
    loose = [line for line in requirement_lines(name) if not REQUIREMENT.match(line)]
    assert not loose, f"{name}: pin these with ==: {loose}"


def test_the_web_requirements_do_not_pull_in_torch_or_ultralytics():
    names = {line.split("==")[0].lower() for line in requirement_lines("web.txt")}
    assert not names & {"torch", "torchvision", "ultralytics", "nvidia-ml-py"}


def test_the_gpu_service_pins_the_torch_build_this_machine_serves():
    lines = set(requirement_lines("gpu.txt"))
    assert {"torch==2.14.1", "torchvision==0.29.1"} <= lines
    assert any(line.startswith("ultralytics==") for line in lines)


def test_the_web_app_loads_every_app_without_importing_torch_or_more_than_the_contract(tmp_path):
    script = (
        "import sys, django\n"
        "django.setup()\n"
        "from django.urls import get_resolver\n"
        "get_resolver().url_patterns\n"
        "heavy = {'torch', 'ultralytics'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
        # The web shares the GPU service's stdlib-only contract module, and nothing else.
        "shared = {m for m in sys.modules if m.split('.')[0] == 'gpu_service'}\n"
        "assert shared <= {'gpu_service', 'gpu_service.contract'}, shared\n"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT / "web"),
        "DJANGO_SETTINGS_MODULE": "carril_web.settings",
        "CARRIL_STORAGE": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
