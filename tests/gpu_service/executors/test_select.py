"""`make run` stays the embedded default: the local executor, and Ray never imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_default_executor_is_local_and_does_not_load_ray(tmp_path):
    script = (
        "import sys\n"
        "from gpu_service.api.app import create_app\n"
        "from gpu_service.settings import load_settings\n"
        f"app = create_app(load_settings(storage={str(tmp_path)!r}, gpu_runtime='simulated'))\n"
        "executor = app.state.scheduler.manager.executor\n"
        "print(executor.name, 'ray' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "CARRIL_STORAGE": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["local", "False"]
