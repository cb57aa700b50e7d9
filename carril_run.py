"""`make run`: prepare a dev install and keep the three Carril processes up.

Migrates, ensures the demo user, then starts the GPU service, the web app (gunicorn)
and the reconciler in the foreground. A process that exits unexpectedly is restarted
with exponential backoff, as Compose's `restart: unless-stopped` would; Ctrl-C or
SIGTERM stops all three. Secrets that the environment does not give are generated
once into the storage folder, so every process (and every later run) agrees on them.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent
BACKOFF_START_S = 1.0
BACKOFF_MAX_S = 30.0
HEALTHY_AFTER_S = 60.0  # a process that stayed up this long starts its backoff afresh
STOP_GRACE_S = 15.0
DEMO_PASSWORD_FILE = "secrets/demo_password"  # noqa: S105 - a path under CARRIL_STORAGE (0600)


def log(message: str) -> None:
    print(f"[carril] {message}", flush=True)


def read_or_create_secret(path: Path, *, nbytes: int = 32) -> str:
    """Create the secret file exclusively (0600) unless it exists; return its value."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_urlsafe(nbytes))
    return path.read_text().strip()


def build_environment() -> tuple[dict[str, str], str | None]:
    """The processes' environment, and the demo password only if this call created it
    (so it is printed once, on the first start; later starts say where it is kept)."""
    env = dict(os.environ)
    storage = Path(env.get("CARRIL_STORAGE", "var")).resolve()
    storage.mkdir(parents=True, exist_ok=True)
    env["CARRIL_STORAGE"] = str(storage)
    env.setdefault("CARRIL_ENV", "dev")
    env.setdefault("CARRIL_GPU_PORT", "8001")
    env.setdefault("CARRIL_WEB_PORT", "8000")
    env.setdefault("CARRIL_GPU_SERVICE_URL", f"http://127.0.0.1:{env['CARRIL_GPU_PORT']}")
    env.setdefault("PYTHONUNBUFFERED", "1")
    generated = storage / "secrets"
    if not env.get("CARRIL_GPU_SERVICE_TOKEN"):
        env["CARRIL_GPU_SERVICE_TOKEN"] = read_or_create_secret(generated / "gpu_service_token")
    if not env.get("CARRIL_SECRET_KEY"):
        env["CARRIL_SECRET_KEY"] = read_or_create_secret(generated / "django_secret_key", nbytes=48)
    new_demo_password = None
    if not env.get("CARRIL_DEMO_PASSWORD"):
        existed = (generated / "demo_password").exists()
        env["CARRIL_DEMO_PASSWORD"] = read_or_create_secret(generated / "demo_password", nbytes=9)
        new_demo_password = None if existed else env["CARRIL_DEMO_PASSWORD"]
    # Django and gunicorn import the project from web/.
    paths = [str(ROOT / "web"), str(ROOT), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env, new_demo_password


def manage(*args: str, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, str(ROOT / "web" / "manage.py"), *args], env=env, check=True)


@dataclass
class Supervised:
    name: str
    argv: list[str]
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    backoff_s: float = BACKOFF_START_S
    restart_at: float | None = None
    restarts: int = field(default=0)

    def start(self, env: dict[str, str]) -> None:
        # Own process group, so a stop reaches the gunicorn workers and job workers too.
        self.process = subprocess.Popen(self.argv, env=env, cwd=ROOT, start_new_session=True)
        self.started_at = time.monotonic()
        self.restart_at = None
        log(f"{self.name} started (pid {self.process.pid})")

    def poll_exit(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def schedule_restart(self, code: int) -> None:
        if time.monotonic() - self.started_at >= HEALTHY_AFTER_S:
            self.backoff_s = BACKOFF_START_S
        self.restart_at = time.monotonic() + self.backoff_s
        log(f"{self.name} exited with {code}; restarting in {self.backoff_s:.0f}s")
        self.backoff_s = min(self.backoff_s * 2, BACKOFF_MAX_S)
        self.restarts += 1
        self.process = None

    def signal(self, signum: int) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signum)


def processes(env: dict[str, str]) -> list[Supervised]:
    web_bind = f"{env.get('CARRIL_WEB_HOST', '127.0.0.1')}:{env['CARRIL_WEB_PORT']}"
    gunicorn = [sys.executable, "-m", "gunicorn", "carril_web.wsgi:application"]
    return [
        Supervised("gpu-service", [sys.executable, "-m", "gpu_service"]),
        Supervised(
            "web",
            [
                *gunicorn,
                "--chdir",
                "web",
                "--bind",
                web_bind,
                "--workers",
                "2",
                "--threads",
                "4",
                "--timeout",
                "120",
                "--access-logfile",
                "-",
            ],
        ),
        Supervised("reconciler", [sys.executable, str(ROOT / "web" / "manage.py"), "reconcile"]),
    ]


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


def main() -> int:
    env, demo_password = build_environment()
    log(f"storage: {env['CARRIL_STORAGE']}")
    manage("migrate", "--noinput", env=env)
    manage("collectstatic", "--noinput", "--verbosity", "0", env=env)
    manage("ensure_demo_user", env=env)

    stopping = False

    def request_stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)

    children = processes(env)
    for child in children:
        child.start(env)
    host = env.get("CARRIL_WEB_HOST", "127.0.0.1")
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host  # noqa: S104 - display only
    log(f"Carril is up: http://{shown}:{env['CARRIL_WEB_PORT']}/")
    if demo_password:
        log(f"sign in as demo / {demo_password} (shown once; kept in {DEMO_PASSWORD_FILE})")
    elif not os.environ.get("CARRIL_DEMO_PASSWORD"):
        log(f"sign in as demo; its password is kept in $CARRIL_STORAGE/{DEMO_PASSWORD_FILE}")
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


if __name__ == "__main__":
    sys.exit(main())
