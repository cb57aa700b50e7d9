"""Run the real GPU service (`python -m gpu_service`) as a subprocess, for integration tests.

Stable helper shared by the GPU service, web, reliability and benchmark tests:

    service = GpuServiceProcess(storage=tmp_path, gpus="2x24GiB").start()
    job = service.submit(kind="diagnostic", spec={"seconds": 0.5, "step_s": 0.1})
    assert service.wait_for(job["id"])["state"] == "succeeded"
    service.kill(signal.SIGKILL); service.restart()
    service.stop()

`service.client` is an httpx.Client on the service's base URL with the token set;
`service.url`, `service.token`, `service.storage`, `service.pid` and `service.env` are
what other services need to talk to it. Output goes to `storage/gpu_service.log`.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from carril_stack import commands
from tests.support.waiting import wait_until

ROOT = commands.ROOT
COMMAND = commands.gpu_service()  # `make run`'s own command line
TERMINAL = {"succeeded", "failed", "cancelled"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class GpuServiceProcess:
    def __init__(
        self,
        *,
        storage: Path,
        token: str = "test-token-0123456789",  # noqa: S107 - a test fixture
        gpus: str = "2x24GiB",
        env: dict[str, str] | None = None,
        port: int | None = None,
        startup_timeout_s: float = 60.0,
    ) -> None:
        self.storage = Path(storage).resolve()
        self.token = token
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.startup_timeout_s = startup_timeout_s
        self.env = {
            "CARRIL_STORAGE": str(self.storage),
            "CARRIL_GPU_SERVICE_TOKEN": token,
            "CARRIL_GPU_RUNTIME": "simulated",
            "CARRIL_SIMULATED_GPUS": gpus,
            "CARRIL_GPU_HOST": "127.0.0.1",
            "CARRIL_GPU_PORT": str(self.port),
            "CARRIL_CANCEL_GRACE_S": "2",
            "CARRIL_LOG_LEVEL": "INFO",
            "YOLO_OFFLINE": "1",
            **(env or {}),
        }
        self.process: subprocess.Popen[bytes] | None = None
        self.client = httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=30.0
        )

    # ---- lifecycle ------------------------------------------------------------------

    @property
    def pid(self) -> int:
        assert self.process is not None, "not started"
        return self.process.pid

    @property
    def log_path(self) -> Path:
        return self.storage / "gpu_service.log"

    def start(self) -> GpuServiceProcess:
        self.storage.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.env, "PYTHONPATH": str(ROOT)}
        # Owner-only like everything in storage (ADR 0057), whatever the test's umask.
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
        with os.fdopen(os.open(self.log_path, flags, 0o600), "ab") as log:
            self.process = subprocess.Popen(
                COMMAND.argv,
                cwd=COMMAND.cwd,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self._wait_healthy()
        return self

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"GPU service exited at start-up:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"GPU service not healthy in time:\n{self.log_tail()}")

    def kill(self, sig: int = signal.SIGKILL) -> int:
        """Send a signal to the service process and wait for it to exit; its exit code."""
        assert self.process is not None
        self.process.send_signal(sig)
        return self.process.wait(timeout=60)

    def restart(self) -> GpuServiceProcess:
        if self.process is not None and self.process.poll() is None:
            self.kill(signal.SIGTERM)
        return self.start()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.client.close()

    def log_tail(self, lines: int = 60) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    # ---- conveniences ---------------------------------------------------------------

    def submit(self, **body: Any) -> dict[str, Any]:
        response = self.client.post("/v1/jobs", json=body)
        assert response.status_code in (200, 202), response.text
        return response.json()

    def job(self, job_id: str) -> dict[str, Any]:
        response = self.client.get(f"/v1/jobs/{job_id}")
        assert response.status_code == 200, response.text
        return response.json()

    def wait_for(
        self, job_id: str, *, states: set[str] | None = None, timeout_s: float = 60.0
    ) -> dict[str, Any]:
        """Poll until the job reaches one of `states` (default: any terminal state)."""
        wanted = states or TERMINAL
        deadline = time.monotonic() + timeout_s
        while True:
            job = self.job(job_id)
            if job["state"] in wanted:
                return job
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job_id} stuck in {job['state']}:\n{self.log_tail()}")
            time.sleep(0.05)

    def wait_until(self, predicate: Any, *, timeout_s: float = 60.0, what: str = "") -> Any:
        return wait_until(predicate, timeout_s=timeout_s, what=what, logs=self.log_tail)
