"""The whole platform for a browser test: the GPU service on the simulated runtime, the web
app under gunicorn against a fresh SQLite database, and the reconciler, each a real process
sharing one CARRIL_STORAGE."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.support.gpu_service import GpuServiceProcess, free_port

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "web"

USERS_SCRIPT = """
from django.contrib.auth.models import Group, User
from accounts.models import ADMINISTRATORS_GROUP
alice = User.objects.create_user("alice", password="{password}")
ada = User.objects.create_user("ada", password="{password}")
ada.groups.add(Group.objects.get_or_create(name=ADMINISTRATORS_GROUP)[0])
"""


@dataclass
class Stack:
    storage: Path
    password: str
    gpu: GpuServiceProcess | None = None
    web_url: str = ""
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def _env(self) -> dict[str, str]:
        assert self.gpu is not None
        return {
            **os.environ,
            "CARRIL_STORAGE": str(self.storage),
            "CARRIL_ENV": "dev",
            "DATABASE_URL": f"sqlite:///{self.storage / 'web.sqlite3'}",
            "CARRIL_GPU_SERVICE_URL": self.gpu.url,
            "CARRIL_GPU_SERVICE_TOKEN": self.gpu.token,
            "CARRIL_RECONCILE_INTERVAL_S": "0.5",
            "CARRIL_LOG_LEVEL": "INFO",
            "YOLO_OFFLINE": "1",
            "PYTHONPATH": f"{ROOT}{os.pathsep}{WEB}",
        }

    def _manage(self, *args: str) -> None:
        subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=WEB,
            env=self._env(),
            check=True,
            capture_output=True,
            timeout=120,
        )

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = (self.storage / f"{name}.log").open("ab")
        process = subprocess.Popen(
            argv, cwd=WEB, env=self._env(), stdout=log, stderr=subprocess.STDOUT
        )
        self.processes.append(process)
        return process

    def start(self) -> Stack:
        self.storage.mkdir(parents=True, exist_ok=True)
        self.gpu = GpuServiceProcess(storage=self.storage, gpus="2x24GiB").start()
        self._manage("migrate", "--noinput")
        self._manage("shell", "-c", USERS_SCRIPT.format(password=self.password))
        port = free_port()
        self.web_url = f"http://127.0.0.1:{port}"
        self._spawn(
            "web",
            [
                sys.executable, "-m", "gunicorn", "carril_web.wsgi:application",
                "--bind", f"127.0.0.1:{port}", "--workers", "1", "--threads", "8",
                "--timeout", "120",
            ],
        )  # fmt: skip
        self._spawn("reconciler", [sys.executable, "manage.py", "reconcile", "--interval", "0.5"])
        self._wait_for_web()
        return self

    def _wait_for_web(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for process in self.processes:
                if process.poll() is not None:
                    raise RuntimeError(f"a web process exited at start-up:\n{self.logs()}")
            try:
                if httpx.get(f"{self.web_url}/login/", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"the web app did not answer in time:\n{self.logs()}")

    def logs(self, lines: int = 40) -> str:
        out = []
        for name in ("web", "reconciler", "gpu_service"):
            path = self.storage / f"{name}.log"
            if path.exists():
                tail = path.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {name} ---\n" + "\n".join(tail))
        return "\n".join(out)

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
        if self.gpu is not None:
            self.gpu.stop()
