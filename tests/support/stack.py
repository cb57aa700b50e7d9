"""The whole platform as real processes, for the tests and benchmarks that need more
than one: the GPU service on the simulated runtime, the web app under gunicorn, the
reconciler (one or several), the web's migrations and users. Every process is started
from the command line `make run` uses (carril_stack/commands.py), and all share one
CARRIL_STORAGE. The web database is a PostgreSQL database of the stack's own when
DATABASE_URL is set, else SQLite (tests/support/database.py).

    stack = Stack(storage=tmp_path / "storage").start()  # GPU service, users, web, reconciler
    stack.web_url; stack.password             # alice (a user) and ada (an administrator)
    stack.gpu                                 # tests.support.gpu_service.GpuServiceProcess
    stack.api("alice").get("/api/v1/jobs/")   # an httpx client signed in with a token
    stack.stop()                              # stops everything, drops the database

A fault test starts the parts itself: `prepare()` (database and migrations),
`gpu.start()`, `web_start()`, `reconciler_start(index)` and `reconciler_kill(...)`,
`reconcile_once()`, `script(code)` (Django code in a process of its own), `spawn(name,
argv)`; and reads both sides with `web_jobs()` and `journal_jobs()`. Each process writes
its output to `storage/<name>.log`; `logs()` tails them all.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx

from carril_stack import commands
from carril_stack.commands import Command
from tests.support.database import WebDatabase
from tests.support.gpu_service import GpuServiceProcess, free_port
from tests.support.waiting import wait_until

PASSWORD = "stack-password-Quokka-93"
TERMINAL_WEB = {"succeeded", "failed", "cancelled", "lost"}
# Run inside `python -c`: Django set up from the same settings the web app uses.
PRELUDE = "import django, json, sys; django.setup()\n"
USERS_SCRIPT = """
from django.contrib.auth.models import Group, User
from accounts.models import ADMINISTRATORS_GROUP
for name, role in json.loads({users!r}).items():
    if role == "superuser":
        User.objects.create_superuser(name, password={password!r})
        continue
    user = User.objects.create_user(name, password={password!r})
    if role == "administrator":
        user.groups.add(Group.objects.get_or_create(name=ADMINISTRATORS_GROUP)[0])
"""


class Stack:
    def __init__(
        self,
        *,
        storage: Path,
        password: str = PASSWORD,
        gpus: str = "2x24GiB",
        gpu: GpuServiceProcess | None = None,
        reconcile_interval_s: float = 0.5,
        settings_module: str = "carril_web.settings",
        env: Mapping[str, str] | None = None,
        log_level: str = "INFO",
        web_workers: int = 1,
        web_threads: int = 8,
        access_log: bool = True,
    ) -> None:
        self.storage = Path(storage).resolve()
        self.password = password
        self.gpu = gpu or GpuServiceProcess(
            storage=self.storage, gpus=gpus, env={"CARRIL_LOG_LEVEL": log_level}
        )
        self.database = WebDatabase(storage=self.storage)
        self.reconcile_interval_s = reconcile_interval_s
        self.settings_module = settings_module
        self.extra_env = dict(env or {})
        self.log_level = log_level
        self.web_workers, self.web_threads, self.access_log = web_workers, web_threads, access_log
        self.web_url = ""
        self.webs: list[subprocess.Popen[bytes]] = []
        self.reconcilers: dict[int, subprocess.Popen[bytes]] = {}
        self.processes: list[subprocess.Popen[bytes]] = []
        self._env: dict[str, str] | None = None

    # --- the environment every web-side process shares ------------------------------------
    def env(self) -> dict[str, str]:
        if self._env is None:
            # Only what the stack says: no CARRIL_* or DATABASE_URL of the test run leaks in.
            clean = {
                k: v
                for k, v in os.environ.items()
                if not k.startswith("CARRIL_") and k != "DATABASE_URL"
            }
            self.storage.mkdir(parents=True, exist_ok=True)
            self._env = commands.environment(
                {
                    **clean,
                    "CARRIL_STORAGE": str(self.storage),
                    "CARRIL_ENV": "dev",
                    "DATABASE_URL": self.database.url,
                    "CARRIL_GPU_SERVICE_URL": self.gpu.url,
                    "CARRIL_GPU_SERVICE_TOKEN": self.gpu.token,
                    "CARRIL_RECONCILE_INTERVAL_S": f"{self.reconcile_interval_s:g}",
                    "CARRIL_LOG_LEVEL": self.log_level,
                    "DJANGO_SETTINGS_MODULE": self.settings_module,
                    "YOLO_OFFLINE": "1",
                    **self.extra_env,
                }
            )
        return self._env

    # --- starting -----------------------------------------------------------------------
    def start(
        self,
        *,
        users: Mapping[str, str] | None = None,
        web: bool = True,
        reconcilers: int = 1,
    ) -> Stack:
        """Everything, in `make run`'s order: GPU service, migrations and users, web app,
        reconciler(s). `users` maps names to roles (user, administrator, superuser);
        default alice (user) and ada (an administrator), all with `password`. A GPU
        service given already started is used as it is."""
        if self.gpu.process is None or self.gpu.process.poll() is not None:
            self.gpu.start()
        self.prepare()
        self.users_create(users or {"alice": "user", "ada": "administrator"})
        if web:
            self.web_start()
        for index in range(reconcilers):
            self.reconciler_start(index)
        return self

    def prepare(self) -> Stack:
        """Create the database and migrate it (the GPU service need not run)."""
        self.database.create()
        self.run(commands.manage("migrate", "--noinput"), timeout_s=300)
        return self

    def users_create(self, users: Mapping[str, str]) -> None:
        code = USERS_SCRIPT.format(users=json.dumps(dict(users)), password=self.password)
        done = self.script(code)
        assert done.returncode == 0, done.stderr

    def web_start(self) -> str:
        """One more gunicorn serving the web app on a free port; its URL once it answers.
        The first one's URL is `web_url`."""
        url = f"http://127.0.0.1:{free_port()}"
        command = commands.web(
            bind=url.removeprefix("http://"),
            workers=self.web_workers,
            threads=self.web_threads,
            access_log=self.access_log,
        )
        name = "web" if not self.webs else f"web-{len(self.webs) + 1}"
        self.webs.append(self.spawn(name, command))
        self._wait_answers(f"{url}/healthz", process=self.webs[-1])
        self.web_url = self.web_url or url
        return url

    def reconciler_start(self, index: int = 0) -> subprocess.Popen[bytes]:
        """Reconciler number `index` (logs to reconciler.log, reconciler-2.log, ...)."""
        name = "reconciler" if index == 0 else f"reconciler-{index + 1}"
        command = commands.reconciler(interval_s=self.reconcile_interval_s)
        self.reconcilers[index] = self.spawn(name, command)
        return self.reconcilers[index]

    def reconciler_kill(self, sig: int = signal.SIGKILL, index: int = 0) -> None:
        process = self.reconcilers.get(index)
        if process is not None and process.poll() is None:
            process.send_signal(sig)
            process.wait(timeout=30)

    def reconcile_once(self) -> None:
        done = self.run(commands.reconciler(once=True), timeout_s=120, check=False)
        assert done.returncode == 0, done.stderr

    # --- processes ------------------------------------------------------------------------
    def run(
        self, command: Command, *, timeout_s: float = 120, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command.argv,
            cwd=command.cwd,
            env=self.env(),
            check=check,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )

    def script(self, code: str, *, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
        """Django code run in a process of its own, with the web app's settings."""
        command = Command("script", (sys.executable, "-c", PRELUDE + code))
        return self.run(command, timeout_s=timeout_s, check=False)

    def spawn(self, name: str, command: Command | Sequence[str]) -> subprocess.Popen[bytes]:
        """Start a process of the stack in the background, its output in `<name>.log`."""
        if not isinstance(command, Command):
            command = Command(name, tuple(command))
        # Owner-only like everything in storage (ADR 0057), whatever the test's umask.
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
        with os.fdopen(os.open(self.storage / f"{name}.log", flags, 0o600), "ab") as log:
            process = subprocess.Popen(
                command.argv, cwd=command.cwd, env=self.env(), stdout=log, stderr=subprocess.STDOUT
            )
        self.processes.append(process)
        return process

    def _wait_answers(
        self, url: str, *, process: subprocess.Popen[bytes], timeout_s: float = 120
    ) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"a web process exited at start-up:\n{self.logs()}")
            try:
                if httpx.get(url, timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"the web app did not answer in time:\n{self.logs()}")

    def web_pids(self) -> list[int]:
        """The first gunicorn's master and workers: the processes that serve requests."""
        import psutil

        master = psutil.Process(self.webs[0].pid)
        return [master.pid, *(child.pid for child in master.children(recursive=True))]

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        self.gpu.stop()
        self.database.drop()

    def logs(self, lines: int = 40) -> str:
        out = []
        for path in sorted(self.storage.glob("*.log")):
            tail = path.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {path.stem} ---\n" + "\n".join(tail))
        return "\n".join(out)

    # --- the web API ----------------------------------------------------------------------
    def token(self, username: str, *, url: str | None = None) -> str:
        response = httpx.post(
            f"{url or self.web_url}/api/v1/auth/token/",
            # A name of its own: a token made again under the same name may replace it.
            json={"username": username, "password": self.password, "name": f"tests-{uuid4().hex}"},
            timeout=30,
        )
        assert response.status_code == 200, response.text
        return response.json()["token"]

    def api(self, username: str, *, timeout_s: float = 60) -> httpx.Client:
        return httpx.Client(
            base_url=self.web_url,
            headers={"Authorization": f"Token {self.token(username)}"},
            timeout=timeout_s,
        )

    # --- reading both sides ---------------------------------------------------------------
    def web_jobs(self) -> dict[str, dict[str, Any]]:
        """The web's job rows by id, each with `delivered`: the row records that the GPU
        service has the job (`dispatched_at`)."""
        jobs = {}
        for row in self.database.rows("SELECT * FROM jobs_job"):
            # SQLite holds UUIDs as 32 hex digits, PostgreSQL as uuid; the API has dashes.
            row["id"] = _dashed(row["id"])
            row["delivered"] = row["dispatched_at"] is not None
            jobs[row["id"]] = row
        return jobs

    def web_execute(self, statement: str) -> None:
        self.database.execute(statement)

    def journal_jobs(self) -> dict[str, dict[str, Any]]:
        """The GPU service's journal records by id, each with `web_job`: the web job it
        runs for, which is its own id (one id from browser to worker)."""
        with sqlite3.connect(self.gpu.storage / "journal.sqlite3", timeout=30) as db:
            db.row_factory = sqlite3.Row
            rows = [dict(row) for row in db.execute("SELECT * FROM jobs").fetchall()]
        for row in rows:
            row["web_job"] = row["id"]
        return {row["id"]: row for row in rows}

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

    def wait_until(self, predicate: Callable[[], Any], *, timeout_s: float, what: str) -> Any:
        return wait_until(predicate, timeout_s=timeout_s, what=what, logs=self.logs, poll_s=0.1)


def _dashed(value: Any) -> str:
    value = str(value).replace("-", "")
    return f"{value[:8]}-{value[8:12]}-{value[12:16]}-{value[16:20]}-{value[20:]}"


def error_code(journal_row: dict[str, Any]) -> str:
    return (json.loads(journal_row["error"]) or {}).get("code", "") if journal_row["error"] else ""
