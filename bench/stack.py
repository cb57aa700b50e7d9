"""The services under test, started as real processes and shared between benchmarks.

The tests' stack harness (tests/support/stack.py) starts them with `make run`'s command
lines: the GPU service on the simulated runtime, and the web app under gunicorn as the
web image runs it (one process, threads) with its reconciler, against the database the
harness picks (SQLite on the same storage, or a PostgreSQL database of its own when
DATABASE_URL is set). Each is started the first time a benchmark asks for it and
stopped when the suite ends.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.options import Options
from tests.support.gpu_service import GpuServiceProcess
from tests.support.stack import TERMINAL_WEB, Stack

BENCH_USER = "bench"
# The GPU service logs as production does by default: the benchmarks read the start of
# a job's work from the worker's INFO lines in its job log.
LOG_LEVEL = "INFO"


class WebApp:
    """The web app with its reconciler, and an API client signed in as the bench user."""

    def __init__(
        self, *, storage: Path, gpu: GpuServiceProcess, reconcile_interval_s: float
    ) -> None:
        self.stack = Stack(
            storage=storage,
            gpu=gpu,
            password=secrets.token_urlsafe(16),
            reconcile_interval_s=reconcile_interval_s,
            # The bare view the polling benchmark compares with, in the same process.
            settings_module="bench.web_settings",
            log_level="WARNING",
            access_log=False,
        )
        self.stack.start(users={BENCH_USER: "superuser"})
        self.url = self.stack.web_url
        self.database_engine = self.stack.database.engine  # sqlite or postgresql
        self.client = self.stack.api(BENCH_USER, timeout_s=600)

    @property
    def token_header(self) -> str:
        return self.client.headers["Authorization"]

    def web_pids(self) -> list[int]:
        """gunicorn's master and its worker: the processes that receive uploads."""
        return self.stack.web_pids()

    def logs(self, lines: int = 40) -> str:
        return self.stack.logs(lines)

    def wait_for_job(self, job_id: str, *, timeout_s: float = 600, poll_s: float = 0.02) -> dict:
        deadline = time.monotonic() + timeout_s
        while True:
            job = self.client.get(f"/api/v1/jobs/{job_id}/").json()
            if job["state"] in TERMINAL_WEB:
                return job
            if time.monotonic() > deadline:
                raise RuntimeError(f"web job {job_id} stuck in {job['state']}:\n{self.logs()}")
            time.sleep(poll_s)

    def stop(self) -> None:
        self.client.close()
        self.stack.stop()


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
        self._web_pg: WebApp | None = None
        self._extra: list[GpuServiceProcess] = []
        self.runtime = "simulated"

    def gpu(self) -> GpuServiceProcess:
        if self._gpu is None:
            self._gpu = GpuServiceProcess(
                storage=self.storage, gpus="2x24GiB", env={"CARRIL_LOG_LEVEL": LOG_LEVEL}
            ).start()
            self.runtime = self._gpu.client.get("/healthz").json()["runtime"]
        return self._gpu

    def web(self) -> WebApp:
        if self._web is None:
            self._web = WebApp(
                storage=self.storage,
                gpu=self.gpu(),
                reconcile_interval_s=self.options.reconcile_interval_s,
            )
        return self._web

    def web_postgres(self) -> WebApp | None:
        """A second web app on a PostgreSQL database of its own (--postgres-url), beside
        the SQLite one, on the same GPU service and storage; None without a server."""
        url = self.options.postgres_url
        if not url:
            return None
        if self._web_pg is None:
            saved = os.environ.get("DATABASE_URL")
            os.environ["DATABASE_URL"] = url  # the harness picks the database from it
            try:
                self._web_pg = WebApp(
                    storage=self.storage,
                    gpu=self.gpu(),
                    reconcile_interval_s=self.options.reconcile_interval_s,
                )
            finally:
                if saved is None:
                    os.environ.pop("DATABASE_URL", None)
                else:
                    os.environ["DATABASE_URL"] = saved
        return self._web_pg

    def gpu_service_apart(self, *, name: str, gpus: str, env: dict[str, str]) -> GpuServiceProcess:
        """A GPU service of its own (own storage and settings); stopped with the platform."""
        service = GpuServiceProcess(
            storage=self.root / name, gpus=gpus, env={"CARRIL_LOG_LEVEL": LOG_LEVEL, **env}
        ).start()
        self._extra.append(service)
        return service

    def folder(self, name: str) -> Path:
        path = self.root / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def close(self) -> None:
        for web in (self._web, self._web_pg):
            if web is not None:
                web.stop()
        for service in [*self._extra, *([self._gpu] if self._gpu else [])]:
            service.stop()
        if self._own_workdir:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Platform:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
