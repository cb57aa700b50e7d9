"""The command lines and the environment of Carril's processes, defined once.

`make run` (carril_run.py) starts these; so do the tests' stack harness
(tests/support/stack.py) and the benchmarks, so what the tests run is what a person
runs. A launcher that adds processes of its own (a cluster's nodes, say) builds them as
`Command`s too and hands extra environment to `environment()`.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WEB = ROOT / "web"


@dataclass(frozen=True)
class Command:
    """One process to start: its name in logs, its argv, and the folder it runs in."""

    name: str
    argv: tuple[str, ...]
    cwd: Path = ROOT


def read_or_create_secret(path: Path, *, nbytes: int = 32) -> str:
    """Create the secret file exclusively (0600, its folder 0700) unless it exists;
    return its value."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.parent.chmod(0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_urlsafe(nbytes))
    return path.read_text().strip()


def environment(base: Mapping[str, str]) -> dict[str, str]:
    """The environment every process of one stack shares, from `base` (os.environ for
    `make run`). What `base` does not give gets a development default; secrets it does
    not give are generated once into the storage folder, so every process (and every
    later run) agrees on them."""
    env = dict(base)
    storage = Path(env.get("CARRIL_STORAGE", "var")).resolve()
    # Owner-only, as each process keeps it (ADR 0057).
    storage.mkdir(mode=0o700, parents=True, exist_ok=True)
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
    if not env.get("CARRIL_DEMO_PASSWORD"):
        env["CARRIL_DEMO_PASSWORD"] = read_or_create_secret(generated / "demo_password", nbytes=9)
    # Django and gunicorn import the project from web/; the GPU service from the root.
    paths = [str(WEB), str(ROOT), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env


def web_bind(env: Mapping[str, str]) -> str:
    return f"{env.get('CARRIL_WEB_HOST', '127.0.0.1')}:{env['CARRIL_WEB_PORT']}"


def gpu_service() -> Command:
    return Command("gpu-service", (sys.executable, "-m", "gpu_service"))


def manage(*args: str) -> Command:
    return Command(f"manage-{args[0]}", (sys.executable, str(WEB / "manage.py"), *args))


def web(*, bind: str, workers: int = 2, threads: int = 4, access_log: bool = True) -> Command:
    """The web app under gunicorn. `make run` takes the defaults; the web image runs one
    worker with threads (its metrics live in one process), and so do the tests."""
    argv = [
        sys.executable, "-m", "gunicorn", "carril_web.wsgi:application",
        "--chdir", str(WEB), "--bind", bind,
        "--workers", str(workers), "--threads", str(threads),
        "--timeout", "120", "--graceful-timeout", "25", "--no-control-socket",
    ]  # fmt: skip
    if access_log:
        argv += ["--access-logfile", "-"]
    return Command("web", tuple(argv))


def reconciler(*, interval_s: float | None = None, once: bool = False) -> Command:
    """The reconciler loop; its pace is CARRIL_RECONCILE_INTERVAL_S unless given here."""
    argv = [*manage("reconcile").argv]
    if interval_s is not None:
        argv += ["--interval", f"{interval_s:g}"]
    if once:
        argv.append("--once")
    return Command("reconciler", tuple(argv))


def preparation() -> list[Command]:
    """What `make run` does before it starts anything: schema, static files, demo user
    (an administrator: a development install's one user must be able to promote)."""
    return [
        manage("migrate", "--noinput"),
        manage("collectstatic", "--noinput", "--verbosity", "0"),
        manage("ensure_demo_user", "--administrator"),
    ]


def services(env: Mapping[str, str]) -> list[Command]:
    """The three long-running processes of `make run`, in start order."""
    return [gpu_service(), web(bind=web_bind(env)), reconciler()]
