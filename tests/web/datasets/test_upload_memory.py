"""A dataset upload streams to disk: the web worker's memory stays flat whatever the size.

Runs the app under gunicorn, as deployed, and reads the worker's peak resident memory
before and after a 120 MiB upload.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import httpx
import psutil
import pytest

from tests.support.gpu_service import free_port

ROOT = Path(__file__).resolve().parents[3]
UPLOAD_MIB = 120
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc"),
]


def peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def big_zip(path: Path) -> Path:
    chunk = os.urandom(1024 * 1024)  # random bytes: stored, so the ratio cap stays out of it
    with (
        zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive,
        archive.open("blob.bin", "w") as out,
    ):
        for _ in range(UPLOAD_MIB):
            out.write(chunk)
    return path


def test_a_large_upload_does_not_grow_the_workers_memory(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CARRIL_")}
    env.pop("DATABASE_URL", None)
    env.update(
        CARRIL_STORAGE=str(tmp_path / "storage"),
        CARRIL_DEMO_PASSWORD="a-long-demo-password-42",
        DJANGO_SETTINGS_MODULE="carril_web.settings",
    )
    manage = [sys.executable, str(ROOT / "web" / "manage.py")]
    subprocess.run([*manage, "migrate", "-v", "0"], env=env, check=True, timeout=300)
    subprocess.run(
        [*manage, "ensure_demo_user"], env=env, check=True, timeout=120, capture_output=True
    )
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "carril_web.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            "--timeout",
            "300",
        ],
        cwd=ROOT / "web",
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                token = httpx.post(
                    f"{base}/api/v1/auth/token/",
                    json={"username": "demo", "password": "a-long-demo-password-42"},
                ).json()["token"]
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "gunicorn did not start"
                time.sleep(0.3)
        headers = {"Authorization": f"Token {token}"}
        small = tmp_path / "small.zip"
        with zipfile.ZipFile(small, "w") as archive:
            archive.writestr("x.txt", "x")
        with open(small, "rb") as handle:  # warm up: the first upload imports everything
            httpx.post(
                f"{base}/api/v1/datasets/",
                headers=headers,
                data={"name": "warm"},
                files={"file": handle},
            )
        worker = psutil.Process(server.pid).children()[0].pid
        before = peak_rss_kib(worker)
        with open(big_zip(tmp_path / "big.zip"), "rb") as handle:
            response = httpx.post(
                f"{base}/api/v1/datasets/",
                headers=headers,
                data={"name": "big"},
                files={"file": handle},
                timeout=300,
            )
        assert response.status_code == 202  # received; validated by a background thread
        url = f"{base}{response.json()['url']}"
        deadline = time.monotonic() + 300
        while (dataset := httpx.get(url, headers=headers).json())["state"] == "validating":
            assert time.monotonic() < deadline, dataset
            time.sleep(0.5)
        assert dataset["state"] == "invalid"  # no data.yaml: refused, after streaming it all
        grown_mib = (peak_rss_kib(worker) - before) / 1024
        assert grown_mib < UPLOAD_MIB / 4, f"worker peak memory grew {grown_mib:.0f} MiB"
        assert not any((tmp_path / "storage" / "uploads" / "tmp").iterdir())
    finally:
        server.terminate()
        server.wait(timeout=30)
