"""The services under test, started as real processes and shared between benchmarks.

The GPU service runs on the simulated runtime (tests.support's helper starts it); the
web app runs under gunicorn as the web image runs it (one process, threads) with its
reconciler, against SQLite on the same storage. Each is started the first time a
benchmark asks for it and stopped when the suite ends.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.options import ROOT, Options
from tests.support.gpu_service import GpuServiceProcess, free_port

WEB = ROOT / "web"
BENCH_USER = "bench"
ADMIN_SCRIPT = """
from django.contrib.auth.models import User
User.objects.create_superuser({user!r}, password={password!r})
"""


class WebApp:
    """gunicorn serving the real web app (plus the bench-only bare view) and the reconciler."""

    def __init__(
        self, *, storage: Path, gpu: GpuServiceProcess, reconcile_interval_s: float
    ) -> None:
        self.storage = storage
        self.gpu = gpu
        self.reconcile_interval_s = reconcile_interval_s
        self.password = secrets.token_urlsafe(16)
        self.url = ""
        self.gunicorn: subprocess.Popen[bytes] | None = None
        self.processes: list[subprocess.Popen[bytes]] = []
        self.client: httpx.Client | None = None

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "CARRIL_STORAGE": str(self.storage),
            "CARRIL_ENV": "dev",
            "DATABASE_URL": f"sqlite:///{self.storage / 'web.sqlite3'}",
            "CARRIL_GPU_SERVICE_URL": self.gpu.url,
            "CARRIL_GPU_SERVICE_TOKEN": self.gpu.token,
            "CARRIL_RECONCILE_INTERVAL_S": str(self.reconcile_interval_s),
            "CARRIL_LOG_LEVEL": "WARNING",
            "DJANGO_SETTINGS_MODULE": "bench.web_settings",
            "YOLO_OFFLINE": "1",
            "PYTHONPATH": f"{ROOT}{os.pathsep}{WEB}",
        }

    def _manage(self, *args: str) -> None:
        subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=WEB,
            env=self.env(),
            check=True,
            capture_output=True,
            timeout=300,
        )

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        with (self.storage / f"{name}.log").open("ab") as log:
            process = subprocess.Popen(
                argv, cwd=WEB, env=self.env(), stdout=log, stderr=subprocess.STDOUT
            )
        self.processes.append(process)
        return process

    def start(self) -> WebApp:
        self._manage("migrate", "--noinput")
        self._manage("shell", "-c", ADMIN_SCRIPT.format(user=BENCH_USER, password=self.password))
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        # The web image's own gunicorn line (deploy/docker/web-entrypoint.sh).
        self.gunicorn = self._spawn(
            "web",
            [
                sys.executable, "-m", "gunicorn", "carril_web.wsgi:application",
                "--bind", f"127.0.0.1:{port}", "--workers", "1", "--threads", "8",
                "--timeout", "120", "--graceful-timeout", "25", "--no-control-socket",
            ],
        )  # fmt: skip
        self._spawn(
            "reconciler",
            [
                sys.executable,
                "manage.py",
                "reconcile",
                "--interval",
                str(self.reconcile_interval_s),
            ],
        )
        self._wait_ready()
        token = httpx.post(
            f"{self.url}/api/v1/auth/token/",
            json={"username": BENCH_USER, "password": self.password, "name": "bench"},
            timeout=30,
        )
        token.raise_for_status()
        self.client = httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Token {token.json()['token']}"},
            timeout=600,
        )
        return self

    @property
    def token_header(self) -> str:
        assert self.client is not None
        return self.client.headers["Authorization"]

    def _wait_ready(self, timeout_s: float = 120.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for process in self.processes:
                if process.poll() is not None:
                    raise RuntimeError(f"a web process exited at start-up:\n{self.logs()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"the web app did not answer in time:\n{self.logs()}")

    def web_pids(self) -> list[int]:
        """gunicorn's master and its worker: the processes that receive uploads."""
        import psutil

        assert self.gunicorn is not None
        master = psutil.Process(self.gunicorn.pid)
        return [master.pid, *(child.pid for child in master.children(recursive=True))]

    def logs(self, lines: int = 40) -> str:
        out = []
        for name in ("web", "reconciler"):
            path = self.storage / f"{name}.log"
            if path.exists():
                tail = path.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {name} ---\n" + "\n".join(tail))
        return "\n".join(out)

    def wait_for_job(self, job_id: str, *, timeout_s: float = 600, poll_s: float = 0.02) -> dict:
        assert self.client is not None
        deadline = time.monotonic() + timeout_s
        while True:
            job = self.client.get(f"/api/v1/jobs/{job_id}/").json()
            if job["state"] in {"succeeded", "failed", "cancelled", "lost"}:
                return job
            if time.monotonic() > deadline:
                raise RuntimeError(f"web job {job_id} stuck in {job['state']}:\n{self.logs()}")
            time.sleep(poll_s)

    def stop(self) -> None:
        if self.client is not None:
            self.client.close()
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


class Platform:
    """Lazily started services on one storage folder, stopped together at the end."""

    def __init__(self, *, options: Options) -> None:
        self.options = options
        self._own_workdir = options.workdir is None
        root = options.workdir or Path(tempfile.mkdtemp(prefix="carril-bench-"))
        self.root = root.resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self.storage = self.root / "storage"
        self._gpu: GpuServiceProcess | None = None
        self._web: WebApp | None = None
        self._extra: list[GpuServiceProcess] = []
        self.runtime = "simulated"

    def gpu(self) -> GpuServiceProcess:
        if self._gpu is None:
            self._gpu = GpuServiceProcess(
                storage=self.storage, gpus="2x24GiB", env={"CARRIL_LOG_LEVEL": "WARNING"}
            ).start()
            self.runtime = self._gpu.client.get("/healthz").json()["runtime"]
        return self._gpu

    def web(self) -> WebApp:
        if self._web is None:
            self._web = WebApp(
                storage=self.storage,
                gpu=self.gpu(),
                reconcile_interval_s=self.options.reconcile_interval_s,
            ).start()
        return self._web

    def gpu_service_apart(self, *, name: str, gpus: str, env: dict[str, str]) -> GpuServiceProcess:
        """A GPU service of its own (own storage and settings); stopped with the platform."""
        service = GpuServiceProcess(
            storage=self.root / name, gpus=gpus, env={"CARRIL_LOG_LEVEL": "WARNING", **env}
        ).start()
        self._extra.append(service)
        return service

    def folder(self, name: str) -> Path:
        path = self.root / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def close(self) -> None:
        if self._web is not None:
            self._web.stop()
        for service in [*self._extra, *([self._gpu] if self._gpu else [])]:
            service.stop()
        if self._own_workdir:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Platform:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
