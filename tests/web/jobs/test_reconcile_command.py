"""`manage.py reconcile` runs as a loop in its own process and stops cleanly on SIGTERM."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_loop_keeps_passing_while_the_gpu_service_is_away_and_stops_on_sigterm(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CARRIL_")}
    env.pop("DATABASE_URL", None)
    env.update(
        CARRIL_STORAGE=str(tmp_path),
        CARRIL_GPU_SERVICE_URL="http://127.0.0.1:9",  # nothing listens there
        CARRIL_GPU_SERVICE_TOKEN="t" * 32,
        DJANGO_SETTINGS_MODULE="carril_web.settings",
    )
    manage = [sys.executable, str(ROOT / "web" / "manage.py")]
    subprocess.run([*manage, "migrate", "-v", "0"], env=env, check=True, timeout=300)
    loop = subprocess.Popen(
        [*manage, "reconcile", "--interval", "0.1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        passes: set[str] = set()  # distinct pass times: the loop goes on past failures
        while len(passes) < 2 and time.monotonic() < deadline:
            with sqlite3.connect(tmp_path / "web.sqlite3") as db:
                row = db.execute(
                    "SELECT last_pass_at, gpus_error FROM jobs_reconcilerstatus"
                ).fetchone()
            if row and row[0]:
                assert row[1], "the unreachable GPU service is recorded"
                passes.add(row[0])
            time.sleep(0.1)
        assert len(passes) == 2, "the reconciler did not keep passing"
        loop.send_signal(signal.SIGTERM)
        assert loop.wait(timeout=30) == 0
    finally:
        if loop.poll() is None:
            loop.kill()
    assert "reconciler running" in loop.stdout.read()
