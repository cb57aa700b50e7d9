"""The web half of the platform as real processes, for fault tests: a SQLite database file
in shared storage, Django scripts run in their own process, and the reconciler loop
(`manage.py reconcile`) that a test may kill and start again.

The test process never imports the web app's database layer: it reads the jobs table
with sqlite3 and the GPU service's journal with sqlite3, and compares them.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.gpu_service import GpuServiceProcess

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "web"

# Run inside `python -c`: Django set up from the same settings the web app uses.
PRELUDE = "import django, json, sys; django.setup()\n"


@dataclass
class WebSide:
    storage: Path
    gpu: GpuServiceProcess
    reconcile_interval_s: float = 0.3
    extra_env: dict[str, str] = field(default_factory=dict)
    reconciler: subprocess.Popen[bytes] | None = None
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def database(self) -> Path:
        return self.storage / "web.sqlite3"

    def env(self) -> dict[str, str]:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("CARRIL_")}
        clean.pop("DATABASE_URL", None)
        return {
            **clean,
            "CARRIL_STORAGE": str(self.storage),
            "CARRIL_ENV": "dev",
            "DATABASE_URL": f"sqlite:///{self.database}",
            "CARRIL_GPU_SERVICE_URL": self.gpu.url,
            "CARRIL_GPU_SERVICE_TOKEN": self.gpu.token,
            "CARRIL_GPU_SERVICE_TIMEOUT_S": "5",
            "CARRIL_LOG_LEVEL": "INFO",
            "DJANGO_SETTINGS_MODULE": "carril_web.settings",
            "PYTHONPATH": f"{ROOT}{os.pathsep}{WEB}",
            **self.extra_env,
        }

    def start(self) -> WebSide:
        self.storage.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput"],
            cwd=WEB,
            env=self.env(),
            check=True,
            capture_output=True,
            timeout=180,
        )
        return self

    # --- Django code in its own process ----------------------------------------------
    def script(self, code: str, *, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", PRELUDE + code],
            cwd=WEB,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )

    def spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = (self.storage / f"{name}.log").open("ab")
        process = subprocess.Popen(
            argv, cwd=WEB, env=self.env(), stdout=log, stderr=subprocess.STDOUT
        )
        self.processes.append(process)
        return process

    def jobs_create(self, specs: list[dict[str, Any]]) -> list[str]:
        """Create diagnostic jobs the way the API does (row, then delivery on commit)."""
        done = self.script(
            "from django.contrib.auth.models import User\n"
            "from jobs.services import _job_create\n"
            "owner = User.objects.get_or_create(username='reliability')[0]\n"
            f"specs = json.loads({json.dumps(json.dumps(specs))})\n"
            "ids = [str(_job_create(owner=owner, kind='diagnostic', spec=s['spec'],"
            " gpus=s.get('gpus', 1)).id) for s in specs]\n"
            "print(json.dumps(ids))\n"
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    # --- the reconciler ---------------------------------------------------------------
    def reconciler_start(self) -> subprocess.Popen[bytes]:
        self.reconciler = self.spawn(
            "reconciler",
            [
                sys.executable,
                "manage.py",
                "reconcile",
                "--interval",
                str(self.reconcile_interval_s),
            ],
        )
        return self.reconciler

    def reconciler_kill(self, sig: int = signal.SIGKILL) -> None:
        if self.reconciler is not None and self.reconciler.poll() is None:
            self.reconciler.send_signal(sig)
            self.reconciler.wait(timeout=30)

    def reconcile_once(self) -> None:
        done = subprocess.run(
            [sys.executable, "manage.py", "reconcile", "--once"],
            cwd=WEB,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)

    # --- reading both sides -----------------------------------------------------------
    def web_jobs(self) -> dict[str, dict[str, Any]]:
        with sqlite3.connect(self.database, timeout=30) as db:
            db.row_factory = sqlite3.Row
            rows = db.execute(
                "SELECT id, state, gpu_job_id, error_code, claimed_until, dispatch_attempts"
                " FROM jobs_job"
            ).fetchall()
        # Django stores UUIDs in SQLite as 32 hex digits; the API and the key use dashes.
        return {_dashed(row["id"]): dict(row) | {"id": _dashed(row["id"])} for row in rows}

    def web_execute(self, sql: str, params: tuple = ()) -> None:
        with sqlite3.connect(self.database, timeout=30) as db:
            db.execute(sql, params)

    def journal_jobs(self) -> dict[str, dict[str, Any]]:
        with sqlite3.connect(self.gpu.storage / "journal.sqlite3", timeout=30) as db:
            db.row_factory = sqlite3.Row
            rows = db.execute(
                "SELECT id, idempotency_key, kind, state, attempt, error FROM jobs"
            ).fetchall()
        return {row["id"]: dict(row) for row in rows}

    def wait_until(self, predicate: Any, *, timeout_s: float, what: str) -> Any:
        deadline = time.monotonic() + timeout_s
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}:\n{self.logs()}")
            time.sleep(0.1)

    def logs(self, lines: int = 40) -> str:
        out = []
        for name in ("reconciler", "submitter", "gpu_service"):
            path = self.storage / f"{name}.log"
            if path.exists():
                tail = path.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {name} ---\n" + "\n".join(tail))
        return "\n".join(out)


def _dashed(value: str) -> str:
    value = value.replace("-", "")
    return f"{value[:8]}-{value[8:12]}-{value[12:16]}-{value[16:20]}-{value[20:]}"


TERMINAL_WEB = {"succeeded", "failed", "cancelled", "lost"}


def error_code(journal_row: dict[str, Any]) -> str:
    return (json.loads(journal_row["error"]) or {}).get("code", "") if journal_row["error"] else ""
