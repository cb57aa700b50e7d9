"""`make run`: prepare a dev install and keep the three Carril processes up.

Migrates, collects static files, ensures the demo user, then starts the GPU service, the
web app (gunicorn) and the reconciler in the foreground. A process that exits
unexpectedly is restarted with exponential backoff, as Compose's
`restart: unless-stopped` would; Ctrl-C or SIGTERM stops them all. The command lines and
the environment (secrets generated once into the storage folder) come from
carril_stack/commands.py, which the tests' harness uses too; `run()` takes extra
processes and environment for a launcher that adds its own (a cluster, say).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from carril_stack import commands
from carril_stack.commands import Command

BACKOFF_START_S = 1.0
BACKOFF_MAX_S = 30.0
HEALTHY_AFTER_S = 60.0  # a process that stayed up this long starts its backoff afresh
STOP_GRACE_S = 15.0
DEMO_PASSWORD_FILE = "secrets/demo_password"  # noqa: S105 - a path under CARRIL_STORAGE (0600)
RUNTIME_WAIT_S = 120.0  # how long to wait for the GPU service's /healthz to say its runtime


def log(message: str) -> None:
    print(f"[carril] {message}", flush=True)


def build_environment() -> tuple[dict[str, str], str | None]:
    """`make run`'s environment, from this process's, and the demo account's password
    only if this call created it (so it is printed once, on the first start; later
    starts say where it is kept)."""
    storage = Path(os.environ.get("CARRIL_STORAGE", "var")).resolve()
    existed = (storage / DEMO_PASSWORD_FILE).exists()
    env = commands.environment(os.environ)
    if os.environ.get("CARRIL_DEMO_PASSWORD") or existed:
        return env, None
    return env, env["CARRIL_DEMO_PASSWORD"]


def prepare(env: dict[str, str]) -> None:
    for command in commands.preparation():
        subprocess.run(command.argv, cwd=command.cwd, env=env, check=True)


def runtime_line(health: dict[str, object]) -> str:
    """What `make run` says about the GPU service's runtime: loudly when it is simulated,
    as the dashboard's banner and /healthz do (ADR 0007)."""
    gpus = health.get("gpus")
    if health.get("simulated") or health.get("runtime") == "simulated":
        return (
            f"SIMULATED GPU RUNTIME: {gpus} pretend GPUs; jobs are admitted as on real GPUs "
            "but compute on the CPU. Set CARRIL_GPU_RUNTIME=real on a machine with NVIDIA GPUs."
        )
    return f"GPU runtime: {health.get('runtime')} ({gpus} GPUs)"


def runtime_announce(*, url: str, wait_s: float = RUNTIME_WAIT_S) -> None:
    """Ask the GPU service's /healthz which runtime it chose (it decides: NVML or not) and
    say so; quietly give up if it does not answer in time (its own log says why)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:  # noqa: S310 - our own URL
                health = json.load(response)
        except (OSError, ValueError):
            time.sleep(0.5)
            continue
        log(runtime_line(health))
        return


@dataclass
class Supervised:
    command: Command
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    backoff_s: float = BACKOFF_START_S
    restart_at: float | None = None
    restarts: int = field(default=0)

    def start(self, env: dict[str, str]) -> None:
        # Own process group, so a stop reaches the gunicorn workers and job workers too.
        self.process = subprocess.Popen(
            self.command.argv, env=env, cwd=self.command.cwd, start_new_session=True
        )
        self.started_at = time.monotonic()
        self.restart_at = None
        log(f"{self.command.name} started (pid {self.process.pid})")

    def poll_exit(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def schedule_restart(self, code: int) -> None:
        if time.monotonic() - self.started_at >= HEALTHY_AFTER_S:
            self.backoff_s = BACKOFF_START_S
        self.restart_at = time.monotonic() + self.backoff_s
        log(f"{self.command.name} exited with {code}; restarting in {self.backoff_s:.0f}s")
        self.backoff_s = min(self.backoff_s * 2, BACKOFF_MAX_S)
        self.restarts += 1
        self.process = None

    def signal(self, signum: int) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signum)


def stop_all(children: list[Supervised]) -> None:
    for child in children:
        child.signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    for child in children:
        while child.process is not None and child.process.poll() is None:
            if time.monotonic() > deadline:
                child.signal(signal.SIGKILL)
                child.process.wait()
                break
            time.sleep(0.1)
    log("stopped")


def run(
    *, env: dict[str, str], demo_password: str | None = None, extra: Sequence[Command] = ()
) -> int:
    """Prepare, start `extra` (started first, in order) and Carril's three processes, keep
    them up until SIGINT/SIGTERM, then stop them all. `env` comes from
    `commands.environment()`, where a launcher adds its own settings; `demo_password`,
    if given, is shown with the address."""
    log(f"storage: {env['CARRIL_STORAGE']}")
    prepare(env)

    stopping = False

    def request_stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)

    children = [Supervised(command) for command in [*extra, *commands.services(env)]]
    for child in children:
        child.start(env)
    host = env.get("CARRIL_WEB_HOST", "127.0.0.1")
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host  # noqa: S104 - display only
    log(f"Carril is up: http://{shown}:{env['CARRIL_WEB_PORT']}/")
    if demo_password:
        log(
            f"sign in as demo / {demo_password} "
            f"(an administrator; shown once; kept in {DEMO_PASSWORD_FILE})"
        )
    elif not os.environ.get("CARRIL_DEMO_PASSWORD"):
        log(f"sign in as demo; its password is kept in $CARRIL_STORAGE/{DEMO_PASSWORD_FILE}")
    log("Ctrl-C stops everything")
    threading.Thread(
        target=runtime_announce, kwargs={"url": env["CARRIL_GPU_SERVICE_URL"]}, daemon=True
    ).start()

    while not stopping:
        now = time.monotonic()
        for child in children:
            code = child.poll_exit()
            if code is not None:
                child.schedule_restart(code)
            if child.process is None and child.restart_at is not None and now >= child.restart_at:
                child.start(env)
        time.sleep(0.2)
    stop_all(children)
    return 0


def main() -> int:
    env, demo_password = build_environment()
    return run(env=env, demo_password=demo_password)


if __name__ == "__main__":
    sys.exit(main())
