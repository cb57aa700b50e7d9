"""`make run`'s launcher: secrets made once, three processes kept up, all stopped together.
(The command lines: tests/carril_stack/test_stack_commands.py.)"""

from __future__ import annotations

import http.server
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

import carril_run
from tests.support.gpu_service import free_port

ROOT = Path(__file__).resolve().parents[1]


def test_the_environment_keeps_given_secrets_and_generates_the_missing_ones(tmp_path, monkeypatch):
    monkeypatch.setenv("CARRIL_STORAGE", str(tmp_path))
    monkeypatch.setenv("CARRIL_GPU_SERVICE_TOKEN", "given-token")
    monkeypatch.delenv("CARRIL_SECRET_KEY", raising=False)
    monkeypatch.delenv("CARRIL_DEMO_PASSWORD", raising=False)
    env, demo_password = carril_run.build_environment()
    assert env["CARRIL_GPU_SERVICE_TOKEN"] == "given-token"
    assert not (tmp_path / "secrets" / "gpu_service_token").exists()
    assert env["CARRIL_SECRET_KEY"] == (tmp_path / "secrets" / "django_secret_key").read_text()
    assert demo_password == (tmp_path / "secrets" / "demo_password").read_text()
    assert env["CARRIL_GPU_SERVICE_URL"] == "http://127.0.0.1:8001"


def test_the_demo_password_is_returned_only_by_the_start_that_created_it(tmp_path, monkeypatch):
    monkeypatch.setenv("CARRIL_STORAGE", str(tmp_path))
    monkeypatch.delenv("CARRIL_DEMO_PASSWORD", raising=False)
    _, first = carril_run.build_environment()
    env, second = carril_run.build_environment()
    kept = tmp_path / carril_run.DEMO_PASSWORD_FILE
    assert first == kept.read_text() == env["CARRIL_DEMO_PASSWORD"]
    assert second is None  # a later start prints where it is kept, not the password
    assert kept.stat().st_mode & 0o777 == 0o600


class HealthAnswers(http.server.BaseHTTPRequestHandler):
    """A stand-in GPU service's /healthz, answering what the server was given."""

    def do_GET(self) -> None:
        body = json.dumps(self.server.health).encode()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize(
    ("health", "said"),
    [
        (
            {"status": "ok", "runtime": "simulated", "simulated": True, "gpus": 2},
            r"^\[carril\] SIMULATED GPU RUNTIME: 2 pretend GPUs; .* compute on the CPU",
        ),
        (
            {"status": "ok", "runtime": "real", "simulated": False, "gpus": 4},
            r"^\[carril\] GPU runtime: real \(4 GPUs\)$",
        ),
    ],
)
def test_the_output_says_which_gpu_runtime_the_gpu_service_chose(health, said, capsys):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HealthAnswers)
    server.health = health  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        carril_run.runtime_announce(url=f"http://127.0.0.1:{server.server_port}", wait_s=10)
    finally:
        server.shutdown()
        server.server_close()
    assert re.search(said, capsys.readouterr().out.strip())


def test_nothing_is_said_about_the_runtime_when_the_gpu_service_never_answers(capsys):
    carril_run.runtime_announce(url=f"http://127.0.0.1:{free_port()}", wait_s=1)
    assert capsys.readouterr().out == ""


class Output:
    """Collects a process's output lines from a thread, so reading never blocks the test."""

    def __init__(self, stream):
        self.lines: list[str] = []
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream) -> None:
        for line in stream:
            self.lines.append(line.rstrip())

    def wait_for(self, pattern: str, *, timeout: float, after: int = 0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.lines[after:]:
                if match := re.search(pattern, line):
                    return match
            time.sleep(0.2)
        raise AssertionError(f"no line matching {pattern!r}:\n" + "\n".join(self.lines[-60:]))


def launch(module: str, *, env: dict[str, str]) -> tuple[subprocess.Popen[str], Output]:
    """`python -m module` from the repository root, its output collected by an Output."""
    launcher = subprocess.Popen(
        [sys.executable, "-m", module],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return launcher, Output(launcher.stdout)


def wait_until_answers(url: str, *, timeout: float) -> httpx.Response:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return httpx.get(url, timeout=2)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
def test_it_serves_both_services_restarts_a_dead_one_and_stops_all_on_sigterm(tmp_path):
    web_port, gpu_port = free_port(), free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CARRIL_")},
        "CARRIL_STORAGE": str(tmp_path / "storage"),
        "CARRIL_WEB_PORT": str(web_port),
        "CARRIL_GPU_PORT": str(gpu_port),
        "CARRIL_GPU_RUNTIME": "simulated",
    }
    env.pop("DATABASE_URL", None)  # make run's default: SQLite under storage
    launcher, output = launch("carril_run", env=env)
    try:
        output.wait_for(r"Carril is up: http://127\.0\.0\.1:\d+/", timeout=120)
        login = output.wait_for(r"sign in as demo / (\S+)", timeout=5).group(1)
        assert login == (tmp_path / "storage" / "secrets" / "demo_password").read_text()

        output.wait_for(r"SIMULATED GPU RUNTIME: 2 pretend GPUs", timeout=120)
        health = wait_until_answers(f"http://127.0.0.1:{gpu_port}/healthz", timeout=60)
        assert health.status_code == 200
        assert health.json()["runtime"] == "simulated"
        home = wait_until_answers(f"http://127.0.0.1:{web_port}/", timeout=60)
        assert home.status_code in (200, 302)

        gpu_pid = int(output.wait_for(r"gpu-service started \(pid (\d+)\)", timeout=5).group(1))
        mark = len(output.lines)
        os.kill(gpu_pid, signal.SIGKILL)
        output.wait_for(r"gpu-service exited with -9; restarting", timeout=20, after=mark)
        restarted = int(
            output.wait_for(r"gpu-service started \(pid (\d+)\)", timeout=30, after=mark).group(1)
        )
        assert restarted != gpu_pid
        assert wait_until_answers(f"http://127.0.0.1:{gpu_port}/healthz", timeout=60).is_success

        children = [
            int(m)
            for line in output.lines
            for m in re.findall(r"(?:web|reconciler|gpu-service) started \(pid (\d+)\)", line)
        ]
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(timeout=60) == 0
        time.sleep(0.5)
        assert not [pid for pid in children if pid_alive(pid)]
    finally:
        if launcher.poll() is None:
            launcher.kill()
