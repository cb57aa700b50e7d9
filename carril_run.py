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
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from carril_stack import commands
from carril_stack.commands import Command

BACKOFF_START_S = 1.0
BACKOFF_MAX_S = 30.0
HEALTHY_AFTER_S = 60.0  # a process that stayed up this long starts its backoff afresh
STOP_GRACE_S = 15.0


def log(message: str) -> None:
    print(f"[carril] {message}", flush=True)


def build_environment() -> tuple[dict[str, str], str]:
    """`make run`'s environment, from this process's, and the demo account's password."""
    env = commands.environment(os.environ)
    return env, env["CARRIL_DEMO_PASSWORD"]


def prepare(env: dict[str, str]) -> None:
    for command in commands.preparation():
        subprocess.run(command.argv, cwd=command.cwd, env=env, check=True)


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


def run(*, env: dict[str, str], extra: Sequence[Command] = ()) -> int:
    """Prepare, start `extra` (started first, in order) and Carril's three processes, keep
    them up until SIGINT/SIGTERM, then stop them all. `env` comes from
    `commands.environment()`, where a launcher adds its own settings."""
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
    log(f"sign in as demo / {env['CARRIL_DEMO_PASSWORD']}")
    log("Ctrl-C stops everything")

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
    env, _ = build_environment()
    return run(env=env)


if __name__ == "__main__":
    sys.exit(main())
